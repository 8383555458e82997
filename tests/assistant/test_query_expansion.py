"""Pseudo-relevance feedback terms (the ranking is off by default: docs/benchmarks-history.md,
issue 10)."""

from __future__ import annotations

from assistant.retrieve.query_expansion import feedback_terms


def test_terms_shared_by_top_passages_rarer_first() -> None:
    texts = ["Parental leave is 12 weeks paid.", "Parental leave: 12 weeks.", "Paid holidays."]
    idf = {"parental": 2.0, "leav": 1.0, "12": 3.0, "week": 1.5, "paid": 0.5, "holiday": 2.5}
    terms = feedback_terms(["leav"], texts, idf.get, 3)
    # "12" (2 texts x 3.0) before "parental" (2 x 2.0) and "week" (2 x 1.5); "holiday" is in
    # one text only; the question's own "leav" is never added
    assert terms == ["12", "parental", "week"]
    assert feedback_terms(["leav"], texts[:1], idf.get, 3) == []  # nothing shared
