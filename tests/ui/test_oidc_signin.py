"""Company sign-in over OpenID Connect (issue 26) through the real app: a real provider process
(devtools/oidc_provider.py) and `kb serve`'s app on loopback (the sample store, the model
unreachable). The browser's redirects are followed by hand with httpx, and once by headless
Chromium from the sign-in page's link; groups follow the provider within auth.group_refresh_s."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings.auth import AuthSettings
from devtools.chromium import CHROMIUM, chromium_page
from devtools.oidc_provider import RunningProvider, running_provider
from devtools.ports import free_port
from devtools.system_deps import skip_or_fail
from tests.ui.conftest import PASSWORDS, Running, Store, _login_settings, _serve
from tests.ui.test_app import HR_FILES, HR_QUESTIONS
from tests.ui.test_audit_web import waiting_for
from tests.ui.test_directory_signin import wait_beside_a_due_page
from ui.identity.oidc import OidcClient
from ui.identity.oidc_web import PENDING_COOKIE
from ui.wiring import OIDC_SECRET_ENV, users_for

pytestmark = pytest.mark.slow

REFRESH_S = 1.0
SECRET = "client-s3cret"
HANNA = {"preferred_username": "hanna.o", "groups": ["hr-staff", "everyone"]}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProvider]:
    with running_provider(tmp_path_factory.mktemp("oidc-app")) as running:
        yield running


def _app(store: Store, issuer: str) -> Iterator[Running]:
    auth = AuthSettings(oidc_issuer=issuer, oidc_client_id="kb",
                        group_map={"hr-staff": ("hr",), "finance-staff": ("finance",)},
                        admin_groups=("kb-admins",), group_refresh_s=REFRESH_S)
    settings = dataclasses.replace(_login_settings(store), auth=auth)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(OIDC_SECRET_ENV, SECRET)
        yield from _serve(settings, demo=False)


@pytest.fixture(scope="module")
def oidc_app(sample_store: Store, provider: RunningProvider) -> Iterator[Running]:
    yield from _app(sample_store, provider.issuer)


@pytest.fixture(scope="module")
def down_app(sample_store: Store) -> Iterator[Running]:
    yield from _app(sample_store, f"http://127.0.0.1:{free_port()}")


@pytest.fixture(scope="module", autouse=True)
def leave_no_provider_users(sample_store: Store) -> Iterator[None]:
    yield
    with users_for(sample_store.settings) as users:
        for found in users.list_users():
            if users.source(found.name) != "local":
                users.delete(found.name)


def start(app: Running) -> tuple[httpx.Client, str]:
    """A browser's first step: the app's /login/oidc, which redirects to the provider."""
    client = httpx.Client(base_url=app.url, timeout=30)
    reply = client.get("login/oidc")
    assert reply.status_code == 302, reply.text
    assert PENDING_COOKIE in reply.cookies
    return client, reply.headers["location"]


def sign_in(app: Running, provider: RunningProvider, sub: str) -> tuple[httpx.Client, str]:
    """The whole redirect dance as `sub`: the client, signed in, and the callback it used."""
    client, at_provider = start(app)
    callback = provider.authorize(at_provider, sub)
    reply = client.get(callback)
    assert reply.status_code == 302 and reply.headers["location"] == "/", reply.text
    return client, callback


def signed_in(client: httpx.Client) -> bool:
    return client.get("config").status_code == 200


def sees_hr(app: Running, token: str) -> bool:
    reply = httpx.post(app.url + "api/ask", json={"question": HR_QUESTIONS[0]}, timeout=120,
                       headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code in (200, 401), reply.text
    return reply.status_code == 200 and any(f in reply.text for f in HR_FILES)


def token_for(app: Running, name: str) -> str:
    with users_for(app.settings) as users:
        return users.new_token(name)


def test_the_provider_signs_hanna_in_with_her_directory_groups(
    oidc_app: Running, provider: RunningProvider,
) -> None:
    provider.set_user("hanna-sub", HANNA)
    since = time.time()
    client, _ = sign_in(oidc_app, provider, "hanna-sub")
    assert signed_in(client)
    found = waiting_for(oidc_app, since, lambda r: r.event == "signin")
    assert any(r.event == "signin" and r.actor == "hanna.o" and r.outcome == "ok"
               and json.loads(r.details).get("method") == "oidc" for r in found), found
    with users_for(oidc_app.settings) as users:
        hanna = users.require("hanna.o")
        assert users.source("hanna.o") == "oidc"
        assert users.authenticate("hanna.o", "") is None  # no password to guess
    assert hanna.groups == ("all", "hr") and not hanna.is_admin
    assert sees_hr(oidc_app, token_for(oidc_app, "hanna.o"))


def test_a_move_at_the_provider_changes_the_next_question_and_a_block_ends_it(
    oidc_app: Running, provider: RunningProvider,
) -> None:
    provider.set_user("ivan-sub", {"preferred_username": "ivan", "groups": ["hr-staff"]})
    client, _ = sign_in(oidc_app, provider, "ivan-sub")
    token = token_for(oidc_app, "ivan")
    assert sees_hr(oidc_app, token)
    provider.set_user("ivan-sub", {"preferred_username": "ivan", "groups": ["finance-staff"]})
    time.sleep(REFRESH_S + 0.2)
    assert not sees_hr(oidc_app, token) and signed_in(client)
    with users_for(oidc_app.settings) as users:
        assert users.require("ivan").groups == ("all", "finance")
    provider.revoke("ivan-sub")  # blocked at the provider: its grants are void
    time.sleep(REFRESH_S + 0.2)
    assert not signed_in(client)
    reply = httpx.post(oidc_app.url + "api/ask", json={"question": "annual leave"}, timeout=60,
                       headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 401


def test_a_replayed_or_forged_callback_is_refused_with_one_line(
    oidc_app: Running, provider: RunningProvider,
) -> None:
    provider.set_user("hanna-sub", HANNA)
    client, callback = sign_in(oidc_app, provider, "hanna-sub")
    since = time.time()
    replayed = client.get(callback)
    assert replayed.status_code == 400 and "start the sign-in again" in replayed.text
    assert replayed.text.count("<p") == 2  # the line, and the ways back
    other, at_provider = start(oidc_app)
    forged = urllib.parse.urlsplit(provider.authorize(at_provider, "hanna-sub"))
    query = dict(urllib.parse.parse_qsl(forged.query), state="attacker")
    refused = other.get(f"login/oidc/callback?{urllib.parse.urlencode(query)}")
    assert refused.status_code == 400 and "another state" in refused.text
    assert not signed_in(other)
    # no pending cookie at all (a link sent by someone else): refused too
    stranger = httpx.Client(base_url=oidc_app.url, timeout=30)
    assert stranger.get(f"login/oidc/callback?{forged.query}").status_code == 400
    ledger = oidc_app.app.store.ledger
    deadline = time.monotonic() + 10  # the trail's writer thread chains them within a moment
    while True:
        refusals = [r for r in ledger.audit_records(since=since)
                    if r.event == "signin" and r.outcome == "refused"]
        if len(refusals) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [json.loads(r.details).get("reason") for r in refusals] == ["state"] * 3, refusals


def test_a_provider_that_is_down_says_so_and_passwords_still_work(down_app: Running) -> None:
    reply = httpx.get(down_app.url + "login/oidc", timeout=30)
    assert reply.status_code == 503
    assert "check auth.oidc_issuer and that the provider is up" in reply.text
    password = httpx.post(down_app.url + "login", timeout=30,
                          data={"username": "alice", "password": PASSWORDS["alice"]})
    assert password.status_code == 200


def test_the_sign_in_page_links_to_the_provider_in_chromium(
    oidc_app: Running, provider: RunningProvider, tmp_path: Path,
) -> None:
    """The whole flow in a browser: the sign-in page's link, the provider's consent form, the
    callback, and the chat page signed in."""
    if CHROMIUM is None:
        skip_or_fail("Chromium is not installed (scripts/install_chromium.sh)")
    provider.set_user("hanna-sub", HANNA)
    with chromium_page(tmp_path / "profile", reply_timeout_s=30) as page:
        page.send("Page.enable")
        page.send("Page.navigate", url=oidc_app.url)
        page.wait_for("!!document.querySelector('#kb-oidc')")
        page.eval("document.querySelector('#kb-oidc').click()")
        page.wait_for("!!document.querySelector('input[name=sub]')")
        page.eval("""(() => { const box = document.querySelector('input[name=sub]');
                     box.value = 'hanna-sub'; box.form.submit(); return true; })()""")
        page.wait_for("!!document.querySelector('#kb-question textarea')")
        url: Any = page.eval("location.href")
    assert url.startswith(oidc_app.url)


def provider_signins(app: Running, since: float, count: int) -> list[Any]:
    """The OpenID sign-in records after `since`, once `count` are written (or 10 s passed)."""
    ledger = app.app.store.ledger
    deadline = time.monotonic() + 10
    while True:
        found = [r for r in ledger.audit_records(since=since, event="signin")
                 if json.loads(r.details).get("method") == "oidc"]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.fixture
def clean_throttle(oidc_app: Running) -> Iterator[None]:
    oidc_app.app.store.ledger.clear_login_failures()
    yield
    oidc_app.app.store.ledger.clear_login_failures()


def test_the_account_is_bound_to_the_providers_subject(
    oidc_app: Running, provider: RunningProvider, clean_throttle: None,
) -> None:
    """Another subject with the same preferred_username does not get nina's account, nor
    does nina's subject arriving under another name; the trail records each subject."""
    provider.set_user("nina-sub", {"preferred_username": "nina.o", "groups": ["hr-staff"]})
    provider.set_user("mallory-sub", {"preferred_username": "nina.o", "groups": []})
    since = time.time()
    nina, _ = sign_in(oidc_app, provider, "nina-sub")
    assert signed_in(nina)
    mallory, at_provider = start(oidc_app)
    refused = mallory.get(provider.authorize(at_provider, "mallory-sub"))
    assert refused.status_code == 403 and "ask an administrator" in refused.text
    assert not signed_in(mallory)
    with users_for(oidc_app.settings) as users:
        assert users.require("nina.o").groups == ("all", "hr")
    provider.set_user("nina-sub", {"preferred_username": "nina.renamed", "groups": []})
    renamed, at_provider = start(oidc_app)
    assert renamed.get(provider.authorize(at_provider, "nina-sub")).status_code == 403
    with users_for(oidc_app.settings) as users:
        assert users.get("nina.renamed") is None
    found = provider_signins(oidc_app, since, 3)
    seen = [(r.actor, r.outcome, json.loads(r.details).get("sub"),
             json.loads(r.details).get("reason")) for r in found]
    assert seen == [("nina.o", "ok", "nina-sub", None),
                    ("nina.o", "refused", "mallory-sub", "subject"),
                    ("nina.renamed", "refused", "nina-sub", "subject")], seen


