"""Feishu and Lark (one API, two hosts): event subscriptions at `/channels/feishu/events`,
answers as interactive cards replied to the question's message (its reply chain).

Every event must come encrypted with the app's Encrypt Key (KB_FEISHU_ENCRYPT_KEY; AES-256-CBC,
ui/api/channels/crypto.py) and signed (`X-Lark-Signature`, SHA-256 of timestamp, nonce, key and
body; the timestamp within `channels.replay_window_s`), and carry the Verification Token
(KB_FEISHU_VERIFICATION_TOKEN); the console's URL check (`url_verification`) carries the token.
Questions are `im.message.receive_v1` (one-to-one, or mentioning the bot in a group); 👍 and
👎 reactions (`im.message.reaction.created_v1`) and the card's buttons (`card.action.trigger`)
are feedback. The app (App ID, KB_FEISHU_APP_SECRET) needs `im:message`,
`im:message:send_as_bot`, `im:chat:readonly`, `contact:user.email:readonly`.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

import httpx

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
    check_time,
    require,
)
from ui.api.channels.crypto import feishu_decrypt, feishu_signature
from ui.i18n import t

THUMBS = {"THUMBSUP": 1, "THUMBSDOWN": -1}  # emoji_type, upper case (Feishu: "ThumbsDown")
BUTTONS = {"up": 1, "down": -1}


def _link_text(text: str) -> str:
    """A label safe inside lark_md's `[label](url)`: its brackets made full-width."""
    return text.translate(str.maketrans("[]()", "［］（）"))


def card(reply: Reply) -> dict[str, Any]:
    """The interactive card of a reply: the answer as plain text, its sources (linked when
    they have a URL), how it was made, and 👍/👎 buttons when there is a question to rate."""
    elements: list[dict[str, Any]] = [
        {"tag": "div", "text": {"tag": "plain_text", "content": reply.text}}]
    if reply.sources:
        lines = [f"[{s.n}] [{_link_text(s.label)}]({s.url})" if s.url
                 else f"[{s.n}] {_link_text(s.label)}" for s in reply.sources]
        elements += [{"tag": "hr"},
                     {"tag": "div", "text": {"tag": "lark_md", "content":
                                             f"**{t('sources', reply.lang)}**\n"
                                             + "\n".join(lines)}}]
    if reply.note:
        elements.append({"tag": "note",
                         "elements": [{"tag": "plain_text", "content": reply.note}]})
    if reply.question_id:
        elements.append({"tag": "action", "actions": [
            {"tag": "button", "type": "primary", "value": {"kb": "up"},
             "text": {"tag": "plain_text", "content": t("thumbs_up", reply.lang)}},
            {"tag": "button", "type": "danger", "value": {"kb": "down"},
             "text": {"tag": "plain_text", "content": t("thumbs_down", reply.lang)}},
        ]})
    return {"config": {"wide_screen_mode": True}, "elements": elements}


def _question(event_id: str, event: dict[str, Any]) -> tuple[Inbound, ...]:
    sender, message = event.get("sender") or {}, event.get("message") or {}
    user = str((sender.get("sender_id") or {}).get("open_id", ""))
    if sender.get("sender_type") != "user" or message.get("message_type") != "text" or not user:
        return ()
    try:
        text = str(json.loads(message.get("content") or "{}").get("text", ""))
    except ValueError:
        return ()
    for mention in message.get("mentions") or ():
        text = text.replace(str(mention.get("key", "")), "")
    message_id = str(message.get("message_id", ""))
    return (Inbound(event_id, user, str(message.get("chat_id", "")),
                    str(message.get("root_id") or message_id), message_id, text.strip(),
                    group=message.get("chat_type") != "p2p"),)


def events_of(header: dict[str, Any], event: dict[str, Any]) -> tuple[Inbound, ...]:
    """The questions and feedback in a decrypted v2 event; others none."""
    kind, event_id = header.get("event_type"), str(header.get("event_id", ""))
    if not event_id:
        return ()
    if kind == "im.message.receive_v1":
        return _question(event_id, event)
    if kind == "im.message.reaction.created_v1" and event.get("operator_type", "user") == "user":
        rating = THUMBS.get(str((event.get("reaction_type") or {}).get("emoji_type", "")).upper())
        user = str((event.get("user_id") or {}).get("open_id", ""))
        return (Inbound(event_id, user, "", "", rating=rating,
                        target=str(event.get("message_id", ""))),) if rating and user else ()
    if kind == "card.action.trigger":
        value = (event.get("action") or {}).get("value") or {}
        rating = BUTTONS.get(str(value.get("kb", ""))) if isinstance(value, dict) else None
        context = event.get("context") or {}
        user = str((event.get("operator") or {}).get("open_id", ""))
        return (Inbound(event_id, user, str(context.get("open_chat_id", "")), "", rating=rating,
                        target=str(context.get("open_message_id", ""))),) if rating else ()
    return ()


