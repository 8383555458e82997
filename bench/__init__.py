"""The benchmarks: each a module that prints one JSON report, run from the repository root as
`python -m bench.ROOM.NAME ARGS`; `python -m bench` (bench/__main__.py, the index) runs the
registered ones by name and records their reports, and `python -m bench report` writes
BENCHMARKS.md from the recorded ones. A room per thing measured, each __init__.py its map:

    quality/    what the answers are worth on any machine: approved answers, the cross-language
                sides' translation and refusing, sweeps, the loop guard with a small real model
    ingest/     how fast documents get in: fresh ingest beside the LlamaIndex starter, re-index,
                sync, parsing, embedding, on a GPU; the generated corpus
    query/      what one question costs before the model: retrieve + pack at 100k and 1M chunks,
                the time before the model request, `kb ask` from cold, follow-ups, the
                cross-language sides, the audit trail
    serving/    the servers as their clients meet them: vLLM on a GPU (gpu_serve/), the OpenAI
                endpoint beside `/api/ask`, LDAP sign-in, several app processes
    load/       many users at once: askers through the page and the API, wrong-login floods,
                large API bodies
    report/     BENCHMARKS.md from its template and the recorded reports, and the goals judged

    common.py   what several benchmarks share: the sample store, the questions, the host
    results/    the reports as runs recorded them (the raw results; BENCHMARKS.md names its own)
    eval_public.json, eval_public2.json, eval_followup.json, eval_crosslang.json
                the recorded quality gates: `kb eval --json` reports that
                tests/assistant/test_eval.py and test_eval_crosslang.py hold the code to, and
                BENCHMARKS.md's quality tables

    .venv/bin/python -m bench list                     # the registered benchmarks
    .venv/bin/python -m bench query cold --full        # some of them, by name
    .venv/bin/python -m bench.query.retrieve_latency --chunks 1000000   # one, by its module

A benchmark may import `core/` to `ui/` (what it measures), devtools/ (the real parts it starts:
the vLLM test server, app processes, a Chroma server, PostgreSQL, a free port), bench/common.py
and its own room, never another room (tests/bench/test_rooms.py checks). A new benchmark goes in
the room of what it measures, with a line in its room's map and, when `python -m bench` should
run it, a line in bench/__main__.py's BENCHES.
"""
