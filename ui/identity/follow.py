"""Directory and OpenID users read again off the event loop: Gradio looks up a request's session
inside its async routes (`app.tokens.get`, on the event loop), and a due user's session is read
again from the directory or the OpenID provider there (`SignIn.follow`), which may take up to
`auth.ldap_timeout_s` (each of the provider's two calls) when it is slow or down. This
middleware looks the session up first, in a worker thread, so the directory is asked there and
Gradio finds the user fresh.

    app.add_middleware(FollowFirst, session_user=session_user)   # whenever users.follow is set
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send


class FollowFirst:
    """ASGI middleware: a request with a cookie has its session checked in a worker thread."""

    def __init__(self, app: ASGIApp, session_user: Any) -> None:
        self.app, self.session_user = app, session_user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and any(k == b"cookie" for k, _ in scope.get("headers", ())):
            await run_in_threadpool(self.session_user, Request(scope))
        await self.app(scope, receive, send)
