"""What the machine interfaces share, `POST /api/ask` (ui/api/kb_api.py), the OpenAI-compatible
`/v1/chat/completions` (ui/api/openai_api.py) and the MCP server's tools (ui/api/mcp/): the
user a bearer token names, a place at the gate the page shares (`ui/gate.py`), the threads
answers run on, a finished answer recorded and counted, and a JSON body parsed into one line
of error at most.

    asking = Asking(assistant, users, metrics, gate)    # one per process (ui/web/server.py)
    user = await asking.user(request)                     # None: answer 401
    if not asking.admit(user, via="api"): ...             # busy: answer 503 (429) with Retry-After
    answer = await asking.ask(question, user, history, via="api")    # gives the place back
    found = await asking.run(assistant.retrieve, question, user.groups)  # any blocking step
    stream = asking.stream(question, user, history, via="api")       # or, as it is written:
    async for item in stream: ...       # str pieces, then the Answer (recorded)
    await stream.aclose()               # always, begun or not: stops the model, frees the place
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import anyio
from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ValidationError
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from core.errors import KbError
from core.text import detect_lang
from core.types import Answer, Turn, User
from ui.gate import Gate
from ui.identity.users import Users
from ui.metrics import Metrics

logger = logging.getLogger(__name__)


M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


class Asker(Protocol):
    def ask(self, question: str, groups: Any, history: Any = (), user: str = "") -> Answer: ...

    def ask_stream(self, question: str, groups: Any, history: Any = (),
                   user: str = "") -> Iterator[str | Answer]: ...


def bearer_user(request: Request, users: Users) -> User | None:
    """The user whose API token is in the Authorization header, else None."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return users.by_token(token.strip())


class Asking:
    """The way of an API question, shared by both APIs (thread-safe: the gate is)."""

    def __init__(self, assistant: Asker, users: Users, metrics: Metrics, gate: Gate,
                 retry_after_s: int = 5) -> None:
        self.assistant, self.users, self.metrics, self.gate = assistant, users, metrics, gate
        self.retry_after_s = retry_after_s
        # Answers run on threads of their own, one for each place of the gate. On the pool every
        # other blocking step shares (anyio's 40 threads: the token check, the page's login
        # check, Gradio's sync routes), 40 answers held by a slow model left none, and even
        # "busy" waited for an answer to end.
        self.answering = anyio.CapacityLimiter(max(1, gate.depth))

    async def user(self, request: Request) -> User | None:
        """The bearer token's user (checked on a thread: the ledger is read), else None."""
        return await run_in_threadpool(bearer_user, request, self.users)

    def admit(self, user: User, via: str) -> bool:
        """Take a place at the gate for `user`'s question; False (counted as busy, logged)
        when `ui.queue_depth` are taken. Checked on the event loop: no thread needed."""
        if not self.gate.enter():
            self.metrics.busy.labels(via=via).inc()
            logger.warning("question of %s refused: %d questions at once", user.name,
                           self.gate.depth)
            return False
        self.metrics.in_flight.inc()
        return True

    def leave(self) -> None:
        """Give back the place `admit` took."""
        self.metrics.in_flight.dec()
        self.gate.leave()

    async def ask(self, question: str, user: User, history: Sequence[Turn], via: str) -> Answer:
        """An admitted question answered on an answering thread, recorded and counted; the
        place is given back. KbError (counted) when the assistant refuses it."""
        try:
            answer = await anyio.to_thread.run_sync(self.assistant.ask, question, user.groups,
                                                    history, user.name, limiter=self.answering)
        except KbError as exc:
            self.metrics.failed(type(exc).__name__, via=via)
            raise
        finally:
            self.leave()
        return await self.finish(answer, question, user, via)

    async def run(self, work: Callable[..., R], *args: Any) -> R:
        """Blocking `work` of an admitted request (a search, say) on an answering thread; the
        place is given back."""
        try:
            return await anyio.to_thread.run_sync(work, *args, limiter=self.answering)
        finally:
            self.leave()

    def stream(self, question: str, user: User, history: Sequence[Turn],
               via: str) -> AnswerStream:
        """An admitted question answered as the model writes it (see AnswerStream)."""
        return AnswerStream(self, question, user, history, via)

    async def finish(self, answer: Answer, question: str, user: User, via: str) -> Answer:
        """A finished answer recorded (when the assistant could not) and counted."""
        if not answer.question_id:
            answer.question_id = await run_in_threadpool(self.users.record_question, user.name,
                                                         question, answer)
        self.metrics.answered(answer, detect_lang(question), via=via, user=user.name)
        return answer


