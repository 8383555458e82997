"""Approved answers on the query side: a question that means the same as one an admin
approved gets that answer first, before any retrieval or generation.

    index.py    the pure matcher: lexical (character n-grams and index terms) and dense
                evidence of a question against every approved phrasing, over measured thresholds
    answers.py  `ApprovedAnswers`: the index kept fresh from the ledger, access and liveness
                checks of a match, and what `kb answers` and the admin editor save (citations
                resolved to live passages, JSONL export and import)
"""
