"""bench/quality/approved_match.py's scoring, pure: which questions ask the same fact, what
counts as a hit or a false match, and the sweep's choice (most hits with no false match)."""

from __future__ import annotations

import numpy as np

from assistant.approved.index import MatchIndex, Thresholds
from bench.quality.approved_match import figures, outcome, same_fact, sweep
from core.types import ApprovedAnswer


def test_same_fact_needs_the_same_file_and_most_of_the_quote() -> None:
    a = {"file": "leave.pdf", "quote": "You can carry over a maximum of 240 annual leave hours"}
    assert same_fact(a, {"file": "leave.pdf", "quote": "carry over a maximum of 240 annual"})
    assert not same_fact(a, {"file": "other.pdf", "quote": a["quote"]})
    assert not same_fact(a, {"file": "leave.pdf", "quote": "Award leave expires in one year"})


def test_hits_false_matches_and_the_sweep() -> None:
    index = MatchIndex([ApprovedAnswer(1, "carry over leave", "x", "b"),
                        ApprovedAnswer(2, "vote time off", "y", "b")],
                       np.eye(2, dtype=np.float32), Thresholds({"en": 0}, {"en": 0}))
    probe = {"text": "carry leave over", "expect": {1}, "role": "probe", "kind": "typo",
             "set": "public", "id": "p"}
    other = {"text": "gym", "expect": set(), "role": "other", "kind": "unanswerable",
             "set": "public", "id": "o"}
    worded = np.array([True, False])  # the wording check passes against answer 1 only
    scores = [(np.array([0.8, 0.1]), np.array([0.9, 0.2]), worded),  # the probe: near answer 1
              (np.array([0.5, 0.0]), np.array([0.6, 0.1]), worded)]  # the other: half-near 1
    assert outcome(probe, index, scores[0], 0.7, 0.7) == "hit"
    assert outcome(probe, index, scores[0], 0.9, 0.7) == "miss"
    assert outcome(other, index, scores[1], 0.4, 0.4) == "false"
    assert outcome(other, index, scores[1], 0.6, 0.4) == "none"
    unworded = (scores[1][0], scores[1][1], np.array([False, False]))
    assert outcome(other, index, unworded, 0.4, 0.4) == "none"  # the check keeps it out
    chosen = sweep([probe, other], index, scores, "en")
    assert chosen["probe_hits"] == 1
    assert chosen["lexical"] > 0.5 or chosen["dense"] > 0.6  # the other matches nothing
    at = Thresholds({"en": chosen["lexical"]}, {"en": chosen["dense"]})
    got = figures([probe, other], index, scores, at)
    assert (got["probe_hits"], got["false_matches"], got["unanswerable_asked"]) == (1, 0, 1)
