"""What every chat platform module implements, and the plain types that cross between a platform
and the shared flow (ui/api/channels/hub.py). A platform turns a signed callback into `Inbound`
events (`receive`, pure and quick: it runs before the platform's deadline), says who a user is
and who is in a chat (`person`, `members`), and posts a `Reply` in the thread it belongs to
(`post`); everything else (who may see what, history, limits, records) is shared.

    class Slack(Platform):
        name = "slack"
        def receive(self, call: Callback) -> Received: ...    # Refused when not the platform's
        async def prepare(self, call: Callback) -> None: ...  # optional: keys fetched first
        async def person(self, user_id: str) -> Person: ...
        async def members(self, chat: str) -> list[str]: ...
        async def post(self, to: Inbound, reply: Reply) -> str: ...   # the message it became
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx

from core.errors import ConfigError, KbError
from core.settings.channels import ChannelsSettings

logger = logging.getLogger(__name__)

API_TIMEOUT_S = 10.0  # each call of a platform's API


class Refused(KbError):
    """A callback that is not the platform's (a bad or missing signature, a wrong token, a
    timestamp outside the replay window, a body that does not decrypt): `reason` is one word
    for the log and the audit trail."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class PlatformError(KbError):
    """The platform's API refused a call or did not answer; the message names the call."""


@dataclass(frozen=True)
class Callback:
    """An HTTP request to a platform's callback route, as received."""

    method: str
    query: Mapping[str, str]
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    now: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Inbound:
    """One thing said on a platform: a question (`text`), or feedback (`rating` +1/-1) on the
    answer posted as message `target`. `thread` is the conversation a follow-up continues
    (Slack's thread, Feishu's reply chain, WeCom's one-to-one chat); `reply_to` what an answer
    is posted under."""

    event_id: str
    user: str
    chat: str
    thread: str
    reply_to: str = ""
    text: str = ""
    group: bool = False  # a chat several people read
    rating: int = 0
    target: str = ""


@dataclass(frozen=True)
class Received:
    """A callback's answer to the platform (given at once) and the events to handle after it."""

    status: int = 200
    body: str = ""
    media_type: str = "application/json"
    events: tuple[Inbound, ...] = ()


@dataclass(frozen=True)
class Person:
    """What a platform says of one of its users."""

    id: str
    email: str = ""
    bot: bool = False


@dataclass(frozen=True)
class Source:
    """A cited source as a card shows it: its number, where it is, and its link in the app
    ("" without `ui.public_url`)."""

    n: int
    label: str
    url: str = ""


@dataclass(frozen=True)
class Reply:
    """What kb says in a chat, platform-neutral: an answer with its [n] markers, its sources and
    a line on how it was made (`note`), or a notice (`question_id` 0: nothing to rate)."""

    text: str
    lang: str = "en"
    sources: tuple[Source, ...] = ()
    note: str = ""
    question_id: int = 0


class Platform(abc.ABC):
    """One chat platform: its callback checks, its API and its cards."""

    name: ClassVar[str]
    # How far back a thread's turns are its history; a chat without threads (WeCom's one to
    # one) is one long thread, so only its recent turns count there.
    history_s: ClassVar[float] = 30 * 86400.0

    @classmethod
    @abc.abstractmethod
    def open(cls, channels: ChannelsSettings, secrets: dict[str, str]) -> Platform:
        """The platform of `[channels.<name>]` with its secrets (from the environment: the
        names of core/settings/channels.py's SECRETS); ConfigError naming what is missing."""

    async def prepare(self, call: Callback) -> None:  # noqa: B027 (optional: most need none)
        """What `receive` needs fetched first (Teams: its signing keys); nothing by default."""

    @abc.abstractmethod
    def receive(self, call: Callback) -> Received:
        """The platform's own checks of a callback, then its events; Refused otherwise."""

    @abc.abstractmethod
    async def person(self, user_id: str) -> Person:
        """The platform's user (their e-mail, whether a bot); PlatformError when not read."""

    @abc.abstractmethod
    async def members(self, chat: str) -> list[str]:
        """The user ids of a chat's members; PlatformError when not read."""

    @abc.abstractmethod
    async def post(self, to: Inbound, reply: Reply) -> str:
        """`reply` posted where `to` was said (its thread); the id of the message it became
        (what a reaction or a button names later). PlatformError when refused."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Let go of the platform's connections."""


