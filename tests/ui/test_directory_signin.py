"""Company sign-in (issue 26): a real OpenLDAP directory (devtools/ldap_server.py) and the real
app (uvicorn on loopback, the sample store, the model unreachable), signed in to through
Gradio's login form. Three apps: search-then-bind with a service account, nested groups by
search, password_login off with alice as break-glass, the trusted header from 127.0.0.2; bind as
the user with memberOf; and a directory that is down."""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings.auth import AuthSettings
from devtools.chromium import CHROMIUM, Page, chromium_page
from devtools.ldap_server import PEOPLE, READER_DN, READER_PASSWORD, RunningLdap
from devtools.ports import free_port
from devtools.system_deps import skip_or_fail
from tests.ui.conftest import PASSWORDS, Running, Store, _login_settings, _serve
from tests.ui.test_app import HR_FILES, HR_QUESTIONS
from tests.ui.test_audit_web import waiting_for
from ui.identity.ldap import Ldap
from ui.identity.login import DIRECTORY_DOWN, SessionTable, shared_cookie_id
from ui.wiring import LDAP_PASSWORD_ENV, users_for

REFRESH_S = 1.0
PROXY = "127.0.0.2"  # the trusted proxy: loopback, another address
USER_FILTER = "(&(uid={user})(!(employeeType=disabled)))"


def _auth(ldap: RunningLdap | None, **changes: Any) -> AuthSettings:
    url = ldap.url if ldap else f"ldap://127.0.0.1:{free_port()}"
    base = AuthSettings(ldap_url=url, ldap_base_dn=PEOPLE, ldap_user_filter=USER_FILTER,
                        ldap_group_base_dn="ou=groups,dc=example,dc=org",
                        group_map={"hr": ("hr",), "finance": ("finance",)},
                        admin_groups=("kb-admins",), group_refresh_s=REFRESH_S,
                        password_login=False, break_glass="alice", ldap_timeout_s=2.0)
    return dataclasses.replace(base, **changes)


def _app(store: Store, auth: AuthSettings) -> Iterator[Running]:
    settings = dataclasses.replace(_login_settings(store), auth=auth)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(LDAP_PASSWORD_ENV, READER_PASSWORD)
        yield from _serve(settings, demo=False)


@pytest.fixture(scope="module")
def search_app(sample_store: Store, ldap_directory: RunningLdap) -> Iterator[Running]:
    """Search-then-bind (service account), groups by a search that follows nesting, password
    sign-in off but for alice, the trusted header believed from 127.0.0.2."""
    auth = _auth(ldap_directory, ldap_bind_dn=READER_DN, ldap_groups="search",
                 trusted_proxies=(PROXY,), user_header="X-Forwarded-User",
                 groups_header="X-Forwarded-Groups")
    yield from _app(sample_store, auth)


@pytest.fixture(scope="module")
def bind_app(sample_store: Store, ldap_directory: RunningLdap) -> Iterator[Running]:
    """Bind as the user (a DN template), groups from memberOf, no service account."""
    auth = _auth(ldap_directory, ldap_bind_template=f"uid={{user}},{PEOPLE}",
                 ldap_groups="memberOf", password_login=True, break_glass="")
    yield from _app(sample_store, auth)


@pytest.fixture(scope="module")
def down_app(sample_store: Store) -> Iterator[Running]:
    """The directory configured at a port nobody listens on."""
    yield from _app(sample_store, _auth(None, ldap_bind_dn=READER_DN))


@pytest.fixture(scope="module", autouse=True)
def leave_no_directory_users(sample_store: Store) -> Iterator[None]:
    """The sample store is the session's: its other tests find only their own accounts."""
    yield
    with users_for(sample_store.settings) as users:
        for found in users.list_users():
            if users.source(found.name) != "local":
                users.delete(found.name)


@pytest.fixture(autouse=True)
def no_lockouts(sample_store: Store) -> Iterator[None]:
    with users_for(sample_store.settings) as users:
        users.ledger.clear_login_failures()
    yield
    with users_for(sample_store.settings) as users:
        users.ledger.clear_login_failures()


def sign_in(app: Running, name: str, password: str) -> tuple[int, httpx.Client]:
    client = httpx.Client(base_url=app.url, timeout=30)
    reply = client.post("login", data={"username": name, "password": password})
    return reply.status_code, client


def signed_in(client: httpx.Client) -> bool:
    return client.get("config").status_code == 200


