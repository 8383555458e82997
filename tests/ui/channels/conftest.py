"""One real app (uvicorn on loopback, the sample store, the model unreachable: retrieval-only
answers) with all five platforms enabled, each platform's reply API a loopback stand-in
(devtools/chat_platforms.py, devtools/chat_dingtalk_teams.py; Teams' OpenID metadata and keys
too). alice (all, hr) and bob (all) are mapped on each platform; the chats: alice's and bob's
one-to-one chats, and a group chat with both (and a bot, where the platform lists bots)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from core.settings.channels import (
    ChannelsSettings,
    DingtalkSettings,
    FeishuSettings,
    SlackSettings,
    TeamsSettings,
    WecomSettings,
)
from devtools.chat_dingtalk_teams import (
    OPENID_PATH,
    TOKEN_PATH,
    BotFrameworkKeys,
    dingtalk_routes,
    teams_routes,
)
from devtools.chat_platforms import (
    StandIn,
    feishu_routes,
    slack_routes,
    wecom_routes,
)
from tests.ui.conftest import Running, Store, _login_settings, _serve

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
FEISHU_KEY, FEISHU_TOKEN = "feishu-encrypt-key", "feishu-verification-token"
WECOM_TOKEN, WECOM_CORP = "wecom-token", "ww1234567890abcdef"
WECOM_AES = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVpbXF1eX2A"  # a fixed EncodingAESKey
DINGTALK_SECRET = "dingtalk-app-secret"
TEAMS_APP = "00000000-0000-0000-0000-00000000b07"
PUBLIC_URL = "https://kb.example.com"
HR_FILES = ("Compensation-Review-Guidelines.pdf", "薪酬等级表.docx")
HR_QUESTION = "What is the merit increase budget of the annual compensation review?"
QUESTION = "How many days of annual leave do I get?"
FOLLOW_UP = "And for part-time staff?"


@dataclass
class ChatApp:
    running: Running
    slack: StandIn
    feishu: StandIn
    wecom: StandIn
    dingtalk: StandIn
    teams: StandIn
    bot_keys: BotFrameworkKeys

    def send(self, path: str, headers: dict[str, str], body: bytes = b"",
             params: dict[str, str] | None = None, method: str = "POST") -> httpx.Response:
        return httpx.request(method, self.running.url + path.lstrip("/"), headers=headers,
                             content=body, params=params, timeout=30)

    def audit(self, event: str) -> list[Any]:
        self.running.app.audit.flush()
        return list(self.running.app.users.ledger.audit_records(event=event))

    def feedback(self, question_id: int) -> list[tuple[str, int]]:
        rows = self.running.app.users.ledger.feedback(500)
        return [(r["user"], r["rating"]) for r in rows if r["question_id"] == question_id]

    def question_of(self, platform: str, message: str) -> tuple[int, str]:
        found = self.running.app.users.ledger.channel_question(platform, message)
        assert found is not None, f"no answer posted as {message}"
        return found


def settle(seconds: float = 1.5) -> None:
    """Time for a duplicate's answer to come, were one started."""
    time.sleep(seconds)


@pytest.fixture(scope="session")
def chat_app(sample_store: Store) -> Iterator[ChatApp]:
    emails = {"U_ALICE": "alice@corp.example", "ou_bob": "bob@corp.example",
              "ding_bob": "bob@corp.example", "29:bob": "bob@corp.example"}
    members = {"C_MIXED": ["U_ALICE", "U_BOB", "B_KB"], "oc_mixed": ["ou_alice", "ou_bob"],
               "cid_mixed": ["ding_alice", "ding_bob"],
               "19:mixed@thread.tacv2": ["29:alice", "29:bob"]}
    keys = BotFrameworkKeys()
    with StandIn(slack_routes(emails, members)) as slack, \
            StandIn(feishu_routes(emails, members)) as feishu, \
            StandIn(wecom_routes(emails)) as wecom, \
            StandIn(dingtalk_routes(emails, members)) as dingtalk, \
            StandIn(teams_routes(emails, members)) as teams, StandIn(keys.routes()) as openid:
        channels = ChannelsSettings(
            user_per_minute=1000, chat_per_minute=1000,
            slack=SlackSettings(True, slack.url, {"alice@corp.example": "alice", "U_BOB": "bob"}),
            feishu=FeishuSettings(True, "cli_test", feishu.url,
                                  {"ou_alice": "alice", "bob@corp.example": "bob"}),
            wecom=WecomSettings(True, WECOM_CORP, 1000002, wecom.url,
                                {"alice": "alice", "bob": "bob"}),
            dingtalk=DingtalkSettings(True, "dingkbappkey", dingtalk.url,
                                      {"ding_alice": "alice", "bob@corp.example": "bob"}),
            teams=TeamsSettings(True, TEAMS_APP, openid.url + OPENID_PATH, teams.url + TOKEN_PATH,
                                {"29:alice": "alice", "bob@corp.example": "bob"}))
        settings = _login_settings(sample_store)
        settings = dataclasses.replace(settings, channels=channels, ui=dataclasses.replace(
            settings.ui, public_url=PUBLIC_URL))
        secrets = {"KB_SLACK_SIGNING_SECRET": SLACK_SECRET, "KB_SLACK_BOT_TOKEN": "xoxb-test",
                   "KB_FEISHU_APP_SECRET": "app-secret", "KB_FEISHU_ENCRYPT_KEY": FEISHU_KEY,
                   "KB_FEISHU_VERIFICATION_TOKEN": FEISHU_TOKEN, "KB_WECOM_SECRET": "secret",
                   "KB_WECOM_TOKEN": WECOM_TOKEN, "KB_WECOM_AES_KEY": WECOM_AES,
                   "KB_DINGTALK_APP_SECRET": DINGTALK_SECRET, "KB_TEAMS_APP_PASSWORD": "bf-pass"}
        with pytest.MonkeyPatch.context() as patch:
            for name, value in secrets.items():
                patch.setenv(name, value)
            for running in _serve(settings, demo=False):
                yield ChatApp(running, slack, feishu, wecom, dingtalk, teams, keys)


@pytest.fixture
def spied(chat_app: ChatApp, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """(question, history, groups) of each question the app's real assistant is asked."""
    asked: list[Any] = []
    real = chat_app.running.assistant.ask_stream

    def ask_stream(question: str, groups: Any, history: Any = (), user: str = "") -> Any:
        asked.append((question, list(history), tuple(groups)))
        return real(question, groups, history, user)

    monkeypatch.setattr(chat_app.running.assistant, "ask_stream", ask_stream)
    return asked
