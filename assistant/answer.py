"""The query pipeline's public face: question → retrieve → pack → generate → cite.

    assistant = Assistant(store, generator, counter)       # ui/wiring.py builds the parts
    answer = assistant.ask("How many days of annual leave can I carry over?", groups=["all"])
    for piece in assistant.ask_stream(question, groups=["all"]):
        ...  # str pieces are the answer as it streams; the last item is the finished Answer

When retrieval is not confident the model is skipped and the answer says the documents don't
cover the question, with the nearest documents as pointers. When the model server cannot be
reached the answer quotes the best passages instead (retrieval-only mode). A model that starts
repeating itself is stopped at once (assistant/loopguard.py); an answer that keeps no verified
citation, or was cut by the guard, gives way to the best passages (mode "fallback", the model's
text kept in `raw_answer`). Every answer is recorded in the ledger with its cited chunks and
timings.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from assistant.answerable import load_model
from assistant.best_sentence import lead_with_best
from assistant.cite import attribute, verify
from assistant.loopguard import LoopGuard
from assistant.pack import plan_budget, render_passages
from assistant.prompt import abstention_text, build_messages, defuse, retrieval_only_text
from assistant.retrieve.retriever import Retrieval, Retriever
from assistant.section import section_passages
from assistant.tokens import special_tokens
from assistant.window import fill_budget, snapshot_neighbours
from core.config import Settings
from core.errors import AccessDenied, GenerationError, KbError
from core.ports import Generator, Reranker, TokenCounter
from core.text import Lang
from core.types import Answer, Citation, Passage, Turn
from store.store import Store

logger = logging.getLogger(__name__)

MIDWAY_FAILURE = {
    "zh": "（回答生成中断：模型服务出错，以上内容可能不完整。）",
    "en": "(The answer was cut short: the model server failed; what is above may be incomplete.)",
}
LOOPED = {
    "zh": "模型开始重复同样的内容，已被中止。",
    "en": "The model started repeating itself and was stopped.",
}
UNSUPPORTED = {
    "zh": "模型的回答中没有能被原文证实的引用。",
    "en": "None of the model's citations could be confirmed in the documents.",
}


def should_abstain(retrieval: Retrieval, settings: Settings) -> bool:
    """Too little evidence to answer: no passage, or the answerability model of the question's
    language (retrieve.answerable_model; assistant/answerable.py) puts the chance that the
    documents answer it below its threshold."""
    if not retrieval.passages:
        return True
    path = settings.retrieve.answerable_model
    model = load_model(str(settings.base_dir / path) if path else "")
    return model.refuses(retrieval.evidence, retrieval.lang)


def answer_to_json(answer: Answer) -> dict[str, Any]:
    """The stable JSON of `kb ask --json` and `POST /api/ask`."""
    return {
        "answer": answer.answer,
        "abstained": answer.abstained,
        "mode": answer.mode,
        "unverified": answer.unverified,
        "citations": [
            {
                "n": c.n,
                "file": c.file,
                "page": c.page,
                "page_label": c.page_label or None,
                "section": c.section,
                "quote": c.quote,
            }
            for c in answer.citations
        ],
        "passages": [passage_to_json(p, n) for n, p in enumerate(answer.passages, 1)],
        "model_answer": answer.raw_answer if answer.mode == "fallback" else None,
        "timings_ms": {k: round(v, 1) for k, v in answer.timings_ms.items()},
    }


def passage_to_json(p: Passage, rank: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "file": p.file,
        "page": p.page,
        "page_end": p.page_end,
        "page_label": p.page_label or None,
        "section": p.section_path,
        "text": p.text,
        "score": round(p.score, 6),
        "title": p.title,
        "superseded": p.superseded,
        "chunk_id": p.chunk_id,
    }


class Assistant:
    """Answers many questions over one store with one model client (thread-safe for
    concurrent askers: retrieval snapshots are read-only, the client's HTTP pool is shared).
    It receives its parts; `ui/wiring.py` builds them once per process."""

    def __init__(
        self,
        store: Store,
        generator: Generator,
        counter: TokenCounter,
        reranker: Reranker | None = None,
    ) -> None:
        self.settings: Settings = store.settings
        self.store = store
        self.generator = generator
        self.counter = counter
        self.retriever = Retriever(self.settings, store, reranker, self._count_ahead)
        self._lock = threading.Lock()

    def _count_ahead(self, texts: Sequence[str]) -> None:
        """Count `texts`' lines ahead, where the counter can (`LocalTokenCounter.prime`): the
        retriever calls it while it waits for its dense side. A counter that cannot be loaded
        is left to packing, which reports it."""
        prime = getattr(self.counter, "prime", None)
        if prime is None:
            return
        try:
            prime(texts)
        except GenerationError as exc:
            logger.debug("lines not counted ahead: %s", exc)

    # --- retrieval ------------------------------------------------------------------------
    def retrieve(self, question: str, groups: Sequence[str]) -> list[Passage]:
        with self._lock:
            return self.retriever.retrieve(question, groups).passages

    def source(self, chunk_id: str, groups: Sequence[str]) -> Passage:
        """A passage by chunk id; AccessDenied when unknown or outside `groups`."""
        with self._lock:
            snap = self.retriever.snapshot()
            row = snap.row_of.get(chunk_id)
            if row is None or not snap.allowed(groups)[row]:
                raise AccessDenied(f"passage {chunk_id}: not found or not visible to your groups")
            return snap.passage(row, groups=groups)

    def section(self, chunk_id: str, groups: Sequence[str]) -> list[Passage]:
        """The passages of a passage's chapter around it, in document order (the source view of
        a Word citation); AccessDenied when unknown or outside `groups`."""
        with self._lock:
            return section_passages(self.retriever.snapshot(), chunk_id, groups)

    def document_path(self, doc_id: str, groups: Sequence[str]) -> Path:
        """The original file of a document; AccessDenied when unknown or outside `groups`."""
        record = self.store.ledger.document(doc_id)
        if record is None or record.status != "ok" or not set(groups) & set(record.meta.groups):
            raise AccessDenied(f"document {doc_id}: not found or not visible to your groups")
        return Path(record.meta.root) / record.meta.path

    # --- answering ------------------------------------------------------------------------
    def ask(
        self, question: str, groups: Sequence[str], history: Sequence[Turn] = (), user: str = ""
    ) -> Answer:
        final: Answer | None = None
        for item in self.ask_stream(question, groups, history, user):
            if isinstance(item, Answer):
                final = item
        assert final is not None  # ask_stream always ends with an Answer
        return final

    def ask_stream(
        self, question: str, groups: Sequence[str], history: Sequence[Turn] = (), user: str = ""
    ) -> Iterator[str | Answer]:
        started = time.perf_counter()
        question = question.strip()
        if not question:
            raise KbError("empty question: type a question about the policies")
        with self._lock:
            retrieval = self.retriever.retrieve(question, groups)
            neighbours = snapshot_neighbours(self.retriever.snapshot())
        timings = {"retrieve": retrieval.timings_ms["retrieve"]}
        lang: Lang = "zh" if retrieval.lang == "zh" else "en"
        if should_abstain(retrieval, self.settings):
            answer = Answer(
                abstention_text(lang, retrieval.passages[:3]),
                abstained=True,
                passages=retrieval.passages[:3],
                mode="abstained",
            )
            yield from self._finish(answer, question, user, started, timings)
            return
        counter, client = self.counter, self.generator
        t_pack = time.perf_counter()
        turns = (
            list(history)[-self.settings.answer.history_turns :]
            if self.settings.answer.history_turns
            else []
        )
        past = [
            m
            for t in turns
            for m in (
                {"role": "user", "content": t.question},
                {"role": "assistant", "content": t.answer},
            )
        ]
        try:
            specials = special_tokens(counter)
            budget = plan_budget(
                question,
                past,
                lang,
                counter.count,
                max_model_len=self.settings.llm.max_model_len,
                answer_tokens=self.settings.llm.answer_tokens,
                specials=specials,
            )
            packed = fill_budget(
                retrieval.passages,
                budget.passages,
                counter.count,
                neighbours,
                self.settings.retrieve.hit_share,
            )
            block = defuse(render_passages(packed), specials)  # counted as sent
            # The prompt is at most what the budget left the rest (rules, question, history,
            # the template and its seams: `plan_budget`'s margin) plus the block, which `pack`
            # counted (a cached count): the client need not count the prompt before sending it.
            llm = self.settings.llm
            bound = llm.max_model_len - llm.answer_tokens - budget.passages + counter.count(block)
        except GenerationError as exc:
            # also a token counter that cannot be loaded: no model to count for
            yield from self._retrieval_only(
                retrieval.passages, lang, str(exc), question, user, started, timings
            )
            return
        messages = build_messages(question, block, budget.history, lang, specials)
        timings["pack"] = (time.perf_counter() - t_pack) * 1000
        pieces: list[str] = []
        notice = ""
        repeats = self.settings.answer.loop_max_repeats
        guard = LoopGuard(max_repeats=repeats) if repeats > 0 else None
        try:
            with client.stream(messages, prompt_bound=bound) as stream:  # leaving it cancels
                for piece in stream:
                    if not pieces:
                        timings["first_token"] = (time.perf_counter() - started) * 1000
                    pieces.append(piece)
                    yield piece
                    if guard is not None and guard.feed(piece):
                        logger.warning("the model repeated itself: answer stopped")
                        break
        except GenerationError as exc:
            if not pieces:
                yield from self._retrieval_only(
                    packed, lang, str(exc), question, user, started, timings
                )
                return
            logger.warning("generation failed mid-answer: %s", exc)
            notice = MIDWAY_FAILURE[lang]
        raw = guard.text if guard is not None else "".join(pieces)
        looped = guard is not None and guard.tripped
        cited = raw
        if self.settings.answer.attribute_uncited:
            cited = attribute(raw, packed, min_support=self.settings.answer.min_support)
        checked = verify(
            cited,
            packed,
            min_support=self.settings.answer.min_support,
            min_similarity=self.settings.answer.min_similarity,
            # no embedding evidence for claims in a language the embedder does not read
            similarity=self._similarity if lang in self.settings.embed.languages else None,
        )
        verified = any(c.supported for c in checked.citations)
        # an answer cut short (server killed or stalled mid-answer) is incomplete, however well
        # its first sentences are cited: the best passages are quoted instead
        if looped or (self.settings.answer.fallback_unverified and (notice or not verified)):
            why = LOOPED[lang] if looped else notice or UNSUPPORTED[lang]
            yield from self._retrieval_only(
                packed, lang, why, question, user, started, timings, raw_answer=raw
            )
            return
        text = checked.text + (("\n" + notice) if notice else "")
        answer = Answer(
            text,
            citations=checked.citations,
            passages=packed,
            unverified=checked.unverified or bool(notice),
            notice=notice,
            raw_answer=raw,
        )
        yield from self._finish(answer, question, user, started, timings)

    def _similarity(self, claim: str, quote: str) -> float:
        """Cosine similarity of two texts by the embedder (its vectors are normalised)."""
        a, b = self.store.embed_question([claim, quote])
        return float(a @ b)

    def _retrieval_only(
        self,
        passages: Sequence[Passage],
        lang: Lang,
        reason: str,
        question: str,
        user: str,
        started: float,
        timings: dict[str, float],
        raw_answer: str | None = None,
    ) -> Iterator[str | Answer]:
        """The best passages quoted: the model is unavailable, or (with `raw_answer`) its
        answer could not be trusted. Each quote leads with its best sentence for the question."""
        fallback = raw_answer is not None
        if not fallback:
            logger.warning("retrieval-only answer: %s", reason)
        best = sorted(passages, key=lambda p: -p.score)[:3]  # the best first, whatever the order
        shown = [replace(p, text=lead_with_best(question, p.text)) for p in best]
        citations = [
            Citation(
                n, p.file, p.page, p.section_path, p.text[:300], p.chunk_id, page_label=p.page_label
            )
            for n, p in enumerate(shown, 1)
        ]
        answer = Answer(
            retrieval_only_text(lang, shown, fallback=fallback),
            citations=citations,
            # a fallback keeps every packed passage: the model's [n] refer to them
            passages=list(passages) if fallback else shown,
            mode="fallback" if fallback else "retrieval_only",
            notice=reason,
            raw_answer=raw_answer or "",
        )
        yield from self._finish(answer, question, user, started, timings)

    def _finish(
        self, answer: Answer, question: str, user: str, started: float, timings: dict[str, float]
    ) -> Iterator[str | Answer]:
        timings["total"] = (time.perf_counter() - started) * 1000
        answer.timings_ms = timings
        answer.question_id = self._record(answer, question, user)
        if answer.mode == "fallback":
            yield "\n\n" + answer.answer  # after the model's streamed text
        elif answer.mode != "generated":
            yield answer.answer
        yield answer

    def _record(self, answer: Answer, question: str, user: str) -> int:
        try:
            return self.store.ledger.record_question(user, question, answer)
        except Exception:  # a record that fails to write must not cost the user the answer
            logger.exception("could not record the question")
            return 0
