"""The MCP server itself (the official `mcp` SDK's MCPServer): the four tools and the document
resource, their descriptions (what kb holds, how to ask), input and output schemas, each call
made as its caller. The transport decides who the caller is (`Caller`): the bearer token of
the HTTP request (http.py) or the token `kb mcp` was started with (stdio.py), checked again
on every call.

    server = build_server(tools, caller)          # tools: tools.py
    server.run_stdio_async() / mounted at /mcp
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from core.errors import KbError
from core.types import User
from ui.api.kb_api import MAX_QUESTION_CHARS, MAX_TURNS
from ui.api.mcp.schemas import (
    RESOURCE,
    AskResult,
    DocumentsResult,
    PastTurn,
    SearchResult,
    SourceResult,
)
from ui.api.mcp.tools import KbTools

NAME = "kb-assistant"
T = TypeVar("T")

INSTRUCTIONS = """\
kb answers questions about this company's policies (leave, travel, expenses, pay, IT security,
conduct and the like) from its PDF and Word policy documents, in Chinese or English, with
numbered citations to the exact document and page or section. It answers as the person whose
token you hold: it finds only the documents their access groups may read.

Ask `ask` a question in the employee's words and quote its answer with its citations; ask a
follow-up with the earlier turns as `history`. Use `search_policies` for the passages
themselves (several policies to compare, a clause to quote), `open_source` for the whole
passage and the ones around it, `list_documents` for which policies exist and their dates.
An answer's mode says how it was made: only `generated` and `approved` answers are kb's own
words; `retrieval_only` and `fallback` quote the best passages instead, `abstained` means the
documents do not cover the question (say so rather than guessing). Check a citation's
`review_due` and a passage's `standing`: a policy past its review or out of force may have
changed.
"""

SEARCH = """\
Search the policy documents the caller may read for passages about `query` (Chinese or
English: a question or key words; an English query also finds Chinese policies and the other
way round). Returns the best passages first, each with its document's title, file, page (PDF)
or section (Word), the policy's effective, review and expiry dates and standing, the sentence
to cite (`quote`) and a link to the page in kb. `language` keeps passages of one language."""

ASK = """\
Ask kb a policy question and get its answer as the kb web page gives it: a short answer whose
[n] markers cite `citations` (file, page or section, the cited words, a link), checked against
the passages; `mode` says whether the model wrote it (generated), an administrator approved
it (approved), the best passages are quoted instead (retrieval_only, fallback) or the
documents do not cover it (abstained). For a follow-up ("and for part-time staff?"), pass the
earlier questions and kb's answers, oldest first, as `history`."""

OPEN = """\
Open one passage of a policy (its id from search_policies or an ask citation): its whole text,
its document's dates and link, and the `around` passages before and after it in its chapter."""

LIST = """\
List the policy documents the caller may read: title, file, language, status (a document that
failed to ingest says why), whether it is searchable, its effective, review and expiry dates
and standing. `filter` keeps those whose title or file contains it (any case)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
# `ask` keeps a record of the question (admins read it, feedback refers to it)
RECORDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                          open_world_hint=False)


@dataclass(frozen=True)
class Who:
    """The caller of one call, and the client address to audit."""

    user: User
    address: str = ""


Caller = Callable[[Context], Awaitable[Who]]


def build_server(tools: KbTools, caller: Caller) -> MCPServer:
    """The MCP server of one process: each tool and the resource ask `caller` who calls (a
    refusal is the tool's error, one line) and run as them."""
    server = _sdk_server()

    async def search_policies(
        query: Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS,
                                    description="What to look for, Chinese or English.")],
        ctx: Context,
        k: Annotated[int, Field(ge=1, le=20, description="How many passages.")] = 5,
        language: Annotated[Literal["en", "zh"] | None,
                            Field(description="Only passages in English (en) or Chinese "
                                              "(zh); left out: both.")] = None,
    ) -> SearchResult:
        who = await _who(caller, ctx)
        return await _refusing(tools.search(who.user, query, k, language, who.address))

    async def ask(
        question: Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS,
                                       description="The question, Chinese or English.")],
        ctx: Context,
        history: Annotated[list[PastTurn], Field(max_length=MAX_TURNS,
                                                 description="Earlier turns, oldest first.")
                           ] = [],  # noqa: B006  (pydantic copies it; never mutated)
    ) -> AskResult:
        who = await _who(caller, ctx)
        return await _refusing(tools.ask(who.user, question, history, who.address))

    async def open_source(
        passage: Annotated[str, Field(min_length=1, max_length=512,
                                      description="A passage id.")],
        ctx: Context,
        around: Annotated[int, Field(ge=0, le=10, description="Passages on each side.")] = 2,
    ) -> SourceResult:
        who = await _who(caller, ctx)
        return await _refusing(tools.open_source(who.user, passage, around, who.address))

    async def list_documents(
        ctx: Context,
        filter: Annotated[str | None, Field(max_length=200,
                                           description="Part of a title or file name.")] = None,
    ) -> DocumentsResult:
        who = await _who(caller, ctx)
        return await _refusing(tools.documents(who.user, filter, who.address))

    async def document(doc_id: str, ctx: Context) -> str:
        try:
            who = await caller(ctx)
            return await tools.read_document(who.user, doc_id, who.address)
        except KbError as exc:
            raise ResourceError(str(exc)) from None

    for fn, text, hints in ((search_policies, SEARCH, READ_ONLY), (ask, ASK, RECORDS),
                            (open_source, OPEN, READ_ONLY), (list_documents, LIST, READ_ONLY)):
        server.add_tool(fn, description=text, annotations=hints, structured_output=True)
    server.resource(RESOURCE, name="document", mime_type="text/markdown",
                    description="A policy document the caller may read: its dates, then its "
                                "passages in order, each under its page or section.")(document)
    return server


def _sdk_server() -> MCPServer:
    """The SDK's server, kept from configuring this process's logging: it calls
    `logging.basicConfig` (a rich console handler, level INFO), which acts when the root logger
    has no handler yet; handlers are the CLI's and the app's to set."""
    root, held = logging.getLogger(), logging.NullHandler()
    root.addHandler(held)
    try:
        return MCPServer(NAME, title="kb-assistant: company policies", instructions=INSTRUCTIONS)
    finally:
        root.removeHandler(held)


async def _who(caller: Caller, ctx: Context) -> Who:
    try:
        return await caller(ctx)
    except KbError as exc:
        raise ToolError(str(exc)) from None


async def _refusing(call: Awaitable[T]) -> T:
    """The tool's result; a refusal (KbError) is the tool's error: its one line."""
    try:
        return await call
    except KbError as exc:
        raise ToolError(str(exc)) from None
