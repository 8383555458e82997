"""Feishu/Lark against the real app: events encrypted and signed as Feishu sends them (each
accepted by lark-oapi's own dispatcher first), answers posted to a loopback stand-in of
Feishu's Open API and checked as interactive cards."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest

from core.types import Turn
from devtools.chat_platforms import check_feishu_card, feishu_request
from tests.ui.channels.conftest import (
    FEISHU_KEY,
    FEISHU_TOKEN,
    FOLLOW_UP,
    HR_FILES,
    HR_QUESTION,
    QUESTION,
    ChatApp,
    settle,
)

pytestmark = pytest.mark.slow
EVENTS = "/channels/feishu/events"
counter = iter(range(1, 10**6))


def message(user: str, chat: str, text: str, root: str = "") -> tuple[str, dict[str, Any]]:
    """An im.message.receive_v1 event (its id) and the event."""
    n = next(counter)
    group = chat.startswith("oc_mixed")
    content = {"text": f"@_user_1 {text}" if group else text}
    return f"fe{n}", {
        "sender": {"sender_id": {"open_id": user}, "sender_type": "user"},
        "message": {"message_id": f"om_q{n}", "root_id": root, "chat_id": chat,
                    "chat_type": "group" if group else "p2p", "message_type": "text",
                    "content": json.dumps(content),
                    "mentions": [{"key": "@_user_1", "name": "kb"}] if group else []}}


def send(app: ChatApp, kind: str, event: dict[str, Any], event_id: str, **kw: Any) -> int:
    headers, body = feishu_request(FEISHU_KEY, FEISHU_TOKEN, kind, event, event_id, **kw)
    return app.send(EVENTS, headers, body).status_code


def ask(app: ChatApp, event_id: str, event: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The card kb replies with, and the id the stand-in gave its message."""
    before = len(app.feishu.posts)
    assert send(app, "im.message.receive_v1", event, event_id) == 200
    post = app.feishu.wait_posts(before + 1)[before]
    check_feishu_card(post)
    return post, app.feishu.reply_to(post)["data"]["message_id"]


def test_bad_signatures_tokens_and_old_timestamps_are_refused(
        chat_app: ChatApp, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ui.api.channels.hub")
    event_id, event = message("ou_bob", "oc_bob", QUESTION)
    before = len(chat_app.feishu.posts)
    headers, body = feishu_request(FEISHU_KEY, FEISHU_TOKEN, "im.message.receive_v1", event,
                                   event_id)
    assert chat_app.send(EVENTS, {**headers, "X-Lark-Signature": "0" * 64},
                         body).status_code == 401
    assert send(chat_app, "im.message.receive_v1", event, event_id,
                stamp=int(time.time()) - 600) == 401
    wrong, body = feishu_request(FEISHU_KEY, "another-token", "im.message.receive_v1", event,
                                 event_id)
    assert chat_app.send(EVENTS, wrong, body).status_code == 401
    plain = json.dumps({"schema": "2.0", "header": {"token": FEISHU_TOKEN}}).encode()
    assert chat_app.send(EVENTS, {"Content-Type": "application/json"}, plain).status_code == 401
    settle()
    assert len(chat_app.feishu.posts) == before
    lines = [r.getMessage() for r in caplog.records]
    assert any("feishu callback from 127.0.0.1 refused (signature)" in m for m in lines), lines
    reasons = {json.loads(r.details)["reason"] for r in chat_app.audit("channel.refused")
               if r.actor == "feishu"}
    assert {"signature", "old", "token", "unencrypted"} <= reasons, reasons


def test_a_retried_event_gets_one_answer(chat_app: ChatApp) -> None:
    event_id, event = message("ou_bob", "oc_bob", QUESTION)
    before = len(chat_app.feishu.posts)
    for _ in range(3):  # Feishu retries a callback it thinks went unanswered
        assert send(chat_app, "im.message.receive_v1", event, event_id) == 200
    chat_app.feishu.wait_posts(before + 1)
    settle()
    assert len(chat_app.feishu.posts) == before + 1


def test_a_user_outside_hr_gets_no_hr_passage_alone_or_beside_alice(chat_app: ChatApp) -> None:
    alice, _ = ask(chat_app, *message("ou_alice", "oc_alice", HR_QUESTION))
    assert any(name in alice["content"] for name in HR_FILES), alice
    bob, _ = ask(chat_app, *message("ou_bob", "oc_bob", HR_QUESTION))  # mapped by e-mail
    assert not any(name in bob["content"] for name in HR_FILES), bob
    mixed, _ = ask(chat_app, *message("ou_alice", "oc_mixed", HR_QUESTION))
    assert not any(name in mixed["content"] for name in HR_FILES), mixed


def test_a_reply_chain_follow_up_is_read_with_its_history(chat_app: ChatApp,
                                                         spied: list[Any]) -> None:
    event_id, first = message("ou_alice", "oc_alice", QUESTION)
    ask(chat_app, event_id, first)
    root = first["message"]["message_id"]
    ask(chat_app, *message("ou_alice", "oc_alice", FOLLOW_UP, root=root))
    earlier = chat_app.running.app.users.ledger.channel_turns("feishu", "oc_alice", root, 0, 5)
    assert spied[-1][:2] == (FOLLOW_UP, [Turn(QUESTION, earlier[0][1])]), spied
    ask(chat_app, *message("ou_alice", "oc_alice", FOLLOW_UP))
    assert spied[-1][:2] == (FOLLOW_UP, [])


def test_a_reaction_or_a_card_button_becomes_the_askers_feedback(chat_app: ChatApp) -> None:
    _, message_id = ask(chat_app, *message("ou_alice", "oc_alice", QUESTION))
    question_id, asker = chat_app.question_of("feishu", message_id)
    assert asker == "alice"

    def react(user: str, emoji: str) -> None:
        assert send(chat_app, "im.message.reaction.created_v1", {
            "message_id": message_id, "reaction_type": {"emoji_type": emoji},
            "operator_type": "user", "user_id": {"open_id": user}}, f"fr{next(counter)}") == 200

    react("ou_bob", "ThumbsDown")  # not bob's question: ignored
    react("ou_alice", "THUMBSUP")
    wait_for(lambda: chat_app.feedback(question_id) == [("alice", 1)])
    assert send(chat_app, "card.action.trigger", {
        "operator": {"open_id": "ou_alice"}, "action": {"value": {"kb": "down"}, "tag": "button"},
        "context": {"open_message_id": message_id, "open_chat_id": "oc_alice"}},
        f"fc{next(counter)}") == 200
    wait_for(lambda: chat_app.feedback(question_id) == [("alice", -1)])


def wait_for(done: Any, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "not within 30 s"
        time.sleep(0.1)
