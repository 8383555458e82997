"""The web server: FastAPI with `POST /api/ask`, the OpenAI-compatible `/v1/` routes, the MCP
server at `/mcp` (ui/api/mcp/), the chat platforms' callbacks (`/channels/<platform>/events`,
ui/api/channels/), `GET /metrics`, the cited page and section routes, and the page
(`ui/page/app.py`) mounted at `/` behind the login, its routes guarded.

    app = create_server(services)   # FastAPI: the routes + the page behind a login
    serve(settings)                 # opens the services, uvicorn on ui.host:port

Cited PDF pages come from `GET /page/{chunk_id}` and cited Word sections from
`GET /section/{chunk_id}`, which check the asker's groups again (404 outside them). Gradio's
sessions, uploads and files are guarded (`ui/identity/guard.py`), its bodies capped
(`ui/web/bodies.py`) and its temp folder private; only admins may upload.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import gradio as gr
from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount

from core.config import Settings
from core.errors import AccessDenied
from core.types import User
from ui.admin.sources import watch_sources
from ui.api.asking import Asking
from ui.api.channels.hub import open_channels
from ui.api.kb_api import api_router
from ui.api.mcp.http import mount_mcp
from ui.api.openai_api import openai_router
from ui.audit import cli_actor, settings_digest
from ui.handlers import DEMO_USER
from ui.i18n import t
from ui.identity.follow import FollowFirst
from ui.identity.guard import GradioState, GuardGradio, SessionOwners, keep_private
from ui.identity.header import TrustedHeader
from ui.identity.login import (
    LoginGuard,
    SessionTable,
    client_address,
    login_check,
    shared_cookie_id,
)
from ui.identity.oidc_web import START as OIDC_START
from ui.identity.oidc_web import oidc_router
from ui.identity.proxies import TrustedProxies
from ui.identity.signin import SignIn
from ui.metrics import CONTENT_TYPE, Metrics
from ui.page import render
from ui.page.app import App, build_app
from ui.page.chat import ChatHandlers
from ui.web.bodies import BodyLimit, body_cap
from ui.web.login_notice import LoginNotice
from ui.web.metrics_access import MetricsAccess
from ui.web.quiet import quiet_stop
from ui.wiring import Services, open_services, settle_heap, sign_in_for

logger = logging.getLogger(__name__)

SessionUser = Callable[[Request], User | None]


def create_server(services: Services, demo: bool | None = None) -> FastAPI:
    """FastAPI with `POST /api/ask` and `GET /page/{chunk_id}`, and the page at `/` behind the
    login (none in demo mode), with Gradio's sessions, uploads and files guarded and its temp
    folder private (`ui/identity/guard.py`)."""
    users, ui = services.users, services.settings.ui
    demo = ui.demo if demo is None else demo
    blocks = build_app(services, demo)
    kb_app: App = blocks.kb_app  # type: ignore[attr-defined]
    # Gradio runs at most max_threads events at once (queue slots and threads); beyond the
    # admitted questions, room is left for the refusals and the other events
    blocks.max_threads = max(40, kb_app.gate.depth + 16)
    blocks.queue(default_concurrency_limit=4)
    sessions = SessionTable(users, ui.session_hours * 3600)
    guard = LoginGuard(users.ledger, ui.login_max_failures, ui.login_max_failures_per_address,
                       ui.login_lockout_s)
    cookies: list[str] = []  # Gradio's session cookie names, known once it is mounted
    proxies = TrustedProxies.parse(ui.trusted_proxies, "ui.trusted_proxies")
    scrapers = MetricsAccess.parse(ui.metrics_allow, ui.metrics_token)
    max_body = body_cap(ui.max_body_bytes)
    session_user = signed_in_user(sessions, cookies, demo)
    # one sign-in policy for the form, the trusted header and the OpenID routes: it remembers
    # when each directory user was read and holds OpenID users' refresh tokens
    signin = services.signin or sign_in_for(services.settings, users)
    auth = services.settings.auth

    server = _own_routes(services, kb_app, session_user, scrapers)
    server.state.login_guard = guard
    if signin.oidc is not None and not demo:  # before the page's mount at /: it takes all
        server.include_router(oidc_router(
            signin.oidc, signin, sessions, cookies,
            users.ledger.meta_default("oidc_state_key", secrets.token_hex(32)).encode(), guard,
            auth.oidc_redirect_url))
    mounted = _mount_page(server, blocks, services, signin, guard, demo)
    gradio_app: Any = next(r.app for r in mounted.routes if isinstance(r, Mount))
    gradio_app.tokens = sessions
    gradio_app.cookie_id = shared_cookie_id(users)  # one cookie name for every app process
    cookies += [f"access-token-{gradio_app.cookie_id}",
                f"access-token-unsecure-{gradio_app.cookie_id}"]
    _guard_gradio(mounted, gradio_app, blocks, session_user, proxies, max_body)
    if not demo:  # a line on the sign-in page for a 429 or a 503 (Gradio's form shows none)
        mounted.add_middleware(LoginNotice)
    if users.follow is not None and not demo:  # the directory or the provider asked in a
        mounted.add_middleware(FollowFirst, session_user=session_user)  # thread, not the loop
    if auth.user_header and not demo:  # outermost: the headers settled before anything reads
        mounted.add_middleware(
            TrustedHeader, signin=signin,
            sessions=sessions, cookies=cookies, guard=guard,
            proxies=TrustedProxies.parse(auth.trusted_proxies, "auth.trusted_proxies"),
            user_header=auth.user_header, groups_header=auth.groups_header)
    _follow_the_ledger(services)
    return mounted


def signed_in_user(sessions: SessionTable, cookies: list[str], demo: bool) -> SessionUser:
    """Who sent a request, from Gradio's session cookie (named in `cookies`); the demo user in
    demo mode, None when nobody is signed in."""

    def session_user(request: Request) -> User | None:
        if demo:
            return DEMO_USER
        for name in cookies:
            user = sessions.user(request.cookies.get(name))
            if user is not None:
                return user
        return None

    return session_user


def _own_routes(services: Services, kb_app: App, session_user: SessionUser,
                scrapers: MetricsAccess) -> FastAPI:
    """FastAPI with the app's own routes: the API (`ui/api/kb_api.py`), the OpenAI-compatible one
    (`ui/api/openai_api.py`), the MCP server (`ui/api/mcp/`), `/metrics`, and the cited page and
    section routes; no schema or docs pages."""
    server = FastAPI(title="kb-assistant", docs_url=None, redoc_url=None, openapi_url=None)
    # one gate, and one set of answering threads, for the page and both APIs
    asking = Asking(services.assistant, services.users, services.metrics, kb_app.gate,
                    services.settings.ui.busy_retry_after_s)
    server.include_router(api_router(asking, services.conversations))
    server.include_router(openai_router(asking, services.settings.ui.public_url))
    mount_mcp(server, services, asking)
    channels = open_channels(services, asking)  # the chat platforms (ui/api/channels/)
    if channels is not None:
        server.include_router(channels.router())
    watch_sources(services.metrics, services.store, services.settings.sources)
    server.add_api_route("/metrics", metrics_route(services.metrics, scrapers),
                         methods=["GET"], include_in_schema=False)
    server.include_router(page_router(kb_app, session_user))
    server.state.kb_app = kb_app
    return server


def _mount_page(server: FastAPI, blocks: gr.Blocks, services: Services, signin: SignIn,
                guard: LoginGuard, demo: bool) -> FastAPI:
    """`server` with the page mounted at `/`, behind the login unless in demo mode; with an
    OpenID provider, its sign-in page links to it."""
    ui = services.settings.ui
    message = t("title") + " · " + t("title", "zh")
    if services.settings.auth.oidc_issuer:
        message += f'<p><a id="kb-oidc" href="{OIDC_START}">{t("oidc_sign_in")}</a></p>'
    mounted = gr.mount_gradio_app(
        server, blocks, path="/",
        auth=None if demo else login_check(signin, ui, guard,
                                           services.metrics.login_failures.inc),
        auth_message=message,
        max_file_size=f"{int(ui.upload_max_mb)}mb", css=render.CSS,
        footer_links=["api"], run_history=False, show_error=False,
        # FastAPI's schema of Gradio's own routes answered anyone at /openapi.json: gone.
        # Gradio's /gradio_api/info and /gradio_api/openapi.json (the "Use via API" page) ask
        # for a login.
        app_kwargs={"openapi_url": None},
    )
    return cast(FastAPI, mounted)


def _guard_gradio(mounted: FastAPI, gradio_app: Any, blocks: gr.Blocks,
                  session_user: SessionUser, proxies: TrustedProxies, max_body: int) -> None:
    """Gradio's routes behind GuardGradio (a signed-in user, each session hash its first
    user's, uploads for admins, unused routes refused) and a cap on their bodies; its temp
    folder private."""
    keep_private(Path(gradio_app.uploaded_file_dir))
    # a session hash is its first user's: Gradio binds it to nobody (ui/identity/guard.py)
    gradio = GradioState(gradio_app)
    owners = SessionOwners(4 * blocks.state_session_capacity, gradio.known)
    # bodies are capped inside GuardGradio (which settles the address the refusal logs);
    # uploads, for admins only, keep Gradio's own limit per file (ui.upload_max_mb)
    mounted.add_middleware(BodyLimit, max_bytes=max_body, exempt=GuardGradio.UPLOADS)
    mounted.add_middleware(GuardGradio, session_user=session_user, owners=owners,
                           event_session=gradio.event_session, proxies=proxies)


def _follow_the_ledger(services: Services) -> None:
    """See what other processes ingest, and show in /metrics which ledger
    generation this process answers from and the audit trail's head."""
    settings, assistant = services.settings, services.assistant
    if settings.retrieve.refresh_s > 0:
        services.on_close.append(assistant.retriever.refresh_every(settings.retrieve.refresh_s))
    services.metrics.snapshot_generation.set_function(lambda: assistant.retriever.generation)
    services.metrics.ledger_generation.set_function(services.store.ledger.generation)
    ledger = services.store.ledger
    services.metrics.audit_head_seq.set_function(lambda: ledger.audit_head()[0])
    services.metrics.audit_head_hash.set_function(lambda: int(ledger.audit_head()[1][:12], 16))


