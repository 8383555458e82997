"""Retrieval-only answers lead with the sentence that answers: each quoted passage starts with
its best sentence for the question, then the rest of the passage in its order.

    lead_with_best("How many weeks of parental leave?",
                   "Leave is paid. Parental leave lasts 12 weeks. Ask HR.")
        -> "Parental leave lasts 12 weeks. … Leave is paid. Ask HR."
"""

from __future__ import annotations

from assistant.retrieve.lexical import tokenize_query
from core.text import split_sentences, tokenize

GAP = " … "  # marks where the best sentence was taken from


def best_sentence(question: str, sentences: list[str]) -> int:
    """The index of the sentence sharing the most distinct terms with the question (the first
    on ties; 0 when none shares any).

    best_sentence("sick leave?", ["Pay.", "Sick leave is 5 days."]) -> 1
    """
    asked = set(tokenize_query(question))
    shared = [len(asked & set(tokenize(s))) for s in sentences]
    return max(range(len(sentences)), key=lambda i: (shared[i], -i)) if sentences else 0


def lead_with_best(question: str, text: str) -> str:
    """`text` with its best sentence for `question` moved to the front (unchanged when it is
    already first)."""
    sentences = [s for s in split_sentences(text.strip()) if s.strip()]
    i = best_sentence(question, sentences)
    if i == 0:
        return text.strip()
    rest = "".join(s for j, s in enumerate(sentences) if j != i).strip()
    return sentences[i].strip() + GAP + rest