def user(app: Running, name: str) -> Any:
    with users_for(app.settings) as users:
        return users.get(name), users.source(name)


def sees_hr(app: Running, token: str) -> bool:
    reply = httpx.post(app.url + "api/ask", json={"question": HR_QUESTIONS[0]}, timeout=120,
                       headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 200, reply.text
    return any(f in reply.text for f in HR_FILES)


def token_works(app: Running, token: str) -> bool:
    """Whether `POST /api/ask` and the OpenAI-compatible `/v1` both take the token."""
    bearer = {"Authorization": f"Bearer {token}"}
    asked = httpx.post(app.url + "api/ask", json={"question": "annual leave"}, timeout=120,
                       headers=bearer).status_code
    listed = httpx.get(app.url + "v1/models", headers=bearer, timeout=30).status_code
    assert (asked == 200) == (listed == 200), (asked, listed)
    return asked == 200


def new_token(app: Running, name: str) -> str:
    with users_for(app.settings) as users:
        return users.new_token(name)


def test_search_then_bind_signs_in_through_the_form(search_app: Running) -> None:
    code, client = sign_in(search_app, "hanna", "hanna-password")
    assert code == 200 and signed_in(client)
    found, source = user(search_app, "hanna")
    assert source == "ldap" and found.groups == ("all", "hr") and not found.is_admin
    with users_for(search_app.settings) as users:  # no local password to guess
        assert users.authenticate("hanna", "hanna-password") is None
    assert sign_in(search_app, "hanna", "wrong-password")[0] == 400
    assert sign_in(search_app, "nobody", "hanna-password")[0] == 400


def test_an_empty_password_is_refused_before_the_directory(ldap_directory: RunningLdap) -> None:
    """LDAP takes a simple bind with a DN and no password as anonymous, and says yes (RFC 4513
    5.1.2); the login form refuses an empty field, and the adapter refuses it too: a wrong
    password (None), not a directory error."""
    for template in ("", f"uid={{user}},{PEOPLE}"):
        ldap = Ldap(_auth(ldap_directory, ldap_bind_dn=READER_DN, ldap_bind_template=template),
                    READER_PASSWORD)
        assert ldap.sign_in("hanna", "") is None
        assert ldap.sign_in("hanna", "hanna-password") is not None


def test_bind_as_the_user_signs_in_through_the_form(bind_app: Running) -> None:
    code, client = sign_in(bind_app, "ravi", "ravi-password")
    assert code == 200 and signed_in(client)
    found, source = user(bind_app, "ravi")
    assert source == "ldap" and found.groups == ("all", "finance")
    assert sign_in(bind_app, "ravi", "hanna-password")[0] == 400


def test_nested_groups_and_the_admin_group_map(search_app: Running,
                                               ldap_directory: RunningLdap) -> None:
    """mei is in hr-managers, itself in hr; omar is in kb-admins."""
    assert sign_in(search_app, "mei", "mei-password")[0] == 200
    assert user(search_app, "mei")[0].groups == ("all", "hr")
    assert sign_in(search_app, "omar", "omar-password")[0] == 200
    omar = user(search_app, "omar")[0]
    assert omar.is_admin and omar.groups == ("all",)


INJECTIONS = ["*", "hanna)(uid=*", "*)(|(uid=*", "han*", "hanna\x00", "hanna\\", "c\\2a"]


def test_injected_names_are_refused_and_escaped(search_app: Running,
                                                ldap_directory: RunningLdap) -> None:
    """With hanna's password, no name that an unescaped filter would match to hanna signs in,
    and no filter reaches the directory with a bare `*` or `)(` from a name."""
    before = len(ldap_directory.log())
    for name in INJECTIONS:
        assert sign_in(search_app, name, "hanna-password")[0] in (400, 429), name
    filters = re.findall(r'filter="([^"]*)"', ldap_directory.log()[before:])
    searched = [f for f in filters if "uid=" in f.lower() and "employeetype" in f.lower()]
    assert searched, "the names reached the directory, escaped"
    for text in searched:
        uid = re.search(r"\(uid=([^)]*)\)", text, flags=re.I)
        assert uid and "*" not in uid.group(1), text
        assert text.lower().count("(uid=") == 1, text
    assert any("\\2a" in f.lower() for f in searched)


def test_moving_a_user_between_groups_changes_the_next_question(
        search_app: Running, ldap_directory: RunningLdap) -> None:
    """The move is made in the directory only; the session and the API token follow it within
    auth.group_refresh_s."""
    ldap_directory.add_person("gina", "gina-password", ["hr"])
    code, _ = sign_in(search_app, "gina", "gina-password")
    assert code == 200
    token = new_token(search_app, "gina")
    assert sees_hr(search_app, token)
    ldap_directory.move("gina", "hr", "finance")
    time.sleep(REFRESH_S + 0.2)
    assert not sees_hr(search_app, token)
    assert user(search_app, "gina")[0].groups == ("all", "finance")
    ldap_directory.move("gina", "finance", "hr")
    time.sleep(REFRESH_S + 0.2)
    assert sees_hr(search_app, token)


@pytest.mark.parametrize("how", ["disabled", "removed"])
def test_a_user_gone_from_the_directory_loses_session_and_token(
        search_app: Running, ldap_directory: RunningLdap, how: str) -> None:
    name = f"henry-{how}"
    ldap_directory.add_person(name, "henry-password", ["finance"])
    code, client = sign_in(search_app, name, "henry-password")
    assert code == 200 and signed_in(client)
    token = new_token(search_app, name)
    assert token_works(search_app, token)
    if how == "disabled":
        ldap_directory.set_attribute(name, "employeeType", ["disabled"])
    else:
        ldap_directory.remove_person(name)
    time.sleep(REFRESH_S + 0.2)
    assert not signed_in(client)
    assert not token_works(search_app, token)
    assert sign_in(search_app, name, "henry-password")[0] == 400
    if how == "disabled":  # enabled again: signs in again
        ldap_directory.set_attribute(name, "employeeType", ["staff"])
        assert sign_in(search_app, name, "henry-password")[0] == 200


def test_a_slow_directory_stalls_no_other_request(
        search_app: Running, ldap_directory: RunningLdap, monkeypatch: pytest.MonkeyPatch) -> None:
    """A due session is read again from the directory in a worker thread: while it takes 1.5 s,
    other requests are answered at once (on the event loop, every page load waited for it)."""
    ldap_directory.add_person("iris", "iris-password", ["finance"])
    code, client = sign_in(search_app, "iris", "iris-password")
    assert code == 200
    lookup = Ldap.lookup

    def slow(self: Ldap, name: str) -> Any:
        time.sleep(1.5)
        return lookup(self, name)

    monkeypatch.setattr(Ldap, "lookup", slow)
    time.sleep(REFRESH_S + 0.2)
    waited = wait_beside_a_due_page(search_app, client)
    assert waited < 0.5, waited


def wait_beside_a_due_page(app: Running, client: httpx.Client) -> float:
    """Seconds another request waits while `client`'s page is loaded with its session due to
    be read again (the reading made slow by the test)."""
    with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=app.url) as probe:
        page = pool.submit(client.get, "")  # Gradio's page route: its session looked up
        time.sleep(0.2)
        started = time.perf_counter()
        assert probe.get("gradio_api/login_check").status_code == 401
        waited = time.perf_counter() - started
        assert page.result().status_code == 200
    return waited


