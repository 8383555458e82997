"""The MCP server's OAuth 2.1 path against the real OpenID provider process the sign-in tests
start (devtools/oidc_provider.py: oidc-provider-mock) and a real `kb serve` whose
`auth.oidc_issuer` is that provider.

What the provider can and cannot do: its access tokens are opaque strings (it issues no JWT
access token, takes no RFC 8707 `resource`, has no client-credentials grant), but the JWT it
signs in the token response (`id_token`) carries every claim the test sets for the user, set
last (`aud`, `exp`, `iss` included). So the tests take that signed JWT as the access token:
signed by the provider's key, issued by it, for kb's resource URL as its `aud`. The official
client's whole flow (401 → kb's resource metadata → the provider's discovery → dynamic
registration → authorization code with PKCE and `resource` → token) runs unchanged; the one
step put in is where the client reads the token response: the signed JWT takes the place of
the opaque access token, as a provider issuing JWT access tokens would give it."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from devtools.app_processes import AppProcess, start_app, stop, wait_ready
from devtools.mcp_clients import http_client
from devtools.oidc_provider import RunningProvider, running_provider
from devtools.ports import free_port
from tests.ui.conftest import Store
from tests.ui.test_app import HR_FILES, HR_QUESTIONS
from tests.ui.test_oidc import SECRET, exchange, sign_in
from ui.identity.oidc import OidcClient
from ui.wiring import users_for

pytestmark = pytest.mark.slow

GROUP_MAP = '{"hr-staff" = ["hr"], "finance-staff" = ["finance"]}'
REDIRECT = "http://127.0.0.1:33418/callback"  # the agent's; nothing listens: the test reads it


@dataclass
class Setting:
    provider: RunningProvider
    app: AppProcess
    store: Path

    @property
    def resource(self) -> str:
        return self.app.url + "mcp"


@pytest.fixture(scope="module")
def setting(sample_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setting]:
    work = tmp_path_factory.mktemp("mcp-oauth")
    store = work / "store"
    shutil.copytree(sample_store.settings.store_path(), store)
    with running_provider(work / "provider") as provider:
        env = {"KB_LLM_URL": f"http://127.0.0.1:{free_port()}/v1", "KB_LLM_RETRIES": "0",
               "KB_LLM_CONNECT_TIMEOUT_S": "1.0", "KB_AUTH_OIDC_ISSUER": provider.issuer,
               "KB_AUTH_OIDC_CLIENT_ID": "kb", "KB_AUTH_GROUP_MAP": GROUP_MAP}
        app = start_app(store, env, work, port=free_port())
        try:
            wait_ready(app)
            yield Setting(provider, app, store)
        finally:
            stop(app)


def signed_jwt(setting: Setting, sub: str, claims: dict[str, Any]) -> str:
    """A JWT the provider signs for `sub` with `claims` (the audience kb's resource URL unless
    `claims` names another), through its authorization code flow."""
    setting.provider.set_user(sub, {"aud": setting.resource, **claims})
    agent = OidcClient(setting.provider.issuer, "an-agent", SECRET)
    pending, back = sign_in(agent, setting.provider, sub)
    return str(exchange(agent, pending, back)["id_token"])


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def calls(url: str, token: str) -> dict[str, Any]:
    """What the tools give the bearer of `token` for HR's questions."""
    async with http_client(url, token) as client:
        found = [(await client.call_tool("search_policies", {"query": q, "k": 20})).model_dump()
                 for q in HR_QUESTIONS]
        listed = await client.call_tool("list_documents", {})
    return {"found": found, "listed": listed.structured_content}


