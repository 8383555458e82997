"""The four shared sets (public, public2, followup, crosslang) each in its own store and in one
library store holding both public and public2's documents (assistant/evaluation/library.py), as
`kb eval --library` scores them: window recall (hit@1) per language and direction side by side,
and for each question that lost its window place or its first place in the library store, the
documents ranked above its gold there (what took its place).

The three stores are built under --stores once and kept (retrieval changes need no new ingest;
delete the folder after a change to ingest); the embedding cache is the configured one
(KB_EMBED_CACHE).

    .venv/bin/python -m bench.quality.library [--sets public,crosslang] [--out report.json]
    .venv/bin/python -m bench.quality.library --variants "owner_weight=1.0;owner_weight=0.5"
    .venv/bin/python -m bench.quality.library --with ../shared/corpus   # other subjects too
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import tomllib
from dataclasses import replace
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
from bench.common import EVAL, REPO, SET_DOCS, Host
from core.config import Settings, load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from ui.wiring import open_services

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
    parser.add_argument("--sets", default=",".join(SET_DOCS))
    parser.add_argument("--stores", type=Path, default=Path("/tmp/kb-bench-library"))
    parser.add_argument("--variants", default="",
                        help='retrieve settings measured beside the configured ones: ";" between '
                             'variants, "," between settings, values as TOML')  # fmt: skip
    parser.add_argument("--variants-only", action="store_true",
                        help="leave the configured settings out (measured before)")  # fmt: skip
    parser.add_argument("--with", dest="extra", type=Path, nargs="+", default=[],
                        help="more folders in the library store only (../shared/corpus: "
                             "real-world files on other subjects)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="Also write the report here.")
    parser.add_argument("--record", action="store_true",
                        help="Write each set's figures, own store and library store, as its "
                             "record (bench/eval_SET.json), keeping the rest of it")  # fmt: skip
    args = parser.parse_args()
    if args.record and args.extra:
        parser.error("--record keeps the records' library store (public and public2): drop --with")
    offline_environment()
    settings = load_settings(REPO / "config.toml")
    names = [s for s in args.sets.split(",") if s]
    knobs = {} if args.variants_only else {"configured": {}}
    knobs.update(variants(args.variants))
    stores = {"own-public": ["public"], "own-public2": ["public2"], "library": list(LIBRARY)}
    host = Host()
    report: dict[str, Any] = {"variants": {v: {} for v in knobs}}
    kept: dict[str, dict[str, dict[str, dict[str, Outcome]]]] = {v: {} for v in knobs}
    for store, folders in stores.items():
        base = eval_settings(settings, args.stores / store)
        parts = open_services(base)
        try:
            paths = [EVAL / f / "docs" for f in folders]
            paths += args.extra if store == "library" else []
            ingest_paths(parts.store, paths)
            report[store] = {"folders": [shown(p) for p in paths], **library_size(parts)}
            which = "library" if store == "library" else "own"
            for variant, values in knobs.items():
                as_set(parts, base, values)
                for name in (n for n in names if SET_DOCS[n] in folders):
                    questions = load_questions(EVAL / name / "qa.jsonl")
                    outcomes = kept[variant].setdefault(name, {}).setdefault(which, {})
                    result = score_in(parts, EVAL / SET_DOCS[name] / "docs", questions, outcomes)
                    if which == "library":  # as `score_library` reports it
                        result = {**report[store], **result}
                    report["variants"][variant].setdefault(name, {})[which] = result
        finally:
            parts.close()
    for variant, sets in report["variants"].items():
        print(f"== {variant}", file=sys.stderr)
        for name, figures in sets.items():
            table = beside({**figures["own"], "library": figures["library"]})
            figures["beside"] = [" | ".join(row) for row in table]
            questions = load_questions(EVAL / name / "qa.jsonl")
            outcomes = kept[variant][name]
            figures["losses"] = losses(questions, outcomes["own"], outcomes["library"])
            print(name, *figures["beside"], sep="\n  ", file=sys.stderr)
            for loss in figures["losses"]:
                print("   ", loss["id"], loss["rank"], loss["window"], loss["took"],
                      file=sys.stderr)  # fmt: skip
    if args.record:
        for name, figures in report["variants"]["configured"].items():
            record(name, figures)
    for sets in report["variants"].values():
        for figures in sets.values():
            for side in ("own", "library"):
                figures[side].pop("outcomes", None)
    report["host"] = host.report()
    report["command"] = shlex.join(["python", "-m", "bench.quality.library", *sys.argv[1:]])
    report["date"] = datetime.datetime.now(datetime.UTC).date().isoformat()
    # the configured retrieval's lost questions, every set's (BENCHMARKS.md's detail)
    report["losses"] = [loss for figures in report["variants"].get("configured", {}).values()
                        for loss in figures["losses"]]  # fmt: skip
    text = json.dumps(report, ensure_ascii=False, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


def variants(spec: str) -> dict[str, dict[str, Any]]:
    """`--variants` read: name -> its retrieve settings.

    variants("owner_weight=1.0;owner_weight=0.5,owner_gate=true")
        -> {"owner_weight=1.0": {"owner_weight": 1.0},
            "owner_weight=0.5,owner_gate=true": {"owner_weight": 0.5, "owner_gate": True}}
    """
    return {v: tomllib.loads(v.replace(",", "\n")) for v in (x.strip() for x in spec.split(";"))
            if v}  # fmt: skip


def as_set(parts: Any, base: Settings, values: dict[str, Any]) -> None:
    """The store's and its retriever's settings: `base` with these retrieve settings."""
    settings = replace(base, retrieve=replace(base.retrieve, **values))
    parts.store.settings = settings
    parts.assistant.retriever.settings = settings


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
