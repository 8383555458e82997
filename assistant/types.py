"""Domain types shared by ingestion and the query side. Plain dataclasses of this project:
library objects (Chroma result dicts, LlamaIndex nodes, OpenAI responses) never travel past
their adapters.

    Block -> (chunking) -> Chunk -> (retrieval) -> Passage -> (answering) -> Answer[Citation]
"""

from __future__ import annotations

from dataclasses import dataclass, field

SECTION_SEP = " › "


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
    """What a parser returns: the blocks, a title and, for PDFs, page count and labels."""

    blocks: list[Block]
    title: str = ""
    pages: int | None = None
    page_labels: list[str] | None = None


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
    effective_date: str = ""
    series: str = ""
    # A PDF's printed page labels ("i", "ii", "1", …), one per page; () where they are the
    # page numbers themselves.
    page_labels: tuple[str, ...] = ()


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

    def page_at(self, offset: int) -> int | None:
        """The page of the chunk holding `text[offset]` (`page` when unknown).

        Passage(..., page=3, page_end=4, page_starts=((0, 3), (120, 4))).page_at(130) -> 4
        """
        page = self.page
        for start, start_page in self.page_starts:
            if offset >= start:
                page = start_page
        return page

    @property
    def section_path(self) -> str:
        return SECTION_SEP.join(self.section)

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


@dataclass
class Answer:
    """What the query pipeline returns."""

    answer: str
    abstained: bool = False
    citations: list[Citation] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    mode: str = "generated"  # "generated" | "retrieval_only" | "abstained"
    unverified: bool = False
    question_id: int = 0  # the ledger's record of this question (feedback refers to it)
    notice: str = ""  # a line for the user, e.g. why generation was unavailable
    raw_answer: str = ""  # the model's text before unsupported citations were dropped


@dataclass(frozen=True)
class Turn:
    """One earlier question and its answer, kept for follow-up questions."""

    question: str
    answer: str
