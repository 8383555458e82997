"""Issue 28, finding 6: what answers without a login. `/metrics` (question and login-failure
counts) answered anyone unless a token was set, and `/openapi.json` listed every route to
anyone. Tried against the real app (uvicorn on 127.0.0.1; a client "elsewhere" connects from
127.0.0.2, or is named by a trusted proxy), and `MetricsAccess` on its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from core.errors import ConfigError
from tests.ui.conftest import PASSWORDS, Running, Store, _login_settings, _serve
from tests.ui.test_trust import login
from ui.web.metrics_access import MetricsAccess

TOKEN = "scrape-token-for-tests"


def elsewhere() -> httpx.Client:
    """A client whose socket's address is 127.0.0.2: loopback, but not 127.0.0.1."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=30)


@pytest.fixture(scope="module")
def token_server(sample_store: Store) -> Iterator[Running]:
    """The app with `ui.metrics_token` set and the default `ui.metrics_allow` (loopback)."""
    yield from _serve(_login_settings(sample_store, metrics_token=TOKEN), demo=False)


def test_metrics_access_decides_by_address_then_token() -> None:
    access = MetricsAccess.parse(["127.0.0.1", "::1", "10.0.0.0/24"], TOKEN)
    assert [access.verdict(a, "") for a in ("127.0.0.1", "::1", "10.0.0.9", "::ffff:10.0.0.9",
                                            "10.0.1.9", "127.0.0.2", "?")] == \
        [200, 200, 200, 200, 401, 401, 401]
    assert access.verdict("203.0.113.9", f"Bearer {TOKEN}") == 200
    assert access.verdict("203.0.113.9", f"bearer  {TOKEN} ") == 200
    assert access.verdict("127.0.0.1", "Bearer wrong") == 401  # a wrong token is never let by
    assert access.verdict("203.0.113.9", f"Basic {TOKEN}") == 401
    untokened = MetricsAccess.parse(["127.0.0.1"], "")
    assert untokened.verdict("127.0.0.1", "") == 200
    assert untokened.verdict("203.0.113.9", "") == 403
    assert untokened.verdict("203.0.113.9", "Bearer ") == 403  # no token opens it
    assert MetricsAccess.parse([], "").verdict("127.0.0.1", "") == 403
    with pytest.raises(ConfigError, match="ui.metrics_allow: 'localhost' is not an IP address"):
        MetricsAccess.parse(["localhost"], "")


@pytest.mark.slow
def test_metrics_refuse_anonymous_remote_clients(login_server: Any,
                                                 proxied_server: Any) -> None:
    """No token configured: this host's loopback reads /metrics, any other address gets 403."""
    assert login_server.settings.ui.metrics_allow == ("127.0.0.1", "::1")  # the default
    assert "kb_questions_total" in httpx.get(login_server.url + "metrics", timeout=30).text
    with elsewhere() as client:
        refused = client.get(login_server.url + "metrics")
    assert refused.status_code == 403, refused.text
    assert "kb_" not in refused.text and "ui.metrics_allow" in refused.json()["error"]
    # behind a trusted proxy on 127.0.0.1, the client it names is the one judged
    url = proxied_server.url + "metrics"
    proxied = httpx.get(url, headers={"X-Forwarded-For": "203.0.113.9"}, timeout=30)
    assert proxied.status_code == 403 and "203.0.113.9" in proxied.json()["error"]
    assert httpx.get(url, timeout=30).status_code == 200  # the proxy's host itself


@pytest.mark.slow
def test_metrics_token_opens_metrics_anywhere(token_server: Running) -> None:
    """With `ui.metrics_token`: 401 without it or with a wrong one (asked for by the test
    audit), 200 with it; the allowed addresses still read without it."""
    url = token_server.url + "metrics"
    assert httpx.get(url, timeout=30).status_code == 200  # 127.0.0.1: allowed
    wrong = {"Authorization": "Bearer not-the-token"}
    assert httpx.get(url, headers=wrong, timeout=30).status_code == 401
    with elsewhere() as client:
        bare = client.get(url)
        assert bare.status_code == 401 and bare.headers["www-authenticate"] == "Bearer"
        assert "kb_" not in bare.text and "ui.metrics_token" in bare.json()["error"]
        assert client.get(url, headers=wrong).status_code == 401
        right = client.get(url, headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200 and "kb_login_failures_total" in right.text


@pytest.mark.slow
def test_the_schema_needs_a_login(login_server: Any) -> None:
    """FastAPI's schema of Gradio's routes answered anyone at /openapi.json: it is gone. The
    schema the "Use via API" page reads (/gradio_api/info, /gradio_api/openapi.json) asks for a
    login, as does /config."""
    url = login_server.url
    gone = ("openapi.json", "docs", "redoc", "gradio_api/docs", "info", "gradio_api/config")
    behind_login = ("gradio_api/openapi.json", "gradio_api/info", "gradio_api/info/", "config")
    with httpx.Client(base_url=url, timeout=30) as anonymous:
        for path in gone:
            assert anonymous.get(path).status_code == 404, path
        for path in behind_login:
            assert anonymous.get(path).status_code == 401, path
        with elsewhere() as remote:
            assert remote.get(url + "openapi.json").status_code == 404
    bob = login(url, "bob", PASSWORDS["bob"])
    for path in behind_login:
        assert bob.get(path).status_code == 200, path
    assert "/ask" in bob.get("gradio_api/info").text  # the API page's endpoints
    assert bob.get("openapi.json").status_code == 404
