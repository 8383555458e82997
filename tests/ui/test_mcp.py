"""The MCP server through the official `mcp` client: over streamable HTTP against a real
`kb serve` process at /mcp, and over stdio against a `kb mcp` process the client starts. Both
serve a copy of the sample store (hr-only/ is group hr) with the model unreachable
(retrieval-only answers); alice is in hr, bob is not. Each way: the tools listed with their
schemas, each tool called, a follow-up through `ask` with its history, nothing of HR's
documents for bob from any tool, a disabled user refused at the next call; over HTTP also a
wrong token's 401 with the header that starts OAuth, the resource metadata, a session another
token cannot use, and every call in the audit trail."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from core.config import Settings
from core.text import detect_lang
from devtools.app_processes import REPO, AppProcess, start_app, stop, wait_ready
from devtools.mcp_clients import bearer_http, http_client, over, stdio_client
from devtools.ports import free_port
from tests.ui.conftest import Running, Store
from tests.ui.test_app import HR_FILES, HR_QUESTIONS
from tests.ui.test_busy import api_ask, busy_server, metric, stalled  # noqa: F401 (fixtures)
from ui.wiring import ledger_for, users_for

pytestmark = pytest.mark.slow

TOOLS = {"search_policies", "ask", "open_source", "list_documents"}
LEAVE = "How many days of annual leave do I get?"
FOLLOW_UP = "And can I carry them over?"


@dataclass
class Served:
    settings: Settings  # of the copy both processes serve
    app: AppProcess
    tokens: dict[str, str]

    @property
    def mcp(self) -> str:
        return self.app.url + "mcp"


@pytest.fixture(scope="module")
def served(sample_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A real `kb serve` over a copy of the sample store (its users and tokens, and what the
    calls record, kept apart from the other tests), the model unreachable."""
    work = tmp_path_factory.mktemp("mcp")
    store = work / "store"
    shutil.copytree(sample_store.settings.store_path(), store)
    settings = sample_store.settings.with_store(store)
    env = {"KB_LLM_URL": f"http://127.0.0.1:{free_port()}/v1", "KB_LLM_RETRIES": "0",
           "KB_LLM_CONNECT_TIMEOUT_S": "1.0"}
    app = start_app(store, env, work)
    try:
        wait_ready(app)
        yield Served(settings, app, dict(sample_store.tokens))
    finally:
        stop(app)


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(body())


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def files_in(value: Any) -> set[str]:
    """Every HR file named anywhere in a result (its JSON text)."""
    text = json.dumps(value, ensure_ascii=False)
    return {name for name in HR_FILES if name in text}


async def tour(client: Client) -> dict[str, Any]:
    """Each tool called once as a user would: what each gave."""
    found = structured(await client.call_tool("search_policies", {"query": LEAVE, "k": 3}))
    first = found["passages"][0]["passage"]
    opened = structured(await client.call_tool("open_source", {"passage": first, "around": 1}))
    answered = structured(await client.call_tool("ask", {"question": LEAVE}))
    follow = structured(await client.call_tool("ask", {
        "question": FOLLOW_UP, "history": [{"question": LEAVE, "answer": answered["answer"]}]}))
    listed = structured(await client.call_tool("list_documents", {}))
    langs = {lang: structured(await client.call_tool("search_policies", {
        "query": query, "k": 5, "language": lang}))
        for lang, query in (("zh", "hotel standard on business trips"), ("en", "年假天数"))}
    return {"search": found, "open": opened, "ask": answered, "follow": follow,
            "list": listed, "langs": langs}


def check_tour(done: dict[str, Any]) -> None:
    passage = done["search"]["passages"][0]
    assert passage["file"] == "Employee-Leave-Policy.pdf" and passage["page"], passage
    assert passage["quote"] and passage["quote"] in passage["text"]
    assert passage["link"].startswith("http://127.0.0.1:") and "/page/" in passage["link"]
    assert passage["standing"] and passage["title"]
    assert done["open"]["passage"]["passage"] == passage["passage"]
    assert done["open"]["passage"]["text"] == passage["text"]
    assert done["open"]["before"] or done["open"]["after"]
    answered = done["ask"]
    assert answered["mode"] == "retrieval_only" and answered["says"].startswith("Retrieval only")
    # the model server's address and error go to the log, not to the agent
    assert answered["notice"] and "127.0.0.1" not in answered["notice"], answered["notice"]
    assert answered["citations"] and answered["question_id"] > 0
    cited = answered["citations"][0]
    assert cited["file"] and cited["quote"] and cited["link"].startswith("http://127.0.0.1:")
    # the follow-up was read with the question before it
    assert "leave" in done["follow"]["searched_for"].lower(), done["follow"]["searched_for"]
    assert done["follow"]["searched_for"] != FOLLOW_UP
    for lang, found in done["langs"].items():  # only passages of the language asked for
        assert found["passages"], lang
        assert {detect_lang(p["text"]) for p in found["passages"]} == {lang}, found
    listed = done["list"]
    assert listed["total"] == len(listed["documents"]) >= 4
    assert all(d["status"] and d["standing"] and d["resource"].startswith("kb://documents/")
               for d in listed["documents"])


