"""The web login: password checks off the event loop and throttled, sessions that expire and
end with the account, and the guard in front of Gradio's own routes.

Gradio's `/login` calls our check inside its async handler and keeps its sessions in
`app.tokens` (cookie token -> user name, read by every route through `app.tokens.get`). We give
it a coroutine (the scrypt work runs in a worker thread, a few at a time) and a `SessionTable`
whose `get` refuses a session that is too old or whose user was disabled, deleted or changed
password since (the user's `epoch`, read from the ledger, so the CLI can end sessions too).
Sessions and failed logins live in the ledger (migrations 008_sessions, 010_login_attempts),
not in the process: behind a load balancer, a login made through one `kb serve` works on every
other, and a failure counts on every other.

    guard = LoginGuard(ledger, max_user=5, max_address=20, lockout_s=300)
    guard.reserve("bob", "10.0.0.7") -> Turn(attempt="9f1c...", wait=0.0)
    ... after 5 failed (or unfinished) attempts for bob: Turn(attempt="", wait=299.5)
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from fastapi import HTTPException

from core.config import UiSettings
from core.errors import DirectoryUnavailable
from core.types import User
from store.ledger import Ledger
from ui.identity.signin import SignIn
from ui.identity.users import Users, token_hash

logger = logging.getLogger(__name__)

T = TypeVar("T")
# How much lower the password checks' threads run (Linux nice, per thread): a flood's scrypt
# work takes the cores the pages leave.
LOGIN_NICE = 10

# The client address of the request being handled, for the login check: set by GuardGradio
# (ui/identity/guard.py) to the socket peer, or to the client a trusted proxy names
# (ui/identity/proxies.py).
client_address: contextvars.ContextVar[str] = contextvars.ContextVar("client_address",
                                                                     default="?")


@dataclass(frozen=True)
class Turn:
    """A login attempt the guard let through (`attempt`, the id it is counted under), or one it
    refused (`attempt` empty, `wait` seconds until the name and address may try again)."""

    attempt: str
    wait: float

    @property
    def granted(self) -> bool:
        return bool(self.attempt)


class LoginGuard:
    """Counts failed logins per user name and per client address over `lockout_s`; a name or
    an address at its limit is locked until its oldest counted failure is `lockout_s` old.

    "May this name try now?" and "count this attempt" are one step in the ledger (`reserve`):
    an attempt is counted as a failure before its password is checked, and taken back when the
    password was right. Attempts still being checked count too, so however many arrive at once,
    and through however many app processes, at most `max_user` passwords of one name are
    checked per `lockout_s`."""

    def __init__(self, ledger: Ledger, max_user: int, max_address: int, lockout_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.ledger = ledger
        self.max_user, self.max_address = max(1, max_user), max(1, max_address)
        self.lockout_s = lockout_s
        self.clock = clock

    def reserve(self, name: str, address: str) -> Turn:
        """A turn for `name` from `address`: its attempt id, or the seconds left to wait."""
        return self._reserve({"u:" + name: self.max_user, "a:" + address: self.max_address})

    def reserve_address(self, address: str) -> Turn:
        """A turn for a sign-in that names nobody yet, from `address` (an OpenID callback, a
        user header from an untrusted peer): counted under the address's limit alone, as a
        failure until `succeeded`. A flood of refusals from one address stops there, before
        it costs an audit record or a request to the provider."""
        return self._reserve({"a:" + address: self.max_address})

    def _reserve(self, limits: dict[str, int]) -> Turn:
        now = self.clock()
        attempt = secrets.token_hex(16)
        full = self.ledger.reserve_login(limits, attempt, now, now - self.lockout_s)
        if not full:
            return Turn(attempt, 0.0)
        return Turn("", max(0.0, *(oldest + self.lockout_s - now for oldest in full.values())))

    def succeeded(self, turn: Turn, name: str) -> None:
        """The password of `turn` was right: it is no failure, nor are the earlier ones of
        `name` (those of the address stay)."""
        self.ledger.forget_login(turn.attempt, "u:" + name)

    def reset(self) -> None:
        """Forget every failure (tests)."""
        self.ledger.clear_login_failures()


# The sign-in page's line when the directory is down; the log's line names the setting.
DIRECTORY_DOWN = ("Company sign-in is unavailable: the directory did not answer. Try again later "
                  "or tell the administrator (the server log names the setting to check).")


def yield_cpu() -> None:
    """Lower this thread's CPU priority by LOGIN_NICE (Linux keeps a nice value per thread;
    elsewhere, or where refused, nothing changes)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOGIN_NICE)
    except (AttributeError, OSError) as exc:
        logger.debug("password checks keep their priority: %s", exc)


