"""Gradio's own routes behind the app's guard (issue 28, finding 1): a session hash is bound to
the user who first used it, and another signed-in user who sends it is refused on every route
that takes one; the routes the app does not use (deep links, streams, direct runs, ...) are
refused outright, and Gradio's temp folder is readable by the app's account only. Run against
the real app (uvicorn on loopback, the sample store, two users in different groups), except the
first test, which checks the owner table alone."""

from __future__ import annotations

import json
import os
import secrets
import stat
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradio.utils import get_upload_folder

from devtools.chromium import Page
from tests.ui.conftest import PASSWORDS
from tests.ui.test_app import HR_FILES, ask, message_text
from ui.identity.guard import SessionOwners

HR_SECRET = "What is the merit increase budget of the compensation review? zq-deeplink"


def test_a_session_belongs_to_its_first_user_and_is_forgotten_in_order() -> None:
    known: set[str] = set()
    owners = SessionOwners(capacity=2, known=known.__contains__)
    assert owners.claim("h1", "alice") and owners.claim("h1", "alice")
    assert not owners.claim("h1", "bob")
    assert owners.claim("h2", "bob") and owners.claim("h1", "alice")  # h1 used last
    assert owners.claim("h3", "carol")  # the table is full: h2, used longest ago, goes
    assert owners.owner("h2") is None and owners.owner("h1") == "alice"
    # a hash Gradio still holds state for, whose owner was forgotten, is nobody's to take
    known.add("h2")
    assert not owners.claim("h2", "bob") and owners.owner("h2") is None


def login(url: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=60)
    reply = client.post("login", data={"username": name, "password": PASSWORDS[name]})
    assert reply.status_code == 200, reply.text
    return client


def fn_index(client: httpx.Client, api_name: str) -> int:
    config = client.get("config").json()
    return int(next(d["id"] for d in config["dependencies"] if d.get("api_name") == api_name))


@contextmanager
def opened(client: httpx.Client, path: str) -> Iterator[httpx.Response]:
    """A streaming GET (SSE) opened and closed once its status has come."""
    with client.stream("GET", path, timeout=30) as reply:
        yield reply


def refused(reply: httpx.Response, status: int = 404) -> bool:
    if reply.status_code != status:
        return False
    reply.read()
    return "error" in reply.json()


@pytest.mark.slow
def test_a_borrowed_session_hash_is_refused_on_every_route(login_server: Any) -> None:
    """Bob (group all) sends alice's (all, hr) session hash to each of Gradio's routes that
    take one: before, queue/join ran in her session, queue/data and heartbeat streamed it
    (closing them ended her session's events), cancel cancelled her events."""
    alice = login_server.client("alice")
    ask(alice, HR_SECRET)
    theirs = alice.session_hash
    bob = login(login_server.url, "bob")
    index = fn_index(bob, "ask")
    join = {"data": ["How many days of annual leave can I carry over?", "en", None],
            "fn_index": index, "session_hash": theirs, "event_data": None, "trigger_id": None}
    assert refused(bob.post("gradio_api/queue/join", json=join))
    with opened(bob, f"gradio_api/queue/data?session_hash={theirs}") as reply:
        assert refused(reply)
    with opened(bob, f"gradio_api/heartbeat/{theirs}") as reply:
        assert refused(reply)
    cancel = {"session_hash": theirs, "fn_index": index, "event_id": secrets.token_hex(16)}
    assert refused(bob.post("gradio_api/cancel", json=cancel))
    # without a login, none of them (Gradio itself let anyone use heartbeat and cancel)
    anonymous = httpx.Client(base_url=login_server.url, timeout=30)
    with opened(anonymous, f"gradio_api/heartbeat/{theirs}") as reply:
        assert refused(reply, 401)
    assert refused(anonymous.post("gradio_api/cancel", json=cancel), 401)
    # bob's own session works as before, and sees nothing of alice's
    outputs = ask(login_server.client("bob"), "And how many days of annual leave?")
    everything = repr(outputs)
    assert "zq-deeplink" not in everything and not any(f in everything for f in HR_FILES)
    assert len(outputs[-1][0]) == 2
    # alice's conversation goes on: nothing bob sent ended or touched it
    follow = ask(alice, "And the annual leave carry-over?")
    assert len(follow[-1][0]) == 4 and "zq-deeplink" in message_text(follow[-1][0][0])