def hr_document(settings: Settings) -> tuple[str, str]:
    """An HR document's id and its first passage's."""
    with ledger_for(settings) as ledger:
        hr = next(r for r in ledger.documents() if r.meta.groups == ("hr",))
        return hr.meta.id, ledger.chunk_ids(hr.meta.id)[0]


async def everything_bob_can_get(client: Client, hr: tuple[str, str]) -> list[Any]:
    """What every tool, and the document resource, give bob for HR's questions and
    documents (as dicts)."""
    got: list[Any] = []
    for question in HR_QUESTIONS:
        got.append(await client.call_tool("search_policies", {"query": question, "k": 20}))
        got.append(await client.call_tool("ask", {"question": question}))
    got.append(await client.call_tool("list_documents", {}))
    got.append(await client.call_tool("list_documents", {"filter": "薪酬"}))
    refused = await client.call_tool("open_source", {"passage": hr[1]})
    assert refused.is_error and "no passage" in refused.content[0].text
    got.append(refused)
    got = [r.model_dump() for r in got]
    try:
        got.append((await client.read_resource(f"kb://documents/{hr[0]}")).model_dump())
    except Exception as exc:  # the resource's error
        assert "no document" in str(exc), exc
    else:
        raise AssertionError("bob read an HR document as a resource")
    return got


# --- over HTTP ---------------------------------------------------------------------------------

def test_the_tools_are_listed_with_their_schemas_and_each_answers(served: Served) -> None:
    async def body() -> tuple[Any, dict[str, Any]]:
        async with http_client(served.mcp, served.tokens["alice"]) as client:
            return await client.list_tools(), await tour(client)

    tools, done = run(body)
    assert {t.name for t in tools.tools} == TOOLS
    for tool in tools.tools:
        assert tool.input_schema["type"] == "object" and tool.output_schema, tool.name
        assert "policy" in (tool.description or "").lower(), tool.name
    ask = next(t for t in tools.tools if t.name == "ask")
    assert set(ask.input_schema["properties"]) == {"question", "history"}
    assert "citations" in ask.output_schema["properties"]
    check_tour(done)


def test_a_user_outside_hr_gets_nothing_of_hr_from_any_tool(served: Served) -> None:
    hr = hr_document(served.settings)

    async def body() -> tuple[list[Any], list[Any]]:
        async with http_client(served.mcp, served.tokens["bob"]) as bob:
            bobs = await everything_bob_can_get(bob, hr)
        async with http_client(served.mcp, served.tokens["alice"]) as alice:
            alices = [await alice.call_tool("search_policies", {"query": q, "k": 20})
                      for q in HR_QUESTIONS]
            alices.append(await alice.call_tool("open_source", {"passage": hr[1]}))
            alices.append(await alice.read_resource(f"kb://documents/{hr[0]}"))
        return bobs, [r.model_dump() for r in alices]

    bobs, alices = run(body)
    assert files_in(bobs) == set()
    assert files_in(alices) == set(HR_FILES)  # alice, in hr, gets them


