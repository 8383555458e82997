"""The generator: one small adapter over vLLM's OpenAI-compatible chat API (httpx, no SDK).

    client = LlmClient.from_settings(settings.llm, counter)
    with client.stream(messages, max_tokens=256) as tokens:
        for piece in tokens:            # text as it arrives
            ...
    tokens.usage                        # Usage(prompt_tokens=..., completion_tokens=...)
    client.complete(messages).text

- Budget: prompt tokens (counted exactly, see `assistant.llm.tokens`) + `max_tokens` must fit
  `max_model_len`; otherwise PromptTooLong before anything is sent. Should vLLM still refuse for
  length, `max_tokens` shrinks once to what fits and the call is retried (logged as a defect).
- Timeouts: connect, first token (no byte for that long), total (checked as pieces arrive).
- Retries: connection errors only, before any text has been yielded.
- Cancellation: closing the stream (or leaving the `with` block, or dropping the iterator)
  closes the HTTP response, and vLLM aborts the request.
- Errors: httpx and HTTP errors become GenerationUnavailable / GenerationTimeout /
  PromptTooLong / GenerationError, each naming the endpoint and the next step.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Generator as PyGenerator
from types import TracebackType
from typing import Any

import httpx

from assistant.llm.endpoint import endpoint_url, tls_context
from core.config import LlmSettings
from core.errors import (
    GenerationError,
    GenerationTimeout,
    GenerationUnavailable,
    PromptTooLong,
)
from core.ports import Completion, TokenCounter, Usage
from core.types import Message

logger = logging.getLogger(__name__)

_RETRY_BACKOFF_S = 0.5
_INPUT_TOKENS = re.compile(r"(\d+) (?:input tokens|in the messages|tokens in the prompt)")


class TokenStream(Iterator[str]):
    """Text pieces as they arrive. `usage` and `finish_reason` are set once the stream ends;
    `close()` (or leaving a `with` block) stops it and closes the HTTP stream."""

    def __init__(self, start: Callable[[TokenStream], PyGenerator[str, None, None]]) -> None:
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self._pieces = start(self)

    def __next__(self) -> str:
        return next(self._pieces)

    def close(self) -> None:
        self._pieces.close()

    def __enter__(self) -> TokenStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class LlmClient:
    """`Generator` over vLLM's `/v1/chat/completions`."""

    def __init__(
        self,
        url: str,
        served_name: str,
        *,
        counter: TokenCounter | None,
        max_model_len: int = 4096,
        answer_tokens: int = 512,
        temperature: float = 0.1,
        repetition_penalty: float = 1.0,
        frequency_penalty: float = 0.0,
        connect_timeout_s: float = 5.0,
        first_token_timeout_s: float = 30.0,
        total_timeout_s: float = 120.0,
        retries: int = 2,
        http: httpx.Client | None = None,
    ) -> None:
        """`counter` None sends without checking the budget first (vLLM then clamps the answer
        or refuses the prompt): for tests that need to reach vLLM's own limit."""
        self.url = url.rstrip("/")
        self.served_name = served_name
        self.counter = counter
        self.max_model_len = max_model_len
        self.answer_tokens = answer_tokens
        self.temperature = temperature
        self.repetition_penalty = repetition_penalty
        self.frequency_penalty = frequency_penalty
        self.connect_timeout_s = connect_timeout_s
        self.first_token_timeout_s = first_token_timeout_s
        self.total_timeout_s = total_timeout_s
        self.retries = retries
        self._http = http or httpx.Client(verify=tls_context())

    @classmethod
    def from_settings(cls, llm: LlmSettings, counter: TokenCounter | None) -> LlmClient:
        return cls(
            endpoint_url(llm), llm.served_name, counter=counter,
            max_model_len=llm.max_model_len, answer_tokens=llm.answer_tokens,
            temperature=llm.temperature, repetition_penalty=llm.repetition_penalty,
            frequency_penalty=llm.frequency_penalty, connect_timeout_s=llm.connect_timeout_s,
            first_token_timeout_s=llm.first_token_timeout_s,
            total_timeout_s=llm.total_timeout_s, retries=llm.retries,
        )

    def close(self) -> None:
        self._http.close()

    def check_budget(
        self, messages: Sequence[Message], max_tokens: int, prompt_bound: int | None = None
    ) -> int | None:
        """Prompt tokens of `messages`; PromptTooLong when they and `max_tokens` overflow the
        window. None when there is no counter, or when `prompt_bound` (at least the prompt's
        tokens, as the caller's packing proved) and `max_tokens` fit: the prompt is then not
        counted again before it is sent (`_compare` counts it after the answer)."""
        if self.counter is None:
            return None
        if prompt_bound is not None and prompt_bound + max_tokens <= self.max_model_len:
            return None
        prompt_tokens = self.counter.count_messages(messages)
        if prompt_tokens + max_tokens > self.max_model_len:
            raise PromptTooLong(
                f"prompt of {prompt_tokens} tokens + {max_tokens} answer tokens exceeds the "
                f"{self.max_model_len}-token window of {self.served_name} at {self.url} "
                "(send fewer passages or lower llm.answer_tokens)"
            )
        return prompt_tokens

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None,
        temperature: float | None = None, extra_body: Mapping[str, Any] | None = None,
        prompt_bound: int | None = None,
    ) -> TokenStream:
        """Start a streamed answer. Budget errors are raised here; connection errors on the
        first `next()`. `prompt_bound`: see `check_budget`."""
        body = self._body(messages, max_tokens, temperature, extra_body, stream=True)
        counted = self.check_budget(messages, body["max_tokens"], prompt_bound)
        return TokenStream(lambda out: self._pieces(body, counted, out))

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None,
        temperature: float | None = None, extra_body: Mapping[str, Any] | None = None,
    ) -> Completion:
        """The whole answer in one response."""
        body = self._body(messages, max_tokens, temperature, extra_body, stream=False)
        counted = self.check_budget(messages, body["max_tokens"])
        started = time.monotonic()
        timeout = httpx.Timeout(self.total_timeout_s, connect=self.connect_timeout_s)
        try:
            response = self._send(body, timeout, stream=False)
            data = response.json()
        except httpx.TimeoutException as exc:
            raise self._timeout(exc, self.total_timeout_s, "for the whole answer") from exc
        except httpx.TransportError as exc:
            raise self._lost(exc) from exc
        choice = data["choices"][0]
        usage = _usage(data.get("usage"))
        completion = Completion(
            text=choice["message"].get("content") or "",
            usage=usage,
            finish_reason=choice.get("finish_reason") or "",
        )
        self._compare(counted, usage)
        logger.info(
            "POST %s/chat/completions: %d prompt + %d completion tokens in %.2fs (%s)",
            self.url, usage.prompt_tokens, usage.completion_tokens,
            time.monotonic() - started, completion.finish_reason,
        )
        return completion

    def _body(
        self, messages: Sequence[Message], max_tokens: int | None, temperature: float | None,
        extra_body: Mapping[str, Any] | None, *, stream: bool,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.served_name,
            "messages": [dict(m) for m in messages],
            "max_tokens": self.answer_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if self.repetition_penalty != 1.0:
            body["repetition_penalty"] = self.repetition_penalty  # vLLM's extension
        if self.frequency_penalty:
            body["frequency_penalty"] = self.frequency_penalty
        body.update(extra_body or {})
        return body

    def _pieces(
        self, body: dict[str, Any], counted: int | None, out: TokenStream
    ) -> PyGenerator[str, None, None]:
        """Yields the answer's text pieces; sets `out.usage`/`out.finish_reason` at the end."""
        started = time.monotonic()
        timeout = httpx.Timeout(
            self.first_token_timeout_s, connect=self.connect_timeout_s,
            write=self.connect_timeout_s,
        )
        usage = Usage()
        finish_reason = ""
        pieces = 0
        ended = False
        response: httpx.Response | None = None
        try:
            response = self._send(body, timeout, stream=True)
            for data in _sse_events(response):
                if "error" in data:
                    raise GenerationError(
                        f"vLLM at {self.url} failed mid-answer: {data['error']} "
                        "(see the server log)"
                    )
                if data.get("usage"):
                    usage = _usage(data["usage"])
                for choice in data.get("choices") or []:
                    finish_reason = choice.get("finish_reason") or finish_reason
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        pieces += 1
                        yield piece
                if time.monotonic() - started > self.total_timeout_s:
                    raise GenerationTimeout(
                        f"vLLM at {self.url} did not finish within {self.total_timeout_s:.0f}s "
                        "(raise llm.total_timeout_s or lower max_tokens)"
                    )
            ended = True
            out.usage, out.finish_reason = usage, finish_reason
            if counted is None and self.counter is not None and usage.prompt_tokens:
                counted = self.counter.count_messages(body["messages"])  # after the answer
            self._compare(counted, usage)
        except httpx.TimeoutException as exc:
            raise self._timeout(exc, self.first_token_timeout_s, "between tokens") from exc
        except httpx.TransportError as exc:
            raise self._lost(exc) from exc
        finally:
            if response is not None:
                response.close()
            logger.info(
                "POST %s/chat/completions (stream): %d prompt + %d completion tokens, "
                "%d pieces in %.2fs (%s)",
                self.url, usage.prompt_tokens, usage.completion_tokens, pieces,
                time.monotonic() - started, finish_reason if ended else "not finished",
            )

    def _compare(self, counted: int | None, usage: Usage) -> None:
        """Our count must equal the server's; a difference is a defect of the token counter."""
        if counted is not None and usage.prompt_tokens and counted != usage.prompt_tokens:
            logger.warning(
                "defect: we counted %d prompt tokens, vLLM at %s counted %d (is the token "
                "counter using the served model's tokenizer?)",
                counted, self.url, usage.prompt_tokens,
            )

    def _send(
        self, body: dict[str, Any], timeout: httpx.Timeout, *, stream: bool
    ) -> httpx.Response:
        """POST the chat request: retries connection errors, shrinks `max_tokens` once when
        vLLM refuses for length, and turns HTTP errors into ours."""
        attempt = 0
        shrunk = False
        while True:
            request = self._http.build_request(
                "POST", f"{self.url}/chat/completions", json=body, timeout=timeout
            )
            try:
                response = self._http.send(request, stream=stream)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt < self.retries:
                    attempt += 1
                    logger.info("vLLM at %s: %s; retry %d of %d", self.url, exc, attempt,
                                self.retries)
                    time.sleep(_RETRY_BACKOFF_S * attempt)
                    continue
                raise GenerationUnavailable(
                    f"vLLM at {self.url} is not answering ({_describe(exc)}, "
                    f"{self.retries + 1} tries); start it with `kb llm serve` or set llm.url"
                ) from exc
            if response.status_code == 200:
                return response
            response.read()
            response.close()
            message = _error_message(response)
            if response.status_code == 400 and "context length" in message:
                prompt_tokens = _input_tokens(message)
                if (not shrunk and prompt_tokens is not None
                        and prompt_tokens < self.max_model_len):
                    logger.warning(
                        "defect: vLLM at %s refused %d prompt + %d answer tokens for length "
                        "although our budget let them through; retrying with max_tokens %d "
                        "(the token counter disagrees with the server: %s)",
                        self.url, prompt_tokens, body["max_tokens"],
                        self.max_model_len - prompt_tokens, message,
                    )
                    body = {**body, "max_tokens": self.max_model_len - prompt_tokens}
                    shrunk = True
                    continue
                raise PromptTooLong(
                    f"vLLM at {self.url} refused the prompt as too long: {message} "
                    "(send fewer passages or lower llm.answer_tokens)"
                )
            if response.status_code == 404:
                raise GenerationUnavailable(
                    f"vLLM at {self.url} does not serve {self.served_name!r}: {message} "
                    "(set llm.served_name to the name it serves; `kb llm status` lists it)"
                )
            if response.status_code >= 500:
                raise GenerationUnavailable(
                    f"vLLM at {self.url} failed: HTTP {response.status_code} {message} "
                    "(see the server log; `kb llm status` checks it)"
                )
            raise GenerationError(
                f"vLLM at {self.url} refused the request: HTTP {response.status_code} {message}"
            )

    def _timeout(self, exc: httpx.TimeoutException, limit: float, what: str) -> GenerationError:
        if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
            limit, what = self.connect_timeout_s, "to connect"
        return GenerationTimeout(
            f"vLLM at {self.url} took more than {limit:.0f}s {what}; it may be overloaded "
            "(check `kb llm status`, or raise llm.first_token_timeout_s / llm.total_timeout_s)"
        )

    def _lost(self, exc: httpx.TransportError) -> GenerationError:
        return GenerationUnavailable(
            f"vLLM at {self.url} dropped the connection ({_describe(exc)}); is it still running? "
            "(`kb llm status`; restart it with `kb llm serve`)"
        )


def _sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The JSON payloads of a server-sent-event stream, up to `data: [DONE]`."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[len("data:"):].strip()
        if payload == "[DONE]":
            return
        event = json.loads(payload)
        if isinstance(event, dict):
            yield event


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0))


def _error_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        return str(error.get("message") or error)[:500]
    return str(error)[:500]


def _input_tokens(message: str) -> int | None:
    """The prompt size in a vLLM length refusal ("... contains 4097 input tokens ...")."""
    match = _INPUT_TOKENS.search(message)
    return int(match.group(1)) if match else None


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