def check_time(sent: str, now: float, window_s: float) -> None:
    """Refused unless `sent` (Unix seconds, as the platform signed it) is within `window_s` of
    `now`: an old callback replayed, or one from a clock far off.

        check_time("1700000000", 1700000100.0, 300.0) -> None
        check_time("1700000000", 1700000400.0, 300.0) -> Refused("old", ...)
    """
    try:
        when = float(sent)
    except ValueError:
        raise Refused("timestamp", f"timestamp {sent[:20]!r} is not a number") from None
    if abs(now - when) > window_s:
        raise Refused("old", f"timestamp {int(when)} is {abs(now - when):.0f} s off (more "
                             f"than channels.replay_window_s = {window_s:g})")


def json_object(body: bytes, what: str) -> dict[str, Any]:
    """A callback's body as a JSON object; Refused("body") naming `what` it should be."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise Refused("body", f"a body that is not {what}")
    return data


async def call_api(client: httpx.AsyncClient, method: str, url: str, what: str,
                   **kwargs: Any) -> dict[str, Any]:
    """One call of a platform's API, its JSON reply; PlatformError naming `what` (the call, as
    the platform's documentation names it) when it fails or does not answer JSON. One INFO line
    per call."""
    started = time.perf_counter()
    try:
        response = await client.request(method, url, **kwargs)
        data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise PlatformError(f"{what} at {url.split('?')[0]} failed: {type(exc).__name__}: "
                            f"{exc}") from exc
    logger.info("%s: HTTP %d in %.0f ms", what, response.status_code,
                1000 * (time.perf_counter() - started))
    if response.status_code >= 400 or not isinstance(data, dict):
        raise PlatformError(f"{what} answered HTTP {response.status_code}: {str(data)[:200]}")
    return data


def errcode_ok(data: dict[str, Any], what: str) -> dict[str, Any]:
    """`data`, an answer of WeCom's or DingTalk's server API, when its `errcode` is 0 (or
    absent); PlatformError naming `what` otherwise."""
    if data.get("errcode", 0) != 0:
        raise PlatformError(f"{what} refused: {data.get('errcode')} {data.get('errmsg')}")
    return data


async def errcode_token(client: httpx.AsyncClient, url: str, what: str,
                        params: dict[str, str], check: str) -> tuple[str, float]:
    """A new access token from WeCom's or DingTalk's `gettoken`, and its lifetime;
    PlatformError saying what to `check` when the credentials are refused."""
    data = await call_api(client, "GET", url, what, params=params)
    if data.get("errcode", 0) != 0 or not data.get("access_token"):
        raise PlatformError(f"{what} refused the app's credentials: {data.get('errmsg')} "
                            f"(check {check})")
    return str(data["access_token"]), float(data.get("expires_in", 7200))


def require(secrets: dict[str, str], platform: str, doc: str, **keys: object) -> None:
    """ConfigError naming the secrets not set and the `[channels.<platform>]` keys empty, for
    an enabled platform (`doc`: its section of docs/channels.md)."""
    missing = [name for name, value in secrets.items() if not value]
    missing += [f"channels.{platform}.{key}" for key, value in keys.items() if not value]
    if missing:
        raise ConfigError(f"channels.{platform} is enabled but {', '.join(missing)} "
                          f"{'is' if len(missing) == 1 else 'are'} not set (docs/channels.md, "
                          f"{doc})")


class TokenCache:
    """A platform's access token, asked for again a minute before it expires."""

    def __init__(self) -> None:
        self._token, self._expires = "", 0.0
        self._lock = asyncio.Lock()

    async def get(self, fetch: Callable[[], Awaitable[tuple[str, float]]]) -> str:
        """The token, from `fetch` (the token and its lifetime in seconds) when due."""
        async with self._lock:
            if time.monotonic() >= self._expires:
                self._token, lifetime = await fetch()
                self._expires = time.monotonic() + lifetime - 60
            return self._token