def test_a_wrong_or_missing_token_gets_401_with_the_oauth_challenge(served: Served) -> None:
    for headers in ({}, {"Authorization": "Bearer kb_not-a-token"},
                    {"Authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln"}):
        reply = httpx.post(served.mcp, headers=headers, timeout=30,
                           json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert reply.status_code == 401, reply.text
        challenge = reply.headers["www-authenticate"]
        metadata = f'{served.app.url}.well-known/oauth-protected-resource/mcp'
        assert challenge.startswith(f'Bearer resource_metadata="{metadata}"'), challenge
        assert ('error="invalid_token"' in challenge) == bool(headers), challenge
        assert "kb users token" in reply.json()["error_description"]
    found = httpx.get(metadata, timeout=30).json()
    assert found["resource"] == served.mcp and found["bearer_methods_supported"] == ["header"]
    assert httpx.get(served.app.url + ".well-known/oauth-protected-resource").json() == found

    async def body() -> None:
        async with http_client(served.mcp, "kb_wrong"):
            pass

    with pytest.raises(Exception, match="401|Unauthorized|error"):
        run(body)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_user_disabled_mid_session_is_refused_at_the_next_call(
    served: Served, mode: str,
) -> None:
    async def body() -> tuple[Any, Exception | None, Any]:
        async with http_client(served.mcp, served.tokens["bob"], mode) as client:
            before = await client.call_tool("list_documents", {})
            with users_for(served.settings) as users:
                users.disable("bob")
            try:
                after: Exception | None = None
                await client.call_tool("list_documents", {})
            except Exception as exc:  # the SDK's error for the 401
                after = exc
            finally:
                with users_for(served.settings) as users:
                    users.disable("bob", False)
            again = await client.call_tool("list_documents", {})
            return before, after, again

    before, after, again = run(body)
    assert structured(before)["total"] > 0
    assert after is not None, "a disabled user's call was answered"
    assert structured(again)["total"] > 0  # enabled again: the same session goes on


def test_a_session_cannot_be_used_with_another_token(served: Served) -> None:
    async def body() -> Exception | None:
        async with bearer_http(served.tokens["bob"]) as http, \
                over(served.mcp, http, "legacy") as client:
            http.headers["Authorization"] = f"Bearer {served.tokens['alice']}"
            try:
                await client.call_tool("list_documents", {})
            except Exception as exc:
                return exc
            finally:
                http.headers["Authorization"] = f"Bearer {served.tokens['bob']}"
        return None

    refused = run(body)
    assert refused is not None and "Session not found" in str(refused)


def test_every_call_is_audited_with_its_digest_and_documents(served: Served) -> None:
    since = time.time()

    async def body() -> None:
        async with http_client(served.mcp, served.tokens["alice"]) as client:
            await client.call_tool("search_policies", {"query": LEAVE, "k": 2})
            await client.call_tool("open_source", {"passage": "nothing-like-this"})

    run(body)
    records: list[Any] = []
    deadline = time.monotonic() + 10  # written by the app's audit writer within a moment
    while len(records) < 2 and time.monotonic() < deadline:
        with ledger_for(served.settings) as ledger:
            records = [r for r in ledger.audit_records(event="mcp.call")
                       if r.at >= since and r.actor == "alice"]
        time.sleep(0.2)
    assert [(r.object, r.outcome) for r in records] == [("search_policies", "ok"),
                                                        ("open_source", "refused")]
    details = json.loads(records[0].details)
    assert len(details["args"]) == 64 and LEAVE not in records[0].details
    assert details["documents"] and details["via"] == "http" and details["returned"] >= 1
    assert records[0].address == "127.0.0.1"


def test_past_the_queue_depth_a_question_or_search_is_refused_at_once(
    busy_server: Running, stalled: socket.socket,  # noqa: F811 (test_busy.py's fixtures)
) -> None:
    """As /v1 answers 429: with ui.queue_depth 1 held by a question the model never answers,
    `ask` and `search_policies` say busy at once, with the wait; a look-up still answers."""
    held: list[httpx.Response] = []
    first = threading.Thread(target=lambda: held.append(api_ask(busy_server, "bob", LEAVE)))
    first.start()
    deadline = time.monotonic() + 30
    while busy_server.app.gate.admitted < 1:
        assert time.monotonic() < deadline, "the first question never reached the gate"
        time.sleep(0.05)

    async def body() -> list[Any]:
        async with http_client(busy_server.url + "mcp", busy_server.tokens["alice"]) as client:
            return [await client.call_tool("ask", {"question": LEAVE}),
                    await client.call_tool("search_policies", {"query": LEAVE}),
                    await client.call_tool("list_documents", {})]

    asked, found, listed = run(body)
    for refused in (asked, found):
        assert refused.is_error and "busy" in refused.content[0].text
        assert "try again in 7 s" in refused.content[0].text
    assert structured(listed)["total"] > 0
    assert metric(busy_server, 'kb_busy_total{via="mcp"}') == 2
    assert not held
    stalled.close()  # the held question gets the passages, and the place is free again
    first.join(timeout=60)
    assert held and held[0].status_code == 200


# --- over stdio --------------------------------------------------------------------------------

def test_kb_mcp_over_stdio_answers_as_the_tokens_user(served: Served) -> None:
    config, store = REPO / "config.toml", Path(served.settings.store_path())
    env = {"KB_LLM_URL": f"http://127.0.0.1:{free_port()}/v1", "KB_LLM_RETRIES": "0",
           "KB_LLM_CONNECT_TIMEOUT_S": "1.0"}
    hr = hr_document(served.settings)

    async def body() -> tuple[Any, dict[str, Any], list[Any], Any, Any]:
        async with stdio_client(config, store, served.tokens["alice"], env) as alice:
            tools, done = await alice.list_tools(), await tour(alice)
        async with stdio_client(config, store, served.tokens["bob"], env) as bob:
            bobs = await everything_bob_can_get(bob, hr)
            with users_for(served.settings) as users:
                users.disable("bob")
            try:
                refused = await bob.call_tool("list_documents", {})
            finally:
                with users_for(served.settings) as users:
                    users.disable("bob", False)
            again = await bob.call_tool("list_documents", {})
        return tools, done, bobs, refused, again

    tools, done, bobs, refused, again = run(body)
    assert {t.name for t in tools.tools} == TOOLS
    check_tour(done)
    assert files_in(bobs) == set()
    assert refused.is_error and "refused" in refused.content[0].text
    assert structured(again)["total"] > 0


def test_kb_mcp_refuses_to_start_without_a_good_token(served: Served) -> None:
    import subprocess
    import sys

    for token in ("", "kb_wrong"):
        done = subprocess.run(
            [sys.executable, "-c", "from ui.cli import main; main()", "mcp", "--config",
             str(REPO / "config.toml"), "--store", str(served.settings.store_path())],
            cwd=REPO, env={**dict(__import__("os").environ), "KB_TOKEN": token},
            input="", capture_output=True, text=True, timeout=300)
        assert done.returncode != 0 and "KB_TOKEN" in done.stderr, done.stderr[-500:]
        assert done.stdout == ""
