"""Microsoft Teams against the real app: activities built by botbuilder-schema, each with a JWT
signed as Bot Framework signs them by a key a loopback OpenID stand-in publishes, replies posted
to a loopback stand-in of the conversation's serviceUrl and checked as Bot Framework activities
holding an Adaptive Card valid under the official schema."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest

from core.types import Turn
from devtools.chat_dingtalk_teams import (
    BotFrameworkKeys,
    check_teams_reply,
    teams_activity,
    teams_request,
)
from tests.ui.channels.conftest import (
    FOLLOW_UP,
    HR_FILES,
    HR_QUESTION,
    PUBLIC_URL,
    QUESTION,
    TEAMS_APP,
    ChatApp,
    settle,
)
from tests.ui.channels.test_feishu import wait_for

pytestmark = pytest.mark.slow
EVENTS = "/channels/teams/events"
MIXED = "19:mixed@thread.tacv2"
counter = iter(range(1, 10**6))


def activity(app: ChatApp, user: str, conversation: str, text: str = "",
             **fields: Any) -> dict[str, Any]:
    kind = "channel" if conversation.startswith("19:") else "personal"
    return teams_activity(app.teams.url, user, conversation, text, id=f"f:{next(counter)}",
                          conversation_type=kind, **fields)


def send(app: ChatApp, data: dict[str, Any], keys: BotFrameworkKeys | None = None,
         **claims: Any) -> int:
    headers, body = teams_request(keys or app.bot_keys, TEAMS_APP, data, **claims)
    return app.send(EVENTS, headers, body).status_code


def ask(app: ChatApp, data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """kb's reply (checked) and the id the stand-in gave it."""
    before = len(app.teams.posts)
    assert send(app, data) == 200
    post = app.teams.wait_posts(before + 1)[before]
    check_teams_reply(post)
    assert post["replyToId"] == data["id"] and post["conversation"]["id"] == \
        data["conversation"]["id"], post
    return post, app.teams.reply_to(post)["id"]


def text_of(post: dict[str, Any]) -> str:
    return json.dumps(post["attachments"][0]["content"], ensure_ascii=False)


def test_missing_forged_misaddressed_and_expired_tokens_are_refused(
        chat_app: ChatApp, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ui.api.channels.hub")
    data = activity(chat_app, "29:bob", "a:bob", QUESTION)
    before = len(chat_app.teams.posts)
    assert send(chat_app, data, keys=BotFrameworkKeys()) == 401  # same key id, another key
    assert send(chat_app, data, keys=BotFrameworkKeys("rotated-in")) == 401  # an unknown key
    assert send(chat_app, data, aud="another-bot") == 401
    assert send(chat_app, data, iss="https://sts.example.com") == 401
    assert send(chat_app, data, exp=int(time.time()) - 600) == 401
    assert send(chat_app, data, serviceUrl="https://attacker.example.com") == 401
    body = json.dumps(data).encode()
    assert chat_app.send(EVENTS, {"Content-Type": "application/json"}, body).status_code == 401
    settle()
    assert len(chat_app.teams.posts) == before
    lines = [r.getMessage() for r in caplog.records]
    assert any("teams callback from 127.0.0.1 refused (signature)" in m for m in lines), lines
    reasons = {json.loads(r.details)["reason"] for r in chat_app.audit("channel.refused")
               if r.actor == "teams"}
    assert {"signature", "audience", "issuer", "old", "service", "unsigned"} <= reasons, reasons


def test_a_retried_activity_gets_one_answer(chat_app: ChatApp) -> None:
    data = activity(chat_app, "29:bob", "a:bob", QUESTION)
    before = len(chat_app.teams.posts)
    for _ in range(3):
        assert send(chat_app, data) == 200
    chat_app.teams.wait_posts(before + 1)
    settle()
    assert len(chat_app.teams.posts) == before + 1


def test_a_user_outside_hr_gets_no_hr_passage_alone_or_beside_alice(chat_app: ChatApp) -> None:
    alice, _ = ask(chat_app, activity(chat_app, "29:alice", "a:alice", HR_QUESTION))
    assert any(name in text_of(alice) for name in HR_FILES), alice
    assert f"]({PUBLIC_URL}/page/" in text_of(alice)  # sources link to the source view
    bob, _ = ask(chat_app, activity(chat_app, "29:bob", "a:bob", HR_QUESTION))  # by e-mail
    assert not any(name in text_of(bob) for name in HR_FILES), bob
    mixed, _ = ask(chat_app, activity(chat_app, "29:alice", f"{MIXED};messageid=400",
                                      f"<at>kb</at> {HR_QUESTION}"))
    assert not any(name in text_of(mixed) for name in HR_FILES), mixed


def test_a_thread_follow_up_is_read_with_its_history(chat_app: ChatApp,
                                                    spied: list[Any]) -> None:
    thread = f"{MIXED};messageid=500"
    ask(chat_app, activity(chat_app, "29:alice", thread, f"<at>kb</at> {QUESTION}"))
    ask(chat_app, activity(chat_app, "29:alice", thread, f"<at>kb</at> {FOLLOW_UP}"))
    earlier = chat_app.running.app.users.ledger.channel_turns("teams", MIXED, thread, 0, 5)
    assert spied[-1][:2] == (FOLLOW_UP, [Turn(QUESTION, earlier[0][1])]), spied
    ask(chat_app, activity(chat_app, "29:alice", f"{MIXED};messageid=501",
                           f"<at>kb</at> {FOLLOW_UP}"))
    assert spied[-1][:2] == (FOLLOW_UP, [])


def test_a_reaction_or_a_card_button_becomes_the_askers_feedback(chat_app: ChatApp) -> None:
    post, reply_id = ask(chat_app, activity(chat_app, "29:alice", "a:alice", QUESTION))
    question_id, asker = chat_app.question_of("teams", reply_id)
    assert asker == "alice"
    assert [a["data"] for a in post["attachments"][0]["content"]["actions"]] == [
        {"kb": "up"}, {"kb": "down"}]
    for user, reaction in (("29:bob", "angry"), ("29:alice", "like")):  # bob's: not his answer
        assert send(chat_app, activity(chat_app, user, "a:alice", kind="messageReaction",
                                       reactions_added=[reaction], reply_to_id=reply_id)) == 200
    wait_for(lambda: chat_app.feedback(question_id) == [("alice", 1)])
    assert send(chat_app, activity(chat_app, "29:alice", "a:alice", value={"kb": "down"},
                                   reply_to_id=reply_id)) == 200
    wait_for(lambda: chat_app.feedback(question_id) == [("alice", -1)])
