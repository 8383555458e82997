"""Request bodies are capped before anything parses them: FastAPI and Gradio read a whole JSON
or form body into memory before they check a login, so without a cap anyone who can reach the
port could make the app hold hundreds of megabytes per request.

    app = BodyLimit(app, max_bytes=6 * 1024 * 1024, exempt=("/gradio_api/upload",))

A request that declares a larger `Content-Length` is answered 413 at once, its body unread; a
streamed (chunked) body is counted as it arrives and cut at the cap, and its request answered
413 in place of whatever the route would have said. Exempt paths keep their own limits (Gradio
writes uploads to disk as they arrive and caps each file at `ui.upload_max_mb`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.errors import ConfigError
from ui.identity.login import client_address

logger = logging.getLogger(__name__)


class BodyTooLarge(HTTPException):
    """Raised into the route that reads past the cap; FastAPI re-raises an HTTPException
    where it would turn any other error of the body into a 400."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, too_large(max_bytes))


def too_large(max_bytes: int) -> str:
    """The one line a client is told.

        too_large(1024) -> "request body over 1024 bytes (ui.max_body_bytes): send less, ..."
    """
    return (f"request body over {max_bytes} bytes (ui.max_body_bytes): send less, or ask the "
            "operator to raise ui.max_body_bytes")


def declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, or None when it sends none (chunked) or a bad one."""
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimit:
    """ASGI middleware: request bodies of at most `max_bytes`, except under `exempt` paths."""

    def __init__(self, app: ASGIApp, max_bytes: int, exempt: Sequence[str] = ()) -> None:
        self.app, self.max_bytes, self.exempt = app, max_bytes, tuple(exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or path in self.exempt:
            await self.app(scope, receive, send)
            return
        declared = declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self.refuse(scope, receive, send, f"declares {declared} bytes")
            return
        seen = 0
        over = started = False

        async def counted() -> Message:
            nonlocal seen, over
            if over:
                raise BodyTooLarge(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    over = True
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def answer(message: Message) -> None:
            nonlocal started
            if over and not started:  # the route's reply to a cut body: ours goes instead
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, answer)
        except Exception:
            if not over or started:
                raise
        if over and not started:
            await self.refuse(scope, receive, send, f"streamed past {self.max_bytes} bytes")

    async def refuse(self, scope: Scope, receive: Receive, send: Send, why: str) -> None:
        logger.warning("request body of %s to %s %s: refused (413)", client_address.get(),
                       scope.get("path", "")[:80], why)
        await JSONResponse({"error": too_large(self.max_bytes)}, status_code=413,
                           headers={"Connection": "close"})(scope, receive, send)


def body_cap(max_bytes: int) -> int:
    """`ui.max_body_bytes`, checked: ConfigError unless it is a positive number of bytes."""
    if max_bytes < 1:
        raise ConfigError(f"ui.max_body_bytes is {max_bytes}: it must be at least 1 (bytes a "
                          "request body may hold; the default 6291456 takes the largest API "
                          "question)")
    return max_bytes
