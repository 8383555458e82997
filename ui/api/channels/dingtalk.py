"""DingTalk (钉钉): an enterprise app's robot, its message callback (HTTP mode) at
`/channels/dingtalk/events`, answers posted to the conversation's session webhook as an
ActionCard, each cited source a button opening the source view.

Every callback is checked DingTalk's way: its `sign` header is base64 HMAC-SHA256 of
`timestamp + "\\n" + AppSecret` under the AppSecret (KB_DINGTALK_APP_SECRET), its `timestamp`
(milliseconds) within the hour DingTalk documents. The signature does not cover the body, so
another body under a signature first seen more than two seconds before is refused (messages
sent in the same millisecond share one), and the session webhook a body names must be under
`channels.dingtalk.api_url`. Questions are messages to the robot (one to one, or mentioning it
in a group); a conversation's follow-ups are read with the asker's recent turns there.
DingTalk gives robots no reaction events, and an ActionCard's buttons only open links (cards
with callbacks need a template built in DingTalk's card platform): feedback is a message of 👍
or 👎, which the card's two links send for the asker (DingTalk's dtmd links).
The app's AppKey and AppSecret read users' e-mail (`topapi/v2/user/get`) and scene groups'
members (`topapi/im/chat/scenegroup/member/get`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import urllib.parse
from typing import Any

import httpx

from core.settings.channels import ChannelsSettings
from ui.api.channels.base import (
    API_TIMEOUT_S,
    Callback,
    Inbound,
    Person,
    Platform,
    Received,
    Refused,
    Reply,
    TokenCache,
    call_api,
    check_time,
    errcode_ok,
    errcode_token,
    json_object,
    require,
)
from ui.i18n import t

WINDOW_S = 3600.0  # DingTalk: a timestamp more than an hour off is not DingTalk's
THUMBS = {"👍": 1, "👎": -1}
TEXT_CHARS = 4000  # the answer's part of a card's markdown
BUTTONS_MAX = 5  # source buttons under a card
SIGNS_KEPT = 100_000
SHARED_SIGN_S = 2.0  # messages sent in the same millisecond share a signature; they come at once


def signature(stamp: str, secret: str) -> str:
    """DingTalk's `sign` of a callback sent at `stamp` (milliseconds).

        signature("1700000000000", "secret") -> "OuzzJR5+xZ4/EYwqtNt6sMYZQMTa/HEGvc9miJe7XzY="
    """
    mac = hmac.new(secret.encode(), f"{stamp}\n{secret}".encode(), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode()


def _rating(text: str) -> int:
    """+1 or -1 for a message that is only 👍 or 👎 (a skin tone or variation aside)."""
    bare = "".join(c for c in text if not ("\U0001f3fb" <= c <= "\U0001f3ff" or c == "\ufe0f"))
    return THUMBS.get(bare.strip(), 0)


def _send_link(text: str) -> str:
    return "dtmd://dingtalkclient/sendMessage?content=" + urllib.parse.quote(text)


def message(reply: Reply) -> dict[str, Any]:
    """The session webhook body of a reply: an ActionCard (the answer, its sources, how it was
    made, 👍/👎 links; a button per linked source), or markdown when no source has a link."""
    lines = [f"[{s.n}] [{s.label}]({s.url})" if s.url else f"[{s.n}] {s.label}"
             for s in reply.sources]
    text = reply.text[:TEXT_CHARS]
    if lines:
        text += f"\n\n**{t('sources', reply.lang)}**\n\n" + "  \n".join(lines)
    if reply.note:
        text += f"\n\n> {reply.note}"
    if reply.question_id:
        text += (f"\n\n[{t('thumbs_up', reply.lang)}]({_send_link('👍')})  "
                 f"[{t('thumbs_down', reply.lang)}]({_send_link('👎')})")
    title = reply.text.splitlines()[0][:40] if reply.text else "kb"
    buttons = [{"title": f"[{s.n}] {s.label}"[:60], "actionURL": s.url}
               for s in reply.sources if s.url][:BUTTONS_MAX]
    if not buttons:
        return {"msgtype": "markdown", "markdown": {"title": title, "text": text}}
    return {"msgtype": "actionCard", "actionCard": {"title": title, "text": text,
                                                    "btnOrientation": "0", "btns": buttons}}


def events_of(data: dict[str, Any]) -> tuple[Inbound, ...]:
    """The question or rating in a robot message callback; others none."""
    msg_id, chat = str(data.get("msgId", "")), str(data.get("conversationId", ""))
    user = str(data.get("senderStaffId") or data.get("senderId") or "")
    if data.get("msgtype") != "text" or not msg_id or not chat or not user:
        return ()
    text = str((data.get("text") or {}).get("content", "")).strip()
    group = str(data.get("conversationType", "")) == "2"
    thread = f"{chat}:{user}" if group else chat  # a conversation: the asker's turns in it
    rating = _rating(text)
    if rating:  # on the last answer kb gave the asker here (`Dingtalk.post` names it so)
        return (Inbound(msg_id, user, chat, thread, rating=rating, target=thread),)
    return (Inbound(msg_id, user, chat, thread, str(data.get("sessionWebhook", "")), text,
                    group=group),)


class Dingtalk(Platform):
    name = "dingtalk"
    history_s = 1800.0

    def __init__(self, app_key: str, app_secret: str, api_url: str) -> None:
        self.app_key, self.secret = app_key, app_secret
        self.api = api_url.rstrip("/")
        self.client = httpx.AsyncClient(timeout=API_TIMEOUT_S)
        self.access_token = TokenCache()
        self._signs: dict[str, tuple[float, str]] = {}  # sign -> (when, the message it signed)
        self._lock = threading.Lock()

    @classmethod
    def open(cls, channels: ChannelsSettings, secrets: dict[str, str]) -> Dingtalk:
        require(secrets, "dingtalk", "DingTalk", app_key=channels.dingtalk.app_key)
        return cls(channels.dingtalk.app_key, secrets["KB_DINGTALK_APP_SECRET"],
                   channels.dingtalk.api_url)

    def receive(self, call: Callback) -> Received:
        stamp, sign = call.headers.get("timestamp", ""), call.headers.get("sign", "")
        if call.method != "POST" or not stamp or not sign:
            raise Refused("unsigned", "no timestamp and sign headers")
        if not stamp.isdigit():
            raise Refused("timestamp", f"timestamp {stamp[:20]!r} is not milliseconds")
        check_time(str(int(stamp) / 1000), call.now, WINDOW_S)
        if not hmac.compare_digest(signature(stamp, self.secret), sign):
            raise Refused("signature", "sign does not match the AppSecret")
        data = json_object(call.body, "a DingTalk robot message")
        self._first_use(sign, str(data.get("msgId", "")), call.now)
        webhook = str(data.get("sessionWebhook", ""))
        if webhook and not webhook.startswith(f"{self.api}/robot/sendBySession?"):
            raise Refused("webhook", f"session webhook {webhook.split('?')[0][:80]!r} is not "
                                     "under channels.dingtalk.api_url")
        return Received(body='{"msgtype": "empty"}', events=events_of(data))

    def _first_use(self, sign: str, msg_id: str, now: float) -> None:
        """Refused when `sign` came with another message more than SHARED_SIGN_S before: the
        signature covers only the time (in milliseconds, which messages sent at once share),
        so another body under a signature seen earlier is a replay."""
        with self._lock:
            if len(self._signs) > SIGNS_KEPT:
                self._signs = {k: v for k, v in self._signs.items() if now - v[0] <= WINDOW_S}
            first, message_id = self._signs.setdefault(sign, (now, msg_id))
        if message_id != msg_id and now - first > SHARED_SIGN_S:
            raise Refused("replayed", "this signature came before with another message")

    async def person(self, user_id: str) -> Person:
        data = await self._api("topapi/v2/user/get", {"userid": user_id})
        user = data.get("result") or {}
        return Person(user_id, str(user.get("org_email") or user.get("email") or ""))

    async def members(self, chat: str) -> list[str]:
        found: list[str] = []
        cursor = "0"
        while True:
            result = (await self._api("topapi/im/chat/scenegroup/member/get", {
                "open_conversation_id": chat, "size": 1000, "cursor": cursor})).get(
                "result") or {}
            found += [str(m) for m in result.get("member_user_ids") or ()]
            cursor = str(result.get("next_cursor") or "")
            if not result.get("has_more") or not cursor:
                return found

    async def post(self, to: Inbound, reply: Reply) -> str:
        errcode_ok(await call_api(self.client, "POST", to.reply_to, "DingTalk sendBySession",
                                  json=message(reply)), "DingTalk sendBySession")
        return to.thread  # a 👍/👎 later in this conversation rates the last answer here

    async def _api(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        token = await self.access_token.get(self._access_token)
        return errcode_ok(await call_api(self.client, "POST", f"{self.api}/{path}",
                                         f"DingTalk {path}", params={"access_token": token},
                                         json=body), f"DingTalk {path}")

    async def _access_token(self) -> tuple[str, float]:
        return await errcode_token(self.client, f"{self.api}/gettoken", "DingTalk gettoken",
                                   {"appkey": self.app_key, "appsecret": self.secret},
                                   "channels.dingtalk.app_key and KB_DINGTALK_APP_SECRET")

    async def close(self) -> None:
        await self.client.aclose()
