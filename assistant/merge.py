"""Adjacent chunks of one document merged into one passage: consecutive ordinals of one
section, or one chunk ending with the text the next starts with (the chunker's overlap). Packing
(`pack.py`) shows such chunks as one passage, with the pages each part came from.

    merge_adjacent([P(text="甲。乙丙丁戊己庚辛。"), P(text="乙丙丁戊己庚辛。壬。")])
        -> [P(text="甲。乙丙丁戊己庚辛。壬。")]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from core.types import Passage

MIN_OVERLAP_CHARS = 8  # a shared edge this long between two chunks of one document = adjacent


def _edge_overlap(first: str, second: str) -> int:
    """Length of the longest end of `first` that `second` starts with (0 if < the minimum)."""
    head = second[:MIN_OVERLAP_CHARS]
    if len(head) < MIN_OVERLAP_CHARS:
        return 0
    start = first.find(head)
    while start != -1:
        tail = first[start:]
        if second.startswith(tail):
            return len(tail)
        start = first.find(head, start + 1)
    return 0


def _join(first: Passage, second: Passage, second_start: int) -> Passage | None:
    """`first` and `second` as one passage if `second` (whose first chunk has ordinal
    `second_start`) directly follows `first`, else None."""
    if first.doc_id != second.doc_id or first.section != second.section:
        return None
    a, b = first.text.strip(), second.text.strip()
    overlap = _edge_overlap(a, b)
    if overlap:
        text, b_at = a + b[overlap:], len(a) - overlap
    elif first.ordinal >= 0 and second_start == first.ordinal + 1:
        text, b_at = a + "\n" + b, len(a) + 1
    else:
        return None
    starts = _page_starts(first, 0) + _page_starts(second, b_at)
    pages = [x for x in (first.page, second.page) if x is not None]
    ends = [x for x in (first.page_end, second.page_end, *pages) if x is not None]
    best = first if first.score >= second.score else second
    return dataclasses.replace(
        best,
        text=text,
        page=min(pages) if pages else None,
        page_end=max(ends) if ends else None,
        score=max(first.score, second.score),
        ordinal=second.ordinal,  # the last chunk's, so a following chunk still joins
        page_starts=starts,
    )


def _page_starts(p: Passage, shift: int) -> tuple[tuple[int, int], ...]:
    """`p`'s chunk starts and pages, its text starting at `shift` of a merged text."""
    lead = len(p.text) - len(p.text.lstrip())
    if p.page_starts:
        return tuple((max(offset - lead, 0) + shift, page) for offset, page in p.page_starts)
    return ((shift, p.page),) if p.page is not None else ()


class Joins:
    """`_join`'s answers for the pairs of passages already tried, by their identities (the
    passages are kept alive here, so an id is never reused): filling a window merges the
    chosen passages again for each one it tries (`window.fill_budget`), and every pair but the
    new passage's is then a lookup."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, int, int], tuple[Passage | None, Passage, Passage]] = {}

    def join(self, first: Passage, second: Passage, second_start: int) -> Passage | None:
        key = (id(first), id(second), second_start)
        known = self._known.get(key)
        if known is None:
            known = (_join(first, second, second_start), first, second)
            self._known[key] = known
        return known[0]


def merge_adjacent(passages: Sequence[Passage], joins: Joins | None = None) -> list[Passage]:
    """Merge chunks of one document that follow each other into one passage, placed where the
    better-ranked of them was; it keeps that one's chunk id and score. `joins`: the pairs
    tried by earlier calls on the same passages.

    Pairs are tried in order (the first passage, with each after it; then the second...), the
    first that joins is merged, and the order starts again: only pairs with the merged passage
    are new then, so the scan goes on from it, after first trying it with those before it.

    merge_adjacent([P(text="甲。乙丙丁戊己庚辛。"), P(text="乙丙丁戊己庚辛。壬。")])
        -> [P(text="甲。乙丙丁戊己庚辛。壬。")]
    """
    joins = joins or Joins()
    out = list(passages)
    starts = [p.ordinal for p in out]  # a merged passage's ordinal is its last chunk's
    # only chunks of one document and section join (`_join`), and a merged one keeps both:
    # pairs are tried only among the passages of one such key
    keys = [(p.doc_id, p.section) for p in out]

    def merged(i: int, j: int) -> bool:
        """Whether out[i] and out[j] (i < j, one key) join, in either order; if so out[i]
        becomes the merged passage and out[j] goes."""
        joined, start = joins.join(out[i], out[j], starts[j]), starts[i]
        if joined is None:
            joined, start = joins.join(out[j], out[i], starts[i]), starts[j]
        if joined is None:
            return False
        out[i], starts[i] = joined, start
        del out[j], starts[j], keys[j]
        return True

    i = 0
    while i < len(out):
        key = keys[i]
        if not any(merged(i, j) for j in range(i + 1, len(out)) if keys[j] == key):
            i += 1
            continue
        back: int | None = i
        while back is not None:  # the merged passage with those before it, first to last
            i = back
            back = next((b for b in range(i) if keys[b] == key and merged(b, i)), None)
    return out
