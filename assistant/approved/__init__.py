"""Approved answers on the query side: a question that means the same as one an admin
approved gets that answer first, before any retrieval or generation.

    index.py    the pure matcher: lexical (character n-grams and index terms) and dense
                evidence of a question against every approved phrasing, over measured thresholds
    wording.py  the wording check: the same content words (misspellings and same-sounding
                characters forgiven) and the same numbers
    checks.py   what a save checks as a generated answer is checked: [n] in cited order, each
                held by its passage
    answers.py  `ApprovedAnswers`: the index kept fresh from the ledger, access and liveness
                checks of a match, and what `kb answers` and the admin editor save (citations
                resolved to live passages, JSONL export and import)

It imports core, store and the retrieve room's snapshot and dense side (docs/owners.md). The
next kind of evidence for a match goes into index.py beside its measured threshold.
"""
