"""`POST /api/ask` for programs: a bearer token names the user, the user's groups filter the
passages, and the reply is the JSON of `kb ask --json` (see docs/api.md).

    curl -s http://127.0.0.1:7860/api/ask -H "Authorization: Bearer $KB_TOKEN" \
         -H "Content-Type: application/json" -d '{"question": "How many days of annual leave?"}'
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

import anyio
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError

from assistant.answer_json import answer_to_json
from core.errors import KbError
from core.text import detect_lang
from core.types import Answer, Turn, User
from ui.conversations import Conversations
from ui.users import Users
from ui.web.gate import Gate
from ui.web.metrics import Metrics

logger = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000


class Asker(Protocol):
    def ask(self, question: str, groups: Any, history: Any = (), user: str = "") -> Answer: ...


class PastTurn(BaseModel):
    question: str = Field(max_length=MAX_QUESTION_CHARS)
    answer: str = Field(max_length=20000)


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS,
                          description="The question, in Chinese or English.")
    history: list[PastTurn] = Field(default_factory=list, max_length=20,
                                    description="Earlier turns of the conversation, oldest first.")
    conversation_id: str | None = Field(
        default=None, max_length=64,
        description="Continue this stored conversation of yours (its turns are the context); "
                    "left out, a new one is started. The reply names it.")


def parse_ask(raw: bytes) -> AskRequest:
    """The body of `POST /api/ask`; ValueError with one line that says what is wrong with it.

        parse_ask(b'{"question": "Annual leave?"}') -> AskRequest(question='Annual leave?', ...)
        parse_ask(b"[" * 100000) -> ValueError("JSON nested too deeply ...")
    """
    try:
        return AskRequest.model_validate(json.loads(raw))
    except RecursionError:  # json's decoder recurses per level
        raise ValueError('JSON nested too deeply; send {"question": "...", "history": '
                         '[{"question": "...", "answer": "..."}]} (docs/api.md)') from None
    except ValidationError as exc:
        raise ValueError("; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}"
                                   for e in exc.errors())) from None
    except ValueError as exc:  # not JSON, or not UTF-8
        raise ValueError(f"not JSON ({exc})") from None


def _unauthorized(detail: str) -> JSONResponse:
    return JSONResponse({"error": detail}, status_code=401,
                        headers={"WWW-Authenticate": 'Bearer realm="kb-assistant"'})


def bearer_user(request: Request, users: Users) -> User | None:
    """The user whose API token is in the Authorization header, else None."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return users.by_token(token.strip())


def busy(retry_after_s: int) -> JSONResponse:
    """The reply when `ui.queue_depth` questions are already taken on: try again later."""
    return JSONResponse(
        {"error": f"busy: too many questions at once; try again in {retry_after_s} s"},
        status_code=503, headers={"Retry-After": str(retry_after_s)},
    )


def api_router(assistant: Asker, users: Users, metrics: Metrics,
               gate: Gate | None = None, retry_after_s: int = 5,
               conversations: Conversations | None = None) -> APIRouter:
    """The API's routes; with `gate`, a question past its depth is refused at once (503);
    with `conversations`, each question is kept in one of the asker's conversations
    (`conversation_id` in and out)."""
    router = APIRouter()
    # Answers run on threads of their own, one for each place of the gate. On the pool every
    # other blocking step shares (anyio's 40 threads: this token check, the page's login
    # check, Gradio's sync routes), 40 answers held by a slow model left none, and even
    # "busy" waited for an answer to end (issue 28).
    answering = anyio.CapacityLimiter(gate.depth if gate is not None else 40)

    @router.post("/api/ask")
    async def ask(request: Request) -> Any:
        # The token is checked before the body is read: no valid token, always 401.
        user = await run_in_threadpool(bearer_user, request, users)
        if user is None:
            return _unauthorized("missing or invalid bearer token (create one with "
                                 "`kb users token NAME`)")
        try:  # the body is at most ui.max_body_bytes (ui/security/bodies.py)
            body = parse_ask(await request.body())
        except ValueError as exc:
            return JSONResponse({"error": f"bad request body: {exc}"}, status_code=422)
        history = [Turn(t.question, t.answer) for t in body.history]
        if body.conversation_id and body.history:
            return JSONResponse({"error": "bad request body: give either history or "
                                          "conversation_id (its stored turns are the history)"},
                                status_code=422)
        if body.conversation_id and conversations is not None:
            try:
                history = await run_in_threadpool(conversations.history, user.name,
                                                   body.conversation_id)
            except KbError as exc:  # someone else's id reads as none
                return JSONResponse({"error": str(exc)}, status_code=404)
        if gate is not None and not gate.enter():  # checked on the event loop: no thread needed
            metrics.busy.labels(via="api").inc()
            logger.warning("question of %s refused: %d questions at once", user.name, gate.depth)
            return busy(retry_after_s)
        metrics.in_flight.inc()
        try:
            answer = await anyio.to_thread.run_sync(assistant.ask, body.question, user.groups,
                                                    history, user.name, limiter=answering)
        except KbError as exc:
            metrics.failed(type(exc).__name__, via="api")
            return JSONResponse({"error": str(exc)}, status_code=400)
        finally:
            metrics.in_flight.dec()
            if gate is not None:
                gate.leave()
        if not answer.question_id:
            answer.question_id = await run_in_threadpool(users.record_question, user.name,
                                                         body.question, answer)
        metrics.answered(answer, detect_lang(body.question), via="api", user=user.name)
        reply = answer_to_json(answer)
        if conversations is not None:
            reply["conversation_id"] = await run_in_threadpool(
                _keep_turn, conversations, user.name, body.conversation_id, body.question, answer)
        return reply

    return router


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
