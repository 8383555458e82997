"""Issue 26, item 6, against the real app (uvicorn on loopback, the sample store, the model
unreachable): a flood of wrong logins runs on threads of its own, so the pages' thread pool
stays free, and `kb serve` keeps garbage collections and GIL waits short. Each test failed
before the fix (the login's ledger steps ran on anyio's default pool, 40 threads, the password
checks at the pages' CPU priority; nothing frozen; Python's 5 ms switch interval)."""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.ui.conftest import PASSWORDS
from ui.identity.login import LOGIN_NICE

pytestmark = pytest.mark.slow


def wrong_logins(url: str, n: int) -> Any:
    pool = ThreadPoolExecutor(n)
    futures = [pool.submit(lambda i=i: httpx.post(
        url + "login", data={"username": f"flood{i}", "password": "wrong"}, timeout=60))
        for i in range(n)]
    pool.shutdown(wait=False)
    return futures


def test_a_stuck_login_flood_leaves_the_pages_threads_free(
        login_server: Any, fresh_guard: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """40 wrong logins whose ledger step hangs (as 40 threads waiting on SQLite's lock did):
    a signed-in page request is still served at once. Before, the 40 held every thread of the
    pool the pages' routes share, and the page waited for them."""
    page = httpx.Client(base_url=login_server.url, timeout=30)
    assert page.post("login", data={"username": "bob", "password": PASSWORDS["bob"]}
                     ).status_code == 200
    release, stuck = threading.Event(), threading.Event()
    reserve = login_server.guard.reserve

    def slow_reserve(name: str, address: str) -> Any:
        stuck.set()
        release.wait(20)
        return reserve(name, address)

    monkeypatch.setattr(login_server.guard, "reserve", slow_reserve)
    futures = wrong_logins(login_server.url, 40)
    try:
        assert stuck.wait(10)
        time.sleep(0.5)  # every login has arrived and waits for its turn
        started = time.perf_counter()
        assert page.get("").status_code == 200
        assert page.get("gradio_api/login_check").status_code == 200
        waited = time.perf_counter() - started
    finally:
        release.set()
        codes = [f.result().status_code for f in futures]
        page.close()
    assert waited < 3, f"a page waited {waited:.1f} s behind the stuck logins"
    assert codes.count(400) + codes.count(429) == 40


def test_password_checks_run_at_a_lower_priority(
        login_server: Any, fresh_guard: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    users = login_server.app.users
    authenticate = users.authenticate
    nice: list[int] = []

    def timed(name: str, password: str) -> Any:
        nice.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return authenticate(name, password)

    monkeypatch.setattr(users, "authenticate", timed)
    for future in wrong_logins(login_server.url, 4):
        assert future.result().status_code == 400
    assert len(nice) == 4
    assert set(nice) == {os.getpriority(os.PRIO_PROCESS, 0) + LOGIN_NICE}, nice


def test_serve_settles_its_heap_and_switches_the_gil_often(
        make_settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `kb serve` sets before it listens: the loaded heap frozen, a 1 ms switch interval
    (Python's 5 ms let a page's thread wait behind the flood's at every ledger read)."""
    import uvicorn

    from ui.web import server

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(
        (sys.getswitchinterval(), gc.get_freeze_count())))
    before = sys.getswitchinterval()
    gc.unfreeze()
    try:
        server.serve(make_settings(llm={"url": "http://127.0.0.1:9/v1"}), demo=True)
    finally:
        sys.setswitchinterval(before)
        gc.unfreeze()
    (interval, frozen), = served
    assert interval == server.SWITCH_INTERVAL_S == 0.001 and frozen > 10_000
