"""The chat platforms as kb's tests (tests/ui/channels/) and bench/load/channels_ack.py meet them:
each platform's callbacks built and signed by its official SDK (`slack_sdk`'s
SignatureVerifier; Feishu events encrypted as the Feishu console does and accepted by
`lark-oapi`'s own EventDispatcherHandler before they are sent; WeCom's published scheme by
`wechatpy`'s WeChatCrypto), and a loopback stand-in of each platform's reply API (a real HTTP
server in a thread) that records what kb posts, with structure checks of Block Kit (by
`slack_sdk`'s block models), Feishu's interactive card and WeCom's messages.

    with StandIn(slack_routes(people, members)) as slack_api:
        ...  # kb's [channels.slack] api_url = slack_api.url
        slack_api.wait_posts(1)  # -> [{"channel": "C1", "thread_ts": "...", "blocks": [...]}]
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Route = Callable[[dict[str, Any]], dict[str, Any]]  # the request (path, query, json, url) -> reply


class StandIn:
    """A platform's API on 127.0.0.1: `routes` by path suffix; every request is kept."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes, self.requests = routes, []  # type: ignore[var-annotated]
        self.posts: list[dict[str, Any]] = []  # the bodies of message posts
        self.replies: list[dict[str, Any]] = []  # what the stand-in answered each
        self.lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                parsed = urllib.parse.urlparse(self.path)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                request: dict[str, Any] = {
                    "path": parsed.path, "method": self.command,
                    "query": dict(urllib.parse.parse_qsl(parsed.query)),
                    "json": _body(raw, self.headers.get("content-type", "")),
                    "auth": self.headers.get("authorization", ""), "url": stand_in.url}
                route = next((r for suffix, r in stand_in.routes.items()
                              if re.search(suffix + "$", parsed.path)), None)
                reply = route(request) if route else {"error": "no such route"}
                with stand_in.lock:
                    stand_in.requests.append(request)
                    if reply.pop("_post", False):
                        stand_in.posts.append(request["json"])
                        stand_in.replies.append(reply)
                data = json.dumps(reply).encode()
                self.send_response(200 if route else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_posts(self, count: int, timeout_s: float = 90.0) -> list[dict[str, Any]]:
        """The posts once there are `count` (AssertionError naming what came, after the
        timeout)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.posts) >= count:
                    return list(self.posts)
            time.sleep(0.1)
        raise AssertionError(f"{len(self.posts)} posts, not {count}, after {timeout_s} s: "
                             f"{self.posts}")

    def clear(self) -> None:
        with self.lock:
            self.posts.clear()
            self.replies.clear()
            self.requests.clear()

    def reply_to(self, post: dict[str, Any]) -> dict[str, Any]:
        """What the stand-in answered `post` (the id the message got)."""
        with self.lock:
            return self.replies[next(i for i, p in enumerate(self.posts) if p is post)]


def _body(raw: bytes, kind: str) -> dict[str, Any]:
    """A request's JSON body, or its form's fields."""
    if kind.startswith("application/x-www-form-urlencoded"):
        return dict(urllib.parse.parse_qsl(raw.decode()))
    return json.loads(raw) if raw else {}


# --- Slack ------------------------------------------------------------------------------------

def slack_routes(emails: dict[str, str], members: dict[str, list[str]]) -> dict[str, Route]:
    """users.info, conversations.members and chat.postMessage of Slack's Web API."""
    counter = iter(range(1, 10**6))

    def info(r: dict[str, Any]) -> dict[str, Any]:
        uid = r["query"]["user"]
        return {"ok": True, "user": {"id": uid, "is_bot": uid.startswith("B"),
                                     "profile": {"email": emails.get(uid, "")}}}

    return {
        "/users.info": info,
        "/conversations.members": lambda r: {"ok": True, "members": members.get(
            r["query"]["channel"], []), "response_metadata": {"next_cursor": ""}},
        "/chat.postMessage": lambda r: {"ok": True, "_post": True,
                                        "ts": f"1800000000.{next(counter):06d}"},
    }


def slack_request(secret: str, payload: dict[str, Any] | str, stamp: int | None = None,
                  ) -> tuple[dict[str, str], bytes]:
    """Headers and body of a Slack callback signed by slack_sdk's SignatureVerifier (a str
    payload is an interactivity form's `payload=`)."""
    from slack_sdk.signature import SignatureVerifier

    if isinstance(payload, str):
        body = urllib.parse.urlencode({"payload": payload}).encode()
        kind = "application/x-www-form-urlencoded"
    else:
        body, kind = json.dumps(payload).encode(), "application/json"
    stamp = int(time.time()) if stamp is None else stamp
    verifier = SignatureVerifier(secret)
    signature = verifier.generate_signature(timestamp=str(stamp), body=body)
    return {"X-Slack-Request-Timestamp": str(stamp), "X-Slack-Signature": str(signature),
            "Content-Type": kind}, body


def check_block_kit(post: dict[str, Any]) -> None:
    """A chat.postMessage body: a channel, text, and blocks that slack_sdk's models parse,
    validate and give back unchanged."""
    from slack_sdk.models.blocks import Block

    assert post["channel"] and isinstance(post["text"], str) and post["blocks"], post
    for block in post["blocks"]:
        parsed = Block.parse(block)
        assert parsed is not None, f"not a Block Kit block: {block}"
        parsed.validate_json()
        assert parsed.to_dict() == block, (parsed.to_dict(), block)


# --- Feishu/Lark ------------------------------------------------------------------------------

def feishu_routes(emails: dict[str, str], members: dict[str, list[str]]) -> dict[str, Route]:
    """The tenant token, contact users, chat members and message replies of Feishu's API."""
    counter = iter(range(1, 10**6))
    return {
        "/auth/v3/tenant_access_token/internal": lambda r: {
            "code": 0, "tenant_access_token": "t-standin", "expire": 7200},
        "/contact/v3/users/[^/]+": lambda r: {"code": 0, "data": {"user": {
            "email": emails.get(r["path"].rsplit("/", 1)[1], "")}}},
        "/im/v1/chats/[^/]+/members": lambda r: {"code": 0, "data": {
            "items": [{"member_id": m} for m in members.get(r["path"].split("/")[-2], [])],
            "has_more": False, "page_token": ""}},
        "/im/v1/messages/[^/]+/reply": lambda r: {"code": 0, "_post": True, "data": {
            "message_id": f"om_{next(counter)}"}},
    }


def feishu_request(encrypt_key: str, token: str, event_type: str, event: dict[str, Any],
                   event_id: str = "", stamp: int | None = None) -> tuple[dict[str, str], bytes]:
    """Headers and body of a Feishu v2 event, encrypted with the Encrypt Key and signed as
    Feishu sends them; lark-oapi's EventDispatcherHandler accepts it before it is returned."""
    from Crypto.Cipher import AES  # pycryptodome, lark-oapi's own cipher

    plain = json.dumps({"schema": "2.0", "header": {
        "event_id": event_id or os.urandom(8).hex(), "token": token, "event_type": event_type,
        "create_time": str(int(time.time() * 1000)), "app_id": "cli_test"},
        "event": event}).encode()
    iv, pad = os.urandom(16), 16 - len(plain) % 16
    cipher = AES.new(hashlib.sha256(encrypt_key.encode()).digest(), AES.MODE_CBC, iv)
    encrypted = base64.b64encode(iv + cipher.encrypt(plain + bytes([pad]) * pad)).decode()
    body = json.dumps({"encrypt": encrypted}).encode()
    stamp_text, nonce = str(int(time.time()) if stamp is None else stamp), os.urandom(4).hex()
    signature = hashlib.sha256((stamp_text + nonce + encrypt_key).encode() + body).hexdigest()
    headers = {"X-Lark-Request-Timestamp": stamp_text, "X-Lark-Request-Nonce": nonce,
               "X-Lark-Signature": signature, "Content-Type": "application/json"}
    _lark_accepts(encrypt_key, token, headers, body)
    return headers, body


def _lark_accepts(encrypt_key: str, token: str, headers: dict[str, str], body: bytes) -> None:
    """The official SDK's dispatcher decrypts, checks the token and the signature: 200."""
    import lark_oapi as lark
    from lark_oapi.core.model import RawRequest
    from lark_oapi.event.callback.model.p2_card_action_trigger import (
        P2CardActionTriggerResponse,
    )

    handler = (lark.EventDispatcherHandler.builder(encrypt_key, token)
               .register_p2_im_message_receive_v1(lambda _: None)
               .register_p2_im_message_reaction_created_v1(lambda _: None)
               .register_p2_card_action_trigger(lambda _: P2CardActionTriggerResponse({}))
               .build())
    request = RawRequest()
    request.uri, request.headers, request.body = "/", dict(headers), body
    response = handler.do(request)
    assert response.status_code == 200, response.content


CARD_TAGS = {"div", "hr", "note", "action", "markdown"}


def check_feishu_card(post: dict[str, Any]) -> dict[str, Any]:
    """A message reply body holding an interactive card (message card JSON 1.0): its
    elements of known tags, each with the fields Feishu requires. The card, parsed."""
    assert post["msg_type"] == "interactive", post
    card = json.loads(post["content"])
    assert isinstance(card.get("config"), dict) and card["elements"], card
    for element in card["elements"]:
        tag = element["tag"]
        assert tag in CARD_TAGS, element
        if tag == "div":
            assert element["text"]["tag"] in ("plain_text", "lark_md"), element
            assert isinstance(element["text"]["content"], str), element
        elif tag == "note":
            assert all(e["tag"] in ("plain_text", "lark_md") for e in element["elements"])
        elif tag == "action":
            for button in element["actions"]:
                assert button["tag"] == "button" and button["text"]["tag"] == "plain_text"
                assert button["type"] in ("default", "primary", "danger")
                assert isinstance(button["value"], dict), button
    return dict(card)


# --- WeCom ------------------------------------------------------------------------------------

def wecom_routes(emails: dict[str, str]) -> dict[str, Route]:
    """gettoken, user/get and message/send of WeCom's server API."""
    counter = iter(range(1, 10**6))
    return {
        "/gettoken": lambda r: {"errcode": 0, "access_token": "standin", "expires_in": 7200},
        "/user/get": lambda r: {"errcode": 0, "email": emails.get(r["query"]["userid"], "")},
        "/message/send": lambda r: {"errcode": 0, "errmsg": "ok", "_post": True,
                                    "msgid": f"msg{next(counter)}"},
    }


def wecom_request(token: str, aes_key: str, corp_id: str, message: str,
                  stamp: int | None = None) -> tuple[dict[str, str], bytes]:
    """The query and XML body of a WeCom callback carrying `message`, encrypted and signed by
    wechatpy's WeChatCrypto."""
    from wechatpy.enterprise.crypto import WeChatCrypto

    nonce = os.urandom(4).hex()
    stamp_text = str(int(time.time()) if stamp is None else stamp)
    sealed = WeChatCrypto(token, aes_key, corp_id).encrypt_message(message, nonce, stamp_text)
    encrypted = re.search(r"<Encrypt><!\[CDATA\[(.*?)\]\]>", sealed).group(1)  # type: ignore[union-attr]
    signature = re.search(r"<MsgSignature><!\[CDATA\[(.*?)\]\]>", sealed).group(1)  # type: ignore[union-attr]
    body = (f"<xml><ToUserName><![CDATA[{corp_id}]]></ToUserName><AgentID>1000002</AgentID>"
            f"<Encrypt><![CDATA[{encrypted}]]></Encrypt></xml>").encode()
    return {"msg_signature": signature, "timestamp": stamp_text, "nonce": nonce}, body


def wecom_echo(token: str, aes_key: str, corp_id: str, echo: str) -> dict[str, str]:
    """The query of the WeCom console's URL check: `echo` encrypted, signed (wechatpy)."""
    from wechatpy.enterprise.crypto import PrpCrypto
    from wechatpy.utils import WeChatSigner

    key = base64.b64decode(aes_key + "=")
    echostr = PrpCrypto(key).encrypt(echo, corp_id)
    echostr = echostr.decode() if isinstance(echostr, bytes) else echostr
    nonce, stamp = os.urandom(4).hex(), str(int(time.time()))
    signer = WeChatSigner()
    signer.add_data(token, stamp, nonce, echostr)
    return {"msg_signature": signer.signature, "timestamp": stamp, "nonce": nonce,
            "echostr": echostr}


def wecom_text(user: str, text: str, msg_id: str, corp_id: str) -> str:
    """A decrypted WeCom text message."""
    return (f"<xml><ToUserName><![CDATA[{corp_id}]]></ToUserName><FromUserName><![CDATA[{user}]]>"
            f"</FromUserName><CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[text]]>"
            f"</MsgType><Content><![CDATA[{text}]]></Content><MsgId>{msg_id}</MsgId>"
            f"<AgentID>1000002</AgentID></xml>")


def wecom_click(user: str, task_id: str, key: str, corp_id: str) -> str:
    """A decrypted WeCom template card button click."""
    return (f"<xml><ToUserName><![CDATA[{corp_id}]]></ToUserName><FromUserName><![CDATA[{user}]]>"
            f"</FromUserName><CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[event]]>"
            f"</MsgType><Event><![CDATA[template_card_event]]></Event><EventKey><![CDATA[{key}]]>"
            f"</EventKey><TaskId><![CDATA[{task_id}]]></TaskId><AgentID>1000002</AgentID></xml>")


def check_wecom_message(post: dict[str, Any]) -> None:
    """A message/send body: markdown within 2048 bytes, or a button_interaction template card
    (task id of letters, digits, _-@ up to 128; one to six buttons with text, key, style 1-4)."""
    assert post["touser"] and isinstance(post["agentid"], int), post
    if post["msgtype"] == "markdown":
        content = post["markdown"]["content"]
        assert content and len(content.encode()) <= 2048, post
        return
    assert post["msgtype"] == "template_card", post
    card = post["template_card"]
    assert card["card_type"] == "button_interaction", card
    assert re.fullmatch(r"[A-Za-z0-9_\-@]{1,128}", card["task_id"]), card
    assert 1 <= len(card["button_list"]) <= 6, card
    for button in card["button_list"]:
        assert button["text"] and button["key"] and button["style"] in (1, 2, 3, 4), button