def test_group_claims_spelt_as_dns_grant_nothing(
    oidc_app: Running, provider: RunningProvider,
) -> None:
    """`auth.admin_groups = ["kb-admins"]`: a provider group named `x=kb-admins` (or the like,
    a name anyone may give a group at some providers) is not kb-admins."""
    provider.set_user("ozzy-sub", {"preferred_username": "ozzy", "groups": [
        "x=kb-admins", "kb-admins,ou=anything", "CN=KB-Admins,OU=Self-Service,DC=evil"]})
    sign_in(oidc_app, provider, "ozzy-sub")
    with users_for(oidc_app.settings) as users:
        ozzy = users.require("ozzy")
    assert not ozzy.is_admin and ozzy.groups == ("all",)
    provider.set_user("kara-sub", {"preferred_username": "kara", "groups": ["kb-admins"]})
    sign_in(oidc_app, provider, "kara-sub")
    with users_for(oidc_app.settings) as users:
        assert users.require("kara").is_admin


def test_a_slow_provider_stalls_no_other_request(
    oidc_app: Running, provider: RunningProvider, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A due OpenID session is read again (refresh token, userinfo) in a worker thread: while
    the provider takes 1.5 s, another request is answered at once."""
    provider.set_user("ivy-sub", {"preferred_username": "ivy.o", "groups": ["finance-staff"]})
    client, _ = sign_in(oidc_app, provider, "ivy-sub")
    refresh = OidcClient.refresh

    def slow(self: OidcClient, identity: Any) -> Any:
        time.sleep(1.5)
        return refresh(self, identity)

    monkeypatch.setattr(OidcClient, "refresh", slow)
    time.sleep(REFRESH_S + 0.2)
    waited = wait_beside_a_due_page(oidc_app, client)
    assert waited < 0.5, waited


def test_forged_callbacks_from_one_address_stop_at_its_limit(
    oidc_app: Running, provider: RunningProvider, clean_throttle: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each forged callback (the state of a sign-in the sender began, a made-up code) costs a
    token request to the provider and an audit record, until the address reaches
    `ui.login_max_failures_per_address` (30 here): then 429, with neither."""
    limit = oidc_app.settings.ui.login_max_failures_per_address
    asked: list[int] = []
    tokens = OidcClient._tokens

    def counted(self: OidcClient, form: dict[str, str]) -> Any:
        asked.append(1)
        return tokens(self, form)

    monkeypatch.setattr(OidcClient, "_tokens", counted)
    since = time.time()
    codes = []
    for _ in range(limit + 5):
        client, at_provider = start(oidc_app)
        state = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(at_provider).query))["state"]
        query = urllib.parse.urlencode({"code": "made-up", "state": state})
        codes.append(client.get(f"login/oidc/callback?{query}").status_code)
    assert codes == [502] * limit + [429] * 5, codes
    assert len(asked) == limit
    time.sleep(0.5)  # the trail's writer thread
    assert len(provider_signins(oidc_app, since, limit)) == limit


def test_the_callbacks_error_text_reaches_the_log_as_one_line(
    oidc_app: Running, caplog: pytest.LogCaptureFixture, clean_throttle: None,
) -> None:
    caplog.set_level(logging.INFO)
    client, _ = start(oidc_app)
    forged = "x\n2026-12-06 02:00:00,000 INFO ui.identity.login: login of alice from 10.0.0.1"
    query = urllib.parse.urlencode({"error": "access_denied", "error_description": forged})
    reply = client.get(f"login/oidc/callback?{query}")
    assert reply.status_code == 502
    lines = [r.getMessage() for r in caplog.records if "login of alice" in r.getMessage()]
    assert lines and all("\n" not in line for line in lines), lines
