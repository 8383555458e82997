"""An OpenAI-compatible face on `kb serve`, for chat clients such as Open WebUI and for the
`openai` library: `GET /v1/models` lists one model, `kb-assistant`, and
`POST /v1/chat/completions` answers the last user message with the earlier user/assistant pairs
as its history, plain or streamed (server-sent `chat.completion.chunk`s, then `[DONE]`). The
bearer is a kb API token (`kb users token NAME`): its user's groups decide what is retrieved.
The answer keeps its [n] markers, followed by a short list of its sources; the `kb` field of the
completion (of the last chunk, streamed) carries the citations with their links, the mode, what
was searched for and the question's id. See docs/api.md.

    client = OpenAI(base_url="http://127.0.0.1:7860/v1", api_key=token)
    client.chat.completions.create(model="kb-assistant",
                                   messages=[{"role": "user", "content": "Annual leave?"}])

System, developer and tool messages are dropped: kb's own rules are the only instructions the
model gets. Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from assistant.answer_json import approved_to_json
from core.errors import KbError
from core.text import detect_lang
from core.types import Answer, Citation, Turn
from ui.api.asking import AnswerStream, Asking, EventStream, parse_body, sse
from ui.api.client_tasks import client_task, task_reply
from ui.api.kb_api import FAILED, MAX_ANSWER_CHARS, MAX_QUESTION_CHARS, MAX_TURNS
from ui.i18n import t
from ui.page.render import SECTION_QUOTE, section_url

logger = logging.getLogger(__name__)

MODEL_ID = "kb-assistant"
VIA = "openai"  # the `via` label of its questions in /metrics and the log
# kb does not count the tokens of the prompts it builds: usage is reported as zeros, not guessed
USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
EXAMPLE = '{"model": "kb-assistant", "messages": [{"role": "user", "content": "..."}]}'


# The most messages a completion's body may hold (Open WebUI sends a chat's every message; the
# last MAX_TURNS answered ones are read), and parts one message's content may have.
MAX_MESSAGES = 1000
MAX_PARTS = 100


class ContentPart(BaseModel):
    type: str = "text"
    text: str | None = None  # parts of other types (images) carry none and are left out


class ChatMessage(BaseModel):
    role: str
    content: str | Annotated[list[ContentPart], Field(max_length=MAX_PARTS)] | None = None


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatRequest(BaseModel):
    """The fields kb reads; any other (temperature, max_tokens, tools, ...) is ignored."""

    model: str = MODEL_ID  # any name is taken: there is one model
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None


# --- messages in ---------------------------------------------------------------------------

def text_of(content: str | list[ContentPart] | None) -> str:
    """A message's text: a string, or its text parts joined by line breaks.

        text_of([ContentPart(text="Annual"), ContentPart(type="image_url")]) -> "Annual"
    """
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(part.text for part in content if part.type == "text" and part.text)


# The sources list kb appends to an answer (`sources_text`), in either language.
_HEADINGS = "|".join(re.escape(t("sources", lang)) for lang in ("en", "zh"))
_SOURCES = re.compile(rf"\n\n(?:{_HEADINGS})[:：]\n(?:\[\d+\][^\n]*(?:\n|$))+\s*$")


def strip_sources(answer: str) -> str:
    """An answer of kb's without the sources list it appended; other text unchanged.

        strip_sources("5 days [1].\\n\\nSources:\\n[1] leave.pdf p.3") -> "5 days [1]."
    """
    return _SOURCES.sub("", answer)


def read_messages(messages: Sequence[tuple[str, str]]) -> tuple[str, list[Turn]]:
    """The question (the last user message) and the turns before it (each user message with
    the assistant's answer after it, kb's sources lists stripped), from (role, text) pairs.
    System, developer and tool messages, unanswered questions, answers to nothing and what
    follows the question are left out; the last MAX_TURNS turns are kept, each clipped to the
    API's limits. ValueError when the last user message has no text.

        read_messages([("system", "Be brief."), ("user", "Annual leave?"),
                       ("assistant", "5 days [1].\\n\\nSources:\\n[1] leave.pdf p.3"),
                       ("user", "And part-time?")])
            -> ("And part-time?", [Turn("Annual leave?", "5 days [1].")])
    """
    last = max((i for i, (role, _) in enumerate(messages) if role == "user"), default=-1)
    question = messages[last][1].strip() if last >= 0 else ""
    if not question:
        raise ValueError("the last user message is the question, and it has no text")
    turns: list[Turn] = []
    asked = ""
    for role, text in messages[:last]:
        text = text.strip()
        if role == "user" and text:
            asked = text  # a question without an answer gives way to the next
        elif role == "assistant" and text and asked:
            answer = strip_sources(text)[:MAX_ANSWER_CHARS]
            turns.append(Turn(asked[:MAX_QUESTION_CHARS], answer))
            asked = ""
    return question, turns[-MAX_TURNS:]


# --- an answer out -------------------------------------------------------------------------

def sources_text(citations: Sequence[Citation], lang: str, base: str = "") -> str:
    """The short list appended to an answer: each cited source that kept its [n] marker, by
    file and page, or section for a Word passage, as a Markdown link to it where `base` (the
    app's address) is given; "" when none.

        sources_text([Citation(1, "leave.pdf", 3, "", "…")], "en")
            -> "\\n\\nSources:\\n[1] leave.pdf p.3"
    """
    lines = []
    for c in citations:
        if not c.supported:  # its marker was dropped from the answer
            continue
        where = f" p.{c.page}" if c.page else ""
        where += f" ({c.page_label})" if c.page and c.page_label else ""
        where += f" § {c.section}" if c.section else ""
        url = link(c, lang, base) if base else None
        lines.append(f"[{c.n}] [{c.file}{where}]({url})" if url else f"[{c.n}] {c.file}{where}")
    colon = "：" if lang == "zh" else ":"
    return f"\n\n{t('sources', lang)}{colon}\n" + "\n".join(lines) if lines else ""


def link(c: Citation, lang: str, base: str = "") -> str | None:
    """Where a citation opens in the app, the cited words marked: its PDF page
    (`/page/{chunk_id}`) or Word section (`/section/{chunk_id}`), for a user signed in there
    (both check the groups again); absolute under `base` (ui.public_url, else the address the
    request came to), so that a client can open it.

        link(Citation(1, "a.pdf", 3, "", "", "c1"), "en", "https://kb.example.com/")
            -> "https://kb.example.com/page/c1"
    """
    if not c.chunk_id:
        return None
    root = base.rstrip("/")
    if not c.page:
        return root + "/" + section_url(c.chunk_id, c.quote[:SECTION_QUOTE], lang)
    url = root + "/page/" + urllib.parse.quote(c.chunk_id, safe="")
    return url + ("?q=" + urllib.parse.quote(c.quote[:SECTION_QUOTE], safe="") if c.quote else "")


def kb_field(answer: Answer, lang: str, base: str = "") -> dict[str, Any]:
    """The `kb` field: what an OpenAI completion has no room for."""
    return {
        "answer": answer.answer,
        "mode": "abstained" if answer.abstained else answer.mode,
        "searched_for": answer.searched_for,
        "question_id": answer.question_id,
        "approved": approved_to_json(answer.approved),
        "citations": [
            {"n": c.n, "file": c.file, "page": c.page, "page_label": c.page_label or None,
             "section": c.section, "quote": c.quote, "supported": c.supported,
             "review_due": c.review_due or None, "link": link(c, lang, base)}
            for c in answer.citations
        ],
    }


class Reply:
    """The ids and time one completion's JSON shares, whole or in chunks."""

    def __init__(self) -> None:
        self.id = "chatcmpl-" + uuid.uuid4().hex
        self.created = int(time.time())

    def whole(self, answer: Answer, lang: str, base: str = "") -> dict[str, Any]:
        text = answer.answer + sources_text(answer.citations, lang, base)
        return {"id": self.id, "object": "chat.completion", "created": self.created,
                "model": MODEL_ID, "usage": USAGE, "kb": kb_field(answer, lang, base),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "logprobs": None, "finish_reason": "stop"}]}

    def chunk(self, delta: dict[str, str], finish: str | None = None,
              **extra: Any) -> str:
        """One `data:` event of a `chat.completion.chunk`."""
        return sse(json.dumps({"id": self.id, "object": "chat.completion.chunk",
                               "created": self.created, "model": MODEL_ID,
                               "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                            "finish_reason": finish}], **extra},
                              ensure_ascii=False))

    def usage(self) -> str:
        """The chunk `stream_options.include_usage` asks for: no choices, the usage."""
        return sse(json.dumps({"id": self.id, "object": "chat.completion.chunk",
                               "created": self.created, "model": MODEL_ID, "choices": [],
                               "usage": USAGE}))


def error(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None,
          param: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error in OpenAI's shape."""
    return JSONResponse({"error": {"message": message, "type": kind, "param": param,
                                   "code": code}}, status_code=status, headers=headers)


def _unauthorized() -> JSONResponse:
    return error(401, "missing or invalid bearer token: the API key is a kb token (create one "
                      "with `kb users token NAME`)", code="invalid_api_key",
                 headers={"WWW-Authenticate": 'Bearer realm="kb-assistant"'})


# --- the routes ----------------------------------------------------------------------------

def openai_router(asking: Asking, public_url: str = "") -> APIRouter:
    """`GET /v1/models`, `GET /v1/models/{id}` and `POST /v1/chat/completions`; a question past
    the gate's depth is refused at once with 429 and Retry-After (OpenAI's clients wait and
    retry a 429: docs/api.md)."""
    router = APIRouter()
    model = {"id": MODEL_ID, "object": "model", "created": int(time.time()),
             "owned_by": "kb-assistant"}

    @router.get("/v1/models")
    async def models(request: Request) -> Any:
        if await asking.user(request) is None:
            return _unauthorized()
        return {"object": "list", "data": [model]}

    @router.get("/v1/models/{name:path}")
    async def one_model(name: str, request: Request) -> Any:
        if await asking.user(request) is None:
            return _unauthorized()
        if name != MODEL_ID:
            return error(404, f"no model {name!r}: kb serves one, {MODEL_ID!r}",
                         code="model_not_found", param="model")
        return model

    @router.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        user = await asking.user(request)  # before the body is read: no valid token, 401
        if user is None:
            return _unauthorized()
        try:  # at most ui.max_body_bytes (ui/web/bodies.py), read on a worker thread
            body = await run_in_threadpool(parse_body, await request.body(), ChatRequest,
                                           EXAMPLE)
            question, history = read_messages([(m.role, text_of(m.content))
                                               for m in body.messages])
        except ValueError as exc:
            return error(400, f"bad request body: {exc}", param="messages")
        task = client_task(question)
        if task is not None:  # a front end's own task (a chat's title): no question
            logger.info("%s task of %s answered without retrieval", task, user.name)
            return _task_answer(Reply(), task_reply(task, question), body.stream)
        if len(question) > MAX_QUESTION_CHARS:
            return error(400, f"the question (the last user message) has {len(question)} "
                              f"characters; at most {MAX_QUESTION_CHARS} are taken",
                         code="question_too_long", param="messages")
        if not asking.admit(user, via=VIA):
            wait = asking.retry_after_s
            return error(429, f"busy: too many questions at once; try again in {wait} s",
                         kind="rate_limit_error", code="busy",
                         headers={"Retry-After": str(wait)})
        lang, reply = detect_lang(question), Reply()
        base = public_url or str(request.base_url)
        if body.stream:
            stream = asking.stream(question, user, history, via=VIA)
            usage = bool(body.stream_options and body.stream_options.include_usage)
            return EventStream(_chunks(stream, reply, lang, usage, base), stream)
        try:
            answer = await asking.ask(question, user, history, via=VIA)
        except KbError as exc:
            return error(400, str(exc))
        return reply.whole(answer, lang, base)

    return router


def _task_answer(reply: Reply, content: str, stream: bool) -> Any:
    """A front end's task answered, whole or as a stream of one piece."""
    if not stream:
        return {"id": reply.id, "object": "chat.completion", "created": reply.created,
                "model": MODEL_ID, "usage": USAGE,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "logprobs": None, "finish_reason": "stop"}]}

    async def pieces() -> AsyncIterator[str]:
        yield reply.chunk({"role": "assistant", "content": content})
        yield reply.chunk({}, "stop")
        yield sse("[DONE]")

    return StreamingResponse(pieces(), media_type="text/event-stream")


async def _chunks(stream: AnswerStream, reply: Reply, lang: str, usage: bool,
                  base: str) -> AsyncIterator[str]:
    """The streamed completion: the role at once, each piece as it is written, the sources
    list, a last chunk with `finish_reason: "stop"` and the `kb` field, then `[DONE]`; an
    `error` event in OpenAI's shape when the question is refused on the way."""
    yield reply.chunk({"role": "assistant", "content": ""})
    try:
        async for item in stream:
            if isinstance(item, Answer):
                listed = sources_text(item.citations, lang, base)
                if listed:
                    yield reply.chunk({"content": listed})
                yield reply.chunk({}, "stop", kb=kb_field(item, lang, base))
            elif item:
                yield reply.chunk({"content": item})
    except KbError as exc:
        yield sse(json.dumps({"error": {"message": str(exc), "type": "invalid_request_error",
                                        "param": None, "code": None}}, ensure_ascii=False))
        return
    except Exception:  # the response has begun: say so in its own terms, not by cutting it
        logger.exception("streamed completion of %s failed", stream.user.name)
        yield sse(json.dumps({"error": {"message": FAILED, "type": "server_error",
                                        "param": None, "code": None}}))
        return
    if usage:
        yield reply.usage()
    yield sse("[DONE]")
