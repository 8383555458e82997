"""Printed page labels of a passage."""

from __future__ import annotations

import pytest

from core.types import Passage

LABELS = ("i", "ii", "1", "2")


@pytest.mark.parametrize(
    ("labels", "page", "page_end", "expected"),
    [
        (LABELS, 1, 1, "i"),
        (LABELS, 2, 3, "ii–1"),
        (LABELS, 4, None, "2"),
        (("1", "2", "3"), 2, 3, ""),  # the labels are the page numbers
        ((), 2, 2, ""),  # no labels (a Word document, or plain numbering)
        (LABELS, 9, 9, ""),  # out of range: nothing rather than a wrong label
        (LABELS, None, None, ""),
    ],
)
def test_page_label(
    labels: tuple[str, ...], page: int | None, page_end: int | None, expected: str
) -> None:
    passage = Passage("c", "d", "f.pdf", "text", page=page, page_end=page_end, page_labels=labels)
    assert passage.page_label == expected
