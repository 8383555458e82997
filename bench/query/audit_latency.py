"""What the audit trail costs a question (issue 26: at most 1 ms added to its p95): the sample
and public questions asked as the app handles them before the model (retrieved, then recorded in
the ledger's questions table), with and without the audit events that follow a question (its
three best passages' source views, `AuditTrail.soon`) while the trail's writer thread chains
them into the same ledger, interleaved question by question in one run. The store is a copy
of the sample store, on SQLite (the default ledger).

Also reported: what the request itself spends per event (`soon`: an append to a list), and a
sign-in's or an upload's record written at once (`record`: one transaction).

    .venv/bin/python -m bench.query.audit_latency --rounds 5
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import SAMPLE_STORE, Host, ensure_sample_store, questions
from core.offline import offline_environment
from core.settings.auth import AuditSettings
from core.types import Answer
from ui.audit import AuditTrail
from ui.wiring import open_services

STORE = Path("/tmp/kb-bench-audit")
GOAL_MS = 1.0
VIEWS = 3  # source views recorded per question


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p95_ms": round(float(np.percentile(ms, 95)), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="passes over the questions")
    args = parser.parse_args()
    offline_environment()
    host = Host()
    settings = ensure_sample_store()
    shutil.rmtree(STORE, ignore_errors=True)
    shutil.copytree(SAMPLE_STORE, STORE)
    settings = settings.with_store(STORE)
    asked = questions()
    services = open_services(settings)
    assistant, users = services.assistant, services.users
    trail = AuditTrail(services.store.ledger, AuditSettings())
    groups = settings.ingest.default_groups
    timed: dict[str, list[float]] = {"without": [], "with_audit": []}

    def question(text: str, audit: bool) -> float:
        started = time.perf_counter()
        retrieval = assistant.retriever.retrieve(text, groups)
        users.record_question("bench", text, Answer("", mode="retrieval"))
        if audit:
            for passage in retrieval.passages[:VIEWS]:
                trail.soon("source.view", "bench", object=passage.chunk_id,
                           address="10.0.0.7", kind="page", page=passage.page)
        return (time.perf_counter() - started) * 1000

    try:
        for text in asked:  # warm: the snapshot, the embedder, jieba
            question(text, False)
        for round_ in range(args.rounds):
            for n, text in enumerate(asked):
                order = (False, True) if (n + round_) % 2 == 0 else (True, False)
                for audit in order:
                    timed["with_audit" if audit else "without"].append(question(text, audit))
        soon_ms, record_ms = [], []
        for i in range(2000):
            started = time.perf_counter()
            trail.soon("source.view", "bench", object=f"c{i}", address="10.0.0.7", kind="page")
            soon_ms.append((time.perf_counter() - started) * 1000)
        for _ in range(300):
            started = time.perf_counter()
            trail.record("signin", "bench", object="bench", address="10.0.0.7",
                         method="password")
            record_ms.append((time.perf_counter() - started) * 1000)
        trail.close()
        check = services.store.ledger.verify_audit()
    finally:
        trail.close()
        services.close()
    report: dict[str, Any] = {
        "questions": len(asked),
        "rounds": args.rounds,
        "views_per_question": VIEWS,
        "ledger": "sqlite",
        **{name: percentiles(ms) for name, ms in timed.items()},
        "soon_per_event": percentiles(soon_ms),
        "record_per_event": percentiles(record_ms),
        "chain_verified": check.ok,
        "records": check.records,
    }
    report["p95_added_ms"] = round(report["with_audit"]["p95_ms"] - report["without"]["p95_ms"],
                                   3)
    report["goal"] = f"p95 added <= {GOAL_MS} ms"
    report["goal_met"] = report["p95_added_ms"] <= GOAL_MS and check.ok
    report["host"] = host.report()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
