"""What an MCP tool call costs over `POST /api/ask`: the same question asked through both, in turn,
of one `kb serve` process on loopback, for a thousand rounds.

The app serves a copy of the sample store (bench/common.py's) with the model server unreachable
(connection refused at once): every answer is retrieval-only, so what is compared is the
ways' own work, not the model's. Each round asks one question five ways, in a shuffled order
(seeded): `POST /api/ask`; `POST /v1/chat/completions` (plain); the `ask` tool through the
official `mcp` client over streamable HTTP at the current revision (2026-07-28: each call one
self-contained request); the same at the earlier revision (2025-11-25: the initialize
handshake once, then calls in a session); and the current revision's call posted by hand, its
JSON read (`mcp_raw`: the server's part of a call, without the client SDK's own work). Every
way runs on one event loop in a thread of this process (anyio's blocking portal), over httpx2,
the client library the `mcp` SDK uses, each with one keep-alive connection; the app runs in its
own process. Times are the client's, from sending the call to having its parsed result
(for MCP: JSON-RPC, and the structured result checked against the tool's output schema); they
start after a warm-up.

Not the same work each way: `/api/ask` also keeps each answer in a new conversation of the
user's (two more ledger writes), which `/v1` and the tool leave to their client; all three
record the question, and the tool call is also audited (one event handed to the audit trail's
writer thread). `/v1` is the baseline doing the tool's work without the conversation.

    .venv/bin/python -m bench.serving.mcp_overhead                # 1000 rounds
    .venv/bin/python -m bench.serving.mcp_overhead --rounds 100
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client

from bench.common import questions
from bench.serving.in_turn import Way, ask_in_turn, compare, served_sample
from devtools.mcp_clients import http_client

GOAL_MS = 5.0  # a tool call adds at most this much at p95 over /api/ask
VARIANTS = ("api", "v1", "mcp", "mcp_legacy", "mcp_raw")
COMPARED = (("mcp", "api"), ("mcp_legacy", "api"), ("mcp", "v1"), ("mcp_raw", "api"))
REVISION = "2026-07-28"
# What the official client sends with a call at the current revision (the mcp_raw way too)
CALL_HEADERS = {"Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": REVISION, "Mcp-Method": "tools/call", "Mcp-Name": "ask"}


def call_body(question: str) -> dict[str, Any]:
    """The JSON-RPC request of one `ask` call at the current revision, as the client sends it."""
    meta = {"io.modelcontextprotocol/protocolVersion": REVISION,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ask", "arguments": {"question": question}, "_meta": meta}}


@contextmanager
def askers(portal: BlockingPortal, url: str, token: str) -> Iterator[dict[str, Way]]:
    """Each way's function that asks one question and returns the answer's mode, its client
    open (a connection, an MCP session) until the block ends."""
    with ExitStack() as stack:
        http = stack.enter_context(portal.wrap_async_context_manager(httpx2.AsyncClient(
            base_url=url, timeout=300, headers={"Authorization": f"Bearer {token}"})))
        clients: dict[str, Client] = {
            way: stack.enter_context(portal.wrap_async_context_manager(
                http_client(url + "mcp", token, mode)))
            for way, mode in (("mcp", "auto"), ("mcp_legacy", "legacy"))}

        async def api(question: str) -> str:
            reply = await http.post("api/ask", json={"question": question})
            reply.raise_for_status()
            return str(reply.json()["mode"])

        async def v1(question: str) -> str:
            reply = await http.post("v1/chat/completions", json={
                "model": "kb-assistant", "messages": [{"role": "user", "content": question}]})
            reply.raise_for_status()
            return str(reply.json()["kb"]["mode"])

        def tool(client: Client) -> Callable[[str], Any]:
            async def ask(question: str) -> str:
                result = await client.call_tool("ask", {"question": question})
                if result.is_error or not isinstance(result.structured_content, dict):
                    raise RuntimeError(f"the ask tool failed: {result.content}")
                return str(result.structured_content["mode"])

            return ask

        async def raw(question: str) -> str:  # the tool call without the SDK's client
            reply = await http.post("mcp", json=call_body(question), headers=CALL_HEADERS)
            reply.raise_for_status()
            return str(reply.json()["result"]["structuredContent"]["mode"])

        ways = {"api": api, "v1": v1, "mcp_raw": raw,
                **{way: tool(client) for way, client in clients.items()}}

        def blocking(fn: Callable[[str], Any]) -> Callable[[str], str]:
            return lambda question: str(portal.call(fn, question))

        yield {way: blocking(fn) for way, fn in ways.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000, help="questions asked each way")
    parser.add_argument("--warm", type=int, default=20,
                        help="rounds first, not timed (more until none is slow)")
    args = parser.parse_args(argv)
    with served_sample("kb-mcp-bench-") as (app, token), start_blocking_portal() as portal, \
            askers(portal, app.url, token) as ways:
        found = ask_in_turn({way: ways[way] for way in VARIANTS}, questions(), args.rounds,
                            args.warm, seed=41)
    assert found.host is not None
    report: dict[str, Any] = {
        **found.report(GOAL_MS),
        **{f"{way}_vs_{base}": compare(found.times, way, base) for way, base in COMPARED},
        "host": found.host.report(),
    }
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
