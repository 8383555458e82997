"""The query pipeline's public face: question → retrieve → pack → generate → cite.

A follow-up question is searched for as read with the questions before it
(assistant/followup.py); the answer's `searched_for` shows that reading.

    assistant = Assistant(store, generator, counter)       # ui/wiring.py builds the parts
    answer = assistant.ask("How many days of annual leave can I carry over?", groups=["all"])
    for piece in assistant.ask_stream(question, groups=["all"]):
        ...  # str pieces are the answer as it streams; the last item is the finished Answer

A question that means the same as one an admin approved (assistant/approved/) gets that answer
first, before retrieval and generation (mode "approved", `Answer.approved` says by whom and
when), when its asker may see it and its citations are live as approved.

When retrieval is not confident the model is skipped and the answer says the documents don't cover
the question, with the nearest documents as pointers. When the model server cannot be reached the
answer quotes the best passages instead (retrieval-only mode). A model that starts repeating itself
is stopped at once (assistant/llm/loopguard.py); an answer that keeps no verified citation, or was
cut by the guard, gives way to the best passages (mode "fallback", the model's text kept in
`raw_answer`; these exits are assistant/exits.py). Every answer is recorded in the ledger with its
cited chunks and timings.
"""

from __future__ import annotations

import collections.abc as abc  # abc.Generator: `Generator` here is the model's port
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from assistant.answerable import configured_model
from assistant.approved.answers import ApprovedAnswers, Draft
from assistant.cite import Verified, attribute, verify
from assistant.exits import abstained, fallback, retrieval_only
from assistant.followup import REWRITES, Reading, read_question
from assistant.llm.loopguard import LoopGuard
from assistant.prompt import LOOPED, MIDWAY_FAILURE, OTHER_LANGUAGE, UNSUPPORTED
from assistant.retrieve.crosslang.translate import TRANSLATES, translated
from assistant.retrieve.retriever import Retrieval, Retriever
from assistant.section import section_passages
from assistant.window import Neighbours, pack_prompt, snapshot_neighbours
from core.config import Settings
from core.errors import AccessDenied, ConfigError, GenerationError, KbError, SymbolicLink
from core.policy_dates import Today
from core.ports import Generator, Reranker, TokenCounter
from core.text import Lang, detect_lang
from core.types import Answer, ApprovedAnswer, Message, Passage, Turn
from ingest.discover import open_beneath
from store.store import Store

logger = logging.getLogger(__name__)

@dataclass
class _Asking:
    """A question being answered: what each exit records with its answer."""

    question: str
    searched_for: str  # the question, or the follow-up read with its history
    user: str
    lang: Lang
    started: float  # time.perf_counter() when it was asked
    timings: dict[str, float]  # milliseconds per step, so far
    unsure: bool = False  # weak evidence (`is_unsure`): quoted answers say nothing answers it


@dataclass(frozen=True)
class _Streamed:
    """What the model wrote: its text, whether the loop guard stopped it, and the notice of a
    server that failed midway ("" when it ended)."""

    raw: str
    looped: bool
    notice: str


def should_abstain(retrieval: Retrieval, settings: Settings) -> bool:
    """Too little evidence to answer: no passage, or the answerability model of the question's
    language (retrieve.answerable_model; assistant/answerable.py) puts the chance that the
    documents answer it below its threshold."""
    if not retrieval.passages:
        return True
    return configured_model(settings).refuses(retrieval.evidence, retrieval.lang)