def snapshots(folder: Path) -> set[Path]:
    return set(folder.glob("deep_links/*/state.json"))


@pytest.mark.slow
def test_deep_links_are_refused_and_never_written(login_server: Any, gradio_temp: Path) -> None:
    """The finding: `GET /gradio_api/deep_link?session_hash=<alice's>` wrote her whole page
    (chat, HR passages) to `<gradio temp>/deep_links/<id>/state.json`, world-readable, and
    `/?deep_link=<id>` served it to bob."""
    temp = gradio_temp
    before = snapshots(temp)
    alice = login_server.client("alice")
    ask(alice, HR_SECRET)
    bob = login(login_server.url, "bob")
    assert refused(bob.get("gradio_api/deep_link", params={"session_hash": alice.session_hash}))
    mine = login(login_server.url, "alice")  # the app has no deep links, for anyone
    assert refused(mine.get("gradio_api/deep_link", params={"session_hash": alice.session_hash}))
    assert snapshots(temp) == before
    # a snapshot already on disk (an older version wrote them) is not served either
    components = mine.get("config").json()["components"]
    chat = next(c for c in components if c.get("props", {}).get("elem_id") == "kb-chat")
    chat["props"]["value"] = [{"role": "assistant", "content": "zq-planted"}]
    link = "kb" + secrets.token_hex(8)
    planted = temp / "deep_links" / link / "state.json"
    planted.parent.mkdir(parents=True)
    try:
        planted.write_text(json.dumps(components), encoding="utf-8")
        page = bob.get("/", params={"deep_link": link})
        assert refused(page) and "zq-planted" not in page.text
    finally:
        planted.unlink()
        planted.parent.rmdir()
    assert bob.get("/").status_code == 200  # the page itself still loads


@pytest.mark.slow
def test_gradio_routes_the_app_does_not_use_are_refused(login_server: Any) -> None:
    """Routes that take an event id or a session hash, or write files, and that neither the page
    nor gradio_client uses: before, `call/` let another user who learnt an event id read its
    answer, `stream/` fed or closed another session's event, `startup-events` answered anyone."""
    alice = login(login_server.url, "alice")
    bob = login(login_server.url, "bob")
    anonymous = httpx.Client(base_url=login_server.url, timeout=30)
    question = {"data": [HR_SECRET, "en"]}
    assert refused(alice.post("gradio_api/call/ask", json=question))
    assert refused(alice.post("gradio_api/call/v2/ask", json={"question": HR_SECRET}))
    event = secrets.token_hex(16)
    with opened(bob, f"gradio_api/call/ask/{event}") as reply:
        assert refused(reply)
    for path in (f"gradio_api/stream/{event}", f"gradio_api/stream/{event}/close"):
        assert refused(bob.post(path, json={"data": []}))
    assert refused(bob.get(f"gradio_api/stream/{event}/0/1/playlist.m3u8"))
    assert refused(bob.post("gradio_api/run/ask", json=question))
    assert refused(bob.post("gradio_api/api/ask", json=question))
    server_fn = {"data": None, "component_id": 1, "session_hash": event, "fn_name": "ls"}
    assert refused(bob.post("gradio_api/component_server", json=server_fn))
    assert refused(bob.post("gradio_api/process_recording",
                            files={"video": ("v.mp4", b"x", "video/mp4")}))
    assert refused(anonymous.get("gradio_api/startup-events"))
    # what the app uses is still there: its own API, the page's config
    api = anonymous.post("api/ask", json={"question": "How many days of annual leave?"},
                         headers={"Authorization": f"Bearer {login_server.tokens['bob']}"})
    assert api.status_code == 200, api.text
    assert bob.get("config").status_code == 200


