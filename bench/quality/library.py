"""The four shared sets (public, public2, followup, crosslang) each in its own store and in one
library store holding both public and public2's documents (assistant/evaluation/library.py), as
`kb eval --library` scores them: window recall (hit@1) per language and direction side by side,
and for each question that lost its window place or its first place in the library store, the
documents ranked above its gold there (what took its place).

The three stores are built under --stores once and kept (retrieval changes need no new ingest;
delete the folder after a change to ingest); the embedding cache is the configured one
(KB_EMBED_CACHE).

    .venv/bin/python -m bench.quality.library [--sets public,crosslang] [--out report.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

from assistant.evaluation.evaluate import (
    Outcome,
    eval_settings,
    first_gold,
    gold_in_window,
    load_questions,
    score_in,
)
from assistant.evaluation.library import beside, library_size, shown
from assistant.evaluation.record import dumps, rerecorded, this_cpu
from bench.common import REPO, Host
from core.config import load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from ui.wiring import open_services

# ../shared/eval beside the checkout, or KB_SHARED_DIR/eval (a worktree elsewhere)
EVAL = Path(os.environ.get("KB_SHARED_DIR") or REPO.parent / "shared") / "eval"
# set -> the documents it asks about
SETS = {"public": "public", "public2": "public2", "followup": "public2", "crosslang": "public2"}
LIBRARY = ("public", "public2")


def losses(
    questions: list[dict[str, Any]], own: dict[str, Outcome], shared: dict[str, Outcome]
) -> list[dict[str, Any]]:
    """Each answerable question that lost its window place or its first place in the library
    store: its ranks in both, and the files ranked above its gold there (in order, each once)."""
    out = []
    for q in questions:
        if not q["answerable"]:
            continue
        a, b = own[q["id"]], shared[q["id"]]
        rank_a, rank_b = first_gold(q, a), first_gold(q, b)
        window_a, window_b = gold_in_window(q, a), gold_in_window(q, b)
        if not (window_a and not window_b) and not (rank_a == 1 and rank_b != 1):
            continue
        above = b.ranked[: (rank_b - 1) if rank_b else 5]
        took = list(dict.fromkeys(Path(h.file).name for h in above))
        out.append({"id": q["id"], "lang": q["lang"], "question": q["question"],
                    "rank": [rank_a, rank_b], "window": [window_a, window_b],
                    "took": took})  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--stores", type=Path, default=Path("/tmp/kb-bench-library"))
    parser.add_argument("--out", type=Path, default=None, help="Also write the report here.")
    parser.add_argument("--record", action="store_true",
                        help="Write each set's figures, own store and library store, as its "
                             "record (bench/eval_SET.json), keeping the rest of it")  # fmt: skip
    args = parser.parse_args()
    offline_environment()
    settings = load_settings(REPO / "config.toml")
    names = [s for s in args.sets.split(",") if s]
    stores = {"own-public": ["public"], "own-public2": ["public2"], "library": list(LIBRARY)}
    host = Host()
    report: dict[str, Any] = {"sets": {}}
    kept: dict[str, dict[str, dict[str, Outcome]]] = {name: {} for name in names}
    for store, folders in stores.items():
        parts = open_services(eval_settings(settings, args.stores / store))
        try:
            ingest_paths(parts.store, [EVAL / f / "docs" for f in folders])
            report[store] = {"folders": [shown(EVAL / f / "docs") for f in folders],
                             **library_size(parts)}  # fmt: skip
            for name in names:
                if SETS[name] not in folders:
                    continue
                which = "library" if store == "library" else "own"
                questions = load_questions(EVAL / name / "qa.jsonl")
                kept[name][which] = {}
                result = score_in(parts, EVAL / SETS[name] / "docs", questions, kept[name][which])
                if which == "library":  # as `score_library` reports it
                    result = {**report[store], **result}
                report["sets"].setdefault(name, {})[which] = result
        finally:
            parts.close()
    for name in names:
        figures = report["sets"][name]
        table = beside({**figures["own"], "library": figures["library"]})
        figures["beside"] = [" | ".join(row) for row in table]
        questions = load_questions(EVAL / name / "qa.jsonl")
        figures["losses"] = losses(questions, kept[name]["own"], kept[name]["library"])
        print(name, *figures["beside"], sep="\n  ", file=sys.stderr)
        for loss in figures["losses"]:
            print("   ", loss["id"], loss["rank"], loss["window"], loss["took"], file=sys.stderr)
    if args.record:
        for name in names:
            record(name, report["sets"][name])
    for figures in report["sets"].values():
        for side in ("own", "library"):
            figures[side].pop("outcomes", None)
    report["host"] = host.report()
    text = json.dumps(report, ensure_ascii=False, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


def record(name: str, figures: dict[str, Any]) -> None:
    """The set's record (bench/eval_NAME.json) as `kb eval NAME --library ... --record` writes
    it: its own store's figures, and the library store's under "library"."""
    path = REPO / "bench" / f"eval_{name}.json"
    old = json.loads(path.read_text("utf-8")) if path.is_file() else {}
    report = {"host": this_cpu(), **figures["own"], "library": figures["library"]}
    today = datetime.date.today().isoformat()
    path.write_text(dumps(rerecorded(old, report, today)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