def login_check(signin: SignIn, settings: UiSettings, guard: LoginGuard,
                on_failure: Callable[[], None] = lambda: None,
                ) -> Callable[[str, str], Awaitable[bool]]:
    """The coroutine Gradio's `/login` awaits: throttled, the password check (scrypt or the
    directory, `SignIn.authenticate`) in a worker thread, and only for an attempt the guard
    counted first. A directory that is down is one line on the form (503), not a failure.

    A flood of logins must not slow the pages: it runs on threads of its own, never
    on the pool the pages' routes share (anyio's default, 40 threads). The throttle's ledger
    steps take one thread, in turn (the ledger makes them take turns anyway; here they queue
    without holding a thread each, instead of 40 threads waiting on SQLite's lock), and the
    password checks `ui.login_concurrency` threads at a lower CPU priority, so pages get the
    cores first."""
    turns = ThreadPoolExecutor(1, "login-turn")
    checks = ThreadPoolExecutor(max(1, settings.login_concurrency), "login-check",
                                initializer=yield_cpu)
    users = signin.users
    form = "ldap" if signin.ldap is not None else "password"  # what the form's check asks

    async def on(pool: ThreadPoolExecutor, func: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, partial(func, *args))

    async def check(name: str, password: str) -> bool:
        address = client_address.get()
        shown = name[:64]
        turn = await on(turns, guard.reserve, shown, address)
        if not turn.granted:
            users.audit.soon("signin", shown, object=shown, outcome="locked", address=address,
                             method=form, wait_s=round(turn.wait))
            logger.warning("login refused for user %r from %s: locked for %.0f s more",
                           shown, address, turn.wait)
            raise HTTPException(status_code=429, detail=f"Too many failed logins: try again "
                                                        f"in {turn.wait:.0f} s.")
        try:
            user = await on(checks, signin.authenticate, name, password)
        except DirectoryUnavailable as exc:  # the turn stays counted
            logger.error("login of %r from %s: %s", shown, address, exc)
            users.audit.soon("signin", shown, object=shown, outcome="unavailable",
                             address=address, method="ldap")
            raise HTTPException(status_code=503, detail=DIRECTORY_DOWN) from None
        if user is None:  # the turn stays counted as a failure
            on_failure()
            users.audit.soon("signin", shown, object=shown, outcome="failed", address=address,
                             method=form)
            logger.warning("login failed for user %r from %s", shown, address)
            return False
        await on(turns, guard.succeeded, turn, shown)
        method = "ldap" if await on(turns, users.source, user.name) == "ldap" else "password"
        users.audit.soon("signin", user.name, object=user.name, address=address, method=method)
        logger.info("login of %s from %s", user.name, address)
        return True

    return check


class _StoredKey(str):
    """A session as `SessionTable.keys()` lists it: its token's hash and its user's name. Only
    these, never a cookie's text, are taken as a hash."""

    name: str


class SessionTable(dict[str, str]):
    """Gradio's `app.tokens` (session token -> user name), kept in the ledger so every app
    process of a deployment knows every login, with an expiry and the user's epoch: `get`
    answers None for a session older than `max_age_s`, or whose user is gone, disabled or has
    moved to a later epoch (password change, `kb users disable/logout`). Only the SHA-256 of a
    token is stored."""

    def __init__(self, users: Users, max_age_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.users, self.max_age_s, self.clock = users, max_age_s, clock
        self.ledger = users.ledger

    @staticmethod
    def _hash(token: str) -> str:
        return str(token) if isinstance(token, _StoredKey) else token_hash(token)

    def __setitem__(self, token: str, name: str) -> None:
        user = self.users.get(name)
        now = self.clock()
        self.ledger.open_session(token_hash(token), name, user.epoch if user else -1, now,
                                 now + self.max_age_s)
        self.users.audit.soon("session.create", name, object=name,
                              address=client_address.get(), hours=self.max_age_s / 3600)

    def __delitem__(self, token: str) -> None:
        name = token.name if isinstance(token, _StoredKey) else self.get(token, "?")
        self.ledger.end_session(self._hash(token))
        self.users.audit.soon("signout", name, object=name, address=client_address.get())

    def __getitem__(self, token: str) -> str:
        if isinstance(token, _StoredKey):
            return token.name
        user = self.user(token)
        if user is None:
            raise KeyError("no such session")
        return user.name

    def __contains__(self, token: object) -> bool:
        return isinstance(token, str) and self.user(token) is not None

    def __len__(self) -> int:
        return len(self.ledger.sessions())

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def keys(self) -> list[str]:  # type: ignore[override]
        """Every session on record (Gradio's logout walks them to end a user's sessions)."""
        found: list[str] = []
        for hashed, name in self.ledger.sessions():
            key = _StoredKey(hashed)
            key.name = name
            found.append(key)
        return found

    def pop(self, token: str, default: Any = None) -> Any:
        name = self.get(token, default)
        self.ledger.end_session(self._hash(token))
        return name

    def user(self, token: str | None) -> User | None:
        """The session's user while the session is valid; an invalid one is dropped."""
        if not token or isinstance(token, _StoredKey):
            return None
        hashed = token_hash(token)
        found = self.ledger.session(hashed)
        if found is None:
            return None
        name, epoch, expires_at = found
        user = None
        if self.clock() < expires_at:
            user = self.users.session_user(name, epoch)
        if user is None:
            self.ledger.end_session(hashed)
            logger.info("session of %s ended (expired, disabled or password changed)", name)
        return user

    def get(self, token: Any, default: Any = None) -> Any:
        user = self.user(token if isinstance(token, str) else None)
        return user.name if user is not None else default


def shared_cookie_id(users: Users) -> str:
    """The id in Gradio's session cookie names (`access-token-<id>`), the same for every app
    process of a deployment (Gradio draws a random one per process: a login made through one
    process would be unknown to the next)."""
    return users.ledger.meta_default("session_cookie_id", secrets.token_urlsafe(32))
