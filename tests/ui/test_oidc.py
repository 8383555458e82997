"""OpenID Connect sign-in (issue 26) against a real provider process on loopback
(devtools/oidc_provider.py: oidc-provider-mock): the code flow with PKCE, state and nonce, and
each check of the ID token refusing what it must (wrong audience, expired, bad signature,
replayed or forged state, another nonce, another issuer, a provider that is down)."""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from devtools.oidc_provider import RunningProvider, running_provider
from devtools.ports import free_port
from ui.identity.oidc import OidcClient, OidcError, Pending, seal, unseal

SECRET = "client-s3cret"  # the provider takes any secret; kb sends it (client_secret_basic)
CALLBACK = "http://127.0.0.1:7860/login/oidc/callback"
CAROL = {"preferred_username": "carol", "email": "carol@example.com",
         "groups": ["hr-staff", "everyone"]}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningProvider]:
    with running_provider(tmp_path_factory.mktemp("oidc")) as running:
        running.set_user("carol-sub", CAROL)
        yield running


def sign_in(client: OidcClient, provider: RunningProvider,
            sub: str = "carol-sub") -> tuple[Pending, dict[str, str]]:
    """Start a sign-in, consent as `sub` at the provider: the pending sign-in and the query the
    provider sent back to the callback."""
    url, pending = client.start(CALLBACK)
    back = provider.authorize(url, sub)
    assert back.startswith(CALLBACK), back
    return pending, dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))


def exchange(client: OidcClient, pending: Pending, back: dict[str, str]) -> dict[str, object]:
    """The provider's tokens for the code it sent back, without the ID token's checks."""
    return client._tokens({"grant_type": "authorization_code", "code": back["code"],
                           "redirect_uri": CALLBACK, "code_verifier": pending.verifier})


def test_the_code_flow_signs_carol_in_with_her_directory_groups(
    provider: RunningProvider,
) -> None:
    client = OidcClient(provider.issuer, "kb", SECRET)
    url, _ = client.start(CALLBACK)
    sent = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert sent["code_challenge_method"] == "S256" and sent["nonce"] and sent["state"]
    assert "openid" in sent["scope"].split()
    pending, back = sign_in(client, provider)
    identity = client.finish(pending, back, CALLBACK)
    assert (identity.subject, identity.name) == ("carol-sub", "carol")
    assert identity.groups == ("hr-staff", "everyone")


def test_a_refresh_reads_the_groups_the_provider_has_now(provider: RunningProvider) -> None:
    provider.set_user("dave-sub", {"preferred_username": "dave", "groups": ["hr-staff"]})
    client = OidcClient(provider.issuer, "kb", SECRET)
    pending, back = sign_in(client, provider, "dave-sub")
    identity = client.finish(pending, back, CALLBACK)
    assert identity.groups == ("hr-staff",) and identity.refresh_token
    provider.set_user("dave-sub", {"preferred_username": "dave", "groups": ["finance"]})
    moved = client.refresh(identity)
    assert (moved.name, moved.groups) == ("dave", ("finance",))
    provider.revoke("dave-sub")  # disabled at the provider: its tokens are void
    with pytest.raises(OidcError) as refused:
        client.refresh(moved)
    assert refused.value.reason == "provider"


def test_a_replayed_or_forged_state_is_refused(provider: RunningProvider) -> None:
    client = OidcClient(provider.issuer, "kb", SECRET)
    pending, back = sign_in(client, provider)
    client.finish(pending, back, CALLBACK)
    with pytest.raises(OidcError, match="already used") as replayed:
        client.finish(pending, back, CALLBACK)
    assert replayed.value.reason == "state"
    pending, back = sign_in(client, provider)
    with pytest.raises(OidcError, match="another state") as forged:
        client.finish(pending, {**back, "state": "attacker"}, CALLBACK)
    assert forged.value.reason == "state"


def test_a_token_for_another_client_is_refused(provider: RunningProvider) -> None:
    other = OidcClient(provider.issuer, "another-app", SECRET)
    pending, back = sign_in(other, provider)
    code_for_other = exchange(other, pending, back)
    kb = OidcClient(provider.issuer, "kb", SECRET)
    with pytest.raises(OidcError, match="not auth.oidc_client_id 'kb'") as refused:
        kb.verify(code_for_other["id_token"], pending.nonce)
    assert refused.value.reason == "audience"


def test_a_token_with_a_bad_signature_or_another_nonce_is_refused(
    provider: RunningProvider,
) -> None:
    client = OidcClient(provider.issuer, "kb", SECRET)
    pending, back = sign_in(client, provider)
    id_token = exchange(client, pending, back)["id_token"]
    assert client.verify(id_token, pending.nonce)["sub"] == "carol-sub"
    head, body, signature = id_token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["groups"] = ["admins"]  # a payload edited after signing
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    with pytest.raises(OidcError) as edited:
        client.verify(f"{head}.{forged}.{signature}", pending.nonce)
    assert edited.value.reason == "signature"
    with pytest.raises(OidcError) as nonce:
        client.verify(id_token, "another-nonce")
    assert nonce.value.reason == "nonce"


