"""What each MCP tool does for a caller already identified (bearer.py, stdio.py):
the pipelines' public functions called with the caller's groups, the answer taken through the
gate and recorded as the page and the APIs do (ui/api/asking.py), and each call audited (the
tool, a digest of its arguments, the documents it returned, the outcome).

    tools = KbTools(asking, assistant, store, audit, base_url="https://kb.example.com")
    found = await tools.search(user, "annual leave carry over", k=5, language=None)
    answer = await tools.ask(user, "And for part-time staff?", history=[PastTurn(...)])

A question past `ui.queue_depth` at once is refused with a Busy error ("try again in N s"), as
/v1 refuses it with 429: searches and answers take a place at the gate, the look-ups of one
passage or of the document list do not.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from fastapi.concurrency import run_in_threadpool

from assistant.best_sentence import best_quote
from core.errors import AccessDenied, KbError
from core.text import detect_lang
from core.types import DocMeta, DocRecord, Passage, Turn, User
from ingest.pipeline import list_documents
from store.store import Store
from ui.api.asking import Asking
from ui.api.mcp.schemas import (
    AskResult,
    DocumentItem,
    DocumentsResult,
    PastTurn,
    SearchResult,
    SourceResult,
    ask_result,
    document_item,
    neighbour,
    passage_item,
    standing,
)
from ui.audit import AuditTrail

logger = logging.getLogger(__name__)

VIA = "mcp"  # the `via` label of its questions in /metrics and the log
MAX_LISTED = 500  # documents list_documents returns at most (`total` says how many matched)
AUDITED_DOCUMENTS = 50  # document ids an audit record names at most (and how many there were)
T = TypeVar("T")


class ToolRefused(KbError):
    """A call kb refuses (busy, a passage outside the caller's groups): its text is one line
    the agent can act on."""


class Searcher(Protocol):
    """The assistant's public functions the tools call (assistant/answer.py)."""

    def retrieve(self, question: str, groups: Sequence[str], k: int | None = None,
                 only_lang: str | None = None) -> list[Passage]: ...

    def source(self, chunk_id: str, groups: Sequence[str]) -> Passage: ...

    def section(self, chunk_id: str, groups: Sequence[str]) -> list[Passage]: ...


def digest(arguments: dict[str, Any]) -> str:
    """The SHA-256 of a call's arguments (canonical JSON): the audit trail names what was asked
    without keeping the words.

        digest({"query": "sick leave", "k": 5}) == digest({"k": 5, "query": "sick leave"})
    """
    text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def sees(user: User, record: DocRecord) -> bool:
    """Whether `user` may see a document: they share a group with it (core/access.py)."""
    return bool(set(user.groups) & set(record.meta.groups))


class KbTools:
    """The four tools and the document resource, for one process (thread-safe: each call's
    state is its own)."""

    def __init__(self, asking: Asking, assistant: Searcher, store: Store, audit: AuditTrail,
                 base_url: str, via: str = "http",
                 today: Callable[[], dt.date] = dt.date.today) -> None:
        self.asking, self.assistant, self.store, self.audit = asking, assistant, store, audit
        self.base_url, self.via, self.today = base_url, via, today

    # --- the tools ----------------------------------------------------------------------------
    async def search(self, user: User, query: str, k: int, language: str | None,
                     address: str = "") -> SearchResult:
        async def work() -> tuple[SearchResult, list[str]]:
            self._admit(user)
            passages = await self.asking.run(self.assistant.retrieve, query, user.groups, k,
                                             language)
            metas = await run_in_threadpool(self._metas, passages)
            lang = detect_lang(query)
            items = [passage_item(p, metas.get(p.doc_id), best_quote(query, p.text),
                                  self.base_url, self.today(), lang) for p in passages]
            return SearchResult(query=query, passages=items), [p.doc_id for p in passages]

        args = {"query": query, "k": k, "language": language}
        return await self._audited(user, "search_policies", args, address, work)

    async def ask(self, user: User, question: str, history: Sequence[PastTurn],
                  address: str = "") -> AskResult:
        async def work() -> tuple[AskResult, list[str]]:
            self._admit(user)
            turns = [Turn(t.question, t.answer) for t in history]
            answer = await self.asking.ask(question, user, turns, via=VIA)
            docs = [p.doc_id for p in answer.passages
                    if any(c.chunk_id == p.chunk_id for c in answer.citations)]
            return ask_result(answer, self.base_url, detect_lang(question)), docs

        args = {"question": question, "history": [t.model_dump() for t in history]}
        return await self._audited(user, "ask", args, address, work)

    async def open_source(self, user: User, passage: str, around: int,
                          address: str = "") -> SourceResult:
        async def work() -> tuple[SourceResult, list[str]]:
            found, chapter = await run_in_threadpool(self._passage, user, passage)
            metas = await run_in_threadpool(self._metas, [found])
            at = next(i for i, p in enumerate(chapter) if p.chunk_id == found.chunk_id)
            item = passage_item(found, metas.get(found.doc_id), "", self.base_url, self.today(),
                                detect_lang(found.text))
            return SourceResult(
                passage=item, before=[neighbour(p) for p in chapter[max(0, at - around):at]],
                after=[neighbour(p) for p in chapter[at + 1:at + 1 + around]],
            ), [found.doc_id]

        args = {"passage": passage, "around": around}
        return await self._audited(user, "open_source", args, address, work)

    async def documents(self, user: User, filter: str | None,
                        address: str = "") -> DocumentsResult:
        async def work() -> tuple[DocumentsResult, list[str]]:
            records = await run_in_threadpool(self._visible, user, filter or "")
            today = self.today()
            items = [document_item(r, today) for r in records[:MAX_LISTED]]
            return DocumentsResult(documents=items, total=len(records)), [i.id for i in items]

        return await self._audited(user, "list_documents", {"filter": filter}, address, work)

    async def read_document(self, user: User, doc_id: str, address: str = "") -> str:
        """The document as a resource: its title, file, dates and standing, then its live
        passages in order, each under its page or section."""
        async def work() -> tuple[str, list[str]]:
            return await run_in_threadpool(self._document_text, user, doc_id), [doc_id]

        return await self._audited(user, "resource", {"document": doc_id}, address, work)

    # --- the steps ----------------------------------------------------------------------------
    def _admit(self, user: User) -> None:
        if not self.asking.admit(user, via=VIA):
            wait = self.asking.retry_after_s
            raise ToolRefused(f"busy: too many questions at once; try again in {wait} s")

    def _passage(self, user: User, chunk_id: str) -> tuple[Passage, list[Passage]]:
        """The passage (as the caller's groups see it) and its chapter around it."""
        try:
            return (self.assistant.source(chunk_id, user.groups),
                    self.assistant.section(chunk_id, user.groups))
        except AccessDenied:
            raise ToolRefused(f"no passage {chunk_id[:80]!r} among the documents you may "
                              "read: take a passage id from search_policies or ask") from None

    def _metas(self, passages: Sequence[Passage]) -> dict[str, DocMeta]:
        """The documents of `passages` as the ledger has them (their dates)."""
        found = {}
        for doc_id in dict.fromkeys(p.doc_id for p in passages):
            record = self.store.ledger.document(doc_id)
            if record is not None:
                found[doc_id] = record.meta
        return found

    def _visible(self, user: User, text: str) -> list[DocRecord]:
        """The documents `user` may see whose title or file holds `text` (any case)."""
        wanted = text.strip().casefold()
        return [r for r in list_documents(self.store) if sees(user, r) and (
            wanted in r.meta.title.casefold() or wanted in r.meta.path.casefold())]

    def _document_text(self, user: User, doc_id: str) -> str:
        record = self.store.ledger.document(doc_id)
        if record is None or not sees(user, record):
            raise ToolRefused(f"no document {doc_id[:80]!r} among those you may read: take an "
                              "id from list_documents")
        item: DocumentItem = document_item(record, self.today())
        lines = [f"# {item.title or item.file}", f"file: {item.file}",
                 f"standing: {standing(record.meta, self.today())}",
                 *(f"{key}: {value}" for key, value in (
                     ("effective", item.effective), ("review_by", item.review_by),
                     ("expires", item.expires)) if value)]
        for chunk, _ in self.store.ledger.chunks_of(doc_id):
            where = f"page {chunk.page}" if chunk.page else chunk.section_path or "—"
            lines += ["", f"## [{chunk.id}] {where}", chunk.text]
        return "\n".join(lines)

    async def _audited(self, user: User, tool: str, args: dict[str, Any], address: str,
                       work: Callable[[], Awaitable[tuple[T, list[str]]]]) -> T:
        """`work`'s result, the call audited: ok with the documents it returned, refused (a
        ToolRefused), failed (a KbError) or error (anything else, raised again)."""
        outcome, documents = "error", list[str]()
        try:
            result, documents = await work()
            outcome = "ok"
            return result
        except ToolRefused:
            outcome = "refused"
            raise
        except KbError:
            outcome = "failed"
            raise
        finally:
            unique = list(dict.fromkeys(documents))
            self.audit.soon("mcp.call", user.name, object=tool, outcome=outcome,
                            address=address, via=self.via, args=digest(args),
                            documents=unique[:AUDITED_DOCUMENTS], returned=len(unique))