# Objects and numbers a request body's JSON may hold: a chat of the most messages an API takes
# needs a few thousand; a body of more is refused as it is read, not after every one is built.
MAX_JSON_VALUES = 20_000


class _Flood(Exception):
    """More than MAX_JSON_VALUES objects and numbers in a body."""


def read_json(raw: bytes) -> Any:
    """`raw` as JSON, counting each object and number as it is built: past MAX_JSON_VALUES the
    reading stops (`_Flood`). Each count runs a line of Python, so a worker thread reading a
    large body lets the event loop in between (a plain `json.loads` holds it throughout)."""
    seen = 0

    def count(value: Any) -> Any:
        nonlocal seen
        seen += 1
        if seen > MAX_JSON_VALUES:
            raise _Flood
        return value

    return json.loads(raw, object_pairs_hook=lambda pairs: count(dict(pairs)),
                      parse_int=lambda text: count(int(text)),
                      parse_float=lambda text: count(float(text)))


def parse_body(raw: bytes, model: type[M], example: str) -> M:
    """A JSON request body as `model`; ValueError with one line that says what is wrong with
    it (`example`: what to send instead of JSON nested too deeply). It takes time in proportion
    to the body: the routes run it on a worker thread (`run_in_threadpool`), never on the loop.

        parse_body(b"[" * 100000, AskRequest, "{...}") -> ValueError("JSON nested too deeply ...")
    """
    try:
        return model.model_validate(read_json(raw))
    except RecursionError:  # json's decoder recurses per level
        raise ValueError(f"JSON nested too deeply; send {example} (docs/api.md)") from None
    except _Flood:
        raise ValueError(f"more than {MAX_JSON_VALUES} JSON objects and numbers; send "
                         f"{example} (docs/api.md)") from None
    except ValidationError as exc:
        raise ValueError("; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}"
                                   for e in exc.errors())) from None
    except ValueError as exc:  # not JSON, or not UTF-8
        raise ValueError(f"not JSON ({exc})") from None


_END = object()


class AnswerStream:
    """An admitted question answered as it streams: `async for` gives the answer's text in
    pieces, each as the model writes it, then the finished Answer (recorded and counted); a
    KbError (counted) when the assistant refuses the question. `aclose()` must follow, begun
    or not (`EventStream` sees to it): it stops the model's request and gives the place back.
    Each step runs on an answering thread; the assistant's generator is never run by two at
    once."""

    def __init__(self, asking: Asking, question: str, user: User, history: Sequence[Turn],
                 via: str) -> None:
        self.asking, self.question, self.user, self.via = asking, question, user, via
        # a generator: nothing runs until the first step
        self._items = asking.assistant.ask_stream(question, user.groups, history, user.name)
        self._closed = False

    def __aiter__(self) -> AnswerStream:
        return self

    async def __anext__(self) -> str | Answer:
        if self._closed:
            raise StopAsyncIteration
        try:
            item = await anyio.to_thread.run_sync(next, self._items, _END,
                                                  limiter=self.asking.answering)
        except KbError as exc:
            self.asking.metrics.failed(type(exc).__name__, via=self.via)
            raise
        if item is _END:
            raise StopAsyncIteration
        if isinstance(item, Answer):
            return await self.asking.finish(item, self.question, self.user, self.via)
        return str(item)

    async def aclose(self) -> None:
        """Stop the answer (the model's request is cancelled when its generator closes) and
        give the place back; once, however often called, even when the client has gone."""
        if self._closed:
            return
        self._closed = True
        close = getattr(self._items, "close", None)  # ask_stream's generator has one
        try:
            with anyio.CancelScope(shield=True):  # runs while the response is being cancelled
                if close is not None:
                    await anyio.to_thread.run_sync(close, limiter=self.asking.answering)
        finally:
            self.asking.leave()


class EventStream(StreamingResponse):
    """Server-sent events made from an AnswerStream (`events`), which is closed when the
    response ends, however it ends: sent, failed, the client gone, or never begun."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[str], stream: AnswerStream) -> None:
        # no-transform and no buffering: proxies pass each event on as it comes
        super().__init__(events, headers={"Cache-Control": "no-cache, no-transform",
                                          "X-Accel-Buffering": "no"})
        self.stream = stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.stream.aclose()


def sse(data: str, event: str = "") -> str:
    """One server-sent event.

        sse('{"text": "5 days"}', "piece") -> 'event: piece\\ndata: {"text": "5 days"}\\n\\n'
    """
    head = f"event: {event}\n" if event else ""
    return head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n"