def test_password_login_off_refuses_local_passwords_but_break_glass(search_app: Running) -> None:
    assert sign_in(search_app, "bob", PASSWORDS["bob"])[0] == 400
    code, client = sign_in(search_app, "alice", PASSWORDS["alice"])
    assert code == 200 and signed_in(client)


def test_a_directory_that_is_down_is_one_line_and_break_glass_still_works(
        down_app: Running, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    started = time.perf_counter()
    reply = httpx.post(down_app.url + "login", timeout=30,
                       data={"username": "hanna", "password": "hanna-password"})
    assert reply.status_code == 503 and reply.json() == {"detail": DIRECTORY_DOWN}
    assert "Traceback" not in reply.text and time.perf_counter() - started < 10
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is None, errors
    line = errors[0].getMessage()
    assert "auth.ldap_url" in line and down_app.settings.auth.ldap_url in line, line
    code, client = sign_in(down_app, "alice", PASSWORDS["alice"])
    assert code == 200 and signed_in(client)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Page]:
    if CHROMIUM is None:
        skip_or_fail("chromium is not installed (run scripts/install_chromium.sh)")
    with chromium_page(tmp_path / "profile", ["--window-size=1000,800"],
                       reply_timeout_s=30) as page:
        yield page


def test_the_sign_in_page_shows_the_directory_line(down_app: Running, browser: Page) -> None:
    """Gradio's own form says nothing on a 503; the page shows the one line."""
    browser.send("Page.enable")
    browser.send("Page.navigate", url=down_app.url)
    browser.wait_for("document.querySelectorAll('input').length >= 2")
    browser.eval("""(() => {
        const [user, password] = document.querySelectorAll('input');
        for (const [box, value] of [[user, 'hanna'], [password, 'hanna-password']]) {
            box.value = value; box.dispatchEvent(new Event('input', {bubbles: true})); }
        return true; })()""")
    time.sleep(0.3)
    browser.eval("[...document.querySelectorAll('button')].find(b => /login/i.test("
                 "b.innerText)).click()")
    shown = browser.wait_for("document.getElementById('kb-login-note')?.innerText", timeout=30)
    assert shown == DIRECTORY_DOWN


