"""The multilingual space as evidence for refusing (issue 29): the first dense evidence kb has for
Chinese questions (embed.model, all-MiniLM-L6-v2, reads English only, so `dense` is 0 for them).

Each question of public and public2 is retrieved with the repository's config (the space on);
its evidence is what the answerability model weighs (assistant/answerable.py) plus
`multilingual`: the best cosine, in the space, of a passage in the question's own language
(`Retrieval.space_gate["best_same"]`). The model is then fitted as `kb abstain fit` fits it
(ui/cli/abstain.py: the two-fold and the other-set checks, each set scored by a model fitted on
the other) with the shipped model's features, and with `multilingual` added; and each feature's
ranking power alone (AUC: the chance an answerable question outscores an unanswerable one).

    .venv/bin/python -m bench.quality.crosslang_abstain [--stores DIR]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from assistant.answerable import FEATURES
from assistant.evaluation.evaluate import eval_settings, evaluate_ours, load_questions
from bench.common import EVAL, REPO, Host
from core.config import load_settings
from core.offline import offline_environment
from ui.cli.abstain import Row, fit_sets
from ui.wiring import open_services

SETS = ("public", "public2")
STORES = Path("/tmp/kb-bench-crosslang-sweep")
MULTILINGUAL = "multilingual"


def collect(stores: Path) -> dict[str, dict[str, list[Row]]]:
    """lang -> set -> (evidence with `multilingual`, answerable) per question, in file order."""
    by_lang: dict[str, dict[str, list[Row]]] = {}
    settings = load_settings(REPO / "config.toml")
    for name in SETS:
        services = open_services(eval_settings(settings, stores / name))
        try:
            questions = load_questions(EVAL / name / "qa.jsonl")
            found: dict[str, Any] = {}
            evaluate_ours(services, EVAL / name / "docs", questions, found.__setitem__)
        finally:
            services.close()
        for q in questions:
            retrieval = found[q["id"]]
            evidence = {**retrieval.evidence,
                        MULTILINGUAL: retrieval.space_gate.get("best_same", 0.0)}
            by_lang.setdefault(q["lang"], {}).setdefault(name, []).append(
                (evidence, bool(q["answerable"])))
    return by_lang


def auc(rows: list[Row], feature: str) -> float:
    """The chance an answerable question's `feature` beats an unanswerable one's (ties: half)."""
    yes = [e[feature] for e, a in rows if a]
    no = [e[feature] for e, a in rows if not a]
    wins = sum((y > n) + 0.5 * (y == n) for y in yes for n in no)
    return round(wins / max(len(yes) * len(no), 1), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default=str(STORES), help="where the stores are kept")
    args = parser.parse_args()
    offline_environment()
    host = Host()
    by_lang = collect(Path(args.stores))
    report: dict[str, Any] = {"sets": list(SETS), "features": {}}
    for names in (FEATURES, (*FEATURES, MULTILINGUAL)):
        fitted = fit_sets(by_lang, 0.05, names, " ".join(SETS))
        report["features"][",".join(names)] = fitted["held_out"]
    report["auc"] = {
        lang: {f: auc([r for rows in sets.values() for r in rows], f)
               for f in (*FEATURES, "dense", "lexical", MULTILINGUAL)}
        for lang, sets in sorted(by_lang.items())
    }
    report["host"] = host.report()
    report["command"] = "python -m bench.quality.crosslang_abstain"
    print(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
