"""DingTalk against the real app: robot messages shaped by dingtalk-stream's ChatbotMessage and
signed as DingTalk signs them, answers posted to a loopback stand-in of the session webhook and
checked as DingTalk's ActionCard and markdown messages."""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
from typing import Any

import pytest

from core.types import Turn
from devtools.chat_dingtalk_teams import check_dingtalk_message, dingtalk_message, dingtalk_request
from tests.ui.channels.conftest import (
    DINGTALK_SECRET,
    FOLLOW_UP,
    HR_FILES,
    HR_QUESTION,
    PUBLIC_URL,
    QUESTION,
    ChatApp,
    settle,
)
from tests.ui.channels.test_feishu import wait_for
from ui.api.channels.dingtalk import SHARED_SIGN_S

pytestmark = pytest.mark.slow
EVENTS = "/channels/dingtalk/events"
counter = iter(range(1, 10**6))


def message(app: ChatApp, user: str, chat: str, text: str) -> dict[str, Any]:
    return dingtalk_message(app.dingtalk.url, user, chat, text, f"msg{next(counter):06d}",
                            group=chat == "cid_mixed")


def send(app: ChatApp, data: dict[str, Any], **kw: Any) -> int:
    headers, body = dingtalk_request(DINGTALK_SECRET, data, **kw)
    return app.send(EVENTS, headers, body).status_code


def ask(app: ChatApp, data: dict[str, Any]) -> str:
    """The markdown of the card kb answers with."""
    before = len(app.dingtalk.posts)
    assert send(app, data) == 200
    return check_dingtalk_message(app.dingtalk.wait_posts(before + 1)[before])


def test_bad_signatures_old_timestamps_and_replays_are_refused(
        chat_app: ChatApp, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ui.api.channels.hub")
    data = message(chat_app, "ding_bob", "cid_bob", QUESTION)
    before = len(chat_app.dingtalk.posts)
    forged, body = dingtalk_request("not-the-secret", data)
    assert chat_app.send(EVENTS, forged, body).status_code == 401
    assert send(chat_app, data, stamp_ms=int((time.time() - 3700) * 1000)) == 401
    assert chat_app.send(EVENTS, {"Content-Type": "application/json"}, body).status_code == 401
    headers, body = dingtalk_request(DINGTALK_SECRET, data)
    other = {**data, "msgId": "msg-swapped", "senderStaffId": "ding_alice"}
    assert chat_app.send(EVENTS, headers, body).status_code == 200
    time.sleep(SHARED_SIGN_S + 0.5)  # later than messages sent in the same millisecond come
    assert chat_app.send(EVENTS, headers, json.dumps(other).encode()).status_code == 401
    elsewhere = {**data, "msgId": "msg-elsewhere",
                 "sessionWebhook": "http://127.0.0.1:9/robot/sendBySession?session=x"}
    assert send(chat_app, elsewhere) == 401
    chat_app.dingtalk.wait_posts(before + 1)  # the one signed message is answered
    settle()
    assert len(chat_app.dingtalk.posts) == before + 1
    lines = [r.getMessage() for r in caplog.records]
    assert any("dingtalk callback from 127.0.0.1 refused (signature)" in m for m in lines), lines
    reasons = {json.loads(r.details)["reason"] for r in chat_app.audit("channel.refused")
               if r.actor == "dingtalk"}
    assert {"signature", "old", "unsigned", "replayed", "webhook"} <= reasons, reasons


def test_a_retried_message_gets_one_answer(chat_app: ChatApp) -> None:
    data = message(chat_app, "ding_bob", "cid_bob", QUESTION)
    before = len(chat_app.dingtalk.posts)
    for _ in range(3):  # each delivery signed anew, as DingTalk's retries are
        assert send(chat_app, data) == 200
    chat_app.dingtalk.wait_posts(before + 1)
    settle()
    assert len(chat_app.dingtalk.posts) == before + 1


def test_a_user_outside_hr_gets_no_hr_passage_alone_or_beside_alice(chat_app: ChatApp) -> None:
    alice = ask(chat_app, message(chat_app, "ding_alice", "cid_alice", HR_QUESTION))
    assert any(name in alice for name in HR_FILES), alice
    post = chat_app.dingtalk.posts[-1]
    assert post["actionCard"]["btns"][0]["actionURL"].startswith(f"{PUBLIC_URL}/page/"), post
    bob = ask(chat_app, message(chat_app, "ding_bob", "cid_bob", HR_QUESTION))  # by e-mail
    assert not any(name in bob for name in HR_FILES), bob
    mixed = ask(chat_app, message(chat_app, "ding_alice", "cid_mixed", HR_QUESTION))
    assert not any(name in mixed for name in HR_FILES), mixed


def test_a_follow_up_is_read_with_the_conversations_history(chat_app: ChatApp,
                                                          spied: list[Any]) -> None:
    ask(chat_app, message(chat_app, "ding_alice", "cid_alice_2", QUESTION))
    ask(chat_app, message(chat_app, "ding_alice", "cid_alice_2", FOLLOW_UP))
    earlier = chat_app.running.app.users.ledger.channel_turns("dingtalk", "cid_alice_2",
                                                              "cid_alice_2", 0, 5)
    assert spied[-1][:2] == (FOLLOW_UP, [Turn(QUESTION, earlier[0][1])]), spied
    ask(chat_app, message(chat_app, "ding_alice", "cid_alice_3", FOLLOW_UP))
    assert spied[-1][:2] == (FOLLOW_UP, [])


def test_a_thumbs_message_from_the_cards_link_becomes_the_askers_feedback(
        chat_app: ChatApp) -> None:
    text = ask(chat_app, message(chat_app, "ding_alice", "cid_alice_4", QUESTION))
    assert f"(dtmd://dingtalkclient/sendMessage?content={urllib.parse.quote('👍')})" in text
    question_id, asker = chat_app.question_of("dingtalk", "cid_alice_4")
    assert asker == "alice"
    assert send(chat_app, message(chat_app, "ding_bob", "cid_alice_4", "👎")) == 200  # not his
    assert send(chat_app, message(chat_app, "ding_alice", "cid_alice_4", "👍🏻")) == 200
    wait_for(lambda: chat_app.feedback(question_id) == [("alice", 1)])
    assert send(chat_app, message(chat_app, "ding_alice", "cid_alice_4", "👎")) == 200
    wait_for(lambda: chat_app.feedback(question_id) == [("alice", -1)])
