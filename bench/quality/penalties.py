"""Which repetition and frequency penalty to ship: the English answerable questions of the dev
sets asked through a model server with the loop guard and fallback on (the shipped answer
settings) under a few sampling settings, in the same run.

Per setting, the figures of `bench/quality/loop_guard.py`: answers whose shown text repeats a
sentence more than twice, answers whose model text as kept repeats one, generations the guard
stopped, share of answers with a verified citation, fallback rate, streamed pieces (about one token
each) per answer. The config names the model server (SmolLM2-135M-Instruct served by `kb llm serve`,
see docs/benchmarks-history.md); start it first.

    .venv/bin/python -m bench.quality.penalties --config /tmp/smol.toml --limit 10 \\
        ../shared/eval/public ../shared/eval/public2
"""

from __future__ import annotations

from dataclasses import replace

from bench.quality.loop_guard import compare

# (repetition_penalty, frequency_penalty)
SETTINGS = {
    "off (1.0, 0.0)": (1.0, 0.0),
    "repetition 1.15": (1.15, 0.0),
    "frequency 0.5": (1.0, 0.5),
}


def main() -> None:
    compare(
        {
            name: lambda s, r=repetition, f=frequency: replace(
                s, llm=replace(s.llm, repetition_penalty=r, frequency_penalty=f)
            )
            for name, (repetition, frequency) in SETTINGS.items()
        },
        "kb-penalty-",
    )


if __name__ == "__main__":
    main()
