"""`POST /api/ask` for programs: a bearer token names the user, the user's groups filter the
passages, and the reply is the JSON of `kb ask --json` (see docs/api.md); with `"stream": true`,
server-sent events: the answer's pieces as the model writes them, then that JSON.

    curl -s http://127.0.0.1:7860/api/ask -H "Authorization: Bearer $KB_TOKEN" \
         -H "Content-Type: application/json" -d '{"question": "How many days of annual leave?"}'
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from assistant.answer_json import answer_to_json
from core.errors import KbError
from core.types import Answer, Turn, User
from ui.api.asking import AnswerStream, Asking, EventStream, parse_body, sse
from ui.conversations import Conversations

logger = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
MAX_ANSWER_CHARS = 20000  # an earlier answer sent back as history
MAX_TURNS = 20  # earlier turns a request may send
FAILED = "the answer failed on the server (its log says why); ask again"


class PastTurn(BaseModel):
    question: str = Field(max_length=MAX_QUESTION_CHARS)
    answer: str = Field(max_length=MAX_ANSWER_CHARS)


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS,
                          description="The question, in Chinese or English.")
    history: list[PastTurn] = Field(default_factory=list, max_length=MAX_TURNS,
                                    description="Earlier turns of the conversation, oldest first.")
    conversation_id: str | None = Field(
        default=None, max_length=64,
        description="Continue this stored conversation of yours (its turns are the context); "
                    "left out, a new one is started. The reply names it.")
    stream: bool = Field(default=False,
                         description="Server-sent events: each piece as it is written, then "
                                     "the answer's JSON.")


def parse_ask(raw: bytes) -> AskRequest:
    """The body of `POST /api/ask`; ValueError with one line that says what is wrong with it.

        parse_ask(b'{"question": "Annual leave?"}') -> AskRequest(question='Annual leave?', ...)
        parse_ask(b"[" * 100000) -> ValueError("JSON nested too deeply ...")
    """
    return parse_body(raw, AskRequest, '{"question": "...", "history": [{"question": "...", '
                                       '"answer": "..."}]}')


def _unauthorized(detail: str) -> JSONResponse:
    return JSONResponse({"error": detail}, status_code=401,
                        headers={"WWW-Authenticate": 'Bearer realm="kb-assistant"'})


def busy(retry_after_s: int) -> JSONResponse:
    """The reply when `ui.queue_depth` questions are already taken on: try again later."""
    return JSONResponse(
        {"error": f"busy: too many questions at once; try again in {retry_after_s} s"},
        status_code=503, headers={"Retry-After": str(retry_after_s)},
    )


def api_router(asking: Asking, conversations: Conversations | None = None) -> APIRouter:
    """The API's routes; a question past the gate's depth is refused at once (503); with
    `conversations`, each question is kept in one of the asker's conversations
    (`conversation_id` in and out)."""
    router = APIRouter()

    @router.post("/api/ask")
    async def ask(request: Request) -> Any:
        # The token is checked before the body is read: no valid token, always 401.
        user = await asking.user(request)
        if user is None:
            return _unauthorized("missing or invalid bearer token (create one with "
                                 "`kb users token NAME`)")
        try:  # at most ui.max_body_bytes (ui/web/bodies.py), read on a worker thread
            body = await run_in_threadpool(parse_ask, await request.body())
        except ValueError as exc:
            return JSONResponse({"error": f"bad request body: {exc}"}, status_code=422)
        history = [Turn(t.question, t.answer) for t in body.history]
        if body.conversation_id and body.history:
            return JSONResponse({"error": "bad request body: give either history or "
                                          "conversation_id (its stored turns are the history)"},
                                status_code=422)
        if body.conversation_id and conversations is not None:
            try:
                history = await run_in_threadpool(conversations.history, user,
                                                   body.conversation_id)
            except KbError as exc:  # someone else's id reads as none
                return JSONResponse({"error": str(exc)}, status_code=404)
        if not asking.admit(user, via="api"):
            return busy(asking.retry_after_s)
        if body.stream:
            stream = asking.stream(body.question, user, history, via="api")
            return EventStream(_events(stream, conversations, body.conversation_id), stream)
        try:
            answer = await asking.ask(body.question, user, history, via="api")
        except KbError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return await _reply(answer, user, conversations, body.conversation_id, body.question)

    return router


async def _reply(answer: Answer, user: User, conversations: Conversations | None,
                 conversation_id: str | None, question: str) -> dict[str, Any]:
    """The answer's JSON, with the conversation it was kept in."""
    reply = answer_to_json(answer)
    if conversations is not None:
        reply["conversation_id"] = await run_in_threadpool(
            _keep_turn, conversations, user.name, conversation_id, question, answer)
    return reply


async def _events(stream: AnswerStream, conversations: Conversations | None,
                  conversation_id: str | None) -> AsyncIterator[str]:
    """`event: piece` with `{"text": ...}` for each piece, then `event: answer` with the reply's
    JSON; `event: error` with `{"error": ...}` when the question is refused on the way."""
    try:
        async for item in stream:
            if isinstance(item, Answer):
                reply = await _reply(item, stream.user, conversations, conversation_id,
                                     stream.question)
                yield sse(json.dumps(reply, ensure_ascii=False), "answer")
            else:
                yield sse(json.dumps({"text": item}, ensure_ascii=False), "piece")
    except KbError as exc:
        yield sse(json.dumps({"error": str(exc)}, ensure_ascii=False), "error")
    except Exception:  # the response has begun: say so in its own terms, not by cutting it
        logger.exception("streamed answer of %s failed", stream.user.name)
        yield sse(json.dumps({"error": FAILED}), "error")


def _keep_turn(conversations: Conversations, owner: str, conversation_id: str | None,
               question: str, answer: Answer) -> str:
    """Append the answered question to the owner's conversation (a new one without an id)."""
    if conversation_id:
        try:
            conversations.add_turn(owner, conversation_id, question, answer)
            return conversation_id
        except KbError:  # deleted while the question was answered: keep it in a new one
            pass
    conversation_id = conversations.start(owner, question)
    conversations.add_turn(owner, conversation_id, question, answer)
    return conversation_id
