"""`kb mcp`: the MCP server over stdio, for a desktop client that starts it (Claude Desktop,
Cursor, VS Code; docs/mcp.md). It opens the store, as `kb serve` does, and answers as the user
whose kb API token the client passes in `KB_TOKEN`: the token is checked before it serves and
again on every call, so a token revoked or expired, or an account disabled, since the client
started it is refused at its next call (the call's error says so). Calls are audited with
`via: stdio`.

    KB_TOKEN=kb_… kb mcp --config /srv/kb/config.toml
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from fastapi.concurrency import run_in_threadpool
from mcp.server.mcpserver import Context

from core.config import Settings
from core.errors import KbError
from ui.api.asking import Asking
from ui.api.mcp.server import Who, build_server
from ui.api.mcp.tools import KbTools
from ui.gate import Gate
from ui.identity.users import Users
from ui.wiring import open_services, users_for

TOKEN_ENV = "KB_TOKEN"
ADDRESS = "stdio"  # the client address its calls are audited with


def refused(name: str) -> str:
    return (f"the kb token in {name} was refused: unknown, expired or revoked, or its account "
            "is disabled; make a new one with `kb users token NAME`")


def token_caller(users: Users, token: str) -> Callable[[Context], Awaitable[Who]]:
    """The user of `token`, read again at every call; KbError when it is refused."""

    async def caller(ctx: Context) -> Who:
        user = await run_in_threadpool(users.by_token, token)
        if user is None:
            raise KbError(refused(TOKEN_ENV))
        return Who(user, ADDRESS)

    return caller


def serve_stdio(settings: Settings, token: str) -> None:
    """Serve MCP over this process's stdin and stdout until the client closes them; KbError
    before anything is opened but the ledger when `token` is refused."""
    with users_for(settings) as users:
        if users.by_token(token) is None:
            raise KbError(refused(TOKEN_ENV))
    services = open_services(settings, warm=True)
    try:
        asking = Asking(services.assistant, services.users, services.metrics,
                        Gate(settings.ui.queue_depth), settings.ui.busy_retry_after_s)
        tools = KbTools(asking, services.assistant, services.store, services.users.audit,
                        settings.ui.base_url, via="stdio")
        anyio.run(build_server(tools, token_caller(services.users, token)).run_stdio_async)
    finally:
        services.close()
