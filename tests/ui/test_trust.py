"""Issue 11's login, session and access findings, each tried against the real app (uvicorn on
loopback, the sample store, the model unreachable): every test here failed on main at 46ada97.
Bounded: at most 12 parallel logins, all to 127.0.0.1."""

from __future__ import annotations

import json
import logging
import shutil
import stat
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.ui.conftest import PASSWORDS, SAMPLES
from tests.ui.test_app import HR_FILES, HR_QUESTIONS, FakeRequest, ask, hr_chunk_ids, message_text
from ui.handlers import Conversation
from ui.wiring import users_for

pytestmark = pytest.mark.slow


def login(url: str, name: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    reply = client.post("login", data={"username": name, "password": password})
    assert reply.status_code == 200, reply.text
    return client


@pytest.fixture
def fresh_guard(login_server: Any) -> Iterator[Any]:
    """The server's login throttle, emptied before and after the test."""
    guard = login_server.guard
    guard.reset()
    yield guard
    guard.reset()


def test_login_flood_leaves_the_event_loop_free(login_server: Any, fresh_guard: Any) -> None:
    """Finding 3: scrypt ran inside Gradio's async /login; 12 wrong logins stalled every page."""
    url = login_server.url
    with httpx.Client(base_url=url, timeout=30) as probe:
        probe.get("gradio_api/login_check")  # warm
        started = time.perf_counter()

        def wrong(i: int) -> int:
            return httpx.post(url + "login", timeout=60,
                              data={"username": f"nobody{i}", "password": "wrong"}).status_code

        with ThreadPoolExecutor(12) as pool:
            futures = [pool.submit(wrong, i) for i in range(12)]
            time.sleep(0.1)
            latencies = []
            while not all(f.done() for f in futures) and len(latencies) < 50:
                t0 = time.perf_counter()
                assert probe.get("gradio_api/login_check").status_code == 401
                latencies.append(time.perf_counter() - t0)
                time.sleep(0.02)
            codes = [f.result() for f in futures]
        flood_s = time.perf_counter() - started
    median, worst = statistics.median(latencies) * 1000, max(latencies) * 1000
    print(f"12 wrong logins took {flood_s:.2f} s; a page request meanwhile: "
          f"median {median:.0f} ms, max {worst:.0f} ms over {len(latencies)} probes")
    assert set(codes) == {400}, codes
    # on main each probe waited behind the scrypt work on the event loop (median 208 ms,
    # 9 probes in 5.2 s on the 2-core CI machine)
    assert median < 100 and worst < max(300, flood_s * 1000 / 4), (median, worst, flood_s)


def test_failed_logins_lock_out_and_are_logged(login_server: Any, fresh_guard: Any,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """Finding 3: no throttling, no lockout, failures not logged where an operator sees them."""
    url = login_server.url + "login"
    caplog.set_level(logging.WARNING, logger="ui.identity.login")
    codes = [httpx.post(url, data={"username": "bob", "password": f"guess-{i}"}).status_code
             for i in range(4)]
    assert codes[:3] == [400, 400, 400] and codes[3] == 429, codes
    # the right password is refused too while locked, and costs no scrypt work
    right = httpx.post(url, data={"username": "bob", "password": PASSWORDS["bob"]})
    assert right.status_code == 429 and "try again" in right.text
    # another user from the same address is not locked (the address limit is 30)
    assert httpx.post(url, data={"username": "alice",
                                 "password": PASSWORDS["alice"]}).status_code == 200
    failures = [r for r in caplog.records if "login failed for user 'bob' from 127.0.0.1"
                in r.getMessage()]
    assert len(failures) == 3 and all(r.levelno == logging.WARNING for r in failures)
    assert PASSWORDS["bob"] not in caplog.text and "guess-1" not in caplog.text


def test_sessions_end_on_password_change_and_disable(login_server: Any,
                                                     fresh_guard: Any) -> None:
    """Finding 6: sessions never expired and survived a password change; no disable."""
    settings = login_server.settings
    with users_for(settings) as users:
        users.add("dave", "dave-password-1", ["all"])
    try:
        first = login(login_server.url, "dave", "dave-password-1")
        assert first.get("config").status_code == 200
        with users_for(settings) as users:  # another process would do the same (kb users)
            users.set_password("dave", "dave-password-2")
        assert first.get("config").status_code == 401
        second = login(login_server.url, "dave", "dave-password-2")
        assert second.get("config").status_code == 200
        with users_for(settings) as users:
            users.disable("dave")
        assert second.get("config").status_code == 401
        refused = httpx.post(login_server.url + "login",
                             data={"username": "dave", "password": "dave-password-2"})
        assert refused.status_code == 400
    finally:
        with users_for(settings) as users:
            users.delete("dave")


def test_api_tokens_expire_and_can_be_revoked(login_server: Any) -> None:
    """Finding 6: API tokens could not be revoked or expire."""
    api = login_server.url + "api/ask"
    body = {"question": "How many days of annual leave can I carry over?"}
    with users_for(login_server.settings) as users:
        users.add("erin", "erin-password", ["all"])
        short = users.new_token("erin", days=1e-9)  # already expired
        token = users.new_token("erin", days=1)
    try:
        assert httpx.post(api, json=body, timeout=120,
                          headers={"Authorization": f"Bearer {token}"}).status_code == 200
        with users_for(login_server.settings) as users:
            users.revoke_token("erin")
        assert httpx.post(api, json=body, headers={
            "Authorization": f"Bearer {token}"}).status_code == 401
        with users_for(login_server.settings) as users:
            assert users.by_token(short) is None
    finally:
        with users_for(login_server.settings) as users:
            users.delete("erin")


def test_a_borrowed_session_id_gets_no_conversation(login_server: Any) -> None:
    """Finding 4: conversations were keyed by Gradio's session_hash: another user who sent it
    got the history (and passages of groups they may not see). Since issue 28 Gradio's routes
    refuse another user's session hash (every route: tests/ui/test_guard.py); behind them, a
    conversation state that is not the asker's still gets a fresh one."""
    alice = login_server.client("alice")
    secret = "What is the merit increase budget of the compensation review? zq-marker"
    ask(alice, secret)
    bob = login_server.client("bob")
    bob.session_hash = alice.session_hash
    with pytest.raises(httpx.HTTPStatusError, match="404"):
        bob.submit("And how many days of annual leave can I carry over?", "en",
                   api_name="/ask").result()
    theirs = Conversation(owner="alice", chat=[{"role": "user", "content": secret}])
    outputs = list(login_server.app.ask("And how many days of annual leave can I carry over?",
                                        "en", theirs, FakeRequest("bob")))
    everything = repr([(chat, out) for chat, out, *_ in outputs])
    assert "zq-marker" not in everything and not any(f in everything for f in HR_FILES)
    assert len(outputs[-1][0]) == 2 and outputs[-1][1] is not theirs  # bob's question only
    assert len(theirs.chat) == 1  # and alice's state is untouched
    # and alice's conversation is still hers
    follow = ask(alice, "And the annual leave carry-over?")
    assert len(follow[-1][0]) == 4 and "zq-marker" in message_text(follow[-1][0][0])


def test_page_images_come_from_a_checked_route(login_server: Any, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 5: cited page images were served through Gradio's file= route from a shared,
    world-readable temp folder to anyone with the URL."""
    app = login_server.app
    hr_id = next(i for i in hr_chunk_ids(login_server.settings)
                 if app.assistant.source(i, ["hr"]).page)
    html = app.view_source(hr_id, "en", None, FakeRequest("alice"))
    assert "file=" not in html
    if shutil.which("pdftoppm"):
        assert f'src="page/{hr_id}"' in html
    else:
        assert "poppler" in html  # says why there is no image
    bob = login(login_server.url, "bob", PASSWORDS["bob"])
    assert bob.get(f"page/{hr_id}").status_code == 404
    assert httpx.get(login_server.url + f"page/{hr_id}").status_code == 401
    alice = login(login_server.url, "alice", PASSWORDS["alice"])
    if not shutil.which("pdftoppm"):  # no poppler here: the real check, then a stand-in page
        from PIL import Image

        png = tmp_path / "page.png"
        Image.new("RGB", (8, 8)).save(png)
        real = app.page_image

        def checked_png(chunk_id: str, user: Any) -> Path:
            real(chunk_id, user)  # AccessDenied outside the user's groups
            return png

        monkeypatch.setattr(app, "page_image", checked_png)
    reply = alice.get(f"page/{hr_id}")
    assert reply.status_code == 200 and reply.headers["content-type"] == "image/png"
    assert "no-store" in reply.headers["cache-control"]
    assert bob.get(f"page/{hr_id}").status_code == 404  # the real check still refuses bob
    mode = stat.S_IMODE(app.pages.stat().st_mode)
    assert mode == 0o700 and app.pages.is_relative_to(login_server.settings.store_path())


def test_uploads_and_files_only_for_admins(login_server: Any) -> None:
    """Finding 8: any logged-in user could write files through /gradio_api/upload."""
    files = {"files": ("x.txt", b"hello", "text/plain")}
    bob = login(login_server.url, "bob", PASSWORDS["bob"])
    assert bob.post("gradio_api/upload", files=files).status_code == 403
    alice = login(login_server.url, "alice", PASSWORDS["alice"])
    uploaded = alice.post("gradio_api/upload", files=files)
    assert uploaded.status_code == 200, uploaded.text
    path = uploaded.json()[0]
    assert bob.get(f"gradio_api/file={path}").status_code == 403


def test_config_and_errors_do_not_leak(login_server: Any) -> None:
    """Finding 8: all group names reached non-admins in /config; the model server's internal
    URL and error text were shown to users."""
    bob = login(login_server.url, "bob", PASSWORDS["bob"])
    config = bob.get("config").json()
    for component in config["components"]:
        props = component.get("props", {})
        if props.get("label") == "Access groups":
            assert props.get("choices") in ([], None), props
    assert '"hr"' not in json.dumps(config)
    outputs = ask(login_server.client("bob"), "How many days of annual leave can I carry over?")
    final = message_text(outputs[-1][0][-1])
    llm_url = login_server.settings.llm.url
    assert "retrieval_only" in final and llm_url not in final and "127.0.0.1" not in final


def test_admin_views_are_scoped_to_the_admins_groups(login_server: Any) -> None:
    """Finding 8: an admin of `all` read HR file names and HR answer text in the admin tab."""
    settings = login_server.settings
    with users_for(settings) as users:
        users.add("carol", "carol-password", ["all"], is_admin=True)
        hr_answer = users.record_question("alice", HR_QUESTIONS[0], login_server.assistant.ask(
            HR_QUESTIONS[0], ["all", "hr"]))
        users.record_feedback(hr_answer, "alice", -1, "hr-feedback-marker")
    try:
        app = login_server.app
        docs, _stats, feedback = app.admin_tables(FakeRequest("carol"))
        seen = repr(docs) + repr(feedback)
        assert not any(f in seen for f in HR_FILES) and "hr-feedback-marker" not in seen
        assert app.known_groups(app.users.get("carol")) == ["all"]
        with users_for(settings) as users:
            users.set_see_all("carol", True)
        docs, _stats, feedback = app.admin_tables(FakeRequest("carol"))
        assert any(f in repr(docs) for f in HR_FILES) and "hr-feedback-marker" in repr(feedback)
    finally:
        with users_for(settings) as users:
            users.delete("carol")


def test_the_store_status_names_no_other_groups_upload(login_server: Any,
                                                      tmp_path: Path) -> None:
    """The admin tab's status showed every admin the last ingest run's paths and groups: an
    HR upload's file name to an admin of `all, finance`. Now an admin without see-all gets the
    run's counts and the documents of their groups counted; a see-all admin gets it all."""
    import docx

    app, settings = login_server.app, login_server.settings
    upload = tmp_path / "HR-Layoff-Plan-2027.docx"
    plan = docx.Document()
    plan.add_heading("Layoff plan 2027", level=1)
    plan.add_paragraph("The restructuring reduces the sales team by twelve positions.")
    plan.save(str(upload))
    with users_for(settings) as users:
        users.add("fin", "fin-password", ["all", "finance"], is_admin=True)
    try:
        app.ingest_upload([str(upload)], ["hr"], "", "", "", FakeRequest("alice"))
        _docs, status, _feedback = app.admin_tables(FakeRequest("fin"))
        assert "Layoff" not in status and "hr" not in status, status
        assert "1 ingested" in status  # the counts stay
        everything = app.store.ledger.documents()
        shown = sum("all" in r.meta.groups or "finance" in r.meta.groups for r in everything)
        assert status.startswith(f"**{shown} documents**") and shown < len(everything)
        with users_for(settings) as users:
            users.set_see_all("fin", True)
        _docs, status, _feedback = app.admin_tables(FakeRequest("fin"))
        assert "HR-Layoff-Plan-2027.docx" in status
        assert status.startswith(f"**{len(everything)} documents**")
    finally:
        app.delete("HR-Layoff-Plan-2027.docx", FakeRequest("alice"))
        with users_for(settings) as users:
            users.delete("fin")


def test_superseded_is_judged_within_the_askers_groups(login_server: Any,
                                                       tmp_path: Path) -> None:
    """Finding 8: "superseded" was computed across all groups: an HR-only newer version marked
    (and demoted) the version everyone may see, telling them that it exists."""
    from ingest.pipeline import delete_document, ingest_paths

    src = SAMPLES / "差旅费管理办法-2024.pdf"
    newer = tmp_path / "hr-travel" / "差旅费管理办法-2025.pdf"
    newer.parent.mkdir()
    shutil.copyfile(src, newer)
    newer.with_name("差旅费管理办法-2025.meta.toml").write_text(
        'series = "travel-expenses-zh"\nversion = "2025"\neffective_date = "2025-01-01"\n'
        'groups = ["hr"]\n', encoding="utf-8")
    store = login_server.app.store
    report = ingest_paths(store, [newer.parent])
    assert report.counts["ingested"] == 1, report.outcomes
    try:
        question = "一线城市住宿标准是多少？"
        api = login_server.url + "api/ask"
        seen = {}
        for name in ("bob", "alice"):
            reply = httpx.post(api, json={"question": question}, timeout=120,
                               headers={"Authorization": f"Bearer {login_server.tokens[name]}"})
            seen[name] = {p["file"]: p["superseded"] for p in reply.json()["passages"]}
        bob_2024 = [s for f, s in seen["bob"].items() if f.endswith("2024.pdf")]
        assert bob_2024 and not any(bob_2024), seen["bob"]
        assert not any("2025" in f for f in seen["bob"])
        alice_2024 = [s for f, s in seen["alice"].items() if f.endswith("2024.pdf")]
        assert all(alice_2024), seen["alice"]  # alice sees 2025: for her, 2024 is superseded
    finally:
        delete_document(store, "差旅费管理办法-2025.pdf")
