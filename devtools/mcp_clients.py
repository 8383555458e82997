"""The official `mcp` client connected to kb the two ways an agent connects, for the tests and the
benchmark: over streamable HTTP to a `kb serve` at `/mcp` with a bearer token in every request,
and over stdio to a `kb mcp` process it starts with the token in KB_TOKEN.

    async with http_client("http://127.0.0.1:7860/mcp", token) as client:
        await client.call_tool("search_policies", {"query": "annual leave"})
    async with stdio_client(config, store, token) as client:
        ...
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 120.0


@asynccontextmanager
async def http_client(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    """A client of the MCP server at `url` sending `token` as its bearer token; `mode`: "auto"
    (the current revision, 2026-07-28) or "legacy" (the initialize handshake and a session)."""
    async with bearer_http(token) as http, over(url, http, mode) as client:
        yield client


def bearer_http(token: str) -> httpx2.AsyncClient:
    """The HTTP client an MCP client sends `token` with (its headers may change meanwhile)."""
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT_S)


def over(url: str, http: httpx2.AsyncClient, mode: str = "auto") -> Client:
    """An MCP client of `url` over `http`."""
    return Client(streamable_http_client(url, http_client=http), mode=mode)


@asynccontextmanager
async def stdio_client(config: Path, store: Path, token: str,
                       env: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """A client of a `kb mcp` process over `store` that it starts (and ends), as the user of
    `token`; `env`: more of its environment (this one's KB_ overrides are passed on; `kb`
    keeps itself off the model hubs)."""
    passed = {k: v for k, v in os.environ.items() if k.startswith("KB_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from ui.cli import main; main()", "mcp", "--config", str(config),
              "--store", str(store)],
        env={**passed, **(env or {}), "KB_TOKEN": token}, cwd=REPO)
    async with Client(params, read_timeout_seconds=TIMEOUT_S) as client:
        yield client
