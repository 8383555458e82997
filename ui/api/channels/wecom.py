"""WeCom (企业微信): a self-built app's callback at `/channels/wecom/events`, answers sent to
the asker by `message/send` as markdown, then a template card with 👍/👎 buttons.

Every callback is checked WeCom's way (its published scheme, ui/api/channels/crypto.py):
`msg_signature` is SHA-1 of the token (KB_WECOM_TOKEN), timestamp, nonce and the encrypted
text, the timestamp within `channels.replay_window_s`, and the text decrypts with the
EncodingAESKey (KB_WECOM_AES_KEY) to a message for `channels.wecom.corp_id`. The console's URL
check (GET with `echostr`) is answered with the decrypted echo. An app's messages are one to
one: the chat is the asker, and its turns of the last half hour are a follow-up's history. A
button click is a `template_card_event` naming the card's task id. The app's Secret is
KB_WECOM_SECRET.
"""

from __future__ import annotations

import hmac
from secrets import token_hex
from typing import Any
from xml.etree.ElementTree import Element

import httpx
from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from core.errors import ConfigError
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
    require,
)
from ui.api.channels.crypto import wecom_decrypt, wecom_key, wecom_signature
from ui.api.channels.reply import notice
from ui.i18n import t

BUTTONS = {"up": 1, "down": -1}
MARKDOWN_BYTES = 2048  # WeCom's limit on a markdown message


def _clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, between characters.

        _clip("年假五天", 7) -> "年假"
    """
    data = text.encode()
    return text if len(data) <= limit else data[:limit].decode(errors="ignore")


def markdown(reply: Reply) -> str:
    """The markdown of a reply: the answer, its sources (linked when they have a URL) and how
    it was made, within WeCom's 2048 bytes (the sources kept, the answer cut)."""
    tail = ""
    if reply.sources:
        lines = [f"[{s.n}] [{s.label}]({s.url})" if s.url else f"[{s.n}] {s.label}"
                 for s in reply.sources]
        tail += f"\n\n**{t('sources', reply.lang)}**\n" + "\n".join(lines)
    if reply.note:
        tail += f"\n> {reply.note}"
    tail = _clip(tail, MARKDOWN_BYTES // 2)
    return _clip(reply.text, MARKDOWN_BYTES - len(tail.encode())) + tail


def feedback_card(reply: Reply, task_id: str) -> dict[str, Any]:
    """The template card (`button_interaction`) asking whether the answer helped."""
    return {"card_type": "button_interaction", "task_id": task_id,
            "main_title": {"title": notice("rate", reply.lang)},
            "button_list": [{"text": t("thumbs_up", reply.lang), "style": 1, "key": "up"},
                            {"text": t("thumbs_down", reply.lang), "style": 2, "key": "down"}]}


def _text(xml: Element, tag: str) -> str:
    found = xml.find(tag)
    return (found.text or "") if found is not None else ""


def events_of(xml: Element) -> tuple[Inbound, ...]:
    """The question or button click in a decrypted message; others none."""
    user, kind = _text(xml, "FromUserName"), _text(xml, "MsgType")
    if not user:
        return ()
    if kind == "text" and _text(xml, "MsgId"):
        return (Inbound(_text(xml, "MsgId"), user, user, user, user,
                        _text(xml, "Content").strip()),)
    if kind == "event" and _text(xml, "Event") == "template_card_event":
        rating, task = BUTTONS.get(_text(xml, "EventKey")), _text(xml, "TaskId")
        event_id = f"card:{user}:{task}:{_text(xml, 'CreateTime')}"
        return (Inbound(event_id, user, user, "", rating=rating, target=task),) if rating else ()
    return ()


class Wecom(Platform):
    name = "wecom"
    history_s = 1800.0

    def __init__(self, corp_id: str, agent_id: int, secret: str, token: str, aes_key: str,
                 api_url: str, window_s: float) -> None:
        self.corp_id, self.agent_id, self.secret = corp_id, agent_id, secret
        self.token, self.key, self.window_s = token, wecom_key(aes_key), window_s
        self.api = api_url.rstrip("/")
        self.client = httpx.AsyncClient(timeout=API_TIMEOUT_S)
        self.access_token = TokenCache()

    @classmethod
    def open(cls, channels: ChannelsSettings, secrets: dict[str, str]) -> Wecom:
        wecom = channels.wecom
        require(secrets, "wecom", "WeCom", corp_id=wecom.corp_id, agent_id=wecom.agent_id)
        try:
            return cls(wecom.corp_id, wecom.agent_id, secrets["KB_WECOM_SECRET"],
                       secrets["KB_WECOM_TOKEN"], secrets["KB_WECOM_AES_KEY"], wecom.api_url,
                       channels.replay_window_s)
        except ValueError as exc:
            raise ConfigError(f"channels.wecom: {exc}") from None

    def receive(self, call: Callback) -> Received:
        query = call.query
        stamp, nonce = query.get("timestamp", ""), query.get("nonce", "")
        signature = query.get("msg_signature", "")
        if not stamp or not signature:
            raise Refused("unsigned", "no msg_signature and timestamp")
        check_time(stamp, call.now, self.window_s)
        if call.method == "GET":  # the console's URL check
            echo = self._open(query.get("echostr", ""), stamp, nonce, signature)
            return Received(body=echo, media_type="text/plain")
        try:
            encrypted = _text(ElementTree.fromstring(call.body), "Encrypt")
            inner = ElementTree.fromstring(self._open(encrypted, stamp, nonce, signature))
        except (ElementTree.ParseError, DefusedXmlException):
            raise Refused("body", "the callback or its message is not WeCom's XML") from None
        return Received(body="", media_type="text/plain", events=events_of(inner))

    def _open(self, encrypted: str, stamp: str, nonce: str, signature: str) -> str:
        expected = wecom_signature(self.token, stamp, nonce, encrypted)
        if not encrypted or not hmac.compare_digest(expected, signature):
            raise Refused("signature", "msg_signature does not match the token")
        return wecom_decrypt(self.key, encrypted, self.corp_id)

    async def person(self, user_id: str) -> Person:
        data = await self._api("GET", "user/get", params={"userid": user_id})
        return Person(user_id, str(data.get("biz_mail") or data.get("email") or ""))

    async def members(self, chat: str) -> list[str]:
        return [chat]  # an app's chat is one to one

    async def post(self, to: Inbound, reply: Reply) -> str:
        base = {"touser": to.user, "agentid": self.agent_id}
        data = await self._api("POST", "message/send", json={
            **base, "msgtype": "markdown", "markdown": {"content": markdown(reply)}})
        if not reply.question_id:
            return str(data.get("msgid", ""))
        task = f"kb-{reply.question_id}-{token_hex(6)}"
        await self._api("POST", "message/send", json={
            **base, "msgtype": "template_card", "template_card": feedback_card(reply, task)})
        return task

    async def _api(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        token = await self.access_token.get(self._access_token)
        params = {**kwargs.pop("params", {}), "access_token": token}
        return errcode_ok(await call_api(self.client, method, f"{self.api}/{path}",
                                         f"WeCom {path}", params=params, **kwargs),
                          f"WeCom {path}")

    async def _access_token(self) -> tuple[str, float]:
        return await errcode_token(self.client, f"{self.api}/gettoken", "WeCom gettoken",
                                   {"corpid": self.corp_id, "corpsecret": self.secret},
                                   "channels.wecom.corp_id and KB_WECOM_SECRET")

    async def close(self) -> None:
        await self.client.aclose()
