"""Issue 11, load: askers at once against the real app (loopback) with the real vLLM test
server, half through the page (gradio_client, logged in), half through `POST /api/ask`: every
question answered by the model, none refused for length, no error. A fixed count and a time
limit; no timing is asserted (figures come from bench/load/askers.py, in BENCHMARKS.md).

CI runs 8 askers; the 50-asker variant is marked `load` and run by hand:
`pytest tests/ui/test_load.py -m load`.

Issue 28: the page askers wait for the app as a browser does, however long it takes to take a
question on (a slow `queue/join` failed them after gradio_client's 5 s)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.load.askers import ask_page, page_client, run_load
from devtools.vllm_server import free_port
from tests.ui.conftest import PASSWORDS, Running, Store, _serve

pytestmark = pytest.mark.slow

QUESTIONS = [json.loads(line)["question"] for line in
             (Path(__file__).resolve().parents[2] / "data" / "samples" / "qa.jsonl")
             .read_text(encoding="utf-8").splitlines() if line.strip()]
JOIN_DELAY_S = 8.0  # past gradio_client's 5 s; any slower machine only answers later


@pytest.mark.vllm
@pytest.mark.parametrize("askers", [8, pytest.param(50, marks=pytest.mark.load)])
def test_askers_at_once_all_get_the_models_answer(app_server: Any, askers: int) -> None:
    result = run_load(app_server.url, app_server.tokens["bob"],
                      lambda: page_client(app_server.url, "bob", PASSWORDS["bob"]),
                      pages=askers // 2, apis=askers - askers // 2, questions=QUESTIONS,
                      per_asker=2, limit_s=600)
    assert len(result.outcomes) == 2 * askers
    assert [o.error for o in result.errors] == []
    assert [o.error for o in result.busy] == []  # fewer askers than ui.queue_depth
    assert result.length_refusals == []
    assert [o.via for o in result.without_model] == []  # the server is up: the model answers
    assert {o.via for o in result.outcomes} == {"page", "api"}


class SlowJoin:
    """The app, answering `queue/join` (the page handing in a question) only after a delay:
    what the loaded machine of issue 28 did for seconds at a time."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/queue/join"):
            await asyncio.sleep(JOIN_DELAY_S)
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def slow_join_server(sample_store: Store) -> Iterator[Running]:
    """The app with a slow `queue/join` and the model unreachable (retrieval-only answers)."""
    llm = dataclasses.replace(sample_store.settings.llm, url=f"http://127.0.0.1:{free_port()}/v1",
                              connect_timeout_s=1.0, retries=0)
    settings = dataclasses.replace(sample_store.settings, llm=llm)
    yield from _serve(settings, demo=False, wrap=SlowJoin)


def test_a_page_asker_waits_for_a_slow_join_as_a_browser_does(slow_join_server: Running) -> None:
    client = page_client(slow_join_server.url, "bob", PASSWORDS["bob"])
    try:
        outcome = ask_page(client, QUESTIONS[0], timeout_s=300)
    finally:
        client.close()
    assert outcome.error == ""
    assert outcome.mode == "retrieval_only"
    assert outcome.seconds >= JOIN_DELAY_S  # it did wait for the join
