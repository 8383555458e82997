"""The answers given without the model's, or instead of it: the exits of `Assistant.ask_stream`
(assistant/answer.py) other than a generated answer and an approved one. Each is built from the
passages retrieval found; the assistant then times and records it like any other.

    abstained("en", passages).mode -> "abstained"   # the nearest three as pointers
    retrieval_only("年假几天？", "zh", passages, "model server down").mode -> "retrieval_only"
    fallback("Annual leave?", "en", packed, "No citation supports it.", raw).mode -> "fallback"

A retrieval-only answer (and a fallback's) is short: the sentence or table rows that answer,
quoted with [n] (assistant/best_sentence.py), the best three passages as its sources, each
citation marking what answers in it. On weak evidence (`unsure`) it quotes nothing and says so,
naming the closest passages; the ledger keeps it as a knowledge gap.
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.best_sentence import answering, chosen
from assistant.prompt import FALLBACK, abstention_text, nothing_found_text, quoted_text
from core.text import Lang
from core.types import Answer, Citation, Passage


def abstained(lang: Lang, passages: list[Passage]) -> Answer:
    """The documents don't cover the question: the nearest three as pointers."""
    return Answer(
        abstention_text(lang, passages[:3]),
        abstained=True,
        passages=passages[:3],
        mode="abstained",
    )


def retrieval_only(
    searched_for: str, lang: Lang, passages: Sequence[Passage], reason: str,
    unsure: bool = False,
) -> Answer:
    """The model is unavailable (`reason`): what answers in the best passages for what was
    searched for, quoted instead; on weak evidence (`unsure`), the closest passages named."""
    shown, citations, text = _quoted(searched_for, lang, passages, unsure)
    return Answer(text, citations=citations, passages=shown, mode="retrieval_only",
                  notice=reason, unsure=unsure)


def fallback(
    searched_for: str, lang: Lang, packed: list[Passage], why: str, raw_answer: str,
    unsure: bool = False,
) -> Answer:
    """The model's answer could not be trusted (`why`): what answers in the best passages
    quoted after it, its text kept in `raw_answer`."""
    _, citations, text = _quoted(searched_for, lang, packed, unsure)
    return Answer(
        text if unsure else FALLBACK[lang] + "\n" + text,
        citations=citations,
        passages=list(packed),  # every packed passage: the model's [n] refer to them
        mode="fallback",
        notice=why,
        raw_answer=raw_answer,
        unsure=unsure,
    )


def _quoted(
    question: str, lang: Lang, passages: Sequence[Passage], unsure: bool
) -> tuple[list[Passage], list[Citation], str]:
    """The best three passages, the best first whatever their order, a citation of each that
    quotes what answers in it, and the answer's text: those quotes (`quoted_text`), or on weak
    evidence the passages named (`nothing_found_text`)."""
    shown = sorted(passages, key=lambda p: -p.score)[:3]
    found = [answering(question, p.text, p.section) for p in shown]
    citations = [
        Citation(n, p.file, p.page_at(max(p.text.find(f.quote), 0)), p.section_path, f.quote,
                 p.chunk_id, page_label=p.page_label, review_due=p.review_due)
        for n, (p, f) in enumerate(zip(shown, found, strict=True), 1)
    ]
    if unsure:
        return shown, citations, nothing_found_text(lang, shown)
    quotes = [(i + 1, found[i].text, found[i].table) for i in chosen(found)]
    return shown, citations, quoted_text(lang, quotes)
