"""An approved answer is checked before it is saved as a generated answer is: its [n] follow
the order the text cites them, and a [n] whose passage does not hold its sentence is refused
by name."""

from __future__ import annotations

from assistant.approved.checks import cited_order, unsupported
from core.types import Passage

CERTIFICATE = Passage("c1", "d1", "Employee-Leave-Policy.pdf",
                      "3.3 Medical certificate A medical certificate is required for any sick "
                      "leave of more than 2 consecutive working days. Upload it to the HR portal.")
PARENTAL = Passage("c2", "d2", "18F-Leave-and-Time-Off.pdf",
                   "Birth-supporting documentation You'll need a medical note from your doctor. "
                   "The medical note will be used as a supporting document for PPL.")
ANSWER = ("For sick leave of more than 2 consecutive working days you need a medical "
          "certificate; upload it to the HR portal [1].")


def test_markers_are_renumbered_in_the_order_the_text_cites_them() -> None:
    assert cited_order("Apply online [2]. Pay is 5 days [1].", 2) == (
        "Apply online [1]. Pay is 5 days [2].", [2, 1])
    assert cited_order("Only the third [3][1].", 3) == ("Only the third [1][2].", [3, 1, 2])
    assert cited_order("No markers.", 2) == ("No markers.", [1, 2])


def test_a_citation_whose_passage_does_not_hold_the_sentence_is_named() -> None:
    assert unsupported(ANSWER, [CERTIFICATE], 0.5, 0.75) == []
    # the walkthrough's case: [1] ticked as a US parental-leave passage
    assert unsupported(ANSWER, [PARENTAL], 0.5, 0.75) == [(1, "upload it to the HR portal [1].")]
    both = ANSWER.replace("[1]", "[1][2]")
    assert [n for n, _ in unsupported(both, [CERTIFICATE, PARENTAL], 0.5, 0.75)] == [2]
