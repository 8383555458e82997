"""Who asks, against the real app and a real OpenLDAP directory (devtools/ldap_server.py): a Slack
user no `user_map` names is found in the directory by their e-mail (`channels.directory_filter`)
and answered with their directory groups; someone the directory does not know gets the sign-in
link (`channels.unmapped = "sign-in"`); and the question past `channels.user_per_minute` gets
the limit notice and is audited as refused. Slack carries the questions (signed by slack_sdk);
the rules are the hub's, the same for every platform."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from core.settings.channels import ChannelsSettings, SlackSettings
from devtools.chat_platforms import StandIn, check_block_kit, slack_request, slack_routes
from devtools.ldap_server import READER_DN, READER_PASSWORD, RunningLdap
from tests.ui.channels.conftest import HR_FILES, HR_QUESTION, PUBLIC_URL, QUESTION, SLACK_SECRET
from tests.ui.conftest import Running, Store, _login_settings, _serve
from tests.ui.test_directory_signin import _auth
from ui.api.channels.reply import notice
from ui.wiring import LDAP_PASSWORD_ENV, users_for

pytestmark = pytest.mark.slow
EVENTS = "/channels/slack/events"
PER_MINUTE = 2
EMAILS = {"U_HANNA": "hanna@example.org", "U_RAVI": "ravi@example.org",
          "U_NOBODY": "nobody@example.org"}
counter = iter(range(1, 10**6))


@pytest.fixture(scope="module")
def app(sample_store: Store, ldap_directory: RunningLdap) -> Iterator[tuple[Running, StandIn]]:
    with StandIn(slack_routes(EMAILS, {})) as slack:
        channels = ChannelsSettings(unmapped="sign-in", directory_filter="(mail={user})",
                                    user_per_minute=PER_MINUTE,
                                    slack=SlackSettings(True, slack.url, {}))
        settings = _login_settings(sample_store)
        settings = dataclasses.replace(
            settings, channels=channels, ui=dataclasses.replace(settings.ui, public_url=PUBLIC_URL),
            auth=_auth(ldap_directory, ldap_bind_dn=READER_DN, ldap_groups="search",
                       password_login=True, break_glass=""))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(LDAP_PASSWORD_ENV, READER_PASSWORD)
            patch.setenv("KB_SLACK_SIGNING_SECRET", SLACK_SECRET)
            patch.setenv("KB_SLACK_BOT_TOKEN", "xoxb-test")
            for running in _serve(settings, demo=False):
                yield running, slack
    with users_for(sample_store.settings) as users:  # the session's store: no directory users
        for found in users.list_users():
            if users.source(found.name) != "local":
                users.delete(found.name)


def ask(app: tuple[Running, StandIn], user: str, text: str) -> str:
    """The text kb posts for one direct message of `user`."""
    running, slack = app
    n = next(counter)
    headers, body = slack_request(SLACK_SECRET, {
        "type": "event_callback", "event_id": f"EvId{n:06d}", "event": {
            "type": "message", "channel_type": "im", "user": user, "channel": f"D{user}",
            "text": text, "ts": f"1700000000.{n:06d}"}})
    before = len(slack.posts)
    assert httpx.post(running.url + EVENTS.lstrip("/"), headers=headers, content=body,
                      timeout=30).status_code == 200
    post = slack.wait_posts(before + 1)[before]
    check_block_kit(post)
    return json.dumps(post["blocks"], ensure_ascii=False)


def questions(running: Running, actor: str) -> list[dict[str, Any]]:
    running.app.audit.flush()
    return [{"outcome": r.outcome, **json.loads(r.details)} for r in
            running.app.users.ledger.audit_records(event="channel.question") if r.actor == actor]


def test_an_unmapped_user_is_found_in_the_directory_by_their_email(
        app: tuple[Running, StandIn], ldap_directory: RunningLdap) -> None:
    answer = ask(app, "U_HANNA", HR_QUESTION)  # hanna is in the directory's hr group
    assert any(name in answer for name in HR_FILES), answer
    assert "(mail=hanna@example.org)" in ldap_directory.log()
    assert [q["outcome"] for q in questions(app[0], "hanna")] == ["answered"]


def test_a_user_the_directory_does_not_know_gets_the_sign_in_link(
        app: tuple[Running, StandIn]) -> None:
    answer = ask(app, "U_NOBODY", QUESTION)
    assert json.dumps(notice("sign_in", "en", url=PUBLIC_URL))[1:-1] in answer, answer
    assert [(q["outcome"], q["reason"]) for q in questions(app[0], "slack:U_NOBODY")] == [
        ("refused", "unmapped")]


def test_the_question_past_the_limit_gets_the_notice_and_is_audited_as_refused(
        app: tuple[Running, StandIn]) -> None:
    for _ in range(PER_MINUTE):
        assert notice("slow_down", "en") not in ask(app, "U_RAVI", QUESTION)
    assert notice("slow_down", "en") in ask(app, "U_RAVI", QUESTION)
    found = questions(app[0], "ravi")
    assert [q["outcome"] for q in found] == ["answered"] * PER_MINUTE + ["refused"], found
    assert found[-1]["reason"] == "rate"
