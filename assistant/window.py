"""What the model reads: the retrieved passages packed into the prompt's passage budget.

`kb ask`, `kb retrieve` and `kb eval` all go through `fill_budget`, so what retrieval is scored
on (in-window recall) is exactly what the model is given. The budget is filled in three
rounds, each passage added only while the packed block still fits:

1. the best hits, in rank order, until `hit_share` of the budget is used;
2. small-to-big: each of those hits brings in the chunks just before and after it in the same
   section of its document, the best hit's first, so the model reads the sentences around
   the matched one (packing merges them with the hit into one passage);
3. further hits until the budget is full, the last cut at a sentence end.

    fill_window(retrieval.passages, "年假几天？", "zh", counter, settings)
        -> [Passage(text="职工累计工作已满1年不满10年的，年休假5天；…"), …]

Without the answering model's tokenizer on this machine (no local model folder) the window is
planned with `estimate_tokens`: one token per CJK character, one per four other characters,
the same stand-in the packing tests use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from assistant.llm.tokens import local_model_dir, special_tokens
from assistant.merge import Joins, merge_adjacent
from assistant.pack import (
    SEAM_TOKENS,
    Count,
    Deduper,
    pack,
    plan_budget,
    render_passages,
)
from assistant.prompt import build_messages, crosses, defuse
from core.config import Settings
from core.ports import TokenCounter
from core.text import CJK_RUN, Lang
from core.types import Message, Passage, Turn

if TYPE_CHECKING:
    from assistant.retrieve.snapshot import Snapshot

Neighbours = Callable[[Passage], list[Passage]]


def estimate_tokens(text: str) -> int:
    """A tokenizer stand-in: a CJK character is a token, other text ~4 characters a token.
    CJK characters are counted line by line, each line's count kept: packing counts a block
    again with each passage it tries, and only the new passage's lines are read then.

    estimate_tokens("年假5天 annual") -> 5
    """
    cjk = sum(map(_cjk_characters, text.split("\n")))
    return cjk + math.ceil((len(text) - cjk) / 4)


@lru_cache(maxsize=16384)
def _cjk_characters(line: str) -> int:
    return sum(map(len, CJK_RUN.findall(line)))  # by runs: far fewer matches than characters


def window_counter(settings: Settings) -> Count:
    """The answering model's own count when its folder is local, else `estimate_tokens`
    (planning a window needs no server)."""
    model_dir = local_model_dir(settings.llm.model, settings.base_dir)
    if model_dir is None:
        return estimate_tokens
    from assistant.llm.tokens import LocalTokenCounter

    counter: TokenCounter = LocalTokenCounter(
        model_dir, trust_remote_code=settings.llm.trust_remote_code
    )
    return counter.count


def no_neighbours(passage: Passage) -> list[Passage]:
    return []


def snapshot_neighbours(snap: Snapshot) -> Neighbours:
    """The chunks just before and after a passage's chunk in the same section of its document,
    scored as the passage (so packing keeps them beside it), with its review note (the same
    document's)."""

    def around(p: Passage) -> list[Passage]:
        row = snap.row_of.get(p.chunk_id)
        if row is None:
            return []
        out = []
        for other in (row - 1, row + 1):
            if (
                0 <= other < len(snap.ids)
                and snap.doc_ids[other] == snap.doc_ids[row]
                and snap.sections[other] == snap.sections[row]
                and abs(snap.ordinals[other] - snap.ordinals[row]) == 1
            ):
                out.append(replace(snap.passage(other, p.score), review_due=p.review_due))
        return out

    return around


def fill_budget(
    hits: Sequence[Passage],
    budget: int,
    count: Count,
    neighbours: Neighbours = no_neighbours,
    hit_share: float = 1.0,
) -> list[Passage]:
    """The block of passages to show (in document order, as `pack` shows them) that fills
    `budget` tokens: hits until `hit_share` of it, their neighbours, then more hits (the module
    docstring's three rounds).

    fill_budget([a, b], 1000, len) -> [a, b]   (both fit; no neighbours given)
    """

    chosen: list[Passage] = []
    used = 0  # an upper bound of the chosen block's tokens: its last exact count plus the own
    # blocks of those added since
    deduped, taken = Deduper(), 0  # the first `taken` of the chosen, deduplicated
    joins = Joins()  # the pairs of them already tried for merging

    def take(p: Passage, limit: float) -> bool:
        """Add `p` to the chosen if it joins them within `limit`: by the running sum while
        that is clearly under it, else by packing them (merged and deduplicated) and counting."""
        nonlocal used, taken, deduped
        alone = count(render_passages([p])) + SEAM_TOKENS
        if used + alone > limit:
            for q in chosen[taken:]:
                deduped.add(q)
            trial = deduped.copy()
            trial.add(p)
            exact = count(render_passages(merge_adjacent(trial.passages(), joins)))
            if exact > limit:
                taken = len(chosen)
                return False
            used = exact  # still a bound, and a tighter one: fewer blocks packed to count
            deduped, taken = trial, len(chosen) + 1  # `p` is deduplicated already
        else:
            used += alone
        chosen.append(p)
        return True

    rest = list(hits)
    while rest and take(rest[0], budget * hit_share):
        rest.pop(0)
    for hit in list(chosen):
        for extra in neighbours(hit):
            take(extra, budget)
    return pack([*chosen, *rest], budget, count)


def fill_window(
    passages: Sequence[Passage],
    question: str,
    lang: str,
    count: Count,
    settings: Settings,
    neighbours: Neighbours = no_neighbours,
) -> list[Passage]:
    """The passages as packed for a question asked without history, in document order, within
    the budget `plan_budget` leaves them."""
    prompt_lang: Lang = "zh" if lang == "zh" else "en"
    budget = plan_budget(
        question,
        [],
        prompt_lang,
        count,
        max_model_len=settings.llm.max_model_len,
        answer_tokens=settings.llm.answer_tokens,
    )
    return fill_budget(
        passages, budget.passages, count, neighbours, settings.retrieve.hit_share
    )


def pack_prompt(
    question: str,
    lang: Lang,
    history: Sequence[Turn],
    passages: list[Passage],
    neighbours: Neighbours,
    counter: TokenCounter,
    settings: Settings,
) -> tuple[list[Passage], list[Message], int]:
    """The passages that fit the model's window beside the rules, question and recent turns
    (answer.history_turns), the messages that send them, and a bound on the prompt's tokens.
    GenerationError when the model's tokenizer cannot be loaded.

        packed, messages, bound = pack_prompt(q, "en", [], passages, neighbours, counter, s)
    """
    kept = settings.answer.history_turns
    turns = list(history)[-kept:] if kept else []
    past = [
        m
        for t in turns
        for m in (
            {"role": "user", "content": t.question},
            {"role": "assistant", "content": t.answer},
        )
    ]
    specials = special_tokens(counter)
    across = crosses(lang, passages)  # passages in the other language than the question's
    budget = plan_budget(
        question,
        past,
        lang,
        counter.count,
        max_model_len=settings.llm.max_model_len,
        answer_tokens=settings.llm.answer_tokens,
        specials=specials,
        across=across,
    )
    packed = fill_budget(
        passages, budget.passages, counter.count, neighbours, settings.retrieve.hit_share
    )
    block = defuse(render_passages(packed), specials)  # counted as sent
    # The prompt is at most what the budget left the rest (rules, question, history,
    # the template and its seams: `plan_budget`'s margin) plus the block, which `pack`
    # counted (a cached count): the client need not count the prompt before sending it.
    llm = settings.llm
    bound = llm.max_model_len - llm.answer_tokens - budget.passages + counter.count(block)
    messages = build_messages(question, block, budget.history, lang, specials, across)
    return packed, messages, bound
