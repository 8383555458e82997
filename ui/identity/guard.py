"""The guard in front of Gradio's own routes (ASGI middleware), and Gradio's temp folder.

Gradio binds a session hash to nobody: whoever sends one runs events in that session's state
(`queue/join`), reads its messages (`queue/data`), ends it (`heartbeat/`, `cancel`) or has its
whole page written to a file for anyone to open (`deep_link`). In front of Gradio:

    route (under /gradio_api/)                       who passes
    deep_link, ?deep_link= on a page, call/, run/,   nobody (404): the app does not use them;
      api/, stream/, component_server,                 its API is `POST /api/ask` (`token`
      process_recording, startup-events, token         would hand page scripts the HttpOnly
                                                       session cookie's value)
    queue/join, queue/data, heartbeat/, cancel       a signed-in user (else 401) whose session
                                                       hash it is: bound to the first user who
                                                       sends it, anyone else gets 404
    upload, upload_progress, file=, file/            admins (else 403)
    /logout (not under /gradio_api/)                 a request from the app's own pages or
                                                       typed in (403 from another site's link)

Gradio's session cookies are sent `SameSite=Lax` (Gradio asks for None: another site's requests
would carry them).

    owners = SessionOwners(capacity=40_000, known=gradio.known)
    owners.claim("k3x", "alice") -> True; then owners.claim("k3x", "bob") -> False
"""

from __future__ import annotations

import json
import logging
import os
import re
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.errors import ConfigError
from ui.identity.login import client_address
from ui.identity.proxies import TrustedProxies

logger = logging.getLogger(__name__)

PREFIX = "/gradio_api/"
REFUSED = frozenset({"deep_link", "call", "run", "api", "stream", "component_server",
                     "process_recording", "startup-events", "token"})
# Sec-Fetch-Site values of a request a browser made for the app's own page, or that a person
# typed or bookmarked; an absent header is a client that is no browser.
OWN_SITE = frozenset({"same-origin", "none", ""})
SESSION = frozenset({"queue/join", "queue/data", "heartbeat", "cancel"})
ADMIN_ONLY = frozenset({"upload", "upload_progress", "file"})
MAX_HASH_CHARS = 128  # Gradio's own are 11 (the page) or 36 (gradio_client) characters
MAX_BODY_BYTES = 1 << 20  # queue/join and cancel carry a question and a few ids


class SessionOwners:
    """Session hash -> the user who first sent it, in memory; past `capacity` the hash used
    longest ago is forgotten. A forgotten hash that Gradio still holds (`known`) is nobody's to
    take: its owner reloads the page and gets a new one."""

    def __init__(self, capacity: int, known: Callable[[str], bool]) -> None:
        self.capacity, self.known = max(1, capacity), known
        self._owners: OrderedDict[str, str] = OrderedDict()

    def owner(self, session_hash: str) -> str | None:
        return self._owners.get(session_hash)

    def claim(self, session_hash: str, name: str) -> bool:
        """Whether `name` may use the session: it is theirs, or new and now theirs."""
        owner = self._owners.get(session_hash)
        if owner is None:
            if self.known(session_hash):
                return False
            owner = self._owners[session_hash] = name
            if len(self._owners) > self.capacity:
                self._owners.popitem(last=False)
        if owner != name:
            return False
        self._owners.move_to_end(session_hash)
        return True


class GradioState:
    """What the guard reads of Gradio's own state: the sessions it holds, and which session an
    event belongs to."""

    def __init__(self, gradio_app: Any) -> None:
        self.app = gradio_app

    def known(self, session_hash: str) -> bool:
        queue = self.app.get_blocks()._queue
        return (session_hash in self.app.state_holder
                or session_hash in queue.pending_messages_per_session
                or session_hash in queue.pending_event_ids_session)

    def event_session(self, event_id: str) -> str | None:
        queue = self.app.get_blocks()._queue
        event = queue.event_ids_to_events.get(event_id)
        if event is not None:
            return str(event.session_hash)
        return next((s for s, ids in queue.pending_event_ids_session.items() if event_id in ids),
                    None)


def gradio_route(path: str) -> tuple[str, str]:
    """The route's name under /gradio_api/ and the rest of its path (("", "") for any other).

        gradio_route("/gradio_api//heartbeat/k3x") -> ("heartbeat", "k3x")
        gradio_route("/gradio_api/queue/join") -> ("queue/join", "")
    """
    path = re.sub("/+", "/", path)
    if PREFIX not in path:
        return "", ""
    parts = path.split(PREFIX, 1)[1].strip("/").split("/")
    head = "file" if parts[0].startswith("file=") else parts[0]
    if head == "queue" and len(parts) > 1:
        return f"queue/{parts[1]}", "/".join(parts[2:])
    return head, "/".join(parts[1:])


