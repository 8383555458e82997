"""BENCHMARKS.md's sign-in table (issue 26), from `python -m bench ldap` (bench/ldap_signin.py)."""

from __future__ import annotations

from bench.recorded import Recorded
from bench.report_sections import para, table


def signin(rec: Recorded) -> list[str]:
    report = rec.report("ldap_signin")
    rows = [[label, f"{report[key]['p50_ms']} ms", f"{report[key]['p95_ms']} ms",
             f"{report[key]['max_ms']} ms"]
            for label, key in (("LDAP, search then bind (groups by a nested search)",
                                "search_then_bind"),
                               ("LDAP, bind as the user (groups from memberOf)", "bind_as_user"),
                               ("local password (scrypt), the baseline", "local_password"))]
    return [
        "## Sign-in", "",
        *para(f"The login check the sign-in form awaits (throttle, directory, the user's local "
              f"record), {report['rounds']} sign-ins each way against a real OpenLDAP `slapd` "
              "on loopback:"),
        *table(["way in", "p50", "p95", "max"], rows),
        rec.run_line("ldap_signin", command="python -m bench ldap --full"), "",
    ]
