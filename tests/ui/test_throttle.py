"""Issue 28, finding 2, against the real app (uvicorn on loopback, served as `kb serve` serves
it, the sample store, the model unreachable): the login throttle lets through at most its limit
of password checks however many guesses arrive at once, and a client cannot pick its own
address with X-Forwarded-For unless it is a configured proxy. Each test failed on main at
c675322."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.ui.conftest import PASSWORDS
from tests.ui.test_auth import count_password_checks

pytestmark = pytest.mark.slow


def wrong_login(url: str, name: str, guess: str, forwarded_for: str = "") -> int:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    return httpx.post(url + "login", data={"username": name, "password": guess},
                      headers=headers, timeout=120).status_code


def test_parallel_wrong_logins_run_at_most_the_limit_of_checks(
        login_server: Any, fresh_guard: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """100 wrong passwords for bob at once, limit 3: on main most were checked (scrypt each)."""
    checked = count_password_checks(login_server.app.users, monkeypatch)
    with ThreadPoolExecutor(100) as pool:
        codes = list(pool.map(lambda i: wrong_login(login_server.url, "bob", f"guess-{i}"),
                              range(100)))
    print(f"100 parallel wrong logins, limit 3: {len(checked)} password checks, "
          f"{codes.count(400)} x 400, {codes.count(429)} x 429")
    assert len(checked) == 3 and codes.count(400) == 3 and codes.count(429) == 97, codes
    right = httpx.post(login_server.url + "login",
                       data={"username": "bob", "password": PASSWORDS["bob"]})
    assert right.status_code == 429 and len(checked) == 3  # refused without a check


def test_forwarded_for_from_an_unlisted_peer_is_not_the_address(
        login_server: Any, fresh_guard: Any) -> None:
    """With no trusted proxies, a client on 127.0.0.1 that names a new address in
    X-Forwarded-For for every guess is still 127.0.0.1 to the throttle: its 31st guess (limit 30
    per address, each at another name) is refused. On main uvicorn took the header from any
    client on 127.0.0.1, so every guess came from a fresh address."""
    url = login_server.url
    codes = [wrong_login(url, f"nobody{i}", "guess", f"203.0.113.{i}") for i in range(30)]
    assert codes == [400] * 30, codes
    assert wrong_login(url, "nobody99", "guess", "198.51.100.99") == 429
    failures = login_server.guard.ledger.login_failures(
        ["a:127.0.0.1", "a:203.0.113.1", "a:198.51.100.99"], 0.0)
    assert set(failures) == {"a:127.0.0.1"} and failures["a:127.0.0.1"][0] == 30


def test_a_trusted_proxy_names_the_client(proxied_server: Any, fresh_guard: Any) -> None:
    """With 127.0.0.1 in ui.trusted_proxies, the client is the right-most address of
    X-Forwarded-For that is not a proxy (the left part is whatever the client sent the proxy);
    a lockout of that address leaves other clients of the same proxy free."""
    url = proxied_server.url
    chain = "198.51.100.7, 203.0.113.5, 127.0.0.1"  # forged, the client, another proxy hop
    codes = [wrong_login(url, f"nobody{i}", "guess", chain) for i in range(31)]
    assert codes == [400] * 30 + [429], codes
    failures = proxied_server.guard.ledger.login_failures(
        ["a:203.0.113.5", "a:198.51.100.7", "a:127.0.0.1"], 0.0)
    assert set(failures) == {"a:203.0.113.5"} and failures["a:203.0.113.5"][0] == 30
    reply = httpx.post(url + "login", headers={"X-Forwarded-For": "203.0.113.6"},
                       data={"username": "alice", "password": PASSWORDS["alice"]})
    assert reply.status_code == 200