def test_an_expired_token_is_refused(tmp_path: Path) -> None:
    with running_provider(tmp_path, token_max_age_s=1) as short:
        short.set_user("carol-sub", CAROL)
        now = [time.time()]
        client = OidcClient(short.issuer, "kb", SECRET, clock=lambda: now[0])
        pending, back = sign_in(client, short)
        id_token = exchange(client, pending, back)["id_token"]
        assert client.verify(id_token, pending.nonce)
        now[0] += 120  # past the token's second and the minute of leeway
        with pytest.raises(OidcError, match="expired") as expired:
            client.verify(id_token, pending.nonce)
    assert expired.value.reason == "expired"


def test_a_sign_in_begun_too_long_ago_is_refused(provider: RunningProvider) -> None:
    now = [time.time()]
    client = OidcClient(provider.issuer, "kb", SECRET, clock=lambda: now[0])
    pending, back = sign_in(client, provider)
    now[0] += 601
    with pytest.raises(OidcError, match="ten minutes"):
        client.finish(pending, back, CALLBACK)


def test_another_issuer_and_a_provider_that_is_down_give_one_line() -> None:
    down = OidcClient(f"http://127.0.0.1:{free_port()}", "kb", timeout_s=1)
    with pytest.raises(OidcError, match="check auth.oidc_issuer and that the provider") as exc:
        down.start(CALLBACK)
    assert exc.value.reason == "provider" and "\n" not in str(exc.value)
    with pytest.raises(OidcError, match="use the provider's https address"):
        OidcClient("http://sso.example.com", "kb")


def test_discovery_that_names_another_issuer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery answered by a document naming another issuer (a unit test: the provider
    process always names the address it was reached at)."""
    client = OidcClient("https://sso.example.com/realms/acme", "kb", SECRET)
    document = {"issuer": "https://evil.example.com", "authorization_endpoint": "x",
                "token_endpoint": "x", "jwks_uri": "x"}
    monkeypatch.setattr(client, "_get_json", lambda url: document)
    with pytest.raises(OidcError, match="set the issuer exactly") as exc:
        client.start(CALLBACK)
    assert exc.value.reason == "issuer"


def test_the_pending_sign_in_cookie_cannot_be_edited() -> None:
    pending = Pending("s", "n", "v", 1.0)
    text = seal(pending, b"k" * 32)
    assert unseal(text, b"k" * 32) == pending
    body, mac = text.rsplit(".", 1)
    edited = base64.urlsafe_b64encode(
        json.dumps({"state": "x", "nonce": "n", "verifier": "v", "started": 1.0}).encode()
    ).decode()
    for bad in (f"{edited}.{mac}", f"{body}.{'0' * len(mac)}", "", "no-dot"):
        with pytest.raises(OidcError) as exc:
            unseal(bad, b"k" * 32)
        assert exc.value.reason == "state"
    with pytest.raises(OidcError):
        unseal(text, b"j" * 32)


def test_the_provider_is_a_real_process(provider: RunningProvider) -> None:
    found = httpx.get(f"{provider.issuer}/.well-known/openid-configuration", timeout=5).json()
    assert found["issuer"] == provider.issuer and found["jwks_uri"]


def test_a_token_not_valid_yet_is_refused(provider: RunningProvider) -> None:
    """An ID token whose `nbf` lies past the minute of leeway is refused, as one issued in the
    future is (RFC 7519 4.1.5); the provider signs whatever claims it holds for the user."""
    provider.set_user("nora-sub", {"preferred_username": "nora", "nbf": int(time.time()) + 3600})
    client = OidcClient(provider.issuer, "kb", SECRET)
    pending, back = sign_in(client, provider, "nora-sub")
    id_token = exchange(client, pending, back)["id_token"]
    with pytest.raises(OidcError, match="not valid yet") as refused:
        client.verify(id_token, pending.nonce)
    assert refused.value.reason == "expired"
    provider.set_user("nora-sub", {"preferred_username": "nora", "nbf": int(time.time()) + 30})
    pending, back = sign_in(client, provider, "nora-sub")  # within the leeway: accepted
    assert client.verify(exchange(client, pending, back)["id_token"], pending.nonce)


def test_the_callbacks_error_text_cannot_forge_a_log_line(provider: RunningProvider) -> None:
    """`error` and `error_description` come from whoever sent the browser to the callback: their
    line breaks and other control characters never reach the message that is logged."""
    client = OidcClient(provider.issuer, "kb", SECRET)
    _, pending = client.start(CALLBACK)
    forged = "x\r\n2026-12-06 02:00:00,000 INFO ui.identity.login: login of alice from 10.0.0.1"
    with pytest.raises(OidcError) as refused:
        client.finish(pending, {"error": "access_denied\n", "error_description": forged,
                                "state": pending.state}, CALLBACK)
    text = str(refused.value)
    assert text.isprintable() and "login of alice" in text, text
