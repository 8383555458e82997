"""Several model servers behind one generator: balancing by requests in flight, failover before
the first token, a failed server set aside and taken back, first against httpx fakes, then
against two real vLLM CPU servers, one of them killed while questions are being asked."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from assistant.llm.client import LlmClient
from assistant.llm.replicas import ReplicaPool
from assistant.serving.serve import VllmServer
from core.errors import GenerationUnavailable
from devtools.ports import free_port
from devtools.vllm_server import CACHE_DIR, READY_TIMEOUT_S

CHAT = [{"role": "user", "content": "年假有几天?"}]


def sse(*texts: str) -> bytes:
    events = [{"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]}
              for t in texts]
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


class Endpoint:
    """A fake server: answers with its name, or refuses connections while `down`."""

    def __init__(self, name: str) -> None:
        self.name, self.down, self.calls = name, False, 0

    def handler(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("connection refused", request=request)
        self.calls += 1
        if json.loads(request.content)["stream"]:
            return httpx.Response(200, content=sse(self.name, " says hi"))
        choice = {"message": {"role": "assistant", "content": f"{self.name} says hi"},
                  "finish_reason": "stop"}
        return httpx.Response(200, json={"choices": [choice]})

    def client(self) -> LlmClient:
        http = httpx.Client(transport=httpx.MockTransport(self.handler))
        return LlmClient(f"http://{self.name}/v1", "m", counter=None, retries=0, http=http)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def text(pool: ReplicaPool) -> str:
    with pool.stream(CHAT) as stream:
        return "".join(stream)


def test_requests_go_to_the_replica_with_fewest_in_flight() -> None:
    a, b = Endpoint("a"), Endpoint("b")
    pool = ReplicaPool([a.client(), b.client()])
    open_a = pool.stream(CHAT)  # one request held open on a
    assert pool.in_flight() == [1, 0]
    assert text(pool) == "b says hi"  # the next goes to b
    open_a.close()
    assert pool.in_flight() == [0, 0]


def test_a_replica_that_refuses_is_skipped_set_aside_and_taken_back() -> None:
    a, b, clock = Endpoint("a"), Endpoint("b"), Clock()
    pool = ReplicaPool([a.client(), b.client()], retry_after_s=10, clock=clock)
    a.down = True
    assert [text(pool) for _ in range(3)] == ["b says hi"] * 3
    assert a.calls == 0 and pool.in_flight() == [0, 0]
    a.down = False
    clock.now = 5.0
    assert text(pool) == "b says hi"  # still set aside
    clock.now = 11.0
    assert text(pool) == "a says hi"  # its time is up: back in the pool
    assert pool.complete(CHAT).text in ("a says hi", "b says hi")


def test_no_replica_answering_names_them_all() -> None:
    a, b = Endpoint("a"), Endpoint("b")
    a.down = b.down = True
    pool = ReplicaPool([a.client(), b.client()])
    with pytest.raises(GenerationUnavailable, match="http://a/v1, http://b/v1"):
        text(pool)
    assert pool.in_flight() == [0, 0]


def test_a_failure_after_the_first_piece_is_the_callers() -> None:
    def cut(request: httpx.Request) -> httpx.Response:
        class Broken(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                yield sse("partial")[: -len("data: [DONE]\n\n")]
                raise httpx.ReadError("connection reset")

        return httpx.Response(200, stream=Broken())

    flaky = LlmClient("http://c/v1", "m", counter=None, retries=0,
                      http=httpx.Client(transport=httpx.MockTransport(cut)))
    b = Endpoint("b")
    pool = ReplicaPool([flaky, b.client()])
    stream = pool.stream(CHAT)
    assert next(stream) == "partial"
    with pytest.raises(GenerationUnavailable, match="http://c/v1"):
        next(stream)
    assert b.calls == 0 and pool.in_flight() == [0, 0]


@pytest.fixture(scope="module")
def second_server(vllm_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A second vLLM CPU server of the same test model, on its own port."""
    port = free_port()
    llm = dataclasses.replace(vllm_server.llm, url=f"http://127.0.0.1:{port}/v1", port=port)
    settings = dataclasses.replace(vllm_server.settings, llm=llm)
    log = tmp_path_factory.mktemp("vllm-2") / "vllm.log"
    server = VllmServer.for_settings(settings, cache_dir=CACHE_DIR, log_path=log)
    server.start()
    try:
        server.wait_ready(READY_TIMEOUT_S)
        yield server
    finally:
        server.stop()


@pytest.mark.vllm
@pytest.mark.slow
def test_two_real_servers_one_killed_midway_no_question_fails(
    vllm_server: Any, second_server: VllmServer
) -> None:
    llm = vllm_server.llm
    clients = [LlmClient.from_settings(dataclasses.replace(llm, url=url), None)
               for url in (vllm_server.url, second_server.url)]
    pool = ReplicaPool(clients, retry_after_s=30)
    answered: list[str] = []
    failed: list[str] = []
    killed = threading.Event()

    def ask(i: int) -> None:
        if i == 8:
            second_server.kill()
            killed.set()
        try:
            answered.append(pool.complete(CHAT, max_tokens=8, temperature=0.0).text)
        except Exception as exc:  # any failure counts
            failed.append(f"{type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(max_workers=4) as executor:
        list(executor.map(ask, range(24)))
    pool.close()
    assert killed.is_set() and failed == [] and len(answered) == 24


def test_llm_endpoints_in_config_give_a_replica_pool(tmp_path: Any) -> None:
    from core.config import Settings
    from store.ledger import Ledger
    from store.store import Store
    from tests.support.fakes import FakeEmbedder, MemoryVectorIndex
    from ui.wiring import open_assistant

    urls = ("http://10.0.0.5:8000/v1", "http://10.0.0.6:8000/v1")
    settings = Settings()
    settings = dataclasses.replace(settings, llm=dataclasses.replace(settings.llm, endpoints=urls))
    store = Store(settings, Ledger(tmp_path / "ledger.sqlite"), MemoryVectorIndex(), FakeEmbedder())
    try:
        generator = open_assistant(store).generator
        assert isinstance(generator, ReplicaPool)
        assert [c.url for c in generator.clients] == list(urls)
    finally:
        store.close()
