"""Microsoft Teams: a Bot Framework bot's messaging endpoint at `/channels/teams/events`, answers
replied to the question's activity (its thread) at the conversation's serviceUrl, as an Adaptive
Card.

Every activity must carry Bot Framework's JWT in `Authorization: Bearer`, checked as Microsoft
documents it: signed (RS256) by one of the keys that the OpenID metadata at
`channels.teams.openid_url` publishes (read again each day, and when a token names a key not
seen yet, at most every five minutes), issued by the issuer it names, for this bot
(`aud` = `channels.teams.app_id`), not expired (five minutes of clock difference allowed), its
`serviceUrl` claim the activity's, and the key endorsed for the activity's channel. The bot's
own token (client credentials: the App ID and KB_TEAMS_APP_PASSWORD at
`channels.teams.token_url`) authorizes the replies and the look-ups of who is in a conversation
and their e-mail (`GET /v3/conversations/{id}/members`). Questions are messages to the bot
(personal chat, or mentioning it in a channel or group chat); a 👍/❤️ reaction (like, heart)
and 😢/😠 (sad, angry), and the card's two buttons (Action.Submit), are feedback.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import logging
import re
import time
import urllib.parse
from collections import OrderedDict
from typing import Any, cast

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from core.settings.channels import ChannelsSettings
from ui.api.channels.base import (
    API_TIMEOUT_S,
    Callback,
    Inbound,
    Person,
    Platform,
    PlatformError,
    Received,
    Refused,
    Reply,
    TokenCache,
    call_api,
    json_object,
    require,
)
from ui.i18n import t

logger = logging.getLogger(__name__)

LEEWAY_S = 300.0  # Bot Framework allows five minutes of clock difference
KEYS_TTL_S = 86400.0  # the keys are read again each day
KEYS_RETRY_S = 300.0  # an unknown key id fetches the keys again at most this often
KEYS_FAILED_RETRY_S = 10.0  # keys not read yet: tried again at most this often
SCOPE = "https://api.botframework.com/.default"
REACTIONS = {"like": 1, "heart": 1, "sad": -1, "angry": -1}
BUTTONS = {"up": 1, "down": -1}
CARD = "application/vnd.microsoft.card.adaptive"
TEXT_CHARS = 6000  # the answer's part of a card (Teams takes cards of up to 28 KB)
PLACES_KEPT = 10_000  # conversations and users whose serviceUrl is remembered
_MENTION = re.compile(r"<at>.*?</at>", re.S)


def _link_text(text: str) -> str:
    return text.translate(str.maketrans("[]()", "［］（）"))


def card(reply: Reply) -> dict[str, Any]:
    """The Adaptive Card (1.5) of a reply: the answer, its sources (linked when they have a
    URL), how it was made, and 👍/👎 buttons when there is a question to rate."""
    body: list[dict[str, Any]] = [{"type": "TextBlock", "text": reply.text[:TEXT_CHARS],
                                   "wrap": True}]
    if reply.sources:
        lines = [f"[{s.n}] [{_link_text(s.label)}]({s.url})" if s.url
                 else f"[{s.n}] {_link_text(s.label)}" for s in reply.sources]
        body += [{"type": "TextBlock", "text": t("sources", reply.lang), "weight": "Bolder",
                  "separator": True},
                 {"type": "TextBlock", "text": "\n\n".join(lines), "wrap": True}]
    if reply.note:
        body.append({"type": "TextBlock", "text": reply.note, "isSubtle": True,
                     "size": "Small", "wrap": True})
    out: dict[str, Any] = {"type": "AdaptiveCard", "version": "1.5", "body": body,
                           "$schema": "http://adaptivecards.io/schemas/adaptive-card.json"}
    if reply.question_id:
        out["actions"] = [
            {"type": "Action.Submit", "title": t("thumbs_up", reply.lang), "data": {"kb": "up"}},
            {"type": "Action.Submit", "title": t("thumbs_down", reply.lang),
             "data": {"kb": "down"}}]
    return out


def events_of(activity: dict[str, Any]) -> tuple[Inbound, ...]:
    """The question or feedback in an activity; others (conversation updates, typing) none."""
    kind, event_id = activity.get("type"), str(activity.get("id", ""))
    user = str((activity.get("from") or {}).get("id", ""))
    conversation = activity.get("conversation") or {}
    thread = str(conversation.get("id", ""))
    chat = thread.split(";")[0]  # a channel's thread: "19:...@thread.tacv2;messageid=..."
    if not event_id or not user or not chat:
        return ()
    target = str(activity.get("replyToId", ""))
    if kind == "messageReaction":
        ratings = [REACTIONS.get(str(r.get("type", ""))) for r in
                   activity.get("reactionsAdded") or ()]
        rating = next((r for r in ratings if r), 0)
        return (Inbound(event_id, user, chat, "", rating=rating, target=target),) \
            if rating and target else ()
    if kind != "message":
        return ()
    value = activity.get("value")
    if isinstance(value, dict) and value.get("kb") in BUTTONS:  # a card's button
        return (Inbound(event_id, user, chat, "", rating=BUTTONS[value["kb"]], target=target),)
    text = html.unescape(_MENTION.sub("", str(activity.get("text") or ""))).strip()
    return (Inbound(event_id, user, chat, thread, event_id, text,
                    group=conversation.get("conversationType", "personal") != "personal"),)


def _kid(token: str) -> str:
    """The key id in a JWT's header, unverified ("" when it has none)."""
    try:
        head = token.split(".")[0]
        found = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
        return str(found.get("kid", "")) if isinstance(found, dict) else ""
    except ValueError:
        return ""


