"""Retrieval-only answers lead with the sentence that answers: each quoted passage starts with
its best sentence for the question, then the rest of the passage in its order; `quote_best`
picks the passages such an answer quotes and cites.

    lead_with_best("How many weeks of parental leave?",
                   "Leave is paid. Parental leave lasts 12 weeks. Ask HR.")
        -> "Parental leave lasts 12 weeks. … Leave is paid. Ask HR."
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from assistant.retrieve.lexical import tokenize_query
from core.text import split_sentences, tokenize
from core.types import Citation, Passage

GAP = " … "  # marks where the best sentence was taken from


def best_sentence(question: str, sentences: list[str]) -> int:
    """The index of the sentence sharing the most distinct terms with the question (the first
    on ties; 0 when none shares any).

    best_sentence("sick leave?", ["Pay.", "Sick leave is 5 days."]) -> 1
    """
    asked = set(tokenize_query(question))
    shared = [len(asked & set(tokenize(s))) for s in sentences]
    return max(range(len(sentences)), key=lambda i: (shared[i], -i)) if sentences else 0


def best_quote(question: str, text: str) -> str:
    """The sentence of `text` that best answers `question` (the words a search result cites).

    best_quote("sick leave?", "Pay is monthly. Sick leave is 5 days.") -> "Sick leave is 5 days."
    """
    sentences = [s for s in split_sentences(text.strip()) if s.strip()]
    return sentences[best_sentence(question, sentences)].strip() if sentences else ""


def lead_with_best(question: str, text: str) -> str:
    """`text` with its best sentence for `question` moved to the front (unchanged when it is
    already first)."""
    sentences = [s for s in split_sentences(text.strip()) if s.strip()]
    i = best_sentence(question, sentences)
    if i == 0:
        return text.strip()
    rest = "".join(s for j, s in enumerate(sentences) if j != i).strip()
    return sentences[i].strip() + GAP + rest


def quote_best(question: str, passages: Sequence[Passage]) -> tuple[list[Passage], list[Citation]]:
    """The best three passages, the best first whatever their order, each leading with its
    best sentence for the question, and a citation of each."""
    best = sorted(passages, key=lambda p: -p.score)[:3]
    shown = [replace(p, text=lead_with_best(question, p.text)) for p in best]
    citations = [
        Citation(
            n, p.file, p.page, p.section_path, p.text[:300], p.chunk_id, page_label=p.page_label,
            review_due=p.review_due,
        )
        for n, p in enumerate(shown, 1)
    ]
    return shown, citations
