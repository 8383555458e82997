"""Issue 11, load: askers at once against the real app (loopback) with the real vLLM test
server, half through the page (gradio_client, logged in), half through `POST /api/ask`: every
question answered by the model, none refused for length, no error. A fixed count and a time
limit; no timing is asserted (figures come from bench/load.py, in BENCHMARKS.md).

CI runs 8 askers; the 50-asker variant is marked `load` and run by hand:
`pytest tests/ui/test_load.py -m load`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.load import run_load

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

QUESTIONS = [json.loads(line)["question"] for line in
             (Path(__file__).resolve().parents[2] / "data" / "samples" / "qa.jsonl")
             .read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("askers", [8, pytest.param(50, marks=pytest.mark.load)])
def test_askers_at_once_all_get_the_models_answer(app_server: Any, askers: int) -> None:
    result = run_load(app_server.url, app_server.tokens["bob"], lambda: app_server.client("bob"),
                      pages=askers // 2, apis=askers - askers // 2, questions=QUESTIONS,
                      per_asker=2, limit_s=600)
    assert len(result.outcomes) == 2 * askers
    assert [o.error for o in result.errors] == []
    assert result.length_refusals == []
    assert [o.via for o in result.without_model] == []  # the server is up: the model answers
    assert {o.via for o in result.outcomes} == {"page", "api"}
