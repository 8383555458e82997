"""The pure parts of the chat platforms, on fakes and the platforms' own SDKs as references:
the crypto schemes, the rate limits, the cards' limits, the `[channels]` settings."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from pathlib import Path

import pytest

from core.config import load_settings
from core.errors import ConfigError
from core.settings.channels import ChannelsSettings, SlackSettings
from core.types import Citation
from devtools.chat_dingtalk_teams import CARD, check_dingtalk_message, check_teams_reply
from devtools.chat_platforms import check_block_kit, feishu_request, wecom_request
from ui.api.channels.base import Refused, Reply, Source
from ui.api.channels.crypto import (
    feishu_decrypt,
    wecom_decrypt,
    wecom_key,
    wecom_signature,
)
from ui.api.channels.dingtalk import message as dingtalk_message
from ui.api.channels.dingtalk import signature
from ui.api.channels.hub import PLATFORMS
from ui.api.channels.limits import RateLimits
from ui.api.channels.reply import label
from ui.api.channels.slack import blocks
from ui.api.channels.teams import card as teams_card
from ui.api.channels.wecom import markdown

REPO = Path(__file__).resolve().parents[3]
AES = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVpbXF1eX2A"


def test_feishu_events_decrypt_as_lark_oapi_decrypts_them() -> None:
    from lark_oapi.core.utils import AESCipher

    _, body = feishu_request("k3y", "tok", "im.message.receive_v1", {"x": "年假"}, "e1")
    encrypted = json.loads(body)["encrypt"]
    assert feishu_decrypt("k3y", encrypted) == AESCipher("k3y").decrypt_str(encrypted).encode()
    with pytest.raises(Refused, match="does not decrypt"):
        feishu_decrypt("another key", encrypted)


def test_wecom_messages_open_as_wechatpy_seals_them() -> None:
    query, body = wecom_request("tok", AES, "corp1", "<xml>年假</xml>")
    encrypted = re.search(rb"CDATA\[([^\]]+)\]\]></Encrypt>", body).group(1).decode()  # type: ignore[union-attr]
    assert wecom_signature("tok", query["timestamp"], query["nonce"], encrypted) == \
        query["msg_signature"]
    assert wecom_decrypt(wecom_key(AES), encrypted, "corp1") == "<xml>年假</xml>"
    with pytest.raises(Refused, match="corp_id"):
        wecom_decrypt(wecom_key(AES), encrypted, "corp2")
    with pytest.raises(ValueError, match="43-character"):
        wecom_key(base64.b64encode(b"short").decode())


def test_rate_limits_per_person_and_per_chat() -> None:
    limits = RateLimits(per_user=2, per_chat=3)
    assert [limits.allow("u1", "c1", now=t) for t in (0, 1, 2)] == [True, True, False]
    assert limits.allow("u2", "c1", now=3) is True
    assert limits.allow("u3", "c1", now=4) is False  # the chat's fourth in a minute
    assert limits.allow("u1", "c1", now=61) is True  # a minute on


def test_cards_keep_within_the_platforms_limits() -> None:
    long = Reply("a < b & " + "年假" * 3000, "zh", (Source(1, "leave.pdf p.3", "https://x/p"),),
                 "note", 7)
    check_block_kit({"channel": "C1", "text": "t", "blocks": blocks(long)})
    assert "&lt; b &amp;" in blocks(long)[0]["text"]["text"]
    text = markdown(long)
    assert len(text.encode()) <= 2048 and text.endswith("> note")
    assert "[1] [leave.pdf p.3](https://x/p)" in text
    assert label(Citation(1, "h.docx", None, "Leave › Carry-over", "q")) == \
        "h.docx § Leave › Carry-over"


def test_dingtalk_and_teams_cards_keep_to_their_schemas() -> None:
    long = Reply("年假" * 5000, "zh", (Source(1, "leave.pdf p.3", "https://x/p"),
                                      Source(2, "h.docx § [x]", "")), "note", 7)
    card = check_teams_reply({"type": "message", "replyToId": "1", "conversation": {"id": "a"},
                              "attachments": [{"contentType": CARD, "content": teams_card(long)}]})
    assert "[2] h.docx § ［x］" in json.dumps(card, ensure_ascii=False)
    sent = dingtalk_message(long)
    text = check_dingtalk_message(sent)
    assert sent["actionCard"]["btns"] == [{"title": "[1] leave.pdf p.3", "actionURL": "https://x/p"}]
    assert "[2] h.docx § [x]" in text and "dtmd://dingtalkclient/sendMessage?content=" in text
    assert check_dingtalk_message(dingtalk_message(Reply("no sources"))) == "no sources"


def test_dingtalk_signs_as_its_documentation_shows() -> None:
    # the Python example of DingTalk's robot signature, as its documentation gives it
    stamp, secret = "1700000000000", "this is secret"
    string_to_sign = f"{stamp}\n{secret}".encode()
    expected = base64.b64encode(hmac.new(secret.encode("utf-8"), string_to_sign,
                                         digestmod=hashlib.sha256).digest()).decode()
    assert signature(stamp, secret) == expected


def test_every_channels_key_is_in_config_with_one_comment_line() -> None:
    lines = (REPO / "config.toml").read_text(encoding="utf-8").splitlines()
    tables = {"channels": ChannelsSettings(), **{f"channels.{n}": getattr(ChannelsSettings(), n)
                                                 for n in PLATFORMS}}
    for table, settings in tables.items():
        start = lines.index(f"[{table}]")
        for key in vars(settings):
            if key in PLATFORMS:
                continue
            if key == "user_map":
                at = lines.index(f"[{table}.user_map]")
            else:
                at = next(i for i in range(start + 1, len(lines))
                          if re.match(rf"{key}\s*=", lines[i]))
            assert lines[at - 1].startswith("# ") and not lines[at - 2].startswith("#"), \
                f"{table}.{key}"


def test_a_platforms_keys_come_from_a_kb_variable_too(tmp_path: Path) -> None:
    config = tmp_path / "kb.toml"
    config.write_text('[channels.slack]\napi_url = "http://x"\n[channels.slack.user_map]\n'
                      '"a@x" = "alice"\n')
    settings = load_settings(config, environ={"KB_CHANNELS_SLACK_ENABLED": "true"})
    assert settings.channels.slack == SlackSettings(True, "http://x", {"a@x": "alice"})
    config.write_text("[channels.slack]\nenabeld = true\n")
    with pytest.raises(ConfigError, match="enabeld"):
        load_settings(config, environ={})


def test_an_enabled_platform_without_its_secrets_names_them() -> None:
    from ui.api.channels.slack import Slack

    with pytest.raises(ConfigError, match="KB_SLACK_SIGNING_SECRET"):
        Slack.open(ChannelsSettings(), {"KB_SLACK_SIGNING_SECRET": "",
                                        "KB_SLACK_BOT_TOKEN": "xoxb"})


def test_channels_status_names_every_platform_and_what_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from ui.cli.interfaces import channels_group

    config = tmp_path / "kb.toml"
    config.write_text('[ui]\npublic_url = "https://kb.example.com"\n'
                      "[channels.dingtalk]\nenabled = true\n"
                      '[channels.teams]\nenabled = true\napp_id = "b07"\n')
    for name in ("KB_DINGTALK_APP_SECRET", "KB_TEAMS_APP_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KB_DINGTALK_APP_SECRET", "s")
    result = CliRunner().invoke(channels_group, ["status", "--config", str(config), "--store",
                                                 str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines if not line.startswith(" ")] == list(PLATFORMS)
    assert "dingtalk enabled  https://kb.example.com/channels/dingtalk/events" in lines
    assert "channels.dingtalk.app_key is not set" in result.output
    assert "KB_TEAMS_APP_PASSWORD is not set" in result.output
