"""`ApprovedAnswers`: the approved answers of one store, as the query side serves them and as
`kb answers` and the admin editor write them.

Serving (`find`): the match index (`index.py`) is rebuilt when the ledger's approved answers
change (`Ledger.approved_generation`, read at most every RECHECK_S; only new phrasings are
embedded); the question's vector is asked for only when some
phrasing clears the lexical threshold, and it is the vector retrieval would embed (the store
keeps it), so a question is embedded once. A match is served only to an asker who shares one of
the answer's groups and may see every cited passage, and only while every cited passage is live,
its document's sha256 is the one approved and no newer version of its series supersedes it;
otherwise the question goes on to retrieval as any other.

Writing (`save`, `import_lines`): each citation is a chunk id, or FILE[:PAGE] with a quote that
the passage's text must contain; the answer's [n] must name its citations.

    served = approved.find("年假可以结转吗？", ["all"], snap)   # Served | None
    draft = Draft("年假几天？", "5 天 [1]", [Ref("员工手册.pdf:3", "年休假5天")])
    approved.save(draft, "alice", snap)                         # -> the ApprovedAnswer stored
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

import numpy as np
import numpy.typing as npt

from assistant.approved.checks import cited_order, unsupported
from assistant.approved.index import THRESHOLDS, Candidate, MatchIndex, Thresholds
from assistant.cite import Similarity
from assistant.retrieve.snapshot import Snapshot
from core.access import parse_groups
from core.errors import KbError
from core.text import detect_lang
from core.types import (
    Answer,
    ApprovedAnswer,
    ApprovedCitation,
    ApprovedMark,
    Citation,
    Passage,
)
from store.store import Store

logger = logging.getLogger(__name__)

ORIGINS = ("gap", "feedback", "log", "scratch")
# How often a question reads the ledger's approved generation (seconds): a change made by
# another process is served within this; this process's own saves and removals at once. A
# stale index is never served stale text: `serve` checks each citation against the snapshot.
RECHECK_S = 1.0
_MARK = re.compile(r"\[(\d{1,3})\]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Served:
    """An approved answer as one asker gets it: its citations resolved to live passages."""

    answer: ApprovedAnswer
    citations: list[Citation]
    passages: list[Passage]
    lexical: float
    dense: float

    def as_answer(self) -> Answer:
        """The Answer the asker gets: the approved text, its citations as live passages, marked
        with who approved it and when."""
        approved = self.answer
        return Answer(approved.answer, citations=self.citations, passages=self.passages,
                      mode="approved",
                      approved=ApprovedMark(approved.id, approved.author, approved.approved_at))


@dataclass(frozen=True)
class Ref:
    """A citation as an admin gives it: a chunk id, or FILE[:PAGE] and words of the passage."""

    ref: str
    quote: str = ""


@dataclass
class Draft:
    """An approved answer as an admin writes it, before its citations are resolved."""

    question: str
    answer: str
    refs: list[Ref] = field(default_factory=list)
    groups: Sequence[str] = ("all",)
    variants: Sequence[str] = ()
    origin: str = "scratch"
    origin_ref: str = ""
    id: int = 0


def _flat(text: str) -> str:
    """Whitespace collapsed, none between CJK characters: how quotes are compared."""
    text = _SPACE.sub(" ", text).strip()
    return re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])", "",
                  text)


class ApprovedAnswers:
    """The approved answers of a store: matched for askers, saved for admins."""

    def __init__(
        self,
        store: Store,
        thresholds: Thresholds = THRESHOLDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.thresholds = thresholds
        self.clock = clock
        self._index: MatchIndex | None = None
        self._generation = -1
        self._checked = -math.inf  # when the ledger's approved generation was last read
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}  # phrasing -> its vector
        self._lock = threading.Lock()

    # --- serving --------------------------------------------------------------------------
    def index(self) -> MatchIndex:
        """The match index of the active answers, rebuilt when they changed; only phrasings
        not seen before are embedded (one new answer costs its own phrasings, not all)."""
        now = self.clock()
        if self._index is not None and now - self._checked < RECHECK_S:
            return self._index
        generation = self.store.ledger.approved_generation()
        self._checked = now
        with self._lock:
            if self._index is None or generation != self._generation:
                active = self.store.ledger.approved_answers(status="active")
                phrasings = [p for a in active for p in a.phrasings]
                new = sorted({p for p in phrasings if p not in self._vectors})
                if new:
                    self._vectors.update(zip(new, self.store.embed_question(new), strict=True))
                self._vectors = {p: self._vectors[p] for p in phrasings}  # drop the gone
                vectors = (np.stack([self._vectors[p] for p in phrasings]) if phrasings
                           else np.zeros((0, 1), dtype=np.float32))
                self._index = MatchIndex(active, vectors, self.thresholds)
                self._generation = generation
                logger.info("approved answers: %d phrasings of %d answers indexed",
                            len(phrasings), len(active))
            return self._index

    def candidates(self, question: str) -> list[Candidate]:
        """The approved answers that mean what `question` asks, best first (no access check)."""
        index = self.index()
        lexical = index.lexical_pass(question)
        if lexical is None:
            return []
        return index.match(question, self.store.question_vector(question), lexical)

    def find(self, question: str, groups: Sequence[str], snap: Snapshot,
             day: dt.date | None = None) -> Served | None:
        """The best approved answer for `question` that this asker may see and that is live on
        `day` (its cited documents in force then: core/policy_dates.py)."""
        for candidate in self.candidates(question):
            served = self.serve(candidate, groups, snap, day)
            if served is not None:
                return served
        return None

    @staticmethod
    def serve(candidate: Candidate, groups: Sequence[str], snap: Snapshot,
              day: dt.date | None = None) -> Served | None:
        """The candidate's citations resolved for this asker; None when the asker shares none
        of its groups or may not see a cited passage, a citation is not live as approved, a
        cited document is not in force on `day`, or any newer version of it was ingested."""
        answer = candidate.answer
        if not set(groups) & set(answer.groups):
            return None
        allowed = snap.allowed(groups, day)
        citations: list[Citation] = []
        passages: list[Passage] = []
        for c in answer.citations:
            row = snap.row_of.get(c.chunk_id)
            record = snap.docs.get(c.doc_id)
            if (row is None or record is None or not allowed[row]
                    or record.meta.sha256 != c.sha256 or c.doc_id in snap.superseded):
                return None
            p = snap.passage(row, groups=groups, day=day)
            passages.append(p)
            citations.append(Citation(c.n, p.file, p.page, p.section_path,
                                      c.quote or p.text[:300], p.chunk_id,
                                      page_label=p.page_label, review_due=p.review_due))
        return Served(answer, citations, passages, candidate.lexical, candidate.dense)

    # --- writing --------------------------------------------------------------------------
    def save(self, draft: Draft, author: str, snap: Snapshot,
             visible: Sequence[str] | None = None,
             similarity: Similarity | None = None) -> ApprovedAnswer:
        """Check and store a new or edited approved answer (an edit re-approves it); `visible`:
        the author's groups, when the author may cite only what they see. Its [n] are numbered
        in the order the text cites them, and each must be held by its passage as a generated
        answer's are (`similarity`: the embedder's, as there). KbError names what is wrong and
        how to fix it."""
        question = draft.question.strip()
        text = draft.answer.strip()
        if not question:
            raise KbError("approved answer: no question; give the question it answers")
        if not text:
            raise KbError("approved answer: no answer text; write the answer")
        if not draft.refs:
            raise KbError("approved answer: no citation; cite at least one passage (--cite)")
        if draft.origin not in ORIGINS:
            raise KbError(f"approved answer: origin {draft.origin!r}; use one of "
                          + ", ".join(ORIGINS))
        groups = parse_groups(list(draft.groups))
        if not groups:
            raise KbError("approved answer: no groups; give the groups that may get it")
        citations = tuple(self.resolve(ref, n, snap, visible)
                          for n, ref in enumerate(draft.refs, 1))
        marks = {int(m) for m in _MARK.findall(text)}
        if not marks:
            text += " " + "".join(f"[{c.n}]" for c in citations)
        elif not marks <= {c.n for c in citations}:
            wrong = ", ".join(f"[{n}]" for n in sorted(marks - {c.n for c in citations}))
            raise KbError(f"approved answer: {wrong} names no citation; it has "
                          f"{len(citations)} (number them [1]..[{len(citations)}])")
        text, citations = self._checked_citations(text, citations, snap, similarity)
        variants = tuple(v.strip() for v in draft.variants if v.strip())
        answer = ApprovedAnswer(draft.id, question, text, author, variants,
                                detect_lang(question), groups, origin=draft.origin,
                                origin_ref=draft.origin_ref, citations=citations)
        answer_id = self.store.ledger.save_approved(answer)
        self._checked = -math.inf  # read the generation again on the next question
        if not answer_id:
            raise KbError(f"approved answer {draft.id}: no such answer (see `kb answers list`)")
        saved = self.store.ledger.approved_answer(answer_id)
        assert saved is not None  # just written
        return saved

    def _checked_citations(self, text: str, citations: tuple[ApprovedCitation, ...],
                           snap: Snapshot, similarity: Similarity | None
                           ) -> tuple[str, tuple[ApprovedCitation, ...]]:
        """The text and citations renumbered in the order the text cites them; KbError naming
        each [n] whose passage does not hold what its sentence says."""
        text, order = cited_order(text, len(citations))
        citations = tuple(replace(citations[old - 1], n=n) for n, old in enumerate(order, 1))
        passages = [Passage(c.chunk_id, c.doc_id, c.file, snap.texts[snap.row_of[c.chunk_id]])
                    for c in citations]
        rules = self.store.settings.answer
        wrong = unsupported(text, passages, rules.min_support, rules.min_similarity, similarity)
        if wrong:
            raise KbError("approved answer: " + "; ".join(
                f"[{n}] ({citations[n - 1].file}" + (f" p.{citations[n - 1].page}"
                                                     if citations[n - 1].page else "")
                + f") does not hold what its sentence says: {sentence!r}"
                for n, sentence in wrong) + "; tick the passage that says it, or word the "
                "sentence as the passage does")
        return text, citations

    def resolve(self, ref: Ref, n: int, snap: Snapshot,
                visible: Sequence[str] | None = None) -> ApprovedCitation:
        """The live passage a citation names: a chunk id, or FILE[:PAGE] whose passage holds
        the quote (the first such passage in document order)."""
        row = snap.row_of.get(ref.ref)
        if row is None:
            row = self._find_row(ref, snap)
        record = snap.docs[snap.doc_ids[row]]
        if visible is not None and not snap.allowed(visible)[row]:
            raise KbError(f"citation {ref.ref!r}: {record.meta.path} is outside your groups")
        page, _ = snap.pages[row]
        quote = ref.quote.strip()
        if quote and _flat(quote) not in _flat(snap.texts[row]):
            raise KbError(f"citation {ref.ref!r}: the passage does not contain {quote!r}; "
                          "copy the words from the passage")
        return ApprovedCitation(n, snap.ids[row], record.meta.id, record.meta.sha256,
                                record.meta.path, page, " › ".join(snap.sections[row]), quote)

    @staticmethod
    def _find_row(ref: Ref, snap: Snapshot) -> int:
        file, _, page_text = ref.ref.rpartition(":") if ":" in ref.ref else (ref.ref, "", "")
        if page_text and not page_text.isdigit():
            file, page_text = ref.ref, ""
        page = int(page_text) if page_text else None
        docs = [d for d, r in snap.docs.items()
                if file in (r.meta.path, PurePath(r.meta.path).name) and r.searchable]
        if not docs:
            raise KbError(f"citation {ref.ref!r}: no live passage or document of that name "
                          "(give a chunk id, or FILE[:PAGE] as `kb docs` lists it)")
        if not ref.quote.strip():
            raise KbError(f"citation {ref.ref!r}: a file needs --quote, words of the passage")
        quote = _flat(ref.quote)
        for row, doc_id in enumerate(snap.doc_ids):
            if doc_id not in docs:
                continue
            first, last = snap.pages[row]
            if page is not None and first is not None and not first <= page <= (last or first):
                continue
            if quote in _flat(snap.texts[row]):
                return row
        where = f" page {page}" if page else ""
        raise KbError(f"citation {ref.ref!r}: no passage of {file}{where} contains "
                      f"{ref.quote!r}; check the page and copy the words from the document")

    def remove(self, answer_id: int) -> ApprovedAnswer:
        found = self.store.ledger.approved_answer(answer_id)
        if found is None or not self.store.ledger.remove_approved(answer_id):
            raise KbError(f"approved answer {answer_id}: no such answer (see `kb answers list`)")
        self._checked = -math.inf
        return found

    # --- export and import ----------------------------------------------------------------
    @staticmethod
    def export_lines(answers: Sequence[ApprovedAnswer]) -> Iterator[str]:
        """One JSON line per answer, its citations by chunk id, file, page and quote."""
        for a in answers:
            yield json.dumps({
                "id": a.id, "question": a.question, "variants": list(a.variants),
                "answer": a.answer, "groups": list(a.groups), "author": a.author,
                "approved_at": a.approved_at, "status": a.status,
                "suspended_reason": a.suspended_reason, "origin": a.origin,
                "origin_ref": a.origin_ref,
                "citations": [{"chunk_id": c.chunk_id, "file": c.file, "page": c.page,
                               "quote": c.quote} for c in a.citations],
            }, ensure_ascii=False) + "\n"

    def import_lines(self, lines: Sequence[str], author: str,
                     snap: Snapshot) -> tuple[list[ApprovedAnswer], list[str]]:
        """Each line of an export saved as a new approved answer, re-approved by `author`; a
        line that cannot be is reported ("line 3: ...") and the rest go on. Returns what was
        saved and the problems."""
        saved: list[ApprovedAnswer] = []
        problems: list[str] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                saved.append(self.save(_draft_of(line), author, snap))
            except KbError as exc:
                problems.append(f"line {number}: {exc}")
        return saved, problems


def _draft_of(line: str) -> Draft:
    """A draft from an export line; KbError naming what is missing or malformed."""
    try:
        data: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise KbError(f"not JSON ({exc.msg}); each line is one answer as `kb answers export` "
                      "writes it") from exc
    if not isinstance(data, dict):
        raise KbError("not a JSON object; each line is one answer as `kb answers export` "
                      "writes it")
    cited = data.get("citations")
    if not isinstance(cited, list) or not all(isinstance(c, dict) for c in cited):
        raise KbError('no "citations" list; give each citation as {"chunk_id": ...} or '
                      '{"file": ..., "page": ..., "quote": ...}')
    refs = []
    for c in cited:
        ref, quote = str(c.get("chunk_id") or ""), str(c.get("quote") or "")
        if c.get("file") and (quote or not ref):  # by file and quote: ids change on re-index
            page = c.get("page")
            ref = f"{c['file']}:{page}" if page else str(c["file"])
        refs.append(Ref(ref, quote))
    groups = data.get("groups", ["all"])
    variants = data.get("variants", [])
    if not isinstance(groups, list) or not isinstance(variants, list):
        raise KbError('"groups" and "variants" must be lists of strings')
    return Draft(str(data.get("question", "")), str(data.get("answer", "")), refs,
                 [str(g) for g in groups], [str(v) for v in variants],
                 str(data.get("origin", "scratch")), str(data.get("origin_ref", "")))
