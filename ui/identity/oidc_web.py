"""Sign-in with the company's OpenID provider (`auth.oidc_issuer`): `GET /login/oidc` sends the
browser to the provider, with the pending sign-in (state, nonce, PKCE verifier) sealed in a
short-lived cookie; `GET /login/oidc/callback` takes it back, checks everything
`ui/identity/oidc.py` checks, keeps the person as a password-less local user with the groups
of `auth.group_map` (bound to the provider's subject), and opens a session as the password form
does. A refusal is a short page with one line (what failed, what to check) and a way back; the
log says the same, with the address, and the audit trail records each sign-in and refusal
(method "oidc", the check, the subject). Callbacks are counted per address by the login
throttle before they cost a request to the provider or an audit record: a flood of forged ones
from one address is refused (429) once the address is at its limit.

    server.include_router(oidc_router(client, signin, sessions, cookies, key, guard,
                                      redirect_url))
    # the sign-in page links to START ("Sign in with your company account")
"""

from __future__ import annotations

import html
import logging
import secrets

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ui.identity.login import LoginGuard, SessionTable, client_address
from ui.identity.oidc import Identity, OidcClient, OidcError, seal, unseal
from ui.identity.signin import SignIn
from ui.identity.users import AccountRefused

logger = logging.getLogger(__name__)

START = "/login/oidc"
CALLBACK = "/login/oidc/callback"
PENDING_COOKIE = "kb-oidc-pending"


def refused_page(line: str, status: int) -> HTMLResponse:
    """The page a refused sign-in shows: one line, and the way back to the sign-in page."""
    body = (f"<!doctype html><meta charset=utf-8><title>Sign-in refused</title>"
            f"<p id=kb-signin-refused>{html.escape(line)}</p>"
            f'<p><a href="{START}">Try again</a> · <a href="/">Back to the sign-in page</a></p>')
    return HTMLResponse(body, status_code=status)


def oidc_router(client: OidcClient, signin: SignIn, sessions: SessionTable, cookies: list[str],
                key: bytes, guard: LoginGuard, redirect_url: str = "") -> APIRouter:
    """The two routes of an OpenID sign-in; `redirect_url` is the callback's address as the
    provider knows it (empty: this request's own address of `CALLBACK`)."""
    router = APIRouter()
    audit = signin.users.audit

    def callback_url(request: Request) -> str:
        return redirect_url or str(request.url.replace(path=CALLBACK, query=""))

    @router.get(START, include_in_schema=False)
    async def start(request: Request) -> Response:
        try:
            url, pending = await run_in_threadpool(client.start, callback_url(request))
        except OidcError as exc:
            logger.warning("OIDC sign-in not started for %s: %s", client_address.get(), exc)
            return refused_page(str(exc), 503)
        response = RedirectResponse(url, status_code=302)
        response.set_cookie(PENDING_COOKIE, seal(pending, key), max_age=600, path=START,
                            httponly=True, samesite="lax", secure=request.url.scheme == "https")
        return response

    @router.get(CALLBACK, include_in_schema=False)
    async def callback(request: Request) -> Response:
        address = client_address.get()
        turn = await run_in_threadpool(guard.reserve_address, address)
        if not turn.granted:  # a flood: no request to the provider, no audit record
            logger.warning("OIDC callback from %s refused: locked for %.0f s more", address,
                           turn.wait)
            return refused_page(f"Too many failed sign-ins from this address: try again in "
                                f"{turn.wait:.0f} s.", 429)
        try:
            pending = unseal(request.cookies.get(PENDING_COOKIE, ""), key)
            identity = await run_in_threadpool(client.finish, pending,
                                               dict(request.query_params), callback_url(request))
        except OidcError as exc:  # the turn stays counted as a failure
            logger.warning("OIDC sign-in refused (%s) from %s: %s", exc.reason, address, exc)
            audit.soon("signin", "?", outcome="refused", address=address, method="oidc",
                       reason=exc.reason)
            return refused_page(str(exc), 400 if exc.reason != "provider" else 502)
        try:
            user = await run_in_threadpool(signin.adopt_oidc, identity)
        except AccountRefused as exc:
            return refuse_account(identity, exc, address)
        await run_in_threadpool(guard.succeeded, turn, user.name)
        token = secrets.token_urlsafe(32)
        await run_in_threadpool(sessions.__setitem__, token, user.name)
        logger.info("login of %s from %s (OIDC)", user.name, address)
        audit.soon("signin", user.name, object=user.name, address=address, method="oidc",
                   sub=identity.subject)
        secure = request.url.scheme == "https"
        response = RedirectResponse("/", status_code=302)
        response.set_cookie(cookies[0] if secure else cookies[-1], token, httponly=True,
                            samesite="lax", secure=secure, path="/")
        response.delete_cookie(PENDING_COOKIE, path=START)
        return response

    def refuse_account(identity: Identity, exc: AccountRefused, address: str) -> Response:
        name = identity.name[:64]
        logger.warning("OIDC sign-in of %r (subject %r) from %s refused: %s", name,
                       identity.subject[:255], address, exc)
        audit.soon("signin", name, object=name, outcome="refused", address=address,
                   method="oidc", reason=exc.reason, sub=identity.subject[:255])
        line = str(exc) if exc.reason == "disabled" else (
            f"{name}: this account cannot be signed in to with the company account here; ask "
            "an administrator (the server log says why)")
        return refused_page(line, 403)

    return router
