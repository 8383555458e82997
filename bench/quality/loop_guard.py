"""What the loop guard and the fallback change for a real small model: the English answerable
questions of the dev sets asked through a model server, with the guard and fallback off (before)
and on (after), in the same run.

Per variant: answers whose shown model text repeats a sentence more than twice (a fallback
shows the passages, with the model's text behind a toggle: its shown model text is none),
answers whose model text as kept repeats one, answers keeping at least one verified citation,
fallback rate, and streamed pieces (about one token each) per answer. The config names the
model server (SmolLM2-135M-Instruct served by `kb llm serve`, see docs/benchmarks-history.md);
start it first.

    .venv/bin/python -m bench.quality.loop_guard --config /tmp/smol.toml --limit 15 \\
        ../shared/eval/public ../shared/eval/public2
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from assistant.evaluation.evaluate import eval_settings, load_questions
from assistant.llm.loopguard import sentence_key
from core.config import Settings, load_settings
from core.offline import offline_environment
from core.text import split_sentences
from core.types import Answer
from ingest.pipeline import ingest_paths
from ui.wiring import open_services, services_for

VARIANTS = {
    "before (no guard, no fallback)": {"loop_max_repeats": 0, "fallback_unverified": False},
    "after (guard + fallback, shipped)": {},
}


def repeats_a_sentence(text: str, times: int = 2) -> bool:
    """True when one sentence of `text` stands in it more than `times` times."""
    counts = Counter(k for k in map(sentence_key, split_sentences(text)) if len(k) >= 4)
    return any(n > times for n in counts.values())


def ask_all(settings: Settings, questions: list[dict[str, Any]]) -> dict[str, float]:
    services = open_services(settings)
    tally: Counter[str] = Counter()
    try:
        for q in questions:
            pieces = 0
            answer: Answer | None = None
            for item in services.assistant.ask_stream(q["question"], ["all"]):
                if isinstance(item, Answer):
                    answer = item
                else:
                    pieces += 1
            if answer is None or answer.mode not in ("generated", "fallback"):
                tally["not_generated"] += 1
                continue
            tally["answers"] += 1
            tally["pieces"] += pieces - (answer.mode == "fallback")  # the passages piece
            tally["fallback"] += answer.mode == "fallback"
            tally["looped"] += "repeating" in answer.notice
            shown = answer.answer if answer.mode == "generated" else ""
            tally["repeats_shown"] += repeats_a_sentence(shown)
            tally["repeats_kept"] += repeats_a_sentence(answer.raw_answer or answer.answer)
            tally["verified"] += any(c.supported for c in answer.citations) and (
                answer.mode == "generated"
            )
    finally:
        services.close()
    n = max(tally["answers"], 1)
    return {
        "answers": tally["answers"],
        "not_generated": tally["not_generated"],
        "shown_repeating_a_sentence": tally["repeats_shown"],
        "kept_model_text_repeating": tally["repeats_kept"],
        "with_verified_citation": round(tally["verified"] / n, 3),
        "fallback_rate": round(tally["fallback"] / n, 3),
        "stopped_by_guard": tally["looped"],
        "pieces_per_answer": round(tally["pieces"] / n, 1),
    }


def compare(variants: dict[str, Callable[[Settings], Settings]], prefix: str) -> None:
    """The command line both benches share: `ask_all` for each variant of the config's settings,
    on the English answerable questions of each set, every set ingested once into a temporary
    store; the report printed as JSON last."""
    parser = argparse.ArgumentParser(description=(sys.modules["__main__"].__doc__ or "")
                                     .split("\n\n")[0])
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
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            settings = eval_settings(base, Path(tmp))
            with services_for(settings) as services:
                ingest_paths(services.store, [set_dir / "docs"])
            for name, make in variants.items():
                started = time.perf_counter()
                figures = ask_all(make(settings), questions)
                figures["seconds"] = round(time.perf_counter() - started, 1)
                report[f"{set_dir.name} · {name}"] = figures
                print(set_dir.name, name, figures, flush=True)
    print(json.dumps(report, indent=1))


def main() -> None:
    compare(
        {
            name: lambda s, a=answer: replace(s, answer=replace(s.answer, **a))
            for name, answer in VARIANTS.items()
        },
        "kb-loop-",
    )


if __name__ == "__main__":
    main()
