"""Slack: the Events API and interactivity at `/channels/slack/events`, answers by
`chat.postMessage` in the question's thread, as Block Kit.

Every callback is checked Slack's way before anything is read: `X-Slack-Signature` is
`v0=` + HMAC-SHA256 of `v0:{timestamp}:{body}` under the signing secret
(KB_SLACK_SIGNING_SECRET), and `X-Slack-Request-Timestamp` within `channels.replay_window_s`.
Questions are direct messages to the app and mentions of it in channels (`app_mention`); 👍 and
👎 reactions on an answer, and its two buttons (`block_actions`), are feedback. The bot token
(KB_SLACK_BOT_TOKEN, `xoxb-`) needs `chat:write`, `users:read`, `users:read.email`,
`channels:read`, `groups:read`, `im:history`, `app_mentions:read`, `reactions:read`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
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
    PlatformError,
    Received,
    Refused,
    Reply,
    call_api,
    check_time,
    require,
)
from ui.i18n import t

THUMBS = {"+1": 1, "thumbsup": 1, "-1": -1, "thumbsdown": -1}
BUTTONS = {"kb_up": 1, "kb_down": -1}
SECTION_CHARS = 3000  # Block Kit's limit on a section's text
_MENTION = re.compile(r"<@[A-Z0-9]+>")


def escape(text: str) -> str:
    """Text for Slack's mrkdwn: its three control characters escaped.

        escape("a < b & c") -> "a &lt; b &amp; c"
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def blocks(reply: Reply) -> list[dict[str, Any]]:
    """The Block Kit of a reply: the answer, its sources (linked when they have a URL), how it
    was made, and 👍/👎 buttons when there is a question to rate."""
    out: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": escape(reply.text)[:SECTION_CHARS]}}
    ]
    if reply.sources:
        lines = [f"[{s.n}] <{s.url}|{escape(s.label)}>" if s.url else f"[{s.n}] {escape(s.label)}"
                 for s in reply.sources]
        text = f"*{t('sources', reply.lang)}*\n" + "\n".join(lines)
        out.append({"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_CHARS]}})
    if reply.note:
        out.append({"type": "context",
                    "elements": [{"type": "mrkdwn", "text": escape(reply.note)}]})
    if reply.question_id:
        out.append({"type": "actions", "block_id": f"kb_feedback_{reply.question_id}",
                    "elements": [
                        {"type": "button", "action_id": "kb_up", "value": str(reply.question_id),
                         "text": {"type": "plain_text", "text": t("thumbs_up", reply.lang)}},
                        {"type": "button", "action_id": "kb_down",
                         "value": str(reply.question_id), "style": "danger",
                         "text": {"type": "plain_text", "text": t("thumbs_down", reply.lang)}},
                    ]})
    return out


def events_of(envelope: dict[str, Any]) -> tuple[Inbound, ...]:
    """The questions and feedback in an Events API envelope (`event_callback`); others none.

        events_of({"event_id": "Ev1", "event": {"type": "app_mention", "user": "U1",
                   "channel": "C1", "ts": "1.2", "text": "<@UKB> Leave?"}})
            -> (Inbound("Ev1", "U1", "C1", "1.2", "1.2", "Leave?", group=True),)
    """
    event, event_id = envelope.get("event") or {}, str(envelope.get("event_id", ""))
    kind, user, channel = event.get("type"), str(event.get("user", "")), event.get("channel", "")
    if not event_id or not user:
        return ()
    if kind == "reaction_added":
        item = event.get("item") or {}
        rating = THUMBS.get(str(event.get("reaction", "")).split("::")[0], 0)
        if not rating or item.get("type") != "message":
            return ()
        return (Inbound(event_id, user, str(item.get("channel", "")), "", rating=rating,
                        target=str(item.get("ts", ""))),)
    direct = str(channel).startswith("D")  # a direct message: its `message` event, not a mention
    is_question = (kind == "app_mention" and not direct) or (
        kind == "message" and event.get("channel_type") == "im" and not event.get("subtype"))
    if not is_question or event.get("bot_id"):
        return ()
    thread = str(event.get("thread_ts") or event.get("ts", ""))
    text = _MENTION.sub("", str(event.get("text", ""))).strip()
    return (Inbound(event_id, user, str(channel), thread, thread, text,
                    group=not direct),)


def actions_of(payload: dict[str, Any]) -> tuple[Inbound, ...]:
    """The 👍/👎 buttons clicked in an interactivity payload (`block_actions`)."""
    if payload.get("type") != "block_actions":
        return ()
    user = str((payload.get("user") or {}).get("id", ""))
    chat = str((payload.get("channel") or {}).get("id", ""))
    message = str((payload.get("container") or {}).get("message_ts", ""))
    return tuple(
        Inbound(f"action:{a.get('action_ts', '')}:{user}", user, chat, "",
                rating=BUTTONS[a["action_id"]], target=message)
        for a in payload.get("actions") or () if a.get("action_id") in BUTTONS)


class Slack(Platform):
    name = "slack"

    def __init__(self, signing_secret: str, bot_token: str, api_url: str,
                 window_s: float) -> None:
        self.secret, self.window_s = signing_secret.encode(), window_s
        self.api = api_url.rstrip("/")
        self.client = httpx.AsyncClient(timeout=API_TIMEOUT_S,
                                        headers={"Authorization": f"Bearer {bot_token}"})

    @classmethod
    def open(cls, channels: ChannelsSettings, secrets: dict[str, str]) -> Slack:
        require(secrets, "slack", "Slack")
        return cls(secrets["KB_SLACK_SIGNING_SECRET"], secrets["KB_SLACK_BOT_TOKEN"],
                   channels.slack.api_url, channels.replay_window_s)

    def receive(self, call: Callback) -> Received:
        stamp = call.headers.get("x-slack-request-timestamp", "")
        signature = call.headers.get("x-slack-signature", "")
        if call.method != "POST" or not stamp or not signature:
            raise Refused("unsigned", "no X-Slack-Signature and timestamp")
        check_time(stamp, call.now, self.window_s)
        mac = hmac.new(self.secret, f"v0:{stamp}:".encode() + call.body, hashlib.sha256)
        if not hmac.compare_digest("v0=" + mac.hexdigest(), signature):
            raise Refused("signature", "X-Slack-Signature does not match the signing secret")
        try:
            if call.headers.get("content-type", "").startswith("application/x-www-form"):
                form = urllib.parse.parse_qs(call.body.decode())
                return Received(events=actions_of(json.loads(form["payload"][0])))
            data = json.loads(call.body)
        except (KeyError, ValueError) as exc:
            raise Refused("body", f"a signed body that is not Slack's JSON ({exc})") from None
        if data.get("type") == "url_verification":
            return Received(body=json.dumps({"challenge": str(data.get("challenge", ""))}))
        return Received(events=events_of(data) if data.get("type") == "event_callback" else ())

    async def person(self, user_id: str) -> Person:
        data = await self._api("GET", "users.info", params={"user": user_id})
        user = data.get("user") or {}
        return Person(user_id, str((user.get("profile") or {}).get("email", "")),
                      bool(user.get("is_bot") or user.get("deleted")))

    async def members(self, chat: str) -> list[str]:
        found: list[str] = []
        cursor = ""
        while True:
            data = await self._api("GET", "conversations.members",
                                   params={"channel": chat, "limit": 200, "cursor": cursor})
            found += [str(m) for m in data.get("members") or ()]
            cursor = (data.get("response_metadata") or {}).get("next_cursor") or ""
            if not cursor:
                return found

    async def post(self, to: Inbound, reply: Reply) -> str:
        body = {"channel": to.chat, "text": reply.text[:SECTION_CHARS], "blocks": blocks(reply),
                "unfurl_links": False}
        if to.thread:
            body["thread_ts"] = to.thread
        data = await self._api("POST", "chat.postMessage", json=body)
        return str(data.get("ts", ""))

    async def _api(self, method: str, name: str, **kwargs: Any) -> dict[str, Any]:
        data = await call_api(self.client, method, f"{self.api}/{name}", f"Slack {name}",
                              **kwargs)
        if not data.get("ok"):
            raise PlatformError(f"Slack {name} refused: {data.get('error', 'no reason')}")
        return data

    async def close(self) -> None:
        await self.client.aclose()
