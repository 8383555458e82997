"""Sign-in by a trusted header: behind oauth2-proxy or a company gateway, the proxy names the
user (`auth.user_header`, e.g. X-Forwarded-User) and their groups (`auth.groups_header`), and
the app believes it only when the request's socket peer is one of `auth.trusted_proxies`. From
anyone else the headers are dropped before the app sees them, and a warning names the address.

A believed request gets the user's record updated with the groups of the header (each request:
the proxy is the directory here) and, without a session of that user yet, a new session whose
cookie is set on the response, so Gradio's page and routes see a signed-in user.

    app.add_middleware(TrustedHeader, signin=signin, sessions=sessions, cookies=cookies,
                       proxies=TrustedProxies.parse(["10.0.0.5"], "auth.trusted_proxies"),
                       user_header="X-Forwarded-User", groups_header="X-Forwarded-Groups")
"""

from __future__ import annotations

import logging
import secrets
from http.cookies import SimpleCookie
from typing import Any

from fastapi.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ui.identity.login import SessionTable
from ui.identity.proxies import TrustedProxies
from ui.identity.signin import SignIn

logger = logging.getLogger(__name__)


def split_groups(value: str) -> list[str]:
    """The groups a proxy lists, by commas (oauth2-proxy) or spaces.

        split_groups("hr, finance") -> ["hr", "finance"]
    """
    return [g for g in value.replace(",", " ").split() if g]


class TrustedHeader:
    """ASGI middleware: the proxy-named user signed in, the headers of anyone else dropped."""

    def __init__(self, app: ASGIApp, signin: SignIn, sessions: SessionTable, cookies: list[str],
                 proxies: TrustedProxies, user_header: str, groups_header: str) -> None:
        self.app, self.signin, self.sessions, self.cookies = app, signin, sessions, cookies
        self.proxies = proxies
        self.user_key = user_header.lower().encode()
        self.groups_key = groups_header.lower().encode() if groups_header else b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or [])
        named = [v.decode("latin-1").strip() for k, v in headers if k == self.user_key]
        if not named:
            return await self.app(scope, receive, send)
        peer = scope["client"][0] if scope.get("client") else "?"
        keys = {self.user_key, self.groups_key} - {b""}
        scope = dict(scope, headers=[(k, v) for k, v in headers if k not in keys])
        if not self.proxies.trusts(peer) or len(named) != 1 or not named[0]:
            logger.warning("%s header from %s ignored: not one of auth.trusted_proxies (or not "
                           "one user named)", self.user_key.decode(), peer)
            self.signin.users.audit.soon("signin", named[0][:64] if named else "?",
                                         outcome="refused", address=peer, method="header",
                                         reason="untrusted peer")
            return await self.app(scope, receive, send)
        groups = [g for k, v in headers if k == self.groups_key
                  for g in split_groups(v.decode("latin-1"))]
        user = await run_in_threadpool(self.signin.adopt_header, named[0][:64], groups)
        if user is None:
            return await self.app(scope, receive, send)
        cookie = await run_in_threadpool(self._session, scope, user.name)
        if cookie is None:
            return await self.app(scope, receive, send)
        name, token = cookie
        scope["headers"] = [*scope["headers"], (b"cookie", f"{name}={token}".encode())]
        secure = scope.get("scheme") in ("https", "wss")

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                value = f"{name}={token}; HttpOnly; Path=/; SameSite=Lax" + \
                    ("; Secure" if secure else "")
                message = dict(message, headers=[*message.get("headers", []),
                                                 (b"set-cookie", value.encode())])
            await send(message)

        return await self.app(scope, receive, send_with_cookie)

    def _session(self, scope: Scope, name: str) -> tuple[str, str] | None:
        """None when the request's session is already `name`'s; else a new session's cookie."""
        jar: SimpleCookie = SimpleCookie()
        for key, value in scope["headers"]:
            if key == b"cookie":
                try:
                    jar.load(value.decode("latin-1"))
                except Exception:  # noqa: BLE001  a malformed cookie is no session
                    continue
        for cookie in self.cookies:
            morsel: Any = jar.get(cookie)
            user = self.sessions.user(morsel.value) if morsel is not None else None
            if user is not None and user.name == name:
                return None
        if not self.cookies:
            return None
        secure = scope.get("scheme") in ("https", "wss")
        cookie_name = self.cookies[0] if secure else self.cookies[-1]
        token = secrets.token_urlsafe(32)
        self.sessions[token] = name
        logger.info("session of %s opened from the trusted header", name)
        self.signin.users.audit.soon("signin", name, object=name, method="header",
                                     address=scope["client"][0] if scope.get("client") else "")
        return cookie_name, token
