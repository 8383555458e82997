"""The figures of BENCHMARKS.md's load, API overhead, MCP overhead and large-body sections: many
askers at once through the page and the API (`python -m bench load`, bench/load/askers.py), the
OpenAI-compatible endpoint against `POST /api/ask` (`python -m bench openai`,
bench/serving/openai_overhead.py), the MCP server's `ask` tool against both (`python -m bench
mcp`, bench/serving/mcp_overhead.py), another user's requests while large bodies are posted
(bench/load/body_flood.py), and the chat platforms' callbacks acknowledged while 20 arrive at
once (bench/load/channels_ack.py)."""

from __future__ import annotations

import statistics
from typing import Any

from bench.report.recorded import Recorded, span
from bench.report.sections import rows

WAYS = (("plain", "openai", "api"), ("streamed", "openai_stream", "api_stream"))
VARIANT_NAMES = {"api": "`/api/ask`", "openai": "`/v1`", "api_stream": "`/api/ask` streamed",
                 "openai_stream": "`/v1` streamed"}


def load(rec: Recorded) -> dict[str, str]:
    found, loads = [], []
    for n, entry in enumerate(rec.reports("load"), start=1):
        loads.append(entry["host"]["load_average"][0])
        report = entry["report"]
        loaded = report["runs"]["at once, page + API"]
        found.append([
            str(n), str(loaded["questions"]), str(loaded["errors"]), str(loaded["busy"]),
            f"{loaded['p50_page_s']:.1f} / {loaded['p95_page_s']:.1f} s",
            f"{loaded['p50_api_s']:.1f} / {loaded['p95_api_s']:.1f} s",
            f"{report['baseline_p50_s']:.2f} s",
            f"{report['p50_ratio_to_alone']:.1f}× / {report['p95_ratio_to_alone']:.1f}×",
        ])
    return {"rows": rows(found), "loads": f"{min(loads):.0f}–{max(loads):.0f}",
            "run": rec.run_line("load")}


def api_overhead(rec: Recorded) -> dict[str, str]:
    loads, slow = [], []
    entries = rec.reports("openai")
    by_way: dict[str, list[dict[str, Any]]] = {way: [] for way, _, _ in WAYS}
    for n, entry in enumerate(entries, start=1):
        loads.append(entry["host"]["load_average"][0])
        report = entry["report"]
        slow += [f"{ms / 1000:.1f} s ({VARIANT_NAMES[kind]}, run {n})"
                 for _, kind, ms in report["slow_requests"]]
        for way, ours, base in WAYS:
            c = report[f"{ours}_vs_{base}"]
            by_way[way].append({"base": report[base]["p95_ms"], "ours": report[ours]["p95_ms"],
                                "diff": c["p95_diff_ms"], "paired": c["paired_diff_p95_ms"]})

    def ms(runs: list[dict[str, Any]], key: str, fmt: str = "{:.2f}") -> str:
        return span([r[key] for r in runs], fmt) + " ms"

    first = entries[0]["report"]
    return {
        **{way: " | ".join([ms(runs, "base"), ms(runs, "ours"), ms(runs, "diff", "{:+.2f}"),
                            ms(runs, "paired", "{:+.2f}")]) for way, runs in by_way.items()},
        "runs": str(len(entries)), "rounds": str(first["rounds"]),
        "questions": str(first["questions"]), "loads": f"{min(loads):.1f}–{max(loads):.1f}",
        "stalls": ", ".join(slow) or "none", "run": rec.run_line("openai"),
    }


# the MCP overhead's ways, and its comparisons: (the row's name, the key in the report)
MCP_WAYS = {"api": "`/api/ask`", "v1": "`/v1`", "mcp": "tool call",
            "mcp_legacy": "tool call in a session", "mcp_raw": "the call posted by hand"}
MCP_COMPARED = (("tool call (2026-07-28) − `/api/ask`", "mcp_vs_api"),
                ("tool call in a session (2025-11-25) − `/api/ask`", "mcp_legacy_vs_api"),
                ("tool call (2026-07-28) − `/v1`", "mcp_vs_v1"),
                ("the call posted by hand − `/api/ask`", "mcp_raw_vs_api"))


def mcp_overhead(rec: Recorded) -> dict[str, str]:
    entries = rec.reports("mcp")
    reports = [entry["report"] for entry in entries]
    loads = [entry["host"]["load_average"][0] for entry in entries]
    slow = [f"{ms / 1000:.1f} s ({MCP_WAYS[kind]}, run {n})"
            for n, report in enumerate(reports, start=1) for _, kind, ms in report["slow_requests"]]

    def ms(values: list[float], fmt: str = "{:.2f}") -> str:
        return span(values, fmt) + " ms"

    ways = [[name, ms([r[way]["p50_ms"] for r in reports]),
             ms([r[way]["p95_ms"] for r in reports])] for way, name in MCP_WAYS.items()]
    diffs = [[name, ms([r[key]["p50_diff_ms"] for r in reports], "{:+.2f}"),
              ms([r[key]["p95_diff_ms"] for r in reports], "{:+.2f}"),
              span([r[key]["p95_ratio"] for r in reports], "{:.2f}"),
              ms([r[key]["paired_diff_p95_ms"] for r in reports], "{:+.2f}")]
             for name, key in MCP_COMPARED]
    first = reports[0]
    row = " | ".join([ms([r["api"]["p95_ms"] for r in reports]),
                      ms([r["mcp"]["p95_ms"] for r in reports]), diffs[0][2], diffs[0][4]])
    return {"row": row, "ways": rows(ways), "diffs": rows(diffs), "runs": str(len(reports)),
            "rounds": str(first["rounds"]), "questions": str(first["questions"]),
            "loads": f"{min(loads):.1f}–{max(loads):.1f}", "stalls": ", ".join(slow) or "none",
            "run": rec.run_line("mcp")}


def bodies(rec: Recorded) -> dict[str, str]:
    ours = rec.report("body_flood")
    attacks = ours["attacks"]

    def cells(found: dict[str, Any]) -> str:
        return " | ".join([*(f"{found[f'{kind}_worst_ms'] / 1000:.2f} s" for kind in attacks),
                           f"{max(found[f'{kind}_worst_quiet_ms'] for kind in attacks):.0f} ms"])

    return {"now": cells(ours), "before": cells(ours["before"]),
            "runs": str(len(ours["runs"]) // len(attacks)),
            "messages": str(attacks["messages"]["bodies"]),
            "messages_size": f"{attacks['messages']['size']:,}",
            "numbers_size": f"{attacks['numbers']['size']:,}",
            "load": f"{ours['host']['load_average'][0]:.0f}", "run": rec.run_line("body_flood")}


def channels(rec: Recorded) -> dict[str, str]:
    ours = rec.report("channels_ack")
    found = [[name, f"{max(p['alone_ms']):.0f} ms", f"{p['concurrent_max_ms']:.0f} ms",
              f"{p['concurrent_max_ms'] / statistics.median(p['alone_ms']):.0f}×",
              f"{p['concurrent_median_ms']:.0f} ms", f"{p['concurrent_p95_ms']:.0f} ms",
              f"within {max(p['all_answered_s']):.1f} s"]
             for name, p in ours["platforms"].items()]
    return {"rows": rows(found), "concurrent": str(ours["concurrent"]),
            "rounds": str(ours["rounds"]), "platforms": str(len(ours["platforms"])),
            "max": f"{ours['concurrent_max_ms']:.0f}",
            "load": f"{ours['host']['load_average'][0]:.0f}", "run": rec.run_line("channels_ack")}
