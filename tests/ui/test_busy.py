"""Issue 11, load: past `ui.queue_depth` questions the app and the API say "busy, try again" at
once instead of queueing without end. The real app (uvicorn on loopback, the sample store) with
a queue depth of 1 and a model server that holds every request: a socket that listens but never
answers, as a stalled server does. Closing it lets the held question finish."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from assistant.serving.testmodel import build_test_model
from bench.load.askers import ask_page, page_client
from devtools.vllm_server import MODEL_DIR
from tests.ui.conftest import PASSWORDS, Running, Store, _serve
from tests.ui.test_app import ask
from ui.gate import Gate

pytestmark = pytest.mark.slow


def stalled_server(backlog: int) -> Iterator[socket.socket]:
    """A 'model server' that accepts up to `backlog` connections (the kernel does) and never
    answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(backlog)
    yield sock
    sock.close()


@pytest.fixture(scope="module")
def stalled() -> Iterator[socket.socket]:
    yield from stalled_server(16)


@pytest.fixture(scope="module")
def busy_server(sample_store: Store, stalled: socket.socket) -> Iterator[Running]:
    port = stalled.getsockname()[1]
    llm = dataclasses.replace(sample_store.settings.llm, url=f"http://127.0.0.1:{port}/v1",
                              connect_timeout_s=2.0, first_token_timeout_s=60.0, retries=0)
    ui = dataclasses.replace(sample_store.settings.ui, queue_depth=1, busy_retry_after_s=7)
    settings = dataclasses.replace(sample_store.settings, llm=llm, ui=ui)
    for running in _serve(settings, demo=False):
        running.tokens = sample_store.tokens
        yield running


def api_ask(running: Running, user: str, question: str,
            timeout_s: float = 120) -> httpx.Response:
    return httpx.post(running.url + "api/ask", json={"question": question}, timeout=timeout_s,
                      headers={"Authorization": f"Bearer {running.tokens[user]}"})


def api_status(running: Running, user: str, question: str, timeout_s: float = 60) -> str:
    """The HTTP status of a question to the API, or that none came within `timeout_s`."""
    try:
        return str(api_ask(running, user, question, timeout_s).status_code)
    except httpx.TimeoutException:
        return f"no reply in {timeout_s:.0f} s"


def metric(running: Running, line_start: str) -> float:
    text = httpx.get(running.url + "metrics", timeout=10).text
    found = [line for line in text.splitlines() if line.startswith(line_start)]
    return float(found[0].rsplit(" ", 1)[1]) if found else 0.0


def test_gate_admits_up_to_its_depth() -> None:
    gate = Gate(2)
    assert gate.enter() and gate.enter() and not gate.enter()
    gate.leave()
    assert gate.admitted == 1 and gate.enter()


def test_past_the_queue_depth_app_and_api_say_busy_at_once(busy_server: Running,
                                                          stalled: socket.socket) -> None:
    gate = busy_server.app.gate
    held: list[httpx.Response] = []
    first = threading.Thread(target=lambda: held.append(
        api_ask(busy_server, "bob", "How many days of unused annual leave can I carry over?")))
    first.start()
    deadline = time.monotonic() + 30
    while gate.admitted < 1:  # the first question holds the only place, waiting for the model
        assert time.monotonic() < deadline, "the first question never reached the gate"
        time.sleep(0.05)

    started = time.monotonic()
    refused = api_ask(busy_server, "alice", "What is the travel allowance?")
    api_s = time.monotonic() - started
    assert refused.status_code == 503, refused.text
    assert refused.headers["Retry-After"] == "7"
    assert "busy" in refused.json()["error"] and "try again" in refused.json()["error"]

    client = busy_server.client("alice")
    started = time.monotonic()
    with pytest.raises(Exception, match="Too many questions at once"):
        ask(client, "What is the travel allowance?")
    app_s = time.monotonic() - started
    assert api_s < 1.0 and app_s < 5.0, (api_s, app_s)  # at once, not after the held question
    assert first.is_alive() and not held, "the held question was still waiting"
    assert metric(busy_server, 'kb_busy_total{via="api"}') == 1
    assert metric(busy_server, 'kb_busy_total{via="app"}') == 1

    stalled.close()  # the 'server' goes away: the held question gets the passages
    first.join(timeout=60)
    assert held and held[0].status_code == 200 and held[0].json()["mode"] == "retrieval_only"
    assert gate.admitted == 0
    again = api_ask(busy_server, "alice", "What is the travel allowance?")
    assert again.status_code == 200, again.text  # the place is free again


# anyio's default thread pool: FastAPI's steps that block (the page's login check, the API's
# token check, the ledger's writes) and, before issue 28, the API's answers shared its 40 threads
SHARED_THREADS = 40
QUESTION = "How many days of unused annual leave can I carry over?"


@pytest.fixture(scope="module")
def roomy_stall() -> Iterator[socket.socket]:
    """A stalled 'model server' with room for every held question's connection."""
    yield from stalled_server(128)


@pytest.fixture(scope="module")
def full_server(sample_store: Store, roomy_stall: socket.socket) -> Iterator[Running]:
    """ui.queue_depth 40, the model server stalled for 120 s: its tokens are counted here (the
    test model's tokenizer), so each question waits at the model, not at /tokenize (10 s)."""
    port = roomy_stall.getsockname()[1]
    llm = dataclasses.replace(sample_store.settings.llm, url=f"http://127.0.0.1:{port}/v1",
                              model=str(build_test_model(MODEL_DIR)),
                              connect_timeout_s=10.0, first_token_timeout_s=120.0, retries=0)
    ui = dataclasses.replace(sample_store.settings.ui, queue_depth=SHARED_THREADS)
    settings = dataclasses.replace(sample_store.settings, llm=llm, ui=ui)
    for running in _serve(settings, demo=False):
        running.tokens = sample_store.tokens
        yield running


def test_held_api_answers_leave_the_page_and_the_api_their_busy_reply(
        full_server: Running, roomy_stall: socket.socket) -> None:
    """Issue 28: each API answer held one of the 40 shared threads; with 40 held (a stalled
    model, ui.queue_depth 40) the page's question and the API's token check waited behind them,
    and not even "busy" came back until an answer ended (after the model's 120 s)."""
    gate = full_server.app.gate
    client = page_client(full_server.url, "alice", PASSWORDS["alice"])  # signed in beforehand
    held: list[httpx.Response] = []
    askers = [threading.Thread(target=lambda: held.append(api_ask(full_server, "bob", QUESTION)))
              for _ in range(SHARED_THREADS)]
    for asker in askers:
        asker.start()
    deadline = time.monotonic() + 60
    while gate.admitted < SHARED_THREADS:  # every place taken, each question at the model
        assert time.monotonic() < deadline, f"only {gate.admitted} questions reached the gate"
        time.sleep(0.05)
    time.sleep(1.0)  # the last admitted ones reach their threads

    with ThreadPoolExecutor(2) as pool:  # both asked while the 40 are held
        page = pool.submit(ask_page, client, QUESTION, 60)
        api = pool.submit(api_status, full_server, "alice", QUESTION)
        refused = (page.result(), api.result())
    assert refused[0].busy, refused[0]
    assert refused[1] == "503", refused[1]
    assert not held, "refused while every held question was still waiting on the model"

    roomy_stall.close()  # the held questions get the passages
    for asker in askers:
        asker.join(timeout=120)
    client.close()
    assert [r.status_code for r in held] == [200] * SHARED_THREADS
    assert gate.admitted == 0
