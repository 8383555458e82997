"""Who a bearer token names at the MCP server, checked on every request: a kb API token
(`kb users token NAME`: its user, while enabled and unexpired, read again from the directory
when due, as for /api and /v1), or an OAuth 2.1 access token from the company's OpenID
provider (`auth.oidc_issuer`): a JWT whose signature verifies with the provider's keys, issued
by it, for kb's resource URL (`ui.public_url` + /mcp) and not expired (ui/identity/oidc.py),
its user and groups read from the claims the sign-in reads (`auth.oidc_user_claim`,
`auth.oidc_groups_claim`, `auth.group_map`) and its account bound to the provider's (issuer,
subject) as the sign-in binds it (ui/identity/signin.py). An account an admin disabled is
refused by either way at its next request.

    bearers = Bearers(users, signin, resource="https://kb.example.com/mcp")
    bearers.caller("kb_9x…") -> Bearer(user=User("alice", ...), client="kb-token", ...)
    bearers.caller("eyJhbGciOi…") -> Bearer(user=User("carol", ...), client="oauth", ...)
    bearers.caller("nonsense") -> None
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.types import User
from ui.identity.oidc import OidcError, plain
from ui.identity.signin import SignIn
from ui.identity.users import TOKEN_PREFIX, AccountRefused, Users

logger = logging.getLogger(__name__)

KB_ISSUER = "kb"  # the issuer of kb's own API tokens, for the session's principal


@dataclass(frozen=True)
class Bearer:
    """The user a token names and the principal an MCP session is bound to (the SDK refuses
    a session's requests that bring another): (client, issuer, subject)."""

    user: User
    client: str
    issuer: str
    subject: str


class Bearers:
    """The two kinds of bearer token (thread-safe: the users service and the provider's
    client are)."""

    def __init__(self, users: Users, signin: SignIn | None, resource: str) -> None:
        self.users, self.signin, self.resource = users, signin, resource

    @property
    def oauth(self) -> bool:
        """Whether access tokens of an OpenID provider are taken (auth.oidc_issuer is set)."""
        return self.signin is not None and self.signin.oidc is not None

    def caller(self, token: str) -> Bearer | None:
        """Who `token` names now; None (logged) when nobody may call with it."""
        if token.startswith(TOKEN_PREFIX):
            user = self.users.by_token(token)
            if user is None:
                logger.warning("MCP request with a kb token that is unknown, expired, revoked "
                               "or whose account is off: refused")
                return None
            return Bearer(user, "kb-token", KB_ISSUER, user.name)
        return self._access_token(token) if self.oauth else None

    def _access_token(self, token: str) -> Bearer | None:
        assert self.signin is not None and self.signin.oidc is not None  # self.oauth
        oidc = self.signin.oidc
        try:
            claims = oidc.verify_access(token, self.resource)
            identity = oidc.identity(claims)
            user = self.signin.adopt_bearer(identity)
        except (OidcError, AccountRefused) as exc:
            logger.warning("MCP request with an access token refused (%s): %s", exc.reason,
                           plain(exc))
            return None
        client = str(claims.get("azp") or claims.get("client_id") or "oauth")
        return Bearer(user, client, oidc.issuer, identity.subject)