def hr_in(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    return any(name in text for name in HR_FILES)


def refused(url: str, token: str) -> bool:
    """Whether kb's gate refuses `token` (401); past it, the SDK answers this bare request
    (no session, no protocol version) with an error of its own."""
    reply = httpx.post(url, headers={"Authorization": f"Bearer {token}"}, timeout=30,
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    if reply.status_code == 401:
        assert 'error="invalid_token"' in reply.headers["www-authenticate"]
    return reply.status_code == 401


# --- kb as a protected resource ---------------------------------------------------------------

def test_the_resource_metadata_names_the_provider(setting: Setting) -> None:
    reply = httpx.post(setting.resource, timeout=30, json={})
    assert reply.status_code == 401
    metadata = reply.headers["www-authenticate"].split('resource_metadata="')[1].split('"')[0]
    found = httpx.get(metadata, timeout=30).json()
    assert found["resource"] == setting.resource
    assert found["authorization_servers"] == [setting.provider.issuer]
    assert "openid" in found["scopes_supported"]


class Tokens:
    """The client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class JwtAccessTokens(httpx2.AsyncBaseTransport):
    """The one step put in (see the module's docstring): the provider's token response with
    its signed JWT as the access token."""

    def __init__(self, token_endpoint: str) -> None:
        self.inner, self.token_endpoint = httpx2.AsyncHTTPTransport(), token_endpoint

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if str(request.url) != self.token_endpoint or response.status_code != 200:
            return response
        body = json.loads(await response.aread())
        body["access_token"] = body["id_token"]
        return httpx2.Response(200, json=body)


def test_the_official_client_signs_in_through_the_provider_and_asks_as_her(
    setting: Setting,
) -> None:
    """From nothing but kb's /mcp address: the 401's challenge, kb's metadata, the provider's
    discovery, dynamic registration, the authorization code flow with PKCE and kb's resource,
    then each call as hanna with the groups the provider gives her (hr)."""
    setting.provider.set_user("hanna-sub", {"preferred_username": "hanna",
                                            "groups": ["hr-staff"], "aud": setting.resource})
    discovery = f"{setting.provider.issuer}/.well-known/openid-configuration"
    token_endpoint = httpx.get(discovery, timeout=10).json()["token_endpoint"]
    sent: dict[str, str] = {}

    async def redirect(url: str) -> None:  # the browser: hanna consents at the provider
        sent.update(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        sent["back"] = setting.provider.authorize(url, "hanna-sub")

    async def callback() -> AuthorizationCodeResult:
        back = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(sent["back"]).query))
        return AuthorizationCodeResult(code=back["code"], state=back.get("state"))

    async def body() -> tuple[Any, Any]:
        auth = OAuthClientProvider(
            setting.resource, OAuthClientMetadata(redirect_uris=[REDIRECT],
                                                  client_name="kb test agent"),
            Tokens(), redirect, callback)
        async with httpx2.AsyncClient(auth=auth, transport=JwtAccessTokens(token_endpoint),
                                      timeout=60) as http, \
                Client(streamable_http_client(setting.resource, http_client=http)) as client:
            found = await client.call_tool("search_policies", {"query": HR_QUESTIONS[0]})
            listed = await client.call_tool("list_documents", {})
            return found, listed

    found, listed = run(body())
    assert sent["resource"] == setting.resource and sent["code_challenge_method"] == "S256"
    assert sent["client_id"] and "openid" in sent["scope"].split()
    assert not found.is_error and hr_in(found.model_dump()), found
    assert hr_in(listed.structured_content)
    with users_for_store(setting) as users:
        hanna = users.require("hanna")
        assert users.source("hanna") == "oidc" and hanna.groups == ("all", "hr")


def users_for_store(setting: Setting) -> Any:
    from core.config import load_settings
    from devtools.app_processes import REPO

    return users_for(load_settings(REPO / "config.toml", environ={}).with_store(setting.store))


# --- what an access token must be ----------------------------------------------------------------

def test_groups_come_from_the_token_through_auth_group_map(setting: Setting) -> None:
    hr = signed_jwt(setting, "ines-sub", {"preferred_username": "ines", "groups": ["hr-staff"]})
    assert hr_in(run(calls(setting.resource, hr)))
    moved = signed_jwt(setting, "ines-sub", {"preferred_username": "ines",
                                             "groups": ["finance-staff"]})
    assert not hr_in(run(calls(setting.resource, moved)))  # her next token: HR's gone


def test_a_token_for_another_audience_expired_or_of_another_issuer_is_refused(
    setting: Setting,
) -> None:
    user = {"preferred_username": "jon", "groups": ["hr-staff"]}
    good = signed_jwt(setting, "jon-sub", user)
    assert not refused(setting.resource, good)
    for other in ({"aud": "kb"}, {"aud": setting.app.url + "other"},
                  {"exp": int(time.time()) - 3600}, {"iss": "http://127.0.0.1:9/realms/x"}):
        assert refused(setting.resource, signed_jwt(setting, "jon-sub", {**user, **other})), other
    head, body, signature = good.split(".")
    assert refused(setting.resource, f"{head}.{body}.{signature[:-4]}AAAA")  # not its signature
    assert refused(setting.resource, f"{head}.{body}.")


def test_the_account_is_bound_to_its_subject_and_an_admins_disable_holds(
    setting: Setting,
) -> None:
    first = signed_jwt(setting, "kim-sub", {"preferred_username": "kim", "groups": []})
    assert not refused(setting.resource, first)
    squatter = signed_jwt(setting, "mallory-sub", {"preferred_username": "kim"})
    assert refused(setting.resource, squatter)  # another subject under kim's name
    with users_for_store(setting) as users:
        users.disable("kim")
    try:
        assert refused(setting.resource, first)
    finally:
        with users_for_store(setting) as users:
            users.disable("kim", False)
    assert not refused(setting.resource, first)