class Feishu(Platform):
    name = "feishu"

    def __init__(self, app_id: str, app_secret: str, verification_token: str, encrypt_key: str,
                 api_url: str, window_s: float) -> None:
        self.app_id, self.app_secret = app_id, app_secret
        self.token, self.key, self.window_s = verification_token, encrypt_key, window_s
        self.api = api_url.rstrip("/")
        self.client = httpx.AsyncClient(timeout=API_TIMEOUT_S)
        self.tenant_token = TokenCache()

    @classmethod
    def open(cls, channels: ChannelsSettings, secrets: dict[str, str]) -> Feishu:
        require(secrets, "feishu", "Feishu/Lark", app_id=channels.feishu.app_id)
        return cls(channels.feishu.app_id, secrets["KB_FEISHU_APP_SECRET"],
                   secrets["KB_FEISHU_VERIFICATION_TOKEN"], secrets["KB_FEISHU_ENCRYPT_KEY"],
                   channels.feishu.api_url, channels.replay_window_s)

    def receive(self, call: Callback) -> Received:
        try:
            encrypted = json.loads(call.body).get("encrypt") if call.method == "POST" else None
        except (ValueError, AttributeError):
            encrypted = None
        if not isinstance(encrypted, str):
            raise Refused("unencrypted", "not an event encrypted with the Encrypt Key")
        try:
            data = json.loads(feishu_decrypt(self.key, encrypted))
        except ValueError:
            raise Refused("body", "the decrypted event is not JSON") from None
        if not isinstance(data, dict):
            raise Refused("body", "the decrypted event is not a JSON object")
        if data.get("type") == "url_verification":  # the console's check: the token alone
            self._check_token(data.get("token"))
            return Received(body=json.dumps({"challenge": str(data.get("challenge", ""))}))
        headers = call.headers
        stamp, nonce = headers.get("x-lark-request-timestamp", ""), headers.get(
            "x-lark-request-nonce", "")
        signature = headers.get("x-lark-signature", "")
        if not stamp or not signature:
            raise Refused("unsigned", "no X-Lark-Signature and timestamp")
        check_time(stamp, call.now, self.window_s)
        if not hmac.compare_digest(feishu_signature(stamp, nonce, self.key, call.body),
                                   signature):
            raise Refused("signature", "X-Lark-Signature does not match the Encrypt Key")
        header = data.get("header") or {}
        self._check_token(header.get("token"))
        return Received(body="{}", events=events_of(header, data.get("event") or {}))

    def _check_token(self, token: Any) -> None:
        if not isinstance(token, str) or not hmac.compare_digest(token, self.token):
            raise Refused("token", "the event's token is not the Verification Token")

    async def person(self, user_id: str) -> Person:
        data = await self._api("GET", f"contact/v3/users/{user_id}",
                               params={"user_id_type": "open_id"})
        user = (data.get("data") or {}).get("user") or {}
        return Person(user_id, str(user.get("enterprise_email") or user.get("email") or ""))

    async def members(self, chat: str) -> list[str]:
        found: list[str] = []
        page = ""
        while True:
            data = (await self._api("GET", f"im/v1/chats/{chat}/members", params={
                "member_id_type": "open_id", "page_size": 100, "page_token": page})).get(
                "data") or {}
            found += [str(m.get("member_id", "")) for m in data.get("items") or ()]
            page = str(data.get("page_token") or "")
            if not data.get("has_more") or not page:
                return found

    async def post(self, to: Inbound, reply: Reply) -> str:
        data = await self._api("POST", f"im/v1/messages/{to.reply_to}/reply", json={
            "msg_type": "interactive", "content": json.dumps(card(reply), ensure_ascii=False)})
        return str((data.get("data") or {}).get("message_id", ""))

    async def _api(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {await self.tenant_token.get(self._tenant)}"}
        data = await call_api(self.client, method, f"{self.api}/{path}",
                              f"Feishu {path.split('/')[1]}", headers=headers, **kwargs)
        if data.get("code") != 0:
            raise PlatformError(f"Feishu {path} refused: {data.get('code')} {data.get('msg')}")
        return data

    async def _tenant(self) -> tuple[str, float]:
        """A new tenant access token and its lifetime."""
        data = await call_api(self.client, "POST",
                              f"{self.api}/auth/v3/tenant_access_token/internal",
                              "Feishu tenant_access_token",
                              json={"app_id": self.app_id, "app_secret": self.app_secret})
        if data.get("code") != 0 or not data.get("tenant_access_token"):
            raise PlatformError(f"Feishu refused the app's credentials: {data.get('msg')} "
                                "(check channels.feishu.app_id and KB_FEISHU_APP_SECRET)")
        return str(data["tenant_access_token"]), float(data.get("expire", 7200))

    async def close(self) -> None:
        await self.client.aclose()
