"""Slack against the real app: callbacks signed by slack_sdk, answers posted to a loopback
stand-in of Slack's Web API and checked as Block Kit by slack_sdk's models."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import pytest

from core.types import Turn
from devtools.chat_platforms import check_block_kit, slack_request
from tests.ui.channels.conftest import (
    FOLLOW_UP,
    HR_FILES,
    HR_QUESTION,
    PUBLIC_URL,
    QUESTION,
    SLACK_SECRET,
    ChatApp,
    settle,
)

pytestmark = pytest.mark.slow
EVENTS = "/channels/slack/events"
counter = iter(range(1, 10**6))


def message(user: str, channel: str, text: str, thread: str = "",
            kind: str = "message") -> dict[str, Any]:
    n = next(counter)
    event = {"type": kind, "user": user, "channel": channel, "text": text,
             "ts": f"1700000000.{n:06d}", "channel_type": "im" if channel[0] == "D" else
             "channel"}
    if thread:
        event["thread_ts"] = thread
    return {"type": "event_callback", "event_id": f"Ev{n:08d}", "event": event}


def ask(app: ChatApp, payload: dict[str, Any]) -> dict[str, Any]:
    """Send one question; the answer kb posts for it."""
    before = len(app.slack.posts)
    headers, body = slack_request(SLACK_SECRET, payload)
    reply = app.send(EVENTS, headers, body)
    assert reply.status_code == 200, reply.text
    post = app.slack.wait_posts(before + 1)[before]
    check_block_kit(post)
    return post


def test_the_url_check_is_answered_and_bad_signatures_or_old_timestamps_refused(
        chat_app: ChatApp, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ui.api.channels.hub")
    headers, body = slack_request(SLACK_SECRET, {"type": "url_verification", "challenge": "c4"})
    assert chat_app.send(EVENTS, headers, body).json() == {"challenge": "c4"}

    before = len(chat_app.slack.posts)
    payload = message("U_BOB", "D_BOB", QUESTION)
    forged, body = slack_request("not-the-secret", payload)
    assert chat_app.send(EVENTS, forged, body).status_code == 401
    old, body = slack_request(SLACK_SECRET, payload, stamp=int(time.time()) - 600)
    assert chat_app.send(EVENTS, old, body).status_code == 401
    assert chat_app.send(EVENTS, {"Content-Type": "application/json"}, body).status_code == 401
    settle()
    assert len(chat_app.slack.posts) == before  # nothing answered
    lines = [r.getMessage() for r in caplog.records]
    assert any("slack callback from 127.0.0.1 refused (signature)" in m for m in lines), lines
    assert any("refused (old)" in m for m in lines), lines
    reasons = [json.loads(r.details)["reason"] for r in chat_app.audit("channel.refused")
               if r.actor == "slack"]
    assert {"signature", "old", "unsigned"} <= set(reasons), reasons


def test_a_retried_event_gets_one_answer(chat_app: ChatApp) -> None:
    payload = message("U_BOB", "D_BOB", QUESTION)
    before = len(chat_app.slack.posts)

    def deliver(retry: int) -> None:
        headers, body = slack_request(SLACK_SECRET, payload)
        if retry:
            headers["X-Slack-Retry-Num"], headers["X-Slack-Retry-Reason"] = str(retry), "timeout"
        assert chat_app.send(EVENTS, headers, body).status_code == 200

    threads = [threading.Thread(target=deliver, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    chat_app.slack.wait_posts(before + 1)
    settle()
    assert len(chat_app.slack.posts) == before + 1


def test_a_user_outside_hr_gets_no_hr_passage_alone_or_beside_alice(chat_app: ChatApp) -> None:
    alice = ask(chat_app, message("U_ALICE", "D_ALICE", HR_QUESTION))  # mapped by e-mail
    assert any(name in json.dumps(alice, ensure_ascii=False) for name in HR_FILES), alice
    assert f"<{PUBLIC_URL}/page/" in json.dumps(alice)  # sources link to the source view
    bob = ask(chat_app, message("U_BOB", "D_BOB", HR_QUESTION))
    assert not any(name in json.dumps(bob, ensure_ascii=False) for name in HR_FILES), bob
    # alice asks in a channel bob reads: only what every member may see
    mixed = ask(chat_app, message("U_ALICE", "C_MIXED", f"<@UKB> {HR_QUESTION}",
                                  kind="app_mention"))
    assert not any(name in json.dumps(mixed, ensure_ascii=False) for name in HR_FILES), mixed
    assert mixed["thread_ts"]  # in the question's thread


def test_a_thread_follow_up_is_read_with_its_history(chat_app: ChatApp,
                                                    spied: list[Any]) -> None:
    first = message("U_ALICE", "D_ALICE", QUESTION)
    answered = ask(chat_app, first)
    thread = first["event"]["ts"]
    assert answered["thread_ts"] == thread
    ask(chat_app, message("U_ALICE", "D_ALICE", FOLLOW_UP, thread=thread))
    earlier = chat_app.running.app.users.ledger.channel_turns("slack", "D_ALICE", thread, 0, 5)
    assert spied[-1][:2] == (FOLLOW_UP, [Turn(QUESTION, earlier[0][1])]), spied
    ask(chat_app, message("U_ALICE", "D_ALICE", FOLLOW_UP))  # a new thread: no history
    assert spied[-1][:2] == (FOLLOW_UP, [])


def test_a_reaction_or_a_button_becomes_the_askers_feedback(chat_app: ChatApp) -> None:
    post = ask(chat_app, message("U_ALICE", "D_ALICE", QUESTION))
    ts = chat_app.slack.reply_to(post)["ts"]
    question_id, asker = chat_app.question_of("slack", ts)
    assert asker == "alice"

    def react(user: str, reaction: str) -> None:
        n = next(counter)
        headers, body = slack_request(SLACK_SECRET, {
            "type": "event_callback", "event_id": f"EvR{n}", "event": {
                "type": "reaction_added", "user": user, "reaction": reaction,
                "item": {"type": "message", "channel": "D_ALICE",
                         "ts": ts}}})
        assert chat_app.send(EVENTS, headers, body).status_code == 200

    react("U_BOB", "-1")  # not bob's question: ignored
    react("U_ALICE", "+1")
    _wait(lambda: chat_app.feedback(question_id) == [("alice", 1)], chat_app, question_id)
    click = json.dumps({"type": "block_actions", "user": {"id": "U_ALICE"},
                        "channel": {"id": "D_ALICE"},
                        "container": {"message_ts": ts},
                        "actions": [{"action_id": "kb_down", "value": str(question_id),
                                     "action_ts": "1700000001.1"}]})
    headers, body = slack_request(SLACK_SECRET, click)
    assert chat_app.send(EVENTS, headers, body).status_code == 200
    _wait(lambda: chat_app.feedback(question_id) == [("alice", -1)], chat_app, question_id)


def _wait(done: Any, app: ChatApp, question_id: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, app.feedback(question_id)
        time.sleep(0.1)
