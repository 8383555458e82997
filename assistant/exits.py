"""The answers given without the model's, or instead of it: the exits of `Assistant.ask_stream`
(assistant/answer.py) other than a generated answer and an approved one. Each is built from the
passages retrieval found; the assistant then times and records it like any other.

    abstained("en", passages).mode -> "abstained"   # the nearest three as pointers
    retrieval_only("年假几天？", "zh", passages, "model server down").mode -> "retrieval_only"
    fallback("Annual leave?", "en", packed, "No citation supports it.", raw).mode -> "fallback"
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.best_sentence import quote_best
from assistant.prompt import abstention_text, retrieval_only_text
from core.text import Lang
from core.types import Answer, Passage


def abstained(lang: Lang, passages: list[Passage]) -> Answer:
    """The documents don't cover the question: the nearest three as pointers."""
    return Answer(
        abstention_text(lang, passages[:3]),
        abstained=True,
        passages=passages[:3],
        mode="abstained",
    )


def retrieval_only(
    searched_for: str, lang: Lang, passages: Sequence[Passage], reason: str
) -> Answer:
    """The model is unavailable (`reason`): the best passages for what was searched for,
    quoted instead."""
    shown, citations = quote_best(searched_for, passages)
    return Answer(
        retrieval_only_text(lang, shown, fallback=False),
        citations=citations,
        passages=shown,
        mode="retrieval_only",
        notice=reason,
    )


def fallback(
    searched_for: str, lang: Lang, packed: list[Passage], why: str, raw_answer: str
) -> Answer:
    """The model's answer could not be trusted (`why`): the best passages quoted after it, its
    text kept in `raw_answer`."""
    shown, citations = quote_best(searched_for, packed)
    return Answer(
        retrieval_only_text(lang, shown, fallback=True),
        citations=citations,
        passages=list(packed),  # every packed passage: the model's [n] refer to them
        mode="fallback",
        notice=why,
        raw_answer=raw_answer,
    )
