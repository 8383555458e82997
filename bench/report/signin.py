"""The figures of BENCHMARKS.md's sign-in section: the LDAP login check (`python -m bench ldap`,
bench/serving/ldap_signin.py), what the audit trail adds to a question (`python -m bench audit`,
bench/query/audit_latency.py) and a page during a wrong-login flood
(bench/load/login_flood.py)."""

from __future__ import annotations

import statistics
from typing import Any

from bench.report.recorded import Recorded


def signin(rec: Recorded) -> dict[str, str]:
    ldap = rec.report("ldap_signin")
    ways = {way: f"{ldap[way]['p50_ms']} ms | {ldap[way]['p95_ms']} ms | {ldap[way]['max_ms']} ms"
            for way in ("search_then_bind", "bind_as_user", "local_password")}
    return {**ways,
            "rounds": str(ldap["rounds"]), "search_p95": str(ldap["search_then_bind"]["p95_ms"]),
            "bind_p95": str(ldap["bind_as_user"]["p95_ms"]),
            "local_p95": str(ldap["local_password"]["p95_ms"]), "run": rec.run_line("ldap_signin"),
            **audit(rec), **flood(rec)}


def audit(rec: Recorded) -> dict[str, str]:
    found = rec.report("audit")
    return {"audit_added": str(found["p95_added_ms"]),
            "audit_without": str(found["without"]["p95_ms"]),
            "audit_with": str(found["with_audit"]["p95_ms"]),
            "views": str(found["views_per_question"]), "questions": str(found["questions"]),
            "audit_rounds": str(found["rounds"]),
            "soon_us": f"{found['soon_per_event']['p95_ms'] * 1000:.0f}",
            "record_ms": str(found["record_per_event"]["p95_ms"]),
            "run_audit": rec.run_line("audit")}


def flood(rec: Recorded) -> dict[str, str]:
    ours = rec.report("login_flood")
    before = ours["before"]

    def cells(found: dict[str, Any]) -> list[str]:
        runs = found["runs"]
        return [f"{found['runs_under_goal']} of {found['runs_total']}",
                f"{found['worst_page_ms']:.0f} ms",
                f"{statistics.median(r['page_max_ms'] for r in runs):.0f} ms",
                f"{statistics.median(r['page_median_ms'] for r in runs):.0f} ms",
                f"{max(r['quiet_max_ms'] for r in runs):.0f} ms"]

    return {"flood": str(ours["flood"]), "flood_runs": str(ours["runs_total"]),
            "flood_under": f"{ours['runs_under_goal']} of {ours['runs_total']}",
            "flood_worst": f"{ours['worst_page_ms']:.0f}",
            "before_under": f"{before['runs_under_goal']} of {before['runs_total']}",
            "before_worst": f"{before['worst_page_ms']:.0f}",
            "flood_now": " | ".join(cells(ours)), "flood_before": " | ".join(cells(before)),
            "run_flood": rec.run_line("login_flood")}