def test_no_session_token_for_page_scripts_and_no_sign_out_from_another_site(
        login_server: Any) -> None:
    """`/gradio_api/token` handed any script on the page the HttpOnly session cookie's value;
    `GET /logout` ended every session of the user from a link on any site, Gradio's cookie being
    `SameSite=None`. Now: 404; a sign-out only from the app's own page (or typed in); Lax."""
    bob = login(login_server.url, "bob")
    assert refused(bob.get("gradio_api/token")) and refused(bob.get("gradio_api/token/"))
    signed = httpx.post(login_server.url + "login", timeout=30,
                        data={"username": "bob", "password": PASSWORDS["bob"]})
    cookies = signed.headers.get_list("set-cookie")
    assert len(cookies) == 2 and all("samesite=lax" in c.lower() for c in cookies), cookies
    for site in ("cross-site", "same-site"):
        away = bob.get("logout", headers={"Sec-Fetch-Site": site})
        assert away.status_code == 403 and bob.get("config").status_code == 200
    own = bob.get("logout", headers={"Sec-Fetch-Site": "same-origin"})
    assert own.status_code == 302 and bob.get("config").status_code == 401


def test_the_pages_log_out_works_in_chromium_and_another_sites_link_does_not(
        login_server: Any, browser: Page) -> None:
    """In a real browser: a link to /logout on another page (here a data: URL, an origin of its
    own) is refused and bob stays signed in; the page's own Log out button signs him out."""
    browser.send("Page.enable")
    browser.send("Page.navigate", url=login_server.url)
    browser.wait_for("document.querySelectorAll('input').length >= 2")
    browser.eval(f"""(() => {{
        const [user, password] = document.querySelectorAll('input');
        for (const [box, value] of [[user, 'bob'], [password, '{PASSWORDS["bob"]}']]) {{
            box.value = value; box.dispatchEvent(new Event('input', {{bubbles: true}})); }}
        return true; }})()""")
    time.sleep(0.3)
    browser.eval("[...document.querySelectorAll('button')].find(b => /login/i.test("
                 "b.innerText)).click()")
    browser.wait_for("!!document.querySelector('#kb-question textarea')", timeout=30)
    elsewhere = f'<a id="away" href="{login_server.url}logout">sign out</a>'
    browser.send("Page.navigate", url="data:text/html," + urllib.parse.quote(elsewhere))
    browser.wait_for("!!document.getElementById('away')")
    browser.eval("document.getElementById('away').click()")
    shown = browser.wait_for("document.body && document.body.innerText.includes('own page') "
                             "&& document.body.innerText", timeout=30)
    assert "sign out from the app's own page" in shown
    browser.send("Page.navigate", url=login_server.url)
    browser.wait_for("!!document.querySelector('#kb-question textarea')", timeout=30)
    browser.eval("[...document.querySelectorAll('button, a')].find(b => /log out/i.test("
                 "b.innerText)).click()")
    browser.wait_for("document.querySelectorAll('input').length >= 2 && "
                     "!document.querySelector('#kb-question textarea')", timeout=30)


@pytest.mark.slow
def test_gradios_temp_folder_is_readable_by_the_app_only(login_server: Any,
                                                         gradio_temp: Path) -> None:
    """Gradio keeps admin uploads and the outputs it serves (the insights CSV) in its temp
    folder, which it makes 0755 (the folders in it too): every account on the server could
    list them, and read the deep-link snapshots (0644)."""
    temp = gradio_temp
    assert Path(get_upload_folder()) == temp  # the app's, for this run
    alice = login(login_server.url, "alice")
    uploaded = alice.post("gradio_api/upload",
                          files={"files": ("hr-note.txt", b"zq-upload", "text/plain")})
    assert uploaded.status_code == 200, uploaded.text
    path = Path(uploaded.json()[0])
    assert path.is_relative_to(temp) and path.read_bytes() == b"zq-upload"
    assert stat.S_IMODE(temp.stat().st_mode) == 0o700
    assert temp.stat().st_uid == os.getuid()