class Teams(Platform):
    name = "teams"
    history_s = 1800.0  # a personal chat is one long thread

    def __init__(self, app_id: str, password: str, openid_url: str, token_url: str) -> None:
        self.app_id, self.password = app_id, password
        self.openid_url, self.token_url = openid_url, token_url
        self.client = httpx.AsyncClient(timeout=API_TIMEOUT_S)
        self.bot_token = TokenCache()
        self.issuer = ""
        self.keys: KeySet | None = None
        self.endorsements: dict[str, list[str]] = {}
        self._keys_read = -KEYS_TTL_S  # never read
        self._keys_lock = asyncio.Lock()
        # a chat -> its serviceUrl; a user -> "serviceUrl chat" of where they last spoke
        self._places: OrderedDict[str, str] = OrderedDict()

    @classmethod
    def open(cls, channels: ChannelsSettings, secrets: dict[str, str]) -> Teams:
        teams = channels.teams
        require(secrets, "teams", "Microsoft Teams", app_id=teams.app_id)
        return cls(teams.app_id, secrets["KB_TEAMS_APP_PASSWORD"], teams.openid_url,
                   teams.token_url)

    async def prepare(self, call: Callback) -> None:
        """Bot Framework's keys read, when a day old or when the token names another key."""
        kid = _kid(call.headers.get("authorization", "").removeprefix("Bearer "))
        async with self._keys_lock:  # callbacks at once wait for one read
            stale = time.monotonic() - self._keys_read
            known = self.keys is not None and kid in self.endorsements
            if (known and stale < KEYS_TTL_S) or stale < (
                    KEYS_RETRY_S if self.keys is not None else KEYS_FAILED_RETRY_S):
                return
            self._keys_read = time.monotonic()
            await self._read_keys()

    async def _read_keys(self) -> None:
        try:
            metadata = await call_api(self.client, "GET", self.openid_url,
                                      "Bot Framework OpenID metadata")
            found = await call_api(self.client, "GET", str(metadata["jwks_uri"]),
                                   "Bot Framework keys")
            self.keys = KeySet.import_key_set(cast(Any, found))
        except (PlatformError, KeyError, ValueError, JoseError) as exc:
            logger.warning("Bot Framework keys not read from channels.teams.openid_url: %s", exc)
            return
        self.issuer = str(metadata.get("issuer", ""))
        self.endorsements = {str(k.get("kid", "")): list(k.get("endorsements") or ())
                             for k in found.get("keys") or ()}

    def receive(self, call: Callback) -> Received:
        auth = call.headers.get("authorization", "")
        if call.method != "POST" or not auth.startswith("Bearer "):
            raise Refused("unsigned", "no Authorization: Bearer token")
        activity = json_object(call.body, "a Bot Framework activity")
        self._check(auth.removeprefix("Bearer "), activity, call.now)
        events = events_of(activity)
        service = str(activity.get("serviceUrl", ""))
        for event in events:  # where replies and look-ups of this chat and user go
            self._remember(event.chat, service)
            self._remember(event.user, f"{service} {event.chat}")
        return Received(body="", media_type="text/plain", events=events)

    def _check(self, token: str, activity: dict[str, Any], now: float) -> None:
        """Refused unless `token` is Bot Framework's for this bot and this activity."""
        if self.keys is None:
            raise Refused("keys", "Bot Framework's keys could not be read from "
                                  "channels.teams.openid_url")
        try:
            decoded = jwt.decode(token, self.keys, algorithms=["RS256"])
        except (JoseError, ValueError) as exc:
            raise Refused("signature", f"the token does not verify with Bot Framework's keys "
                                       f"({type(exc).__name__})") from None
        claims = decoded.claims
        audiences = claims.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else list(audiences or [])
        if not self.issuer or claims.get("iss") != self.issuer:
            raise Refused("issuer", f"the token was issued by {str(claims.get('iss'))[:80]!r}")
        if self.app_id not in audiences:
            raise Refused("audience", "the token is for another bot than channels.teams.app_id")
        expires, starts = claims.get("exp"), claims.get("nbf", 0)
        if not isinstance(expires, int | float) or expires < now - LEEWAY_S:
            raise Refused("old", "the token has expired")
        if isinstance(starts, int | float) and starts > now + LEEWAY_S:
            raise Refused("old", "the token is not valid yet (nbf)")
        if claims.get("serviceUrl") != activity.get("serviceUrl"):
            raise Refused("service", "the activity's serviceUrl is not the token's")
        endorsed = self.endorsements.get(str(decoded.header.get("kid", "")))
        if endorsed and activity.get("channelId") not in endorsed:
            raise Refused("channel", "the signing key is not endorsed for the activity's "
                                     "channel")

    def _remember(self, key: str, value: str) -> None:
        self._places[key] = value
        self._places.move_to_end(key)
        while len(self._places) > PLACES_KEPT:
            self._places.popitem(last=False)

    def _service(self, chat: str) -> str:
        service = self._places.get(chat, "")
        if not service:
            raise PlatformError(f"Teams conversation {chat[:60]} not seen by this process")
        return service.rstrip("/")

    async def person(self, user_id: str) -> Person:
        service, _, chat = self._places.get(user_id, "").partition(" ")
        if not chat:
            raise PlatformError(f"Teams user {user_id[:60]} not seen by this process")
        data = await self._api("GET", f"{service.rstrip('/')}/v3/conversations/{_q(chat)}/"
                                      f"members/{_q(user_id)}", "Teams member")
        return Person(user_id, str(data.get("email") or data.get("userPrincipalName") or ""))

    async def members(self, chat: str) -> list[str]:
        service = self._service(chat)
        url = f"{service}/v3/conversations/{_q(chat)}/pagedmembers"
        found: list[str] = []
        page = ""
        while True:
            params = {"pageSize": 500, **({"continuationToken": page} if page else {})}
            data = await self._api("GET", url, "Teams pagedmembers", params=params)
            found += [str(m.get("id", "")) for m in data.get("members") or ()]
            page = str(data.get("continuationToken") or "")
            if not page:
                break
        for member in found:  # where `person` reads the members not heard from yet
            if member not in self._places:
                self._remember(member, f"{service} {chat}")
        return found

    async def post(self, to: Inbound, reply: Reply) -> str:
        activity = {"type": "message", "replyToId": to.reply_to,
                    "conversation": {"id": to.thread}, "recipient": {"id": to.user},
                    "from": {"id": f"28:{self.app_id}"},
                    "attachments": [{"contentType": CARD, "content": card(reply)}]}
        data = await self._api("POST", f"{self._service(to.chat)}/v3/conversations/"
                                       f"{_q(to.thread)}/activities/{_q(to.reply_to)}",
                               "Teams reply", json=activity)
        return str(data.get("id", ""))

    async def _api(self, method: str, url: str, what: str, **kwargs: Any) -> dict[str, Any]:
        token = await self.bot_token.get(self._token)
        return await call_api(self.client, method, url, what,
                              headers={"Authorization": f"Bearer {token}"}, **kwargs)

    async def _token(self) -> tuple[str, float]:
        """The bot's own token and its lifetime (client credentials)."""
        data = await call_api(self.client, "POST", self.token_url, "Teams bot token", data={
            "grant_type": "client_credentials", "client_id": self.app_id,
            "client_secret": self.password, "scope": SCOPE})
        if not data.get("access_token"):
            raise PlatformError(f"the bot's token was refused: {data.get('error')} (check "
                                "channels.teams.app_id and KB_TEAMS_APP_PASSWORD)")
        return str(data["access_token"]), float(data.get("expires_in", 3600))

    async def close(self) -> None:
        await self.client.aclose()


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")
