"""Sign-in by a trusted header: behind oauth2-proxy or a company gateway, the proxy names the
user (`auth.user_header`, e.g. X-Forwarded-User) and their groups (`auth.groups_header`), and
the app believes it only when the request's socket peer is one of `auth.trusted_proxies`. From
anyone else the headers are dropped before the app sees them, and a warning names the address.

A believed request is the named user's: their record is updated with the groups of the header
(each request: the proxy is the directory here), and the request's own session cookies are
replaced by a session of that user (the one it holds, or a new one), set on the response under
the cookie name of the request's scheme while the other name is expired, so Gradio's page and
routes see that user and no one else. When the named user may not sign in, the request is
nobody's. Headers from an untrusted peer count against the address's login throttle: past its
limit they are dropped without another audit record.

    app.add_middleware(TrustedHeader, signin=signin, sessions=sessions, cookies=cookies,
                       proxies=TrustedProxies.parse(["10.0.0.5"], "auth.trusted_proxies"),
                       user_header="X-Forwarded-User", groups_header="X-Forwarded-Groups",
                       guard=login_guard)
"""

from __future__ import annotations

import logging
import secrets

from fastapi.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ui.identity.login import LoginGuard, SessionTable
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
                 proxies: TrustedProxies, user_header: str, groups_header: str,
                 guard: LoginGuard | None = None) -> None:
        self.app, self.signin, self.sessions, self.cookies = app, signin, sessions, cookies
        self.proxies, self.guard = proxies, guard
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
            await run_in_threadpool(self._untrusted, named[0][:64] if named else "?", peer)
            return await self.app(scope, receive, send)
        groups = [g for k, v in headers if k == self.groups_key
                  for g in split_groups(v.decode("latin-1"))]
        user = await run_in_threadpool(self.signin.adopt_header, named[0][:64], groups)
        held = session_cookies(scope["headers"], self.cookies)
        token = "" if user is None else \
            await run_in_threadpool(self._session, scope, user.name, held)
        scope["headers"] = with_session(scope["headers"], self.cookies, token)
        secure = scope.get("scheme") in ("https", "wss")
        wanted = {self.cookies[0] if secure else self.cookies[-1]: token} if token else {}
        if scope["type"] != "http" or held == wanted:
            return await self.app(scope, receive, send)
        cookies = [self._set_cookie(name, wanted.get(name, ""), secure)
                   for name in self.cookies if name in wanted or name in held]

        async def send_with_cookies(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message, headers=[*message.get("headers", []),
                                                 *((b"set-cookie", c) for c in cookies)])
            await send(message)

        return await self.app(scope, receive, send_with_cookies)

    def _untrusted(self, named: str, peer: str) -> None:
        """The user header from a peer that is no trusted proxy: dropped, logged and recorded,
        while the address is under its login throttle's limit."""
        if self.guard is not None and not self.guard.reserve_address(peer).granted:
            logger.debug("%s header from %s dropped (the address is locked)",
                         self.user_key.decode(), peer)
            return
        logger.warning("%s header from %s ignored: not one of auth.trusted_proxies (or not "
                       "one user named)", self.user_key.decode(), peer)
        self.signin.users.audit.soon("signin", named, outcome="refused", address=peer,
                                     method="header", reason="untrusted peer")

    def _session(self, scope: Scope, name: str, held: dict[str, str]) -> str:
        """The token of `name`'s session the request holds, else of a new one."""
        for token in held.values():
            user = self.sessions.user(token)
            if user is not None and user.name == name:
                return token
        token = secrets.token_urlsafe(32)
        self.sessions[token] = name
        logger.info("session of %s opened from the trusted header", name)
        self.signin.users.audit.soon("signin", name, object=name, method="header",
                                     address=scope["client"][0] if scope.get("client") else "")
        return token

    def _set_cookie(self, name: str, token: str, secure: bool) -> bytes:
        """The Set-Cookie of session cookie `name`: `token`, or expired when empty (the name
        of https, the first, is always Secure)."""
        flags = "; HttpOnly; Path=/; SameSite=Lax" + \
            ("; Secure" if secure or name == self.cookies[0] else "")
        return (f"{name}={token}{flags}" if token else f"{name}=; Max-Age=0{flags}").encode()


def session_cookies(headers: list[tuple[bytes, bytes]], names: list[str]) -> dict[str, str]:
    """The values of the cookies `names` in the request's cookie headers.

        session_cookies([(b"cookie", b"a=1; s=x")], ["s"]) -> {"s": "x"}
    """
    found: dict[str, str] = {}
    for key, value in headers:
        if key == b"cookie":
            for pair in value.decode("latin-1").split(";"):
                name, _, text = pair.strip().partition("=")
                if name in names:
                    found.setdefault(name, text)
    return found


def with_session(headers: list[tuple[bytes, bytes]], names: list[str],
                 token: str) -> list[tuple[bytes, bytes]]:
    """`headers` with one cookie header: the request's cookies but `names`, and `names` set to
    `token` (none of them when it is empty).

        with_session([(b"cookie", b"a=1; s=x")], ["s"], "t") -> [(b"cookie", b"a=1; s=t")]
    """
    kept = [pair.strip() for key, value in headers if key == b"cookie"
            for pair in value.decode("latin-1").split(";")
            if pair.strip() and pair.strip().partition("=")[0] not in names]
    kept += [f"{name}={token}" for name in names if token]
    others = [(k, v) for k, v in headers if k != b"cookie"]
    return [*others, (b"cookie", "; ".join(kept).encode("latin-1"))] if kept else others
