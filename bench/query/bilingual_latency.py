"""What searching a question in the other language too costs it (issue 29): the public2 and
crosslang questions retrieved over the public2 documents with retrieve.bilingual on and off,
interleaved in one run (two retrievers over one store). Reported: p50 and p95 of each, over all
questions and over those that carry something across (the rest take the old path), and the
p95 added; the goal is at most 5 ms added. The dictionary is read before timing (a retriever
reads it in the background when it starts).

    .venv/bin/python -m bench.query.bilingual_latency --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import bench.query.followup_latency as followup
import store.store as store_module
from assistant.evaluation.evaluate import load_questions
from assistant.retrieve.crosslang.glossary import Dictionary
from assistant.retrieve.retriever import Retriever
from bench.common import REPO, Host
from bench.query.followup_latency import ensure_store, percentiles
from core.offline import offline_environment
from store.store import open_store

SHARED = Path(os.environ.get("KB_SHARED_DIR") or REPO.parent / "shared")
DOCS = SHARED / "eval" / "public2" / "docs"
SETS = [SHARED / "eval" / name / "qa.jsonl" for name in ("public2", "crosslang")]
GOAL_MS = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions")
    args = parser.parse_args()
    offline_environment()
    if not DOCS.is_dir() or not all(s.is_file() for s in SETS):
        sys.exit(f"bench: {DOCS} or {SETS} not found: this bench needs ../shared/eval")
    host = Host()
    store_module.QUESTION_VECTORS = 0  # every question embedded as a new one is
    followup.DOCS = DOCS  # the same store as the follow-up bench's, wherever shared/ is
    settings = ensure_store()
    on = replace(settings, retrieve=replace(settings.retrieve, bilingual=True))
    off = replace(settings, retrieve=replace(settings.retrieve, bilingual=False))
    items = [item for path in SETS for item in load_questions(path)]
    store = open_store(settings)
    timed: dict[str, list[float]] = {"off": [], "on": [], "off_carried": [], "on_carried": []}
    try:
        retrievers = {"on": Retriever(on, store), "off": Retriever(off, store)}
        Dictionary.load()
        groups = settings.ingest.default_groups

        def timed_retrieve(name: str, question: str) -> tuple[float, bool]:
            started = time.perf_counter()
            found = retrievers[name].retrieve(question, groups)
            return (time.perf_counter() - started) * 1000, bool(found.bridge_gate)

        for item in items:  # warm: the snapshot, the embedder, jieba
            timed_retrieve("on", item["question"])
            timed_retrieve("off", item["question"])
        for round_ in range(args.rounds):
            for n, item in enumerate(items):
                order = ("on", "off") if (n + round_) % 2 == 0 else ("off", "on")
                ms, carried = {}, False
                for name in order:
                    ms[name], crossed = timed_retrieve(name, item["question"])
                    carried = carried or crossed
                for name in ("on", "off"):
                    timed[name].append(ms[name])
                if carried:
                    timed["on_carried"].append(ms["on"])
                    timed["off_carried"].append(ms["off"])
    finally:
        store.close()
    report: dict[str, Any] = {
        "questions": len(items),
        "carried": len(timed["on_carried"]) // max(args.rounds, 1),
        "rounds": args.rounds,
        **{name: percentiles(ms) for name, ms in timed.items()},
    }
    for scope in ("", "_carried"):
        base, on = report[f"off{scope}"], report[f"on{scope}"]
        report[f"p95_added_ms{scope}"] = round(on["p95_ms"] - base["p95_ms"], 2)
    report["goal"] = f"p95 added <= {GOAL_MS} ms"
    report["goal_met"] = max(report["p95_added_ms"], report["p95_added_ms_carried"]) <= GOAL_MS
    report["host"] = host.report()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
