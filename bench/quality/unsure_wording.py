"""How the wording of answers splits the development sets: a question answered on weak evidence
(the answerability model's probability below `answer.unsure_below`, above the refusal threshold)
is worded "I found nothing that answers this; the closest passages are:" and counted as a
knowledge gap. Per set and language: how many answerable and unanswerable questions are refused
(the threshold, unchanged), worded as unsure, and answered plainly, at the shipped level and at
a few others.

Each set's documents are ingested into a temporary store and every question retrieved (no
model), as `kb abstain fit` does; only the `answerable` label is read, never `answer`.

    KB_EMBED_CACHE=/tmp/kb-embcache .venv/bin/python -m bench.quality.unsure_wording
    (KB_SHARED_DIR: where shared/ is, when not beside the repository)
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from assistant.answerable import configured_model
from bench.common import EVAL, REPO
from core.config import load_settings
from core.offline import offline_environment
from ui.cli.abstain import collect

LEVELS = (0.7, 0.75, 0.8, 0.85, 0.9)


def split(rows: list[tuple[str, tuple[dict[str, float], bool]]], model: Any,
          level: float) -> dict[str, dict[str, int]]:
    """Per language and label: refused, worded unsure, answered plainly."""
    counts: dict[str, dict[str, int]] = {}
    for lang, (evidence, answerable) in rows:
        key = f"{lang} {'answerable' if answerable else 'unanswerable'}"
        c = counts.setdefault(key, {"refused": 0, "unsure": 0, "plain": 0})
        p = model.probability(evidence, lang)
        if model.refuses(evidence, lang):
            c["refused"] += 1
        elif p < level:
            c["unsure"] += 1
        else:
            c["plain"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", default=["public", "public2"])
    args = parser.parse_args()
    offline_environment()
    settings = load_settings(REPO / "config.toml", environ=dict(os.environ))
    model = configured_model(settings)
    rows = []
    for name in args.sets:
        rows += collect(settings, EVAL / name)
    report = {
        "sets": args.sets,
        "shipped_level": settings.answer.unsure_below,
        "at_shipped": split(rows, model, settings.answer.unsure_below),
        "by_level": {str(level): split(rows, model, level) for level in LEVELS},
        "probabilities": [[lang, answerable, round(model.probability(evidence, lang), 4)]
                          for lang, (evidence, answerable) in rows],
    }
    print(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