def metrics_route(metrics: Metrics, access: MetricsAccess) -> Any:
    """`GET /metrics` in Prometheus text format, for the addresses of `ui.metrics_allow` and a
    scraper that sends `ui.metrics_token` as a bearer token (401 or 403 for anyone else)."""

    async def route(request: Request) -> Response:
        address = request.client.host if request.client else "?"
        verdict = access.verdict(address, request.headers.get("authorization", ""))
        if verdict == 200:
            return Response(metrics.render(), media_type=CONTENT_TYPE)
        logger.warning("/metrics refused for %s (%d)", address, verdict)
        if verdict == 401:
            return JSONResponse({"error": "/metrics: send ui.metrics_token as the bearer token "
                                          "(none or a wrong one came)"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return JSONResponse({"error": f"/metrics: {address} is not in ui.metrics_allow (add "
                                      "the scraper's address there, or give it "
                                      "ui.metrics_token)"}, status_code=403)

    return route


def page_router(app: ChatHandlers, session_user: SessionUser) -> APIRouter:
    """`GET /page/{chunk_id}`: the PDF page of a passage as a PNG, and `GET /section/{chunk_id}`:
    the HTML of its Word section, for a signed-in user whose groups include the passage's
    document (404 otherwise: no hint that it exists)."""
    router = APIRouter()

    @router.get("/page/{chunk_id}")
    async def page(chunk_id: str, request: Request, q: str = "") -> Response:
        user = await run_in_threadpool(session_user, request)
        if user is None:
            return JSONResponse({"error": "not signed in"}, status_code=401)
        address = client_address.get()
        try:
            image = await run_in_threadpool(app.page_image, chunk_id, user, q)
        except AccessDenied:
            logger.warning("page image refused for %s: %s", user.name, chunk_id[:80])
            app.record_view(user, chunk_id, "page", address, "denied")
            image = None
        if image is None:
            return JSONResponse({"error": "no such page"}, status_code=404)
        await run_in_threadpool(app.record_view, user, chunk_id, "page", address)
        return FileResponse(image, media_type="image/png",
                            headers={"Cache-Control": "private, no-store"})

    @router.get("/section/{chunk_id}")
    async def section(chunk_id: str, request: Request, q: str = "", lang: str = "en") -> Response:
        user = await run_in_threadpool(session_user, request)
        if user is None:
            return JSONResponse({"error": "not signed in"}, status_code=401)
        address = client_address.get()
        try:
            page = await run_in_threadpool(app.section_page, chunk_id, user, q, lang)
        except AccessDenied:
            logger.warning("section view refused for %s: %s", user.name, chunk_id[:80])
            app.record_view(user, chunk_id, "section", address, "denied")
            return JSONResponse({"error": "no such passage"}, status_code=404)
        await run_in_threadpool(app.record_view, user, chunk_id, "section", address)
        return HTMLResponse(page, headers=SECTION_HEADERS)

    return router


# The section page holds document text only: no scripts, no requests, framed by the app alone.
SECTION_HEADERS = {
    "Cache-Control": "private, no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                               "frame-ancestors 'self'",
    "X-Content-Type-Options": "nosniff",
}


def record_start(services: Services, demo: bool | None) -> None:
    """The audit trail at start: the settings' digest (secrets left out), then records older
    than audit.keep_days pruned through a checkpoint."""
    digest, shown = settings_digest(services.settings)
    actor = cli_actor()
    audit = services.users.audit
    audit.record("settings", actor, object=digest, address="local", demo=bool(demo),
                 settings=shown)
    audit.prune(actor, "local")


# How long a thread running Python keeps the GIL while another waits for it (Python's default:
# 5 ms). A page's request takes the GIL back many times (each ledger read lets it go); behind a
# login flood's threads it waited up to the interval each time (bench.load.login_flood).
SWITCH_INTERVAL_S = 0.001


# uvicorn's own X-Forwarded-For handling is off: by default it believes the header from
# 127.0.0.1, so a client on the app's host could name any address. GuardGradio believes it
# only from ui.trusted_proxies. The tests serve the app with these options too. A stop waits at
# most timeout_graceful_shutdown seconds for open browser tabs' event streams.
UVICORN_OPTIONS: dict[str, Any] = {"proxy_headers": False, "log_level": "warning",
                                   "timeout_graceful_shutdown": 2}


def serve(settings: Settings, demo: bool | None = None, host: str | None = None,
          port: int | None = None) -> None:
    """Run the app with uvicorn until interrupted, on `host` and `port` when given (the
    settings' `ui.host` and `ui.port` otherwise: links kb hands out name the one it listens on
    unless `ui.public_url` is set)."""
    import uvicorn

    ui = settings.ui
    ui = dataclasses.replace(ui, host=host or ui.host, port=port or ui.port)
    settings = dataclasses.replace(settings, ui=ui)
    services = open_services(settings, warm=True)
    try:
        app = create_server(services, demo=demo)
        record_start(services, demo)
        settle_heap()
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        quiet_stop()  # Ctrl+C with tabs open: no traceback per closed stream (quiet.py)
        uvicorn.run(app, host=ui.host, port=ui.port, **UVICORN_OPTIONS)
    finally:
        services.close()
