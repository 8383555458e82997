"""The source view of a citation without a page (a Word passage): its document opened at the
cited section, the passages of that chapter in document order around the cited one.

`section_span` picks the rows (pure: heading paths in, a range out); `overlap` measures what a
chunk repeats from the end of the one before it, which is shown once, so the passages read as
the document does; `section_passages` applies both to a retrieval snapshot, after the group check.

    section_span([("1 Scope",), ("2 Leave",), ("2 Leave", "2.1 Annual")], 2, 10) -> range(1, 3)
    section_span([("Handbook", "1 Scope"), ("Handbook", "2 Leave")], 1, 10) -> range(1, 2)
    overlap("Leave is paid. Carry over 5 days.", "Carry over 5 days. Ask HR.") -> 18
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from assistant.retrieve.snapshot import Snapshot
from core.errors import AccessDenied
from core.types import Passage

SECTION_LIMIT = 60  # passages at most in one view (a long chapter is shown around the cited one)
MIN_OVERLAP = 12  # characters: a shorter repeated start is a coincidence, not the chunk overlap


def section_span(sections: Sequence[tuple[str, ...]], at: int, limit: int) -> range:
    """The rows of the chapter holding row `at`, at most `limit` of them centred on `at`. A
    chapter is a heading one level below those every headed row shares (a document's title
    heads them all); rows without a heading go together.

    section_span([("T", "1 Scope"), ("T", "2 Leave"), ("T", "2 Leave", "2.1")], 2, 9)
        -> range(1, 3)
    """
    headed = [s for s in sections if s]
    shared = 0
    while headed and all(len(s) > shared and s[shared] == headed[0][shared] for s in headed):
        shared += 1
    top = sections[at][: shared + 1]
    start, end = at, at + 1
    while start > 0 and sections[start - 1][: shared + 1] == top:
        start -= 1
    while end < len(sections) and sections[end][: shared + 1] == top:
        end += 1
    if end - start > limit:
        start = max(start, min(at - limit // 2, end - limit))
        end = start + limit
    return range(start, end)


def overlap(before: str, text: str) -> int:
    """How many characters `text` starts with that end `before` (the chunk overlap); 0 for
    fewer than MIN_OVERLAP."""
    for size in range(min(len(before), len(text)), MIN_OVERLAP - 1, -1):
        if before.endswith(text[:size]):
            return size
    return 0


def section_passages(
    snap: Snapshot, chunk_id: str, groups: Sequence[str], limit: int = SECTION_LIMIT
) -> list[Passage]:
    """The passages around `chunk_id` in its chapter, in document order, each overlap shown
    once (the cited passage keeps its whole text; the one before it gives up its repeated
    end). AccessDenied when the chunk is unknown or its document outside `groups`."""
    row = snap.row_of.get(chunk_id)
    if row is None or not snap.allowed(groups)[row]:
        raise AccessDenied(f"passage {chunk_id}: not found or not visible to your groups")
    doc = snap.doc_ids[row]
    first, last = row, row + 1  # the snapshot keeps a document's chunks together, in order
    while first > 0 and snap.doc_ids[first - 1] == doc:
        first -= 1
    while last < len(snap.ids) and snap.doc_ids[last] == doc:
        last += 1
    span = section_span(snap.sections[first:last], row - first, limit)
    out: list[Passage] = []
    for i in span:
        passage = snap.passage(first + i, groups=groups)
        size = overlap(out[-1].text, passage.text) if out else 0
        if size and first + i == row:
            out[-1] = replace(out[-1], text=out[-1].text[:-size].rstrip())
        elif size:
            passage = replace(passage, text=passage.text[size:].lstrip())
        out.append(passage)
    return out
