"""What a company sign-in costs: the login check Gradio's `/login` awaits
(`ui/identity/login.py` `login_check`: the throttle's turn in the ledger, then `SignIn`, the
directory, and the user's local record), timed against a real OpenLDAP `slapd` on loopback
(devtools/ldap_server.py), in the two ways in: search then bind with the service account,
groups by a search that follows nesting; and bind as the user, groups from memberOf. A local
password sign-in (scrypt) is timed beside them as the baseline. The goal: LDAP sign-in p95 at
most 100 ms on loopback (issue 26).

    .venv/bin/python -m bench.serving.ldap_signin --rounds 200
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from bench.common import Host
from core.config import UiSettings
from core.offline import offline_environment
from core.settings.auth import AuthSettings
from devtools.ldap_server import (
    PEOPLE,
    READER_DN,
    READER_PASSWORD,
    Unavailable,
    throwaway_directory,
)
from store.ledger import Ledger
from ui.identity.ldap import Ldap
from ui.identity.login import LoginGuard, login_check
from ui.identity.signin import SignIn
from ui.identity.users import Users

GOAL_MS = 100.0
PEOPLE_TRIED = [("hanna", "hanna-password"), ("ravi", "ravi-password"), ("mei", "mei-password")]


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2),
            "max_ms": round(max(ms), 2)}


def timed(users: Users, auth: AuthSettings, rounds: int,
          people: list[tuple[str, str]]) -> list[float]:
    """`rounds` sign-ins through the login check, each right (a failure would be throttled)."""
    ldap = Ldap(auth, READER_PASSWORD) if auth.ldap_url else None
    guard = LoginGuard(users.ledger, max_user=5, max_address=20, lockout_s=300)
    check = login_check(SignIn(users, auth, ldap), UiSettings(), guard)
    spent: list[float] = []

    async def run() -> None:
        for n in range(rounds + 5):
            name, password = people[n % len(people)]
            started = time.perf_counter()
            ok = await check(name, password)
            if not ok:
                raise SystemExit(f"bench: the sign-in of {name} failed")
            if n >= 5:  # the first few warm the imports and the connection code
                spent.append((time.perf_counter() - started) * 1000)

    anyio.run(run)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="sign-ins per way in")
    args = parser.parse_args()
    offline_environment()
    host = Host()
    report: dict[str, Any] = {"rounds": args.rounds}
    folder = Path(tempfile.mkdtemp(prefix="kb-bench-ldap-"))
    users = Users(Ledger(folder / "ledger.sqlite"))
    users.add("alice", "alice-password", ["all"])
    base = AuthSettings(ldap_base_dn=PEOPLE, ldap_group_base_dn="ou=groups,dc=example,dc=org",
                        group_map={"hr": ("hr",), "finance": ("finance",)},
                        admin_groups=("kb-admins",))
    try:
        with throwaway_directory() as directory:
            ways = {
                "search_then_bind": dataclasses.replace(
                    base, ldap_url=directory.url, ldap_bind_dn=READER_DN, ldap_groups="search"),
                "bind_as_user": dataclasses.replace(
                    base, ldap_url=directory.url, ldap_bind_template=f"uid={{user}},{PEOPLE}"),
            }
            for way, auth in ways.items():
                report[way] = percentiles(timed(users, auth, args.rounds, PEOPLE_TRIED))
    except Unavailable as exc:
        sys.exit(f"bench: {exc}")
    report["local_password"] = percentiles(timed(users, base, max(20, args.rounds // 10),
                                                 [("alice", "alice-password")]))
    worst = max(report[way]["p95_ms"] for way in ("search_then_bind", "bind_as_user"))
    report["goal"] = f"LDAP sign-in p95 <= {GOAL_MS:.0f} ms on loopback"
    report["goal_met"] = worst <= GOAL_MS
    report["host"] = host.report()
    users.ledger.close()
    print(json.dumps(report))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
