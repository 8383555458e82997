"""WeCom against the real app: callbacks encrypted and signed by wechatpy's WeChatCrypto (the
published scheme), answers sent to a loopback stand-in of WeCom's server API and checked as
markdown and template card messages."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest

from core.types import Turn
from devtools.chat_platforms import (
    check_wecom_message,
    wecom_click,
    wecom_echo,
    wecom_request,
    wecom_text,
)
from tests.ui.channels.conftest import (
    FOLLOW_UP,
    HR_FILES,
    HR_QUESTION,
    QUESTION,
    WECOM_AES,
    WECOM_CORP,
    WECOM_TOKEN,
    ChatApp,
    settle,
)
from tests.ui.channels.test_feishu import wait_for

pytestmark = pytest.mark.slow
EVENTS = "/channels/wecom/events"
counter = iter(range(1, 10**6))


def send(app: ChatApp, message: str, **kw: Any) -> int:
    query, body = wecom_request(WECOM_TOKEN, WECOM_AES, WECOM_CORP, message, **kw)
    return app.send(EVENTS, {"Content-Type": "text/xml"}, body, params=query).status_code


def ask(app: ChatApp, user: str, text: str) -> tuple[dict[str, Any], str]:
    """The markdown answer kb sends, and the task id of its feedback card."""
    before = len(app.wecom.posts)
    assert send(app, wecom_text(user, text, f"7{next(counter):08d}", WECOM_CORP)) == 200
    answer, card = app.wecom.wait_posts(before + 2)[before:before + 2]
    for post in (answer, card):
        check_wecom_message(post)
    assert answer["msgtype"] == "markdown" and answer["touser"] == user
    return answer, card["template_card"]["task_id"]


def test_the_url_check_is_answered_and_bad_signatures_or_old_timestamps_refused(
        chat_app: ChatApp, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ui.api.channels.hub")
    query = wecom_echo(WECOM_TOKEN, WECOM_AES, WECOM_CORP, "echo-4711")
    assert chat_app.send(EVENTS, {}, params=query, method="GET").text == "echo-4711"
    forged = {**query, "msg_signature": "0" * 40}
    assert chat_app.send(EVENTS, {}, params=forged, method="GET").status_code == 401
    before = len(chat_app.wecom.posts)
    text = wecom_text("bob", QUESTION, "9000001", WECOM_CORP)
    query, body = wecom_request("another-token", WECOM_AES, WECOM_CORP, text)
    assert chat_app.send(EVENTS, {}, body, params=query).status_code == 401
    assert send(chat_app, text, stamp=int(time.time()) - 600) == 401
    query, body = wecom_request(WECOM_TOKEN, WECOM_AES, "another-corp", text)
    assert chat_app.send(EVENTS, {}, body, params=query).status_code == 401
    settle()
    assert len(chat_app.wecom.posts) == before
    lines = [r.getMessage() for r in caplog.records]
    assert any("wecom callback from 127.0.0.1 refused (signature)" in m for m in lines), lines
    reasons = {json.loads(r.details)["reason"] for r in chat_app.audit("channel.refused")
               if r.actor == "wecom"}
    assert {"signature", "old", "corp"} <= reasons, reasons


def test_a_retried_message_gets_one_answer(chat_app: ChatApp) -> None:
    text = wecom_text("bob", QUESTION, f"8{next(counter):08d}", WECOM_CORP)
    before = len(chat_app.wecom.posts)
    for _ in range(3):  # WeCom retries a callback not answered within 5 s, three times
        assert send(chat_app, text) == 200
    chat_app.wecom.wait_posts(before + 2)
    settle()
    assert len(chat_app.wecom.posts) == before + 2  # one answer and its feedback card


def test_a_user_outside_hr_gets_no_hr_passage(chat_app: ChatApp) -> None:
    alice, _ = ask(chat_app, "alice", HR_QUESTION)
    assert any(name in alice["markdown"]["content"] for name in HR_FILES), alice
    bob, _ = ask(chat_app, "bob", HR_QUESTION)
    assert not any(name in bob["markdown"]["content"] for name in HR_FILES), bob


def test_a_follow_up_is_read_with_the_chats_recent_turns(chat_app: ChatApp,
                                                       spied: list[Any]) -> None:
    ask(chat_app, "alice", QUESTION)
    ask(chat_app, "alice", FOLLOW_UP)
    history = spied[-1][1]
    assert spied[-1][0] == FOLLOW_UP and history and history[-1].question == QUESTION, spied
    assert isinstance(history[-1], Turn)


def test_a_card_button_becomes_the_askers_feedback(chat_app: ChatApp) -> None:
    _, task = ask(chat_app, "alice", QUESTION)
    question_id, asker = chat_app.question_of("wecom", task)
    assert asker == "alice"
    assert send(chat_app, wecom_click("bob", task, "down", WECOM_CORP)) == 200  # not bob's
    assert send(chat_app, wecom_click("alice", task, "up", WECOM_CORP)) == 200
    wait_for(lambda: chat_app.feedback(question_id) == [("alice", 1)])
