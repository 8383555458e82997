"""An approved answer checked as a generated one is before it is saved: its [n] numbered in the
order the text cites them, and each [n] held by its passage (assistant/cite.py's check, the
one every generated answer gets).

    cited_order("Apply online [2]. Pay is 5 days [1].", 2)
        -> ("Apply online [1]. Pay is 5 days [2].", [2, 1])
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.cite import Similarity, parse_markers, verify
from core.text import split_sentences
from core.types import Passage


def cited_order(text: str, count: int) -> tuple[str, list[int]]:
    """`text` with its markers renumbered by where each number is first cited, and the old
    numbers of 1..`count` in their new order (those the text does not cite last)."""
    markers = parse_markers(text)
    order = list(dict.fromkeys(n for m in markers for n in m.numbers if 1 <= n <= count))
    order += [n for n in range(1, count + 1) if n not in order]
    new = {old: i for i, old in enumerate(order, 1)}
    out: list[str] = []
    pos = 0
    for m in markers:
        out.append(text[pos:m.start])
        out.append("".join(f"[{new.get(n, n)}]" for n in m.numbers))
        pos = m.end
    out.append(text[pos:])
    return "".join(out), order


def unsupported(text: str, passages: Sequence[Passage], min_support: float,
                min_similarity: float, similarity: Similarity | None = None
                ) -> list[tuple[int, str]]:
    """Each [n] whose passage (`passages[n - 1]`) holds nothing of a sentence that cites it,
    with that sentence."""
    checked = verify(text, passages, min_support=min_support, min_similarity=min_similarity,
                     similarity=similarity)
    held = {c.n for c in checked.citations if c.supported}
    found: list[tuple[int, str]] = []
    for sentence in split_sentences(text):
        for m in parse_markers(sentence):
            found += [(n, sentence.strip()) for n in m.numbers
                      if n not in held and 1 <= n <= len(passages)
                      and n not in {f[0] for f in found}]
    return found
