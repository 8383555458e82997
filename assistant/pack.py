"""Packing retrieved passages into what is left of the model's window.

    budget = max_model_len − answer reserve − tokens(the prompt without passages)
             − margin

where "the prompt without passages" is the whole chat prompt as the server renders it (system
rules, kept history, the question and the template's own tokens); the oldest history turns are
dropped first when too little is left. Passages are then deduplicated (same chunk, one text
inside another, or nearly the same text), adjacent chunks of one document are merged (consecutive
ordinals, or one ends with the text the next starts with: the chunker's overlap),
taken by relevance, and added until the budget is reached; the passage that does not fit is
cut at a sentence end. The block shows them in document order (file, then position in it), not
by score: questions that pack the same passages then send the same prompt prefix, which vLLM's
prefix cache reuses (docs/gpu.md). The block numbers passages [1]..[n] in the order shown.

    render_passages(pack(passages, 1500, count)) -> "[1] 《年休假办法》 p.1\\n职工…\\n\\n[2] …"
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from assistant.merge import merge_adjacent
from assistant.prompt import build_messages, render_chat, source_label
from core.errors import PromptTooLong
from core.text import Lang, split_sentences
from core.types import Message, Passage

Count = Callable[[str], int]

NEAR_DUPLICATE = 0.8  # Jaccard similarity of character bigrams above which one copy goes
MARGIN_TOKENS = 8  # room for token merges across the seams of the rendered prompt
# Tokens a passage may add where it joins the block ("\n\n", a two-digit [n] where it was [1]).
SEAM_TOKENS = 4

_WS = re.compile(r"\s+")


def render_passages(passages: Sequence[Passage]) -> str:
    """The numbered block as it goes into the prompt.

    render_passages([Passage("c", "d", "a.pdf", "年假5天。", page=3, title="年休假")])
        -> "[1] 《年休假》 p.3\\n年假5天。"
    """
    return "\n\n".join(
        f"[{n}] {source_label(p)}\n{p.text.strip()}" for n, p in enumerate(passages, start=1)
    )


@lru_cache(maxsize=4096)
def _norm(text: str) -> str:
    return _WS.sub("", text).casefold()


@lru_cache(maxsize=4096)
def _bigrams(text: str) -> frozenset[str]:
    return frozenset({text[i : i + 2] for i in range(len(text) - 1)} or {text})


@lru_cache(maxsize=65536)
def _near_duplicate(a: frozenset[str], b: frozenset[str]) -> bool:
    """Character-bigram Jaccard >= NEAR_DUPLICATE (sets of too different sizes never are).
    Cached: filling a window dedupes the same passages again and again (`_bigrams` hands out
    one set per text, whose hash Python keeps)."""
    small, large = sorted((len(a), len(b)))
    if small < NEAR_DUPLICATE * large:
        return False
    shared = len(a & b)
    return shared / (small + large - shared) >= NEAR_DUPLICATE  # the union's size, not built


class Deduper:
    """`dedupe`, one passage at a time: a block grown passage by passage is deduplicated in
    one pass instead of once per passage added (`window.fill_budget`)."""

    def __init__(self) -> None:
        self._kept: list[tuple[Passage, str, frozenset[str]]] = []

    def add(self, p: Passage) -> None:
        """Keep `p` unless it repeats a kept passage; a kept one it contains gives way to it."""
        kept = self._kept
        norm = _norm(p.text)
        grams = _bigrams(norm)
        if any(
            p.chunk_id == q.chunk_id
            or norm in qnorm
            or _near_duplicate(grams, qgrams)
            for q, qnorm, qgrams in kept
        ):
            return
        inside = [i for i, (_, qnorm, _) in enumerate(kept) if qnorm in norm]
        if not inside:
            kept.append((p, norm, grams))
            return
        score = max([p.score, *(kept[i][0].score for i in inside)])
        kept[inside[0]] = (dataclasses.replace(p, score=score), norm, grams)
        for i in reversed(inside[1:]):
            del kept[i]

    def copy(self) -> Deduper:
        other = Deduper()
        other._kept = list(self._kept)
        return other

    def passages(self) -> list[Passage]:
        return [p for p, _, _ in self._kept]


def dedupe(passages: Sequence[Passage]) -> list[Passage]:
    """Drop repeats, keeping the better-ranked copy: the same chunk, a text contained in an
    earlier one's, or a nearly identical text (character-bigram Jaccard >= 0.8). When a later
    passage contains an earlier one, the container takes the earlier one's place.

    dedupe([a, a, b]) -> [a, b]
    """
    deduper = Deduper()
    for p in passages:
        deduper.add(p)
    return deduper.passages()


def _cut(
    kept: list[Passage], p: Passage, budget: int, count: Count, kept_bound: int | None = None
) -> Passage | None:
    """The longest sentence-prefix of `p` that fits after `kept` (characters, if it is the
    only passage and not even one sentence fits), or None. Given `kept_bound` (at least the
    tokens of `kept`'s block), the search runs on the prefix's own count first and counts the
    whole block only from there up: one or two counts of it instead of one per halving."""

    def fits(text: str) -> bool:
        trial = in_document_order([*kept, dataclasses.replace(p, text=text)])
        return count(render_passages(trial)) <= budget

    sentences = split_sentences(p.text.strip())
    lo, hi = 0, len(sentences)  # the largest m with fits(sentences[:m]) in [lo, hi]
    if kept_bound is not None:

        def bound(m: int) -> int:
            alone = render_passages([dataclasses.replace(p, text="".join(sentences[:m]))])
            return kept_bound + count(alone) + SEAM_TOKENS

        a, b = 0, len(sentences)  # the largest m whose bound fits
        while a < b:
            mid = (a + b + 1) // 2
            if bound(mid) <= budget:
                a = mid
            else:
                b = mid - 1
        if a and fits("".join(sentences[:a])):
            lo = a
            while lo < hi and fits("".join(sentences[: lo + 1])):
                lo += 1
            hi = lo
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits("".join(sentences[:mid])):
            lo = mid
        else:
            hi = mid - 1
    if lo:
        return dataclasses.replace(p, text="".join(sentences[:lo]).strip())
    if kept or not sentences:
        return None
    chars = _fitting_chars(sentences[0], fits)
    return dataclasses.replace(p, text=sentences[0][:chars] + "…") if chars else None


def _fitting_chars(sentence: str, fits: Callable[[str], bool]) -> int:
    """The most characters of `sentence` that fit, cut with "…" (0: none).

    _fitting_chars("年休假五天。", lambda t: len(t) <= 4) -> 3
    """
    lo, hi = 0, len(sentence)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(sentence[:mid] + "…"):
            lo = mid
        else:
            hi = mid - 1
    return lo


def in_document_order(passages: Sequence[Passage]) -> list[Passage]:
    """`passages` sorted by file, document, then position in it: the same set always comes out
    in the same order, whatever the scores.

    in_document_order([P(file="b.pdf"), P(file="a.pdf", ordinal=7), P(file="a.pdf", ordinal=2)])
        -> [a.pdf #2, a.pdf #7, b.pdf]
    """
    return sorted(passages, key=lambda p: (p.file, p.doc_id, p.ordinal, p.page or 0, p.chunk_id))


def pack(passages: Sequence[Passage], budget_tokens: int, count: Count) -> list[Passage]:
    """The most relevant passages whose rendered block counts at most `budget_tokens`, in
    document order (`in_document_order`).

    pack([long_a, dup_of_a, b], 300, len) -> [a cut to fit at a sentence end]
    """
    ordered = sorted(merge_adjacent(dedupe(passages)), key=lambda p: -p.score)
    kept: list[Passage] = []
    # Counting the whole block after every passage re-tokenizes it again and again (most of the
    # pipeline's time before the request: bench/query/overhead.py). While the sum of each passage's
    # own count (plus its seam) stays within the budget, the block does too, so it is counted
    # only near the budget; the end checks the block exactly and, should the sum have been no
    # bound, packs again counting every step, as before.
    used = 0
    for p in ordered:
        alone = count(render_passages([p])) + SEAM_TOKENS
        if used + alone <= budget_tokens:
            kept, used = in_document_order([*kept, p]), used + alone
            continue
        trial = in_document_order([*kept, p])
        exact = count(render_passages(trial))
        if exact <= budget_tokens:
            kept, used = trial, exact
            continue
        cut = _cut(kept, p, budget_tokens, count, kept_bound=used)
        if cut is not None:
            kept = in_document_order([*kept, cut])
        break
    if kept and count(render_passages(kept)) > budget_tokens:
        return _pack_counting_each(ordered, budget_tokens, count)
    return kept


def _pack_counting_each(
    ordered: Sequence[Passage], budget_tokens: int, count: Count
) -> list[Passage]:
    """`pack`'s loop with the whole block counted after each passage."""
    kept: list[Passage] = []
    for p in ordered:
        trial = in_document_order([*kept, p])
        if count(render_passages(trial)) <= budget_tokens:
            kept = trial
            continue
        cut = _cut(kept, p, budget_tokens, count)
        if cut is not None:
            kept = in_document_order([*kept, cut])
        break
    return kept


@dataclass(frozen=True)
class Budget:
    """Tokens left for the passages block, and the history turns that were kept."""

    passages: int
    history: list[Message]


def plan_budget(
    question: str,
    history: Sequence[Message],
    lang: Lang,
    count: Count,
    *,
    max_model_len: int,
    answer_tokens: int,
    min_passage_tokens: int = 0,
    margin: int = MARGIN_TOKENS,
    specials: frozenset[str] = frozenset(),
    across: bool = False,
) -> Budget:
    """What the passages may use once the answer, the rules, the question, the history and the
    chat template have theirs; the oldest turns (user + assistant pairs) go first while fewer
    than `min_passage_tokens` are left. Raises PromptTooLong when nothing is left. `across`: the
    rules for passages in the other language are sent too (`prompt.crosses`).

    plan_budget("年假几天？", [], "zh", len, max_model_len=4096, answer_tokens=512).passages
        -> 3402
    """
    kept = list(history)
    while True:
        fixed = count(render_chat(build_messages(question, "", kept, lang, specials, across)))
        left = max_model_len - answer_tokens - fixed - margin
        if left >= max(min_passage_tokens, 1) or not kept:
            break
        drop = 2 if len(kept) >= 2 and kept[0]["role"] == "user" else 1
        kept = kept[drop:]
    if left <= 0:
        raise PromptTooLong(
            f"the question and rules take {fixed} tokens of {max_model_len} "
            f"(answer reserve {answer_tokens}): no room for passages; shorten the question"
        )
    return Budget(passages=left, history=kept)