def is_unsure(retrieval: Retrieval, settings: Settings) -> bool:
    """Weak evidence, short of a refusal: the answerability model's chance that the documents
    answer the question is below answer.unsure_below. A quoted answer then quotes nothing and
    says so (assistant/exits.py)."""
    chance = configured_model(settings).probability(retrieval.evidence, retrieval.lang)
    return chance < settings.answer.unsure_below


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
        today: Today = date.today,
    ) -> None:
        self.settings: Settings = store.settings
        self.store = store
        self.generator = generator
        self.counter = counter
        # `today`: the clock that decides which documents are in force (core/policy_dates.py)
        self.retriever = Retriever(self.settings, store, reranker, self._count_ahead, today)
        self.approved = ApprovedAnswers(store)
        self._lock = threading.Lock()
        # why the model was last unavailable: warned once, not on every question after it
        self._unavailable = ""
        if self.settings.answer.rewrite not in REWRITES:
            raise ConfigError(
                f"answer.rewrite = {self.settings.answer.rewrite!r}: use one of "
                + ", ".join(REWRITES)
            )
        if self.settings.retrieve.translate not in TRANSLATES:
            raise ConfigError(
                f"retrieve.translate = {self.settings.retrieve.translate!r}: use one of "
                + ", ".join(TRANSLATES)
            )

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
    def read(self, question: str, history: Sequence[Turn]) -> Reading:
        """What to search for: the question, or a follow-up read with the earlier questions
        (answer.rewrite; assistant/followup.py)."""
        earlier = [t.question for t in history]
        reading = read_question(question, earlier, self.settings.answer.rewrite, self.generator)
        how = self.settings.retrieve.translate  # the served model's translation (translate.py)
        if how == "off":
            return reading
        langs = self.retriever.space.languages(self.retriever.snapshot())
        return translated(reading, how, self.generator, langs)

    def retrieve(self, question: str, groups: Sequence[str], k: int | None = None,
                 only_lang: str | None = None) -> list[Passage]:
        """The best `k` passages (retrieve.top_k) the groups may see; `only_lang`: in it only."""
        with self._lock:
            return self.retriever.retrieve(question, groups, k, only_lang=only_lang).passages

    def source(self, chunk_id: str, groups: Sequence[str]) -> Passage:
        """A passage by chunk id; AccessDenied when unknown or outside `groups`."""
        with self._lock:
            snap = self.retriever.snapshot()
            row = snap.row_of.get(chunk_id)
            if row is None or not snap.allowed(groups)[row]:
                raise AccessDenied(f"passage {chunk_id}: not found or not visible to your groups")
            return snap.passage(row, groups=groups, day=self.retriever.today())

    def section(self, chunk_id: str, groups: Sequence[str]) -> list[Passage]:
        """The passages of a passage's chapter around it, in document order (the source view of
        a Word citation); AccessDenied when unknown or outside `groups`."""
        with self._lock:
            return section_passages(self.retriever.snapshot(), chunk_id, groups)

    def document_path(self, doc_id: str, groups: Sequence[str]) -> Path:
        """The original file of a document; AccessDenied when unknown or outside `groups`, or
        when a symbolic link now stands where it was (never followed: ingest/discover.py)."""
        record = self.store.ledger.document(doc_id)
        if record is None or record.status != "ok" or not set(groups) & set(record.meta.groups):
            raise AccessDenied(f"document {doc_id}: not found or not visible to your groups")
        path = Path(record.meta.root) / record.meta.path
        try:
            open_beneath(Path(record.meta.root), path).close()
        except SymbolicLink as exc:
            raise AccessDenied(f"document {doc_id}: {exc}") from exc
        except OSError:
            pass  # a file gone is the page renderer's to report
        return path

    def save_approved(
        self, draft: Draft, author: str, visible: Sequence[str] | None = None
    ) -> ApprovedAnswer:
        """Check an approved answer against the live passages and store it (an edit
        re-approves it); `visible`: the groups whose passages the author may cite (None: all).
        KbError names what is wrong."""
        with self._lock:
            snap = self.retriever.snapshot()
        # the embedder's similarity counts as support where it reads the answer's language
        reads = detect_lang(draft.answer) in self.settings.embed.languages
        return self.approved.save(draft, author, snap, visible,
                                  self._similarity if reads else None)

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
        """`ask` as it happens: the answer's text in pieces as the model writes it (at once when
        the model is skipped), then the finished Answer, recorded."""
        started = time.perf_counter()
        question = question.strip()
        if not question:
            raise KbError("empty question: type a question about the policies")
        reading = self.read(question, history)
        read_ms = (time.perf_counter() - started) * 1000
        lang: Lang = "zh" if detect_lang(question) == "zh" else "en"
        asking = _Asking(question, reading.text, user, lang, started, {})
        if not reading.context:  # a follow-up that leans on its history is no approved question
            served = self._approved_first(reading.question, groups, asking)
            if served is not None:
                yield from self._finish(served, asking)
                return
        with self._lock:
            retrieval = self.retriever.retrieve(reading.question, groups, context=reading.context)
            neighbours = snapshot_neighbours(self.retriever.snapshot())
        asking.timings = {"retrieve": retrieval.timings_ms["retrieve"]}
        if history:  # reading a follow-up with its history (a model's rewrite included)
            asking.timings["read_followup"] = read_ms
        if should_abstain(retrieval, self.settings):
            yield from self._finish(abstained(lang, retrieval.passages), asking)
            return
        asking.unsure = is_unsure(retrieval, self.settings)
        yield from self._generate(asking, history, retrieval.passages, neighbours)

    def _approved_first(
        self, question: str, groups: Sequence[str], asking: _Asking
    ) -> Answer | None:
        """The answer an admin approved for this question, with its citations as live passages
        and who approved it and when, where the asker may see it; else None."""
        t_match = time.perf_counter()
        with self._lock:
            served = self.approved.find(question, groups, self.retriever.snapshot(),
                                        self.retriever.today())
        if served is None:
            return None
        asking.timings = {"approved": (time.perf_counter() - t_match) * 1000}
        logger.info("approved answer %d served (lexical %.2f, dense %.2f)", served.answer.id,
                    served.lexical, served.dense)
        answer = served.as_answer()
        if detect_lang(served.answer.answer) != asking.lang:  # written in the other language
            answer.answer = OTHER_LANGUAGE[asking.lang] + "\n" + answer.answer
        return answer

    def _generate(
        self,
        asking: _Asking,
        history: Sequence[Turn],
        passages: list[Passage],
        neighbours: Neighbours,
    ) -> Iterator[str | Answer]:
        """The model's answer from the passages packed into its window, its citations checked;
        the best passages quoted instead when the model is unavailable, loops or cites nothing
        it may (answer.fallback_unverified)."""
        t_pack = time.perf_counter()
        try:
            packed, messages, bound = pack_prompt(asking.question, asking.lang, history, passages,
                                                  neighbours, self.counter, self.settings)
        except GenerationError as exc:
            # also a token counter that cannot be loaded: no model to count for
            yield from self._retrieval_only(asking, passages, str(exc))
            return
        asking.timings["pack"] = (time.perf_counter() - t_pack) * 1000
        try:
            streamed = yield from self._stream(asking, messages, bound)
        except GenerationError as exc:  # before the first piece
            yield from self._retrieval_only(asking, packed, str(exc))
            return
        self._unavailable = ""  # the model answered: a later failure is warned again
        checked = self._verify(streamed.raw, packed, asking.lang)
        verified = any(c.supported for c in checked.citations)
        notice, looped = streamed.notice, streamed.looped
        # an answer cut short (server killed or stalled mid-answer) is incomplete, however well
        # its first sentences are cited: the best passages are quoted instead
        if looped or (self.settings.answer.fallback_unverified and (notice or not verified)):
            why = LOOPED[asking.lang] if looped else notice or UNSUPPORTED[asking.lang]
            answer = fallback(asking.searched_for, asking.lang, packed, why, streamed.raw,
                              asking.unsure)
        else:
            answer = Answer(
                checked.text + (("\n" + notice) if notice else ""),
                citations=checked.citations,
                passages=packed,
                unverified=checked.unverified or bool(notice),
                notice=notice,
                raw_answer=streamed.raw,
            )
        yield from self._finish(answer, asking)

    def _stream(
        self, asking: _Asking, messages: list[Message], bound: int
    ) -> abc.Generator[str, None, _Streamed]:
        """The model's answer, each piece yielded as it comes, stopped when the model repeats
        itself (answer.loop_max_repeats). A server that fails midway leaves a notice; one that
        fails before the first piece raises its GenerationError."""
        pieces: list[str] = []
        notice = ""
        repeats = self.settings.answer.loop_max_repeats
        guard = LoopGuard(max_repeats=repeats) if repeats > 0 else None
        try:
            # leaving the stream cancels the request
            with self.generator.stream(messages, prompt_bound=bound) as stream:
                for piece in stream:
                    if not pieces:
                        since = time.perf_counter() - asking.started
                        asking.timings["first_token"] = since * 1000
                    pieces.append(piece)
                    yield piece
                    if guard is not None and guard.feed(piece):
                        logger.warning("the model repeated itself: answer stopped")
                        break
        except GenerationError as exc:
            if not pieces:
                raise
            logger.warning("generation failed mid-answer: %s", exc)
            notice = MIDWAY_FAILURE[asking.lang]
        raw = guard.text if guard is not None else "".join(pieces)
        return _Streamed(raw, looped=guard is not None and guard.tripped, notice=notice)

    def _verify(self, raw: str, packed: list[Passage], lang: Lang) -> Verified:
        """The model's citations checked against the packed passages (answer.min_support,
        answer.min_similarity), sentences it left uncited attributed first where
        answer.attribute_uncited says so."""
        settings = self.settings.answer
        cited = raw
        if settings.attribute_uncited:
            cited = attribute(raw, packed, min_support=settings.min_support)
        return verify(
            cited,
            packed,
            min_support=settings.min_support,
            min_similarity=settings.min_similarity,
            # no embedding evidence for claims in a language the embedder does not read
            similarity=self._similarity if lang in self.settings.embed.languages else None,
        )

    def _similarity(self, claim: str, quote: str) -> float:
        """Cosine similarity of two texts by the embedder (its vectors are normalised)."""
        a, b = self.store.embed_question([claim, quote])
        return float(a @ b)

    # --- the answer as given ----------------------------------------------------------------
    def _retrieval_only(
        self, asking: _Asking, passages: Sequence[Passage], reason: str
    ) -> Iterator[str | Answer]:
        """The model is unavailable (`reason`): the best passages quoted instead. The reason is
        logged as a warning once, until the model answers again or the reason changes."""
        if reason != self._unavailable:
            logger.warning("retrieval-only answers until the model answers: %s", reason)
        else:
            logger.debug("retrieval-only answer: %s", reason)
        self._unavailable = reason
        yield from self._finish(retrieval_only(
            asking.searched_for, asking.lang, passages, reason, asking.unsure), asking)

    def _finish(self, answer: Answer, asking: _Asking) -> Iterator[str | Answer]:
        """The answer timed and recorded; yields the text the model did not stream (a
        fallback's after the model's), then the Answer."""
        asking.timings["total"] = (time.perf_counter() - asking.started) * 1000
        answer.timings_ms = asking.timings
        answer.searched_for = asking.searched_for
        answer.question_id = self._record(answer, asking.question, asking.user)
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
