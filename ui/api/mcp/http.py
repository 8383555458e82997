"""The MCP server inside `kb serve`: streamable HTTP at `/mcp` (the SDK's session manager: the
2026-07-28 revision's self-contained requests, and the initialize handshake and sessions of the
earlier ones), behind a gate that names the caller of every request from its bearer token
(bearer.py) and refuses the rest with 401 and the header that starts a client's OAuth
flow: `WWW-Authenticate: Bearer resource_metadata="…"`. kb is an OAuth protected resource
(RFC 9728): its metadata at `/.well-known/oauth-protected-resource/mcp` (and at the root
well-known address) names the resource, `ui.public_url` + /mcp, and `auth.oidc_issuer` as its
authorization server.

    mount_mcp(server, services, asking)     # ui/web/server.py, before the page's mount at /

Every request is checked again, so a token revoked, expired or of an account disabled since the
last call is refused at once, whatever the MCP session; a session is bound to the principal
that opened it (another token's requests for it get 404 from the SDK).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from core.errors import KbError
from ui.api.asking import Asking
from ui.api.mcp.bearer import Bearer, Bearers
from ui.api.mcp.server import Who, build_server
from ui.api.mcp.tools import KbTools
from ui.identity.login import client_address
from ui.wiring import Services

logger = logging.getLogger(__name__)

PATH = "/mcp"
WELL_KNOWN = "/.well-known/oauth-protected-resource"
CALLER = "kb.mcp.caller"  # the scope key the gate writes the caller under
# The SDK's DNS-rebinding check (Host and Origin against a list) is off: every request must
# bring a bearer token, which a browser never adds by itself, and the Host kb is reached by is
# the operator's (ui.public_url, a proxy).
OPEN_HOSTS = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def metadata_url(base_url: str) -> str:
    """Where the protected resource metadata of `base_url`'s /mcp is (RFC 9728 3.1: the
    well-known prefix before the resource's path).

        metadata_url("https://kb.example.com") ->
            "https://kb.example.com/.well-known/oauth-protected-resource/mcp"
    """
    return base_url + WELL_KNOWN + PATH


class BearerGate:
    """ASGI in front of the SDK's app: the caller of each request from its bearer token,
    written into the scope (`CALLER`, and the SDK's `user` that binds a session to it), else
    401 with WWW-Authenticate naming the resource metadata."""

    def __init__(self, app: ASGIApp, bearers: Bearers, metadata: str) -> None:
        self.app, self.bearers, self.metadata = app, bearers, metadata

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scheme, _, token = Request(scope).headers.get("authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        bearer = await run_in_threadpool(self.bearers.caller, token) if token else None
        if bearer is None:
            await self._refuse(bool(token), scope, receive, send)
            return
        scope[CALLER] = Who(bearer.user, client_address.get())
        scope["user"] = AuthenticatedUser(principal(bearer))
        await self.app(scope, receive, send)

    async def _refuse(self, sent: bool, scope: Scope, receive: Receive, send: Send) -> None:
        challenge = f'Bearer resource_metadata="{self.metadata}"'
        if sent:  # RFC 6750 3.1: an error code only for a token that came
            challenge += ', error="invalid_token"'
        how = "an OAuth access token of the company's sign-in, or " if self.bearers.oauth else ""
        detail = (f"send {how}a kb API token (`kb users token NAME`) as the bearer token; "
                  f"{'it was refused' if sent else 'none came'}")
        await JSONResponse({"error": "invalid_token" if sent else "unauthorized",
                            "error_description": detail}, status_code=401,
                           headers={"WWW-Authenticate": challenge})(scope, receive, send)


def principal(bearer: Bearer) -> AccessToken:
    """The SDK's view of a caller: what binds a session to them (no token inside)."""
    return AccessToken(token="", client_id=bearer.client, scopes=[], subject=bearer.subject,
                       claims={"iss": bearer.issuer})


async def http_caller(ctx: Context) -> Who:
    """The caller the gate found for this call's HTTP request."""
    request = ctx.request_context.request
    who = request.scope.get(CALLER) if isinstance(request, Request) else None
    if not isinstance(who, Who):
        raise KbError("no caller: send a bearer token with each request")
    return who


def protected_resource(resource: str, bearers: Bearers, services: Services) -> dict[str, Any]:
    """kb's RFC 9728 metadata: the resource and, with an OpenID provider, that provider as
    its authorization server and the scopes the sign-in asks for."""
    found: dict[str, Any] = {"resource": resource, "resource_name": "kb-assistant",
                             "bearer_methods_supported": ["header"]}
    if bearers.oauth:
        auth = services.settings.auth
        found["authorization_servers"] = [auth.oidc_issuer.rstrip("/")]
        found["scopes_supported"] = list(dict.fromkeys(["openid", *auth.oidc_scopes]))
    return found


def mount_mcp(server: FastAPI, services: Services, asking: Asking) -> None:
    """`/mcp` and the resource metadata on `server` (before a mount at / takes every path),
    the SDK's session manager run by `server`'s lifespan; questions share `asking`'s gate and
    answering threads with the page and the other APIs."""
    base = services.settings.ui.base_url
    resource = base + PATH
    bearers = Bearers(services.users, services.signin, resource)
    tools = KbTools(asking, services.assistant, services.store, services.users.audit, base)
    mcp = build_server(tools, http_caller)
    # JSON replies, not an SSE stream per call: the tools send no notifications, and the SDK
    # then answers in the request's own task (no task beside it, no SSE framing)
    mcp.streamable_http_app(transport_security=OPEN_HOSTS, json_response=True)
    manager = mcp.session_manager
    gate = BearerGate(StreamableHTTPASGIApp(manager), bearers, metadata_url(base))
    server.router.routes.append(Route(PATH, endpoint=gate))
    metadata = protected_resource(resource, bearers, services)

    async def well_known() -> JSONResponse:
        return JSONResponse(metadata, headers={"Access-Control-Allow-Origin": "*"})

    for path in (WELL_KNOWN + PATH, WELL_KNOWN):
        server.add_api_route(path, well_known, methods=["GET"], include_in_schema=False)
    running = server.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with running(app) as state, manager.run():
            yield state

    server.router.lifespan_context = lifespan
    if bearers.oauth and not services.settings.ui.public_url:
        logger.warning("auth.oidc_issuer is set but ui.public_url is not: the MCP server takes "
                       "only access tokens issued for %s; set ui.public_url to the address "
                       "agents reach kb at", resource)
