"""`retrieve.translate = "model"` against the dictionary and the multilingual space (issue 29), at
its best: what a served model that translated every question perfectly would add.

No model served here translates (the test model is random; SmolLM2 reads no Chinese), so the
translator is played by the set itself: each crosslang question's translation is its
`mirror_of` question, the same facts asked in the document's language, which is as good as a
translation gets. kb never reads `mirror_of` when it answers; this bench does, to bound the
model path from above. Window recall by direction (and answerable refused) of:

- the defaults (the space and the lexical bridge, no model);
- the defaults plus the perfect translation (retrieve.translate = "model");
- the perfect translation alone (the space and the bridge off).

    .venv/bin/python -m bench.quality.crosslang_translate [--stores DIR]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from assistant.evaluation.crosslang import direction, mirrors
from assistant.evaluation.evaluate import eval_settings, evaluate_ours, load_questions, score
from bench.common import REPO, Host
from core.config import Settings, load_settings
from core.offline import offline_environment
from core.ports import Completion, Usage
from core.types import Message
from ui.wiring import open_services

EVAL = Path(os.environ.get("KB_SHARED_DIR") or REPO.parent / "shared") / "eval"
DOCS = EVAL / "public2" / "docs"
STORES = Path("/tmp/kb-bench-crosslang-sweep")


class MirrorTranslator:
    """A generator whose every completion is the asked question's mirror: a perfect
    translation (`translate_prompt` puts the question last)."""

    def __init__(self, translations: Mapping[str, str]) -> None:
        self.translations = translations

    def complete(self, messages: Sequence[Message], **_: Any) -> Completion:
        return Completion(self.translations.get(messages[-1]["content"], ""), Usage(), "stop")

    def close(self) -> None:
        """Nothing to close (the services close their generator)."""


def by_direction(questions: Sequence[dict[str, Any]], report: dict[str, Any]) -> dict[str, str]:
    """window recall (answerable refused) per direction, from `score`'s per-language report."""
    out = {}
    for q_lang in ("en", "zh"):
        way = next(direction(q) for q in questions if q["lang"] == q_lang)
        m = report[q_lang]
        out[way] = f"{m['in_window']:.3f} ({m['counts'].split(',')[0]})"
    return out


def run(settings: Settings, questions: list[dict[str, Any]], translations: Mapping[str, str],
        translate: bool, sides: bool) -> dict[str, str]:
    cfg = replace(settings.retrieve, translate="model" if translate else "off", bilingual=sides)
    embed = settings.embed if sides else replace(settings.embed, multilingual_model="")
    services = open_services(replace(settings, retrieve=cfg, embed=embed))
    try:
        services.assistant.generator = MirrorTranslator(translations)  # type: ignore[assignment]
        return by_direction(questions, score(questions, evaluate_ours(services, DOCS, questions)))
    finally:
        services.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default=str(STORES), help="where the stores are kept")
    args = parser.parse_args()
    offline_environment()
    host = Host()
    settings = eval_settings(load_settings(REPO / "config.toml"), Path(args.stores) / "public2")
    questions = load_questions(EVAL / "crosslang" / "qa.jsonl")
    by_id = {q["id"]: q["question"] for q in questions}
    translations = {by_id[m["id"]]: m["question"] for m in mirrors(questions, DOCS)}
    report = {
        "defaults": run(settings, questions, translations, translate=False, sides=True),
        "defaults + perfect translation": run(settings, questions, translations, True, True),
        "perfect translation alone": run(settings, questions, translations, True, False),
        "translated": len(translations), "questions": len(questions),
        "host": host.report(), "command": "python -m bench.quality.crosslang_translate",
    }
    print(json.dumps(report, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
