"""`kb eval`: a set's documents ingested into a fresh store and its questions scored (hit@k, MRR,
in-window recall, abstention), beside the LlamaIndex starter.

    evaluate.py  `run_eval`: the sets, the scores by language and kind, follow-ups beside
                 themselves searched alone
    baseline.py  the LlamaIndex starter it compares against, and its outcomes
    crosslang.py a cross-language set by direction beside its same-language control, and the
                 gates' readings
    library.py   a set scored in one store that also holds other folders' documents
                 (`kb eval --library`), beside its own store's figures
    record.py    a run kept as a record (bench/eval_*.json: its CPU, each question's outcome)
                 and the gate that holds a later run to it, one question's worth on another CPU

It imports core, store, ingest (the set's documents) and the assistant. Product code never
reads a set's reference fields (`standalone`, `answer`). A new kind of set gets a module like
crosslang.py, called from `run_eval`.
"""
