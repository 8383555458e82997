"""Domain types shared by ingestion and the query side. Plain dataclasses of this project:
library objects (Chroma result dicts, LlamaIndex nodes, OpenAI responses) never travel past
their adapters.

    Block -> (chunking) -> Chunk -> (retrieval) -> Passage -> (answering) -> Answer[Citation]
    DocMeta + status -> DocRecord (the ledger);  FileOutcome* -> IngestReport (a run)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

SECTION_SEP = " › "

# One chat message as the model server takes it: {"role": "user", "content": "..."}.
Message = Mapping[str, str]


@dataclass(frozen=True)
class Block:
    """A run of text in document order that sits under one heading path.

    PDF blocks carry 1-based pages (`page`..`page_end`); DOCX blocks carry None. `kind` is
    "text", "table" or "heading" (a heading block is the heading's own line).
    """

    text: str
    section: tuple[str, ...] = ()
    page: int | None = None
    page_end: int | None = None
    kind: str = "text"


@dataclass(frozen=True)
class ParsedDoc:
    """What a parser returns: the blocks, a title and, for PDFs, page count and labels, and
    the pages (1-based) whose text was read by OCR; `sha256`, the hash of the very bytes
    parsed (a parse worker's private copy, ingest/parse/), or "" when not known."""

    blocks: list[Block]
    title: str = ""
    pages: int | None = None
    page_labels: list[str] | None = None
    ocr_pages: tuple[int, ...] = ()
    sha256: str = ""


@dataclass(frozen=True)
class Chunk:
    """A stored passage: the unit of retrieval, embedding and citation."""

    id: str
    doc_id: str
    ordinal: int
    text: str
    section: tuple[str, ...] = ()
    page: int | None = None
    page_end: int | None = None

    @property
    def section_path(self) -> str:
        return SECTION_SEP.join(self.section)

    def embed_text(self) -> str:
        """The text the embedder and the lexical index see: heading path, then the passage."""
        return f"{self.section_path}\n{self.text}" if self.section else self.text


@dataclass(frozen=True)
class DocMeta:
    """A document as the ledger knows it."""

    id: str
    path: str  # relative to the source root it was ingested from
    root: str  # the absolute source root
    sha256: str
    size: int
    mtime: float
    title: str = ""
    lang: str = "en"
    groups: tuple[str, ...] = ("all",)
    version: str = ""
    effective_date: str = ""  # YYYY-MM-DD or "": in force from (core/policy_dates.py)
    series: str = ""
    # A PDF's printed page labels ("i", "ii", "1", …), one per page; () where they are the
    # page numbers themselves.
    page_labels: tuple[str, ...] = ()
    # The pages (1-based) whose text was read by OCR from a scan.
    ocr_pages: tuple[int, ...] = ()
    review_by: str = ""  # YYYY-MM-DD or "": its review is overdue the day after
    expires: str = ""  # YYYY-MM-DD or "": in force through this day
    # The date keys ("effective", "review_by", "expires") an admin set (`kb docs set`, the
    # upload form) rather than its sidecar: a re-ingest keeps them unless the sidecar sets one.
    admin_dates: tuple[str, ...] = ()


@dataclass(frozen=True)
class DocRecord:
    """A document as the ledger holds it: the metadata plus what the last run did with it."""

    meta: DocMeta
    status: str
    reason: str
    chunk_count: int
    updated_at: float

    @property
    def searchable(self) -> bool:
        """Has a live version: an `ok` document, or one whose new version failed and whose
        previous version stays live (its status says the failure, its reason that it kept)."""
        return self.chunk_count > 0


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk with the facts a citation needs."""

    chunk_id: str
    doc_id: str
    file: str
    text: str
    section: tuple[str, ...] = ()
    page: int | None = None
    page_end: int | None = None
    score: float = 0.0
    title: str = ""
    superseded: bool = False
    groups: tuple[str, ...] = ()
    ordinal: int = -1  # the chunk's position in its document (adjacent ones can merge)
    page_labels: tuple[str, ...] = ()  # its document's (DocMeta.page_labels)
    # Where each joined chunk begins, as (character offset in `text`, its page), when packing
    # merged chunks of several pages; () for a single chunk. A citation names the page of the
    # chunk its quote comes from.
    page_starts: tuple[tuple[int, int], ...] = ()
    # Its document's review-by date where that had passed on the day it was retrieved, else ""
    # (its source card says the document is past its review).
    review_due: str = ""

    def page_at(self, offset: int) -> int | None:
        """The page of the chunk holding `text[offset]` (`page` when unknown).

        Passage(..., page=3, page_end=4, page_starts=((0, 3), (120, 4))).page_at(130) -> 4
        """
        page = self.page
        for start, start_page in self.page_starts:
            if offset >= start:
                page = start_page
        return page
    ocr_pages: tuple[int, ...] = ()  # its document's (DocMeta.ocr_pages)

    @property
    def section_path(self) -> str:
        return SECTION_SEP.join(self.section)

    @property
    def from_ocr(self) -> bool:
        """Whether any of the passage's pages was read by OCR (its words may be misread)."""
        if self.page is None or not self.ocr_pages:
            return False
        end = self.page_end or self.page
        return any(self.page <= page <= end for page in self.ocr_pages)

    @property
    def page_label(self) -> str:
        """The printed label of the page ("iv") or span ("iv–v") where the document's labels
        differ from the page numbers; "" otherwise."""
        labels, page = self.page_labels, self.page
        if not labels or page is None or not 1 <= page <= len(labels):
            return ""
        end = self.page_end if self.page_end and page < self.page_end <= len(labels) else page
        if end == page:
            return "" if labels[page - 1] == str(page) else labels[page - 1]
        span = f"{labels[page - 1]}–{labels[end - 1]}"
        return "" if span == f"{page}–{end}" else span


@dataclass(frozen=True)
class Citation:
    """One [n] marker resolved to its passage."""

    n: int
    file: str
    page: int | None
    section: str
    quote: str
    chunk_id: str = ""
    supported: bool = True
    page_label: str = ""  # the printed page label, where it differs from `page`
    review_due: str = ""  # its passage's (Passage.review_due): the document is past its review


@dataclass
class Answer:
    """What the query pipeline returns."""

    answer: str
    abstained: bool = False
    citations: list[Citation] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # "generated" | "fallback" | "retrieval_only" | "abstained" | "approved"
    mode: str = "generated"
    unverified: bool = False
    question_id: int = 0  # the ledger's record of this question (feedback refers to it)
    notice: str = ""  # a line for the user, e.g. why generation was unavailable
    raw_answer: str = ""  # the model's text before unsupported citations were dropped
    # What retrieval searched for: the question, or a follow-up read with its history
    # (assistant/followup.py), shown so a wrong reading is visible.
    searched_for: str = ""
    # Set when an admin's approved answer answered (mode "approved"): who approved it and when.
    approved: ApprovedMark | None = None
    # Answered on weak evidence (the answerability model's probability below
    # answer.unsure_below): the answer says nothing answers it, and owners see a knowledge gap.
    unsure: bool = False


# --- approved answers ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ApprovedMark:
    """What an answer served from an approved answer says of it: its id, who approved it, when
    (epoch seconds)."""

    id: int
    author: str
    approved_at: float


@dataclass(frozen=True)
class ApprovedCitation:
    """One [n] of an approved answer: the passage as it was approved, with its document's
    sha256 then (a new version of the document suspends the answer)."""

    n: int
    chunk_id: str
    doc_id: str
    sha256: str
    file: str
    page: int | None = None
    section: str = ""
    quote: str = ""


@dataclass(frozen=True)
class ApprovedAnswer:
    """An answer an admin wrote or approved for a question (and the other ways it is asked),
    served before retrieval to askers whose groups cover `groups` and every cited document.
    `status` is "active" or "suspended" (`suspended_reason` says why: a cited document changed
    or was deleted); `origin` says where the admin started from (gap, feedback, log, scratch)
    and `origin_ref` which one."""

    id: int
    question: str
    answer: str
    author: str
    variants: tuple[str, ...] = ()
    lang: str = "en"
    groups: tuple[str, ...] = ("all",)
    approved_at: float = 0.0
    updated_at: float = 0.0
    status: str = "active"
    suspended_reason: str = ""
    origin: str = "scratch"
    origin_ref: str = ""
    citations: tuple[ApprovedCitation, ...] = ()

    @property
    def phrasings(self) -> tuple[str, ...]:
        """The question and its also-asked variants, each a way to match it."""
        return (self.question, *self.variants)


@dataclass(frozen=True)
class Turn:
    """One earlier question and its answer, kept for follow-up questions."""

    question: str
    answer: str


@dataclass(frozen=True)
class FileOutcome:
    """What a run did with one file: ingested, updated, unchanged, removed, failed, or
    skipped (a symbolic link, never followed)."""

    path: str
    outcome: str
    status: str = "ok"
    reason: str = ""
    chunks: int = 0


@dataclass
class IngestReport:
    """What one ingestion or re-index run did, file by file."""

    outcomes: list[FileOutcome] = field(default_factory=list)
    run_id: int = 0
    embedded: int = 0  # texts the embedder computed (cache misses)
    seconds: float = 0.0
    batch: str = ""  # `kb ingest --queue`: the jobs' batch (ingest/queue.py)
    queued: int = 0  # files left to `kb worker` processes

    @property
    def counts(self) -> dict[str, int]:
        counts = Counter(o.outcome for o in self.outcomes)
        return {
            k: counts.get(k, 0)
            for k in ("ingested", "updated", "unchanged", "removed", "failed", "skipped")
        }


@dataclass(frozen=True)
class User:
    """Someone who may ask (and, as an admin, manage documents); groups decide what they see."""

    name: str
    groups: tuple[str, ...]
    is_admin: bool = False
    has_token: bool = False
    created_at: float = 0.0
    disabled: bool = False  # a disabled user can neither log in nor use a token
    see_all: bool = False  # an admin right: admin views show every group, not only the admin's
    epoch: int = 0  # bumped on password change, disable, `kb users logout`: older sessions die
    token_expires_at: float = 0.0  # when the API token stops working (0: no token)


@dataclass(frozen=True)
class QuestionRecord:
    """A question as the ledger keeps it, with its asker's rating (+1, -1, or None)."""

    id: int
    user: str
    question: str
    mode: str
    chunk_ids: tuple[str, ...]
    timings: str  # JSON: stage -> ms
    created_at: float
    rating: int | None = None
    unsure: bool = False  # answered on weak evidence (Answer.unsure): a knowledge gap


# --- conversations ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConversationRecord:
    """One of a user's stored conversations (the sidebar lists them, newest first)."""

    id: str
    owner: str
    title: str
    created_at: float
    updated_at: float
    turns: int = 0


@dataclass(frozen=True)
class StoredTurn:
    """One question of a stored conversation with its answer as shown: the citations, the mode,
    the model's own text behind a fallback, the ledger's question id (feedback refers to it),
    and what retrieval searched for.
    """

    ordinal: int
    question: str
    answer: str
    citations: tuple[Citation, ...] = ()
    mode: str = "generated"
    unverified: bool = False
    raw_answer: str = ""
    question_id: int = 0
    created_at: float = 0.0
    searched_for: str = ""  # what retrieval searched for (Answer.searched_for)
