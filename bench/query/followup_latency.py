"""What reading a follow-up with its history costs a question: the follow-up set's 60 questions
retrieved as the app retrieves them (read with their earlier questions, `Assistant.read`, then
searched for with the topic words those supply) against the same questions retrieved alone (the
behaviour before issue 25), interleaved in one run over the public2 documents they ask about.

Every question is embedded each time, as a question not asked before is (the store keeps no
question vectors here). Reported: p50 and p95 of each, over all questions and over the
follow-ups that lean on their history (the rest are searched for exactly as alone), and the p95
added; the goal is at most 5 ms added (issue 25).

    .venv/bin/python -m bench.query.followup_latency --rounds 5
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import store.store as store_module
from assistant.evaluation.evaluate import earlier_turns, eval_settings, load_questions
from bench.common import REPO, Host
from core.config import load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from store.store import open_store
from ui.wiring import open_services

FOLLOWUP = REPO.parent / "shared" / "eval" / "followup" / "qa.jsonl"
DOCS = REPO.parent / "shared" / "eval" / "public2" / "docs"
STORE = Path("/tmp/kb-bench-followup")
GOAL_MS = 5.0


def ensure_store() -> Any:
    """The public2 documents ingested into STORE (once; delete the folder to rebuild)."""
    settings = eval_settings(load_settings(REPO / "config.toml"), STORE)
    cache = STORE.parent / "kb-bench-followup-cache"
    settings = replace(settings, embed=replace(settings.embed, cache=str(cache)))
    marker = STORE / "ingested"
    if not marker.is_file():
        shutil.rmtree(STORE, ignore_errors=True)
        store = open_store(settings)
        ingest_paths(store, [DOCS])
        store.close()
        marker.write_text("ok")
    return settings


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="passes over the 60 questions")
    args = parser.parse_args()
    offline_environment()
    if not FOLLOWUP.is_file() or not DOCS.is_dir():
        sys.exit(f"bench: {FOLLOWUP} or {DOCS} not found: this bench needs ../shared/eval")
    host = Host()
    # every question embedded as a new one is, not taken from the kept vectors of the warm pass
    store_module.QUESTION_VECTORS = 0
    settings = ensure_store()
    items = load_questions(FOLLOWUP)
    services = open_services(settings)
    assistant = services.assistant
    groups = settings.ingest.default_groups
    timed: dict[str, list[float]] = {"alone": [], "with_history": [],
                                     "alone_leaning": [], "with_history_leaning": []}
    try:

        def alone(item: dict[str, Any]) -> float:
            started = time.perf_counter()
            assistant.retriever.retrieve(item["question"], groups)
            return (time.perf_counter() - started) * 1000

        def with_history(item: dict[str, Any]) -> float:
            started = time.perf_counter()
            reading = assistant.read(item["question"], earlier_turns(item))
            assistant.retriever.retrieve(reading.question, groups, context=reading.context)
            return (time.perf_counter() - started) * 1000

        for item in items:  # warm: the snapshot, the embedder, jieba
            alone(item)
            with_history(item)
        leaning = {item["id"] for item in items
                   if assistant.read(item["question"], earlier_turns(item)).leaned}
        for round_ in range(args.rounds):
            for n, item in enumerate(items):
                if (n + round_) % 2 == 0:  # alternate which goes first
                    plain_ms, read_ms = alone(item), with_history(item)
                else:
                    read_ms = with_history(item)
                    plain_ms = alone(item)
                timed["alone"].append(plain_ms)
                timed["with_history"].append(read_ms)
                if item["id"] in leaning:
                    timed["alone_leaning"].append(plain_ms)
                    timed["with_history_leaning"].append(read_ms)
    finally:
        services.close()
    report: dict[str, Any] = {
        "questions": len(items),
        "leaning": len(leaning),
        "rounds": args.rounds,
        **{name: percentiles(ms) for name, ms in timed.items()},
    }
    for scope in ("", "_leaning"):
        base, read = report[f"alone{scope}"], report[f"with_history{scope}"]
        report[f"p95_added_ms{scope}"] = round(read["p95_ms"] - base["p95_ms"], 2)
        report[f"p95_ratio{scope}"] = round(read["p95_ms"] / base["p95_ms"], 3)
    report["goal"] = f"p95 added <= {GOAL_MS} ms"
    report["goal_met"] = max(report["p95_added_ms"], report["p95_added_ms_leaning"]) <= GOAL_MS
    report["host"] = host.report()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
