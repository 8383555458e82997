"""Which repetition and frequency penalty to ship: the English answerable questions of the dev
sets asked through a model server with the loop guard and fallback on (the shipped answer
settings) under a few sampling settings, in the same run.

Per setting, the figures of `bench/loop_guard.py`: answers whose shown text repeats a sentence
more than twice, answers whose model text as kept repeats one, generations the guard stopped,
share of answers with a verified citation, fallback rate, streamed pieces (about one token each)
per answer. The config names the model server (SmolLM2-135M-Instruct served by `kb llm serve`,
see BENCHMARKS.md); start it first.

    .venv/bin/python bench/penalties.py --config /tmp/smol.toml --limit 10 \\
        ../shared/eval/public ../shared/eval/public2
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from loop_guard import ask_all  # noqa: E402

from assistant.evaluation.evaluate import eval_settings, load_questions  # noqa: E402
from core.config import load_settings  # noqa: E402
from ingest.pipeline import ingest_paths  # noqa: E402
from ui.cli_common import offline_environment  # noqa: E402
from ui.wiring import services_for  # noqa: E402

# (repetition_penalty, frequency_penalty)
SETTINGS = {
    "off (1.0, 0.0)": (1.0, 0.0),
    "repetition 1.15": (1.15, 0.0),
    "frequency 0.5": (1.0, 0.5),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=0, help="questions per set (0: all)")
    args = parser.parse_args()
    offline_environment()
    base = load_settings(args.config)
    report: dict[str, Any] = {"config": str(args.config), "date": time.strftime("%Y-%m-%d")}
    for set_dir in args.sets:
        questions = [
            q
            for q in load_questions(set_dir / "qa.jsonl")
            if q["lang"] == "en" and q["answerable"]
        ]
        questions = questions[: args.limit] if args.limit else questions
        with tempfile.TemporaryDirectory(prefix="kb-penalty-") as tmp:
            settings = eval_settings(base, Path(tmp))
            with services_for(settings) as services:
                ingest_paths(services.store, [set_dir / "docs"])
            for name, (repetition, frequency) in SETTINGS.items():
                llm = replace(settings.llm, repetition_penalty=repetition,
                              frequency_penalty=frequency)
                variant = replace(settings, llm=llm)
                started = time.perf_counter()
                figures = ask_all(variant, questions)
                figures["seconds"] = round(time.perf_counter() - started, 1)
                report[f"{set_dir.name} · {name}"] = figures
                print(set_dir.name, name, figures, flush=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