def test_trusted_header_from_the_proxy_only(search_app: Running,
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    since = time.time()
    headers = {"X-Forwarded-User": "ivy", "X-Forwarded-Groups": "hr, staff"}
    proxy = httpx.Client(base_url=search_app.url, timeout=30, headers=headers,
                         transport=httpx.HTTPTransport(local_address=PROXY))
    assert proxy.get("config").status_code == 200
    found, source = user(search_app, "ivy")
    assert source == "header" and found.groups == ("all", "hr")
    assert not [r for r in caplog.records if "ignored" in r.getMessage()]
    # the same headers from anyone else: ignored, and logged with the address
    stranger = httpx.Client(base_url=search_app.url, timeout=30,
                            headers={"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "hr"})
    assert stranger.get("config").status_code == 401
    assert user(search_app, "mallory")[0] is None
    warned = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert warned and "127.0.0.1" in warned[0], warned
    # and both are in the audit trail: ivy's session from the proxy, mallory's attempt refused
    found = waiting_for(search_app, since, lambda r: r.outcome == "refused")
    signins = {(r.actor, r.address, r.outcome) for r in found if r.event == "signin"}
    assert {("ivy", PROXY, "ok"), ("mallory", "127.0.0.1", "refused")} <= signins, signins
    # the header's groups are read on every request
    proxy.headers["X-Forwarded-Groups"] = "finance"
    assert proxy.get("config").status_code == 200
    assert user(search_app, "ivy")[0].groups == ("all", "finance")
    # a local account with a password is not the header's to take
    takeover = httpx.Client(base_url=search_app.url, timeout=30,
                            headers={"X-Forwarded-User": "bob", "X-Forwarded-Groups": "hr"},
                            transport=httpx.HTTPTransport(local_address=PROXY))
    assert takeover.get("config").status_code == 401
    bob, source = user(search_app, "bob")
    assert source == "local" and bob.groups == ("all",)


def as_proxy(app: Running, **headers: str) -> httpx.Client:
    """A client at the trusted proxy's address, sending `headers` (no cookie jar of its own)."""
    return httpx.Client(base_url=app.url, timeout=30, headers=headers, cookies=None,
                        transport=httpx.HTTPTransport(local_address=PROXY))


def who(client: httpx.Client) -> Any:
    client.cookies.clear()
    return client.get("gradio_api/user").json()


def test_the_proxys_user_wins_over_a_session_cookie(search_app: Running) -> None:
    """alice signed in with her password in a browser behind the proxy; later the proxy names
    dave for that browser: every request is dave's, although alice's cookies still come."""
    login = as_proxy(search_app).post("login", data={"username": "alice",
                                                      "password": PASSWORDS["alice"]})
    assert login.status_code == 200
    alices = "; ".join(c.split(";")[0] for c in login.headers.get_list("set-cookie"))
    assert alices.count("access-token") == 2, alices
    proxy = as_proxy(search_app, **{"X-Forwarded-User": "dave", "X-Forwarded-Groups": "finance",
                                    "Cookie": alices})
    reply = proxy.get("gradio_api/user")
    assert reply.json() == "dave"
    set_cookies = reply.headers.get_list("set-cookie")
    assert any(c.startswith("access-token-unsecure-") and "Max-Age=0" not in c
               for c in set_cookies), set_cookies
    assert any(c.startswith("access-token-") and not c.startswith("access-token-unsecure-")
               and "Max-Age=0" in c for c in set_cookies), set_cookies
    assert [who(proxy) for _ in range(3)] == ["dave"] * 3
    # a user the proxy names who may not sign in here (local bob): the request is nobody's
    bob = as_proxy(search_app, **{"X-Forwarded-User": "bob", "Cookie": alices})
    assert who(bob) is None and bob.get("config").status_code == 401


def test_an_admins_disable_is_not_undone_by_another_way_in(search_app: Running,
                                                           ldap_directory: RunningLdap) -> None:
    """rhea signs in through the directory, an admin disables her; the proxy naming her does
    not bring the account or its API token back."""
    ldap_directory.add_person("rhea", "rhea-password", ["finance"])
    assert sign_in(search_app, "rhea", "rhea-password")[0] == 200
    token = new_token(search_app, "rhea")
    with users_for(search_app.settings) as users:
        users.disable("rhea")
    assert not token_works(search_app, token)
    proxy = as_proxy(search_app, **{"X-Forwarded-User": "rhea", "X-Forwarded-Groups": "hr"})
    assert proxy.get("config").status_code == 401
    assert not token_works(search_app, token)
    found, source = user(search_app, "rhea")
    assert found.disabled and source == "ldap" and found.groups == ("all", "finance")


def test_a_control_character_password_is_a_wrong_password(
        search_app: Running, caplog: pytest.LogCaptureFixture) -> None:
    """A tab (or a character SASLprep prohibits) in the password is refused as a wrong password
    for a person the directory knows and for a name it does not: no 503, no ERROR line, no
    "unavailable" record that would tell the two apart."""
    caplog.set_level(logging.INFO)
    since = time.time()
    for name, password in [("hanna", "\t"), ("hanna", "hanna-password\n"), ("hanna", "\ue000"),
                           ("nobody", "\t")]:
        assert sign_in(search_app, name, password)[0] == 400, (name, password)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    outcomes = {r.outcome for r in waiting_for(search_app, since,
                                               lambda r: r.actor == "nobody")
                if r.event == "signin"}
    assert outcomes == {"failed"}, outcomes


def test_directory_changes_are_in_the_audit_trail(search_app: Running,
                                                  ldap_directory: RunningLdap) -> None:
    """otto is made by the directory as an admin, loses kb-admins there, and is removed: each
    change is recorded with the directory as its actor."""
    ldap_directory.add_person("otto", "otto-password", ["kb-admins"])
    since = time.time()
    assert sign_in(search_app, "otto", "otto-password")[0] == 200
    token = new_token(search_app, "otto")
    ldap_directory.move("otto", "kb-admins", "finance")
    time.sleep(REFRESH_S + 0.2)
    assert token_works(search_app, token)
    ldap_directory.remove_person("otto")
    time.sleep(REFRESH_S + 0.2)
    assert not token_works(search_app, token)
    changes = [(r.event, r.actor, r.object) for r in
               search_app.app.store.ledger.audit_records(since=since, event="user.")]
    assert changes == [("user.adopt", "ldap", "otto"), ("user.groups", "ldap", "otto"),
                       ("user.turn_off", "ldap", "otto")], changes


def test_untrusted_user_headers_stop_at_the_address_limit(search_app: Running) -> None:
    """Each X-Forwarded-User from an address that is no trusted proxy is an audit record until
    the address reaches `ui.login_max_failures_per_address`; past it, none."""
    limit = search_app.settings.ui.login_max_failures_per_address
    since = time.time()
    stranger = httpx.Client(base_url=search_app.url, timeout=30,
                            headers={"X-Forwarded-User": "mallory"})
    for _ in range(limit + 10):
        assert stranger.get("gradio_api/login_check").status_code == 401
    time.sleep(0.5)  # the trail's writer thread
    refused = [r for r in waiting_for(search_app, since, lambda r: r.actor == "mallory")
               if r.actor == "mallory"]
    assert len(refused) == limit


def test_password_login_off_ends_local_sessions_and_tokens_but_break_glass(
        search_app: Running, sample_store: Store) -> None:
    """Sessions and tokens local users had before `auth.password_login = false` stop working
    while it is off; the break-glass account's keep working."""
    with users_for(search_app.settings) as users:
        sessions = SessionTable(users, 3600)
        for name in ("alice", "bob"):
            sessions[f"{name}-browser"] = name
        cookie = f"access-token-unsecure-{shared_cookie_id(users)}"
    bob = httpx.Client(base_url=search_app.url, timeout=30, cookies={cookie: "bob-browser"})
    alice = httpx.Client(base_url=search_app.url, timeout=30, cookies={cookie: "alice-browser"})
    assert not signed_in(bob) and signed_in(alice)
    assert not token_works(search_app, sample_store.tokens["bob"])
    assert token_works(search_app, sample_store.tokens["alice"])
