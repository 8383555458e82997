"""What one question costs before the model answers: retrieval, packing, reading follow-ups,
the cross-language sides, the audit trail, a cold `kb ask`. Each module is a benchmark run from
the repository root that prints one JSON report, with its baseline from the same run.

    retrieve_latency.py   retrieve + pack p95 with access control at 100k and 1M chunks, beside
                          Chroma's `where` filter (`python -m bench query`, `query-1m`)
    overhead.py           the pipeline's time before the model request, as a share of the time
                          to the first token, with the vLLM CPU server (`overhead`)
    cold_start.py         `kb ask` from a cold start, beside an older commit (`cold`)
    followup_latency.py   follow-ups read with their history beside alone (`followup`)
    crosslang.py          the multilingual space: ingest cost, p95 added, where its gate opens
                          (`crosslang`)
    bilingual_latency.py  the lexical bridge to the other language, on and off (`bilingual`)
    e5_retrieve.py        a question's retrieval with multilingual-e5-small as the one embedder,
                          or as the space beside MiniLM, against today's and before issue 29
    audit_latency.py      a question's p95 with the audit events that follow it (`audit`)
    library_scale.py      window recall and retrieve + pack p95 as generated distractors grow
                          the store of public + public2 to 10,000 documents (`library-scale`)

    .venv/bin/python -m bench query cold                  # by their names in `python -m bench`
    .venv/bin/python -m bench.query.retrieve_latency --chunks 1000000 --no-where

A module here may import `core/` to `ui/`, devtools/, bench/common.py and its neighbours here, never
another room of bench/. The next benchmark of a question's path goes here; one that needs app
servers or many users goes to serving/ or load/.
"""
