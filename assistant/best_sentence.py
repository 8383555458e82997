"""What answers, taken from the passages themselves: a retrieval-only answer leads with the
sentence, or the table rows, that hold the most of the question's terms, cited [n], and shows
the passages once, as sources. `blocks` reads a passage's structure (its heading line, its
sentences, its tables as rows under their header), which the source cards show as it is.

    answering("How many weeks of parental leave?",
              "Leave is paid. Parental leave lasts 12 weeks. Ask HR.").text
        -> "Parental leave lasts 12 weeks."
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from assistant.retrieve.asked_amount import asked_units, states_amount
from assistant.retrieve.lexical import tokenize_query
from core.text import split_sentences, tokenize

GAP = " … "  # where older retrieval-only quotes (kept in conversations) took their best sentence
MOST_ROWS = 3  # table rows an answer quotes at most, under their header
# A sentence end glued to the next sentence by a PDF line join: "compensation.Managers".
_GLUED = re.compile(r"(?<=[a-z][.!?;:])(?=[A-Z][a-z])")


def tidy(text: str) -> str:
    """Sentences a PDF line join glued together set apart again.

    tidy("without compensation.Managers may not") -> "without compensation. Managers may not"
    """
    return _GLUED.sub(" ", text)


def is_row(line: str) -> bool:
    """A table row as chunking writes it: "| cell | cell |"."""
    line = line.strip()
    return len(line) > 1 and line.startswith("|") and line.endswith("|")


def cells(row: str) -> list[str]:
    """cells("| a | b |") -> ["a", "b"]"""
    return [c.strip() for c in row.strip().strip("|").split("|")]


def blocks(text: str, section: Sequence[str] = ()) -> list[tuple[str, list[str]]]:
    """A passage's lines in order as ("heading", [line]) where a line is one of its headings,
    ("table", rows) for a run of table rows (the first is the header) and ("text", sentences).

    blocks("2.1 Entitlement\\nYou get 15 days. Ask HR.\\n| a | b |\\n| x | 1 |",
           ("2 Leave", "2.1 Entitlement"))
        -> [("heading", ["2.1 Entitlement"]), ("text", ["You get 15 days. ", "Ask HR."]),
            ("table", ["| a | b |", "| x | 1 |"])]
    """
    headings = {" ".join(h.split()) for h in section if h.strip()}
    found: list[tuple[str, list[str]]] = []
    for line in tidy(text).splitlines():
        if not line.strip():
            continue
        if is_row(line):
            if found and found[-1][0] == "table":
                found[-1][1].append(line.strip())
            else:
                found.append(("table", [line.strip()]))
        elif " ".join(line.split()) in headings:
            found.append(("heading", [line.strip()]))
        else:
            found.append(("text", split_sentences(line.strip())))
    return found


@dataclass(frozen=True)
class Found:
    """What answers in one passage: `text` to quote (a sentence, or rows under their header as
    a Markdown table), `quote` to mark in the passage (the sentence, or the best row), and how
    many of the question's terms it holds."""

    text: str
    quote: str
    shared: int
    table: bool = False


def markdown_table(header: str, rows: Sequence[str]) -> str:
    """markdown_table("| a | b |", ["| x | 1 |"]) -> "| a | b |\\n| --- | --- |\\n| x | 1 |" """
    rule = "| " + " | ".join("---" for _ in cells(header)) + " |"
    return "\n".join([header, rule, *rows])


class _Asked:
    """What a question asks: its terms (with their paraphrases) and the units of an amount it
    asks for; `holds` scores a text by the terms it shares (a word inside a longer shared one,
    住宿 in 住宿费, not counted again), one more when it states such an amount."""

    def __init__(self, question: str) -> None:
        self.terms = set(tokenize_query(question))
        self.units = asked_units(question)

    def holds(self, text: str) -> int:
        amount = bool(self.units) and states_amount(text, self.units)
        shared = self.terms & set(tokenize(text))
        whole = [t for t in shared if not any(t != u and t in u for u in shared)]
        return len(whole) + int(amount)


def _in_table(asked: _Asked, rows: list[str]) -> Found | None:
    """The rows holding the most of the question, read under their header."""
    header, body = rows[0], rows[1:]
    scored = [(asked.holds(header + "\n" + r), r) for r in body]
    best = max((s for s, _ in scored), default=0)
    if best == 0:
        return None
    hits = [r for s, r in scored if s == best][:MOST_ROWS]
    return Found(markdown_table(header, hits), hits[0], best, table=True)


def answering(question: str, text: str, section: Sequence[str] = ()) -> Found:
    """The sentence or table rows of a passage sharing the most distinct terms with the question
    (the first on ties; the first sentence, sharing 0, when none shares any)."""
    asked = _Asked(question)
    best: Found | None = None
    for kind, lines in blocks(text, section):
        if kind == "heading":
            continue
        found: list[Found | None] = (
            [_in_table(asked, lines)] if kind == "table"
            else [Found(s.strip(), s.strip(), asked.holds(s)) for s in lines])
        for candidate in found:
            if candidate is not None and (best is None or candidate.shared > best.shared):
                best = candidate
    if best is None or best.shared == 0:
        sentences = [s for kind, lines in blocks(text, section) if kind == "text" for s in lines]
        first = sentences[0].strip() if sentences else " ".join(text.split())
        return Found(first, first, 0)
    return best


def chosen(found: Sequence[Found], most: int = 2) -> list[int]:
    """The indexes of what a short answer quotes: the piece holding the most of the question
    (the earliest passage's on ties), and up to `most` - 1 more from other passages holding as
    much where that is two terms or more; the first alone when none holds any.

    chosen([Found("a", "a", 2), Found("b", "b", 3), Found("c", "c", 3)]) -> [1, 2]
    """
    top = max((f.shared for f in found), default=0)
    best = [i for i, f in enumerate(found) if f.shared == top]
    if not best:
        return []
    return best[:most] if top >= 2 else best[:1]


def best_quote(question: str, text: str) -> str:
    """The words of `text` that best answer `question` (what a search result cites): the
    sentence, or the table row, `answering` picks; "" for no text.

    best_quote("sick leave?", "Pay is monthly. Sick leave is 5 days.") -> "Sick leave is 5 days."
    """
    return answering(question, text).quote if text.strip() else ""