class GuardGradio:
    """ASGI middleware in front of the app: settles the client address (the socket peer, or
    the client a trusted proxy names in X-Forwarded-For, also its X-Forwarded-Proto) for every
    route and the login throttle, refuses the Gradio routes the app does not use, checks the
    owner of the session hash on those that take one, and lets only admins upload or read
    Gradio's files."""

    UPLOADS = ("/gradio_api/upload",)  # bodies capped by Gradio's own limit per file

    def __init__(self, app: ASGIApp, session_user: Any, owners: SessionOwners,
                 event_session: Callable[[str], str | None], proxies: TrustedProxies) -> None:
        self.app, self.session_user = app, session_user
        self.owners, self.event_session, self.proxies = owners, event_session, proxies

    def settle_client(self, scope: Scope) -> str:
        """The client's address; where a trusted proxy names it, written into the scope too,
        with the proxy's X-Forwarded-Proto."""
        client = scope.get("client")
        if not client:
            return "?"
        peer = str(client[0])
        if not self.proxies.trusts(peer):
            return peer
        headers = [(k, v.decode("latin-1").strip()) for k, v in scope.get("headers", [])]
        forwarded = ", ".join(v for k, v in headers if k == b"x-forwarded-for")
        address = self.proxies.client(peer, forwarded)
        if address != peer:
            scope["client"] = (address, 0)
        proto = next((v for k, v in headers if k == b"x-forwarded-proto"), "")
        if proto in ("http", "https"):
            scope["scheme"] = proto
        return address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client_address.set(self.settle_client(scope))
        path = re.sub("/+", "/", scope.get("path", ""))
        if path.rstrip("/") == "/logout" and header(scope, b"sec-fetch-site") not in OWN_SITE:
            logger.warning("/logout from another site refused")
            await refuse(403, "sign out from the app's own page", scope, receive, send)
            return
        if path.rstrip("/") == "/login":
            send = lax_cookies(send)
        route, rest = gradio_route(scope.get("path", ""))
        query = urllib.parse.parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                                       keep_blank_values=True)
        if any(key == "deep_link" for key, _ in query):
            logger.warning("a page with ?deep_link= refused: deep links are turned off")
            await refuse(404, "deep links are turned off in kb-assistant: open the page "
                              "without ?deep_link=", scope, receive, send)
            return
        if route in REFUSED:
            logger.warning("gradio_api/%s refused: not used by kb-assistant", route)
            await refuse(404, f"gradio_api/{route} is not used by kb-assistant (its API is "
                              "POST /api/ask)", scope, receive, send)
            return
        if route in ADMIN_ONLY or route in SESSION:
            user = await run_in_threadpool(self.session_user, Request(scope))
            if route in ADMIN_ONLY and (user is None or not user.is_admin):
                logger.warning("gradio_api/%s refused for %s", route,
                               user.name if user else "an anonymous client")
                await refuse(403, "administrators only", scope, receive, send)
                return
            if route in SESSION:
                if user is None:
                    await refuse(401, "not signed in", scope, receive, send)
                    return
                checked = await self._check_session(route, rest, query, user.name, scope,
                                                    receive, send)
                if checked is None:
                    return
                receive = checked
        await self.app(scope, receive, send)

    async def _check_session(self, route: str, rest: str, query: list[tuple[str, str]],
                             name: str, scope: Scope, receive: Receive,
                             send: Send) -> Receive | None:
        """The receive to go on with when `name` may use the session hash(es) the request
        names; else the refusal is sent and None returned."""
        body: dict[str, Any] = {}
        if route == "heartbeat":
            hashes = [rest.split("/")[0]] if rest else []
        elif route == "queue/data":
            hashes = [value for key, value in query if key == "session_hash"]
        else:
            raw = await read_body(receive)
            if raw is None:
                await refuse(413, f"the body of gradio_api/{route} is over "
                                  f"{MAX_BODY_BYTES} bytes", scope, receive, send)
                return None
            receive = replay(raw, receive)
            try:
                parsed = json.loads(raw) if raw else {}
            except (ValueError, RecursionError):  # RecursionError: JSON nested too deeply
                parsed = None
            sent = parsed.get("session_hash") if isinstance(parsed, dict) else None
            if not isinstance(parsed, dict) or not (sent is None or isinstance(sent, str)):
                await refuse(400, f"the body of gradio_api/{route} must be a JSON object with "
                                  "a session_hash string", scope, receive, send)
                return None
            body = parsed
            hashes = [] if sent is None else [sent]
        if any(len(h) > MAX_HASH_CHARS for h in hashes):
            await refuse(400, f"session_hash: at most {MAX_HASH_CHARS} characters", scope,
                         receive, send)
            return None
        owned = all(self.owners.claim(h, name) for h in hashes)
        event = body.get("event_id")
        if owned and route == "cancel" and isinstance(event, str):
            session = self.event_session(event)
            owned = session is None or session in hashes
        if not owned:
            logger.warning("%s sent another user's session hash to gradio_api/%s: refused",
                           name, route)
            await refuse(404, "no such session", scope, receive, send)
            return None
        return receive


def header(scope: Scope, name: bytes) -> str:
    """The request's header `name` (lower case), "" when absent."""
    return next((v.decode("latin-1").strip().lower() for k, v in scope.get("headers", [])
                 if k == name), "")


def lax_cookies(send: Send) -> Send:
    """`send` with the response's cookies `SameSite=Lax` where they say None."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = dict(message, headers=[
                (k, re.sub(rb"(?i)samesite=none", b"SameSite=Lax", v) if k == b"set-cookie"
                 else v) for k, v in message.get("headers", [])])
        await send(message)

    return sending


async def refuse(status: int, error: str, scope: Scope, receive: Receive, send: Send) -> None:
    await JSONResponse({"error": error}, status_code=status)(scope, receive, send)


async def read_body(receive: Receive) -> bytes | None:
    """The request's body, or None past MAX_BODY_BYTES."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives `body` once, then whatever `receive` gives (a disconnect)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def keep_private(folder: Path) -> None:
    """Make Gradio's temp folder (admin uploads, the files it serves) readable by this account
    only: Gradio makes it 0755, and the folders in it too."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if folder.stat().st_uid != os.getuid():
        raise ConfigError(f"{folder}: Gradio's temp folder belongs to another account: set "
                          "GRADIO_TEMP_DIR to a folder of the account that runs kb serve")
    os.chmod(folder, 0o700)
