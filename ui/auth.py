"""The web login: password checks off the event loop and throttled, sessions that expire and
end with the account, and the guard in front of Gradio's own routes.

Gradio's `/login` calls our check inside its async handler and keeps its sessions in
`app.tokens` (cookie token -> user name, read by every route through `app.tokens.get`). We give
it a coroutine (the scrypt work runs in a worker thread, a few at a time) and a `SessionTable`
whose `get` refuses a session that is too old or whose user was disabled, deleted or changed
password since (the user's `epoch`, read from the ledger, so the CLI can end sessions too).

    guard = LoginGuard(max_user=5, max_address=20, lockout_s=300)
    guard.locked("bob", "10.0.0.7") -> 0.0; after 5 failures for bob: seconds left, e.g. 299.5
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from fastapi import HTTPException

from core.config import UiSettings
from core.types import User
from ui.users import Users

logger = logging.getLogger(__name__)

# The client address of the request being handled (set by `guard_gradio`), for the login check.
client_address: contextvars.ContextVar[str] = contextvars.ContextVar("client_address",
                                                                     default="?")


class LoginGuard:
    """Counts failed logins per user name and per client address over `lockout_s`; a name or
    an address past its limit is locked until its oldest counted failure is `lockout_s` old."""

    def __init__(self, max_user: int, max_address: int, lockout_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_user, self.max_address, self.lockout_s = max_user, max_address, lockout_s
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _left(self, key: str, limit: int, now: float) -> float:
        times = self._failures.get(key)
        if not times:
            return 0.0
        while times and times[0] <= now - self.lockout_s:
            times.popleft()
        if not times:
            del self._failures[key]
            return 0.0
        return times[0] + self.lockout_s - now if len(times) >= limit else 0.0

    def locked(self, name: str, address: str) -> float:
        """Seconds until `name` from `address` may try again (0: now)."""
        now = self.clock()
        with self._lock:
            return max(self._left("u:" + name, self.max_user, now),
                       self._left("a:" + address, self.max_address, now))

    def failed(self, name: str, address: str) -> None:
        now = self.clock()
        with self._lock:
            for key in ("u:" + name, "a:" + address):
                times = self._failures.setdefault(key, deque())
                times.append(now)
                while len(times) > max(self.max_user, self.max_address):
                    times.popleft()
            if len(self._failures) > 100_000:  # a flood of made-up names: forget the oldest
                for key in list(self._failures)[:50_000]:
                    del self._failures[key]

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._failures.pop("u:" + name, None)


def login_check(users: Users, settings: UiSettings,
                guard: LoginGuard) -> Callable[[str, str], Awaitable[bool]]:
    """The coroutine Gradio's `/login` awaits: throttled, scrypt in a worker thread."""
    limiter = anyio.CapacityLimiter(max(1, settings.login_concurrency))

    async def check(name: str, password: str) -> bool:
        address = client_address.get()
        shown = name[:64]
        wait = guard.locked(shown, address)
        if wait > 0:
            logger.warning("login refused for user %r from %s: locked for %.0f s more",
                           shown, address, wait)
            raise HTTPException(status_code=429, detail=f"Too many failed logins: try again "
                                                        f"in {wait:.0f} s.")
        user = await anyio.to_thread.run_sync(users.authenticate, name, password,
                                              limiter=limiter)
        if user is None:
            guard.failed(shown, address)
            logger.warning("login failed for user %r from %s", shown, address)
            return False
        guard.succeeded(shown)
        logger.info("login of %s from %s", user.name, address)
        return True

    return check


class SessionTable(dict[str, str]):
    """Gradio's `app.tokens` (session token -> user name), with an expiry and the user's epoch:
    `get` answers None for a session older than `max_age_s`, or whose user is gone, disabled
    or has moved to a later epoch (password change, `kb users disable/logout`)."""

    def __init__(self, users: Users, max_age_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.users, self.max_age_s, self.clock = users, max_age_s, clock
        self._opened: dict[str, tuple[float, int]] = {}

    def __setitem__(self, token: str, name: str) -> None:
        user = self.users.get(name)
        self._opened[token] = (self.clock(), user.epoch if user else -1)
        super().__setitem__(token, name)

    def __delitem__(self, token: str) -> None:
        self._opened.pop(token, None)
        super().__delitem__(token)

    def user(self, token: str | None) -> User | None:
        """The session's user while the session is valid; an invalid one is dropped."""
        if not token or token not in self:
            return None
        name = super().get(token, "")
        opened, epoch = self._opened.get(token, (0.0, -1))
        user = None
        if self.clock() - opened < self.max_age_s:
            user = self.users.session_user(name, epoch)
        if user is None:
            self.pop(token, None)
            self._opened.pop(token, None)
            logger.info("session of %s ended (expired, disabled or password changed)", name)
        return user

    def get(self, token: Any, default: Any = None) -> Any:
        user = self.user(token if isinstance(token, str) else None)
        return user.name if user is not None else default
