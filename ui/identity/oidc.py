"""Company sign-in over OpenID Connect (Keycloak, Entra ID, Okta, ...): the authorization code
flow with PKCE, state and nonce, the provider found by discovery, and its ID token checked
before anyone is signed in: signed by one of the provider's published keys, by the provider
discovery named (`iss`), for this client (`aud`, and `azp` where several audiences), not
expired nor issued or valid only from later (`iat`, `nbf`), and carrying the nonce this sign-in
sent. An access token an agent brings to the MCP server (ui/api/mcp/) passes the same checks, its
audience kb's resource URL in place of the client id (`verify_access`).

    client = OidcClient("https://sso.example.com/realms/acme", "kb", secret)
    url, pending = client.start("https://kb.example.com/login/oidc/callback")
    # the browser goes to `url`; `seal(pending, key)` rides along in a cookie; back at the
    # callback, with the provider's query parameters:
    identity = client.finish(unseal(cookie, key), request.query_params, redirect_uri)
    identity.name, identity.groups -> ("carol", ("hr-staff",))

Each refusal is an OidcError whose `reason` names the check that failed (state, provider,
signature, issuer, audience, expired, nonce), for the log and the audit trail, and whose text is
one line an administrator can act on (what the provider or the browser sent is quoted with its
control characters made plain, so it cannot forge log lines).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from core.errors import KbError

PENDING_MAX_AGE_S = 600.0  # a sign-in not finished within ten minutes starts again
LEEWAY_S = 60.0  # clock difference allowed between the provider and this machine
METADATA_TTL_S = 3600.0  # discovery and keys are read again after an hour (keys rotate)
USED_STATES = 10_000  # finished sign-ins remembered, so that a callback replayed is refused
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class OidcError(KbError):
    """A sign-in refused: `reason` names the check (state, provider, signature, issuer,
    audience, expired, nonce)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Pending:
    """A sign-in begun: what the callback must match (state, nonce) and prove (the PKCE
    verifier), and when it began."""

    state: str
    nonce: str
    verifier: str
    started: float


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in: the name (the configured claim, else `sub`), the
    directory groups (the configured claim), every claim it gave, and the refresh token that
    reads them again later ("" when the provider gave none)."""

    subject: str
    name: str
    groups: tuple[str, ...]
    claims: dict[str, Any]
    refresh_token: str = ""


def seal(pending: Pending, key: bytes) -> str:
    """A pending sign-in as cookie text, signed with `key` so it cannot be forged or edited."""
    body = base64.urlsafe_b64encode(json.dumps(asdict(pending)).encode()).decode()
    return f"{body}.{_mac(body, key)}"


def unseal(text: str, key: bytes) -> Pending:
    """The pending sign-in `seal` wrote; OidcError("state") when the text was not signed with
    `key` or is not one."""
    body, _, mac = text.rpartition(".")
    if not body or not hmac.compare_digest(mac, _mac(body, key)):
        raise OidcError("state", "sign-in cookie missing or altered: start the sign-in again")
    try:
        return Pending(**json.loads(base64.urlsafe_b64decode(body)))
    except (ValueError, TypeError) as exc:
        raise OidcError("state", "sign-in cookie unreadable: start the sign-in again") from exc


def plain(text: object, limit: int = 200) -> str:
    """Text another party sent, fit for one log line: control and line-break characters as
    "?", at most `limit` characters.

        plain("denied\n2026-12-06 INFO login of alice") -> "denied?2026-12-06 INFO login of alice"
    """
    return "".join(c if c.isprintable() else "?" for c in str(text)[:limit])


def _mac(body: str, key: bytes) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


class OidcClient:
    """One OpenID provider for one client (thread-safe: discovery and keys are cached under a
    lock, used states are remembered under it)."""

    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str = "",
        scopes: Sequence[str] = ("openid", "profile", "email"),
        user_claim: str = "preferred_username",
        groups_claim: str = "groups",
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        parsed = urllib.parse.urlsplit(self.issuer)
        if parsed.scheme != "https" and not (
            parsed.scheme == "http" and parsed.hostname in LOOPBACK
        ):
            raise OidcError("provider", f"auth.oidc_issuer = {issuer!r}: use the provider's "
                                        "https address (plain http only on this machine)")
        self.client_id, self.client_secret = client_id, client_secret
        self.scopes = " ".join(dict.fromkeys(["openid", *scopes]))
        self.user_claim, self.groups_claim = user_claim, groups_claim
        self.timeout_s, self.clock = timeout_s, clock
        self._lock = threading.Lock()
        self._metadata: tuple[float, dict[str, Any]] | None = None
        self._keys: tuple[float, KeySet] | None = None
        self._used: OrderedDict[str, None] = OrderedDict()

    # --- the provider -----------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """The provider's discovery document, read at most once an hour; OidcError("provider")
        naming auth.oidc_issuer when it cannot be read or names another issuer."""
        with self._lock:
            if self._metadata and self.clock() - self._metadata[0] < METADATA_TTL_S:
                return self._metadata[1]
        found = self._get_json(f"{self.issuer}/.well-known/openid-configuration")
        if str(found.get("issuer", "")).rstrip("/") != self.issuer:
            raise OidcError("issuer", f"auth.oidc_issuer = {self.issuer!r}, but the provider's "
                                      f"discovery names {found.get('issuer')!r}: set the issuer "
                                      "exactly as the provider writes it")
        for endpoint in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not found.get(endpoint):
                raise OidcError("provider", f"the provider at auth.oidc_issuer {self.issuer!r} "
                                            f"publishes no {endpoint}")
        with self._lock:
            self._metadata = (self.clock(), found)
        return found

    def keys(self, refresh: bool = False) -> KeySet:
        """The provider's signing keys (its JWKS), read again after an hour or on `refresh`."""
        with self._lock:
            if self._keys and not refresh and self.clock() - self._keys[0] < METADATA_TTL_S:
                return self._keys[1]
        found = KeySet.import_key_set(cast(Any, self._get_json(self.metadata()["jwks_uri"])))
        with self._lock:
            self._keys = (self.clock(), found)
        return found

    def _get_json(self, url: str) -> dict[str, Any]:
        try:
            reply = httpx.get(url, timeout=self.timeout_s)
            reply.raise_for_status()
            found = reply.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OidcError("provider", f"the sign-in provider did not answer {url} ({exc}): "
                                        "check auth.oidc_issuer and that the provider is up"
                            ) from exc
        if not isinstance(found, dict):
            raise OidcError("provider", f"{url} did not answer a JSON object")
        return found

    # --- a sign-in --------------------------------------------------------------------------
    def start(self, redirect_uri: str) -> tuple[str, Pending]:
        """Where to send the browser, and the pending sign-in to keep until it comes back."""
        pending = Pending(secrets.token_urlsafe(24), secrets.token_urlsafe(24),
                          secrets.token_urlsafe(48), self.clock())
        challenge = base64.urlsafe_b64encode(
            hashlib.sha256(pending.verifier.encode()).digest()).decode().rstrip("=")
        query = urllib.parse.urlencode({
            "response_type": "code", "client_id": self.client_id, "redirect_uri": redirect_uri,
            "scope": self.scopes, "state": pending.state, "nonce": pending.nonce,
            "code_challenge": challenge, "code_challenge_method": "S256",
        })
        endpoint = self.metadata()["authorization_endpoint"]
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}", pending

    def finish(self, pending: Pending, params: Mapping[str, str], redirect_uri: str) -> Identity:
        """The identity of a sign-in the provider sent back (`params`: its query), once every
        check passed; OidcError naming the one that failed."""
        if params.get("error"):
            raise OidcError("provider", f"the provider refused the sign-in: "
                                        f"{plain(params['error'], 64)} "
                                        f"{plain(params.get('error_description', ''))}".strip())
        state = params.get("state", "")
        if not hmac.compare_digest(state, pending.state):
            raise OidcError("state", "the sign-in came back with another state: start again")
        if self.clock() - pending.started > PENDING_MAX_AGE_S:
            raise OidcError("state", "the sign-in took longer than ten minutes: start again")
        with self._lock:
            if state in self._used:
                raise OidcError("state", "this sign-in was already used: start again")
            self._used[state] = None
            while len(self._used) > USED_STATES:
                self._used.popitem(last=False)
        form = {"grant_type": "authorization_code", "code": params.get("code", ""),
                "redirect_uri": redirect_uri, "code_verifier": pending.verifier}
        tokens = self._tokens(form)
        if "id_token" not in tokens:
            raise OidcError("provider", "the provider gave no ID token: check that the client "
                                        "asks for the openid scope")
        claims = self.verify(str(tokens["id_token"]), pending.nonce)
        return self._identity(claims, str(tokens.get("refresh_token", "")))

    def refresh(self, identity: Identity) -> Identity:
        """`identity` as the provider has it now: its refresh token traded for a new access
        token, whose userinfo gives the current claims (groups moved, a user disabled or
        removed at the provider is refused: OidcError)."""
        if not identity.refresh_token:
            raise OidcError("expired", f"no refresh token for {identity.name}: sign in again")
        tokens = self._tokens({"grant_type": "refresh_token",
                               "refresh_token": identity.refresh_token})
        endpoint = self.metadata().get("userinfo_endpoint")
        if not endpoint:
            raise OidcError("provider", "the provider publishes no userinfo_endpoint")
        try:
            reply = httpx.get(endpoint, timeout=self.timeout_s,
                              headers={"Authorization": f"Bearer {tokens['access_token']}"})
            reply.raise_for_status()
            claims = reply.json()
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            raise OidcError("provider", f"the provider's userinfo failed ({exc})") from exc
        if not isinstance(claims, dict) or claims.get("sub") != identity.subject:
            raise OidcError("provider", "the provider's userinfo names another subject")
        return self._identity(claims, str(tokens.get("refresh_token") or identity.refresh_token))

    def _identity(self, claims: dict[str, Any], refresh_token: str) -> Identity:
        groups = claims.get(self.groups_claim, [])
        if isinstance(groups, str):
            groups = [groups]
        name = str(claims.get(self.user_claim) or claims["sub"])
        return Identity(str(claims["sub"]), name,
                        tuple(str(g) for g in groups if isinstance(g, str | int)), claims,
                        refresh_token)

    def _tokens(self, form: dict[str, str]) -> dict[str, Any]:
        """The provider's token endpoint's answer to `form` (a code proven by the PKCE
        verifier, or a refresh token), the client authenticated with its secret."""
        form = {**form, "client_id": self.client_id}
        auth = (self.client_id, self.client_secret) if self.client_secret else None
        try:
            reply = httpx.post(self.metadata()["token_endpoint"], data=form, auth=auth,
                               timeout=self.timeout_s)
            found = reply.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OidcError("provider", f"the provider's token endpoint failed ({exc}): check "
                                        "that the provider is up") from exc
        if reply.status_code != 200 or not isinstance(found, dict):
            detail = plain(found.get("error", reply.status_code), 64) \
                if isinstance(found, dict) else ""
            raise OidcError("provider", f"the provider refused the token request ({detail}): "
                                        "check auth.oidc_client_id, KB_OIDC_CLIENT_SECRET and the "
                                        "redirect URI")
        return found

    def verify(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The claims of an ID token signed by the provider, issued by it, for this client,
        not expired and carrying `nonce`; OidcError naming the first check that fails."""
        claims = self._signed_claims(id_token, "ID token", self.client_id,
                                     "auth.oidc_client_id")
        audiences = claims.get("aud")
        if isinstance(audiences, list) and len(audiences) > 1 and \
                claims.get("azp") != self.client_id:
            raise OidcError("audience", f"the ID token is for {audiences}, not "
                                        f"auth.oidc_client_id {self.client_id!r}")
        if not hmac.compare_digest(str(claims.get("nonce", "")), nonce):
            raise OidcError("nonce", "the ID token carries another nonce: start again")
        return claims

    def verify_access(self, token: str, resource: str) -> dict[str, Any]:
        """The claims of an access token (a JWT) the provider signed and issued for
        `resource` (its `aud`: kb's resource URL), not expired; OidcError naming the first
        check that fails."""
        return self._signed_claims(token, "access token", resource, "kb's resource URL")

    def identity(self, claims: Mapping[str, Any]) -> Identity:
        """Who verified `claims` name: the user claim and groups claim as configured."""
        return self._identity(dict(claims), "")

    def _signed_claims(self, token: str, what: str, audience: str,
                       audience_name: str) -> dict[str, Any]:
        """The claims of `token` once its signature verifies with the provider's keys, its
        issuer is the provider, `audience` is among its audiences, and its times hold (`exp`,
        `iat`, `nbf`, a minute of leeway); OidcError naming the first check that fails."""
        algorithms = [a for a in self.metadata().get("id_token_signing_alg_values_supported",
                                                     ["RS256"]) if a != "none"]
        try:
            try:
                decoded = jwt.decode(token, self.keys(), algorithms=algorithms)
            except JoseError:  # a key the provider rotated in since the keys were read
                decoded = jwt.decode(token, self.keys(refresh=True), algorithms=algorithms)
        except (JoseError, ValueError) as exc:
            raise OidcError("signature", f"the {what}'s signature does not verify with the "
                                         f"provider's keys ({type(exc).__name__})") from exc
        claims = dict(decoded.claims)
        now = self.clock()
        audiences = claims.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else list(audiences or [])
        if str(claims.get("iss", "")).rstrip("/") != self.issuer:
            raise OidcError("issuer", f"the {what} was issued by {plain(claims.get('iss'))!r}, "
                                      f"not {self.issuer!r}")
        if audience not in audiences:
            raise OidcError("audience", f"the {what} is for {plain(audiences)}, not "
                                        f"{audience_name} {audience!r}")
        if not isinstance(claims.get("exp"), int | float) or claims["exp"] < now - LEEWAY_S:
            raise OidcError("expired", f"the {what} has expired: check this machine's clock")
        if isinstance(claims.get("iat"), int | float) and claims["iat"] > now + LEEWAY_S:
            raise OidcError("expired", f"the {what} was issued in the future: check clocks")
        if isinstance(claims.get("nbf"), int | float) and claims["nbf"] > now + LEEWAY_S:
            raise OidcError("expired", f"the {what} is not valid yet (nbf): check clocks")
        if not claims.get("sub"):
            raise OidcError("provider", f"the {what} names no subject (sub)")
        return claims
