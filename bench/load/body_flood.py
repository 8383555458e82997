"""Large API bodies against the real app: how long another user's request waits while they are
read. `kb serve` in a process of its own on 127.0.0.1 (the sample store, the model unreachable),
and from a process of its own an attacker with a valid token posting to `/v1/chat/completions`
either 8 bodies at once of 180,001 messages (5.8 MiB each, as the security re-test of
2026-12-06 sent) or one body whose message content is 300,000 numbers (0.6 MiB: before the
body's values were counted, each number became a validation error of its own). Meanwhile a
reader's `GET /v1/models` (a token check and a route on the event loop) is timed again and again
until the attack is over; then as often with no attack (the machine's own noise).

    .venv/bin/python -m bench.load.body_flood --runs 5
    git archive 827761c | tar -x -C /tmp/before     # the code before, served beside
    .venv/bin/python -m bench.load.body_flood --runs 5 --before /tmp/before
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

from bench.common import Host, sample_settings
from bench.load.login_flood import attacker_process, beside_before, served, timed_attack
from core.offline import offline_environment
from ui.wiring import users_for

STORE = Path("/tmp/kb-bench-body-flood")
ATTACKS = {"messages": (8, 180_001), "numbers": (1, 300_000)}  # bodies at once, their size


def body(kind: str, size: int) -> bytes:
    if kind == "messages":
        return json.dumps({"model": "kb-assistant",
                           "messages": [{"role": "user", "content": "x"}] * size}).encode()
    numbers = b",".join([b"1"] * size)
    return b'{"messages": [{"role": "user", "content": [' + numbers + b"]}]}"


def post(url: str, token: str, payload: bytes, start: threading.Barrier) -> int:
    with httpx.Client(base_url=url, timeout=300) as client:
        start.wait()
        return client.post("v1/chat/completions", content=payload, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"}).status_code


def attacker(conn: Connection) -> None:
    """The attacker, in a process of its own: for each (url, token, kind) received, that
    attack's bodies at once; it sends back their status codes."""
    while (job := conn.recv()) is not None:
        url, token, kind = job
        count, size = ATTACKS[kind]
        payload, start = body(kind, size), threading.Barrier(count)
        with ThreadPoolExecutor(count) as pool:
            sent = [pool.submit(post, url, token, payload, start) for _ in range(count)]
            conn.send([future.result() for future in sent])


def probe(reader: httpx.Client) -> float:
    began = time.perf_counter()
    assert reader.get("v1/models").status_code == 200
    return (time.perf_counter() - began) * 1000


def attack_run(conn: Connection, reader: httpx.Client, token: str, kind: str) -> dict[str, Any]:
    """One attack, the reader timed meanwhile; then as often with none."""
    timed = timed_attack(conn, (str(reader.base_url), token, kind), lambda: probe(reader))
    during, quiet, codes = timed.during, timed.quiet, timed.reply
    return {"kind": kind, "attack_s": round(timed.seconds, 2), "probes": len(during),
            "median_ms": round(statistics.median(during), 1) if during else None,
            "max_ms": round(max(during), 1) if during else None,
            "quiet_median_ms": round(statistics.median(quiet), 1) if quiet else None,
            "quiet_max_ms": round(max(quiet), 1) if quiet else None,
            "codes": {str(c): codes.count(c) for c in sorted(set(codes))}}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": runs}
    for kind in ATTACKS:
        mine = [r for r in runs if r["kind"] == kind]
        out[f"{kind}_worst_ms"] = max((r["max_ms"] or 0.0) for r in mine)
        out[f"{kind}_worst_quiet_ms"] = max((r["quiet_max_ms"] or 0.0) for r in mine)
    return out


def token_for(store: Path) -> str:
    with users_for(sample_settings().with_store(store)) as users:
        return users.new_token("reader")


def main() -> None:
    args, apps = beside_before(__doc__, 5, STORE)
    offline_environment()
    host = Host()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in apps}
    with ExitStack() as stack:
        conn = attacker_process(stack, attacker)
        readers: dict[str, tuple[httpx.Client, str]] = {}
        for name, (store, code) in apps.items():
            url = stack.enter_context(served(store, code))
            token = token_for(store)
            reader = httpx.Client(base_url=url, timeout=120,
                                  headers={"Authorization": f"Bearer {token}"})
            stack.callback(reader.close)
            probe(reader)  # warm
            readers[name] = (reader, token)
        for run in range(args.runs):
            order = list(readers) if run % 2 == 0 else list(reversed(readers))
            for kind in ATTACKS:
                for name in order:
                    reader, token = readers[name]
                    runs[name].append(attack_run(conn, reader, token, kind))
                    print(name, json.dumps(runs[name][-1]), file=sys.stderr, flush=True)
                    time.sleep(1)
    report: dict[str, Any] = {"attacks": {k: {"bodies": c, "size": s}
                                          for k, (c, s) in ATTACKS.items()},
                              **summary(runs["ours"])}
    if "before" in runs:
        report["before"] = {"code": str(args.before), **summary(runs["before"])}
    report["host"] = host.report()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
