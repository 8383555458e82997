"""Several model servers behind one `Generator`: each request goes to the replica with the fewest
requests in flight; a replica that fails before the first token is set aside for
`retry_after_s` and the request goes to another; once text has arrived, a failure is the
caller's to handle (the answer says it was cut short). A set-aside replica is tried again when
its time is up, so one that recovers takes requests again without a restart.

    pool = ReplicaPool([LlmClient(url_a, ...), LlmClient(url_b, ...)], retry_after_s=10)
    with pool.stream(messages) as tokens:
        for piece in tokens: ...
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from assistant.llm.client import LlmClient
from core.errors import ConfigError, GenerationError, GenerationTimeout, GenerationUnavailable
from core.ports import Completion, TokenStream, Usage
from core.types import Message

logger = logging.getLogger(__name__)

# What a replica raises when it, not the request, is at fault: worth another replica.
REPLICA_FAULTS = (GenerationUnavailable, GenerationTimeout)
T = TypeVar("T")


class ReplicaPool:
    """`Generator` over several `LlmClient`s (thread-safe)."""

    def __init__(
        self,
        clients: Sequence[LlmClient],
        retry_after_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not clients:
            raise ConfigError("llm.endpoints names no model server")
        self.clients = list(clients)
        self.retry_after_s = retry_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._busy = [0] * len(self.clients)
        self._down_until = [0.0] * len(self.clients)

    def in_flight(self) -> list[int]:
        with self._lock:
            return list(self._busy)

    def _take(self, tried: set[int]) -> int:
        """The replica to use next: up, not yet tried for this request, fewest in flight."""
        with self._lock:
            now = self._clock()
            up = [i for i in range(len(self.clients))
                  if i not in tried and self._down_until[i] <= now]
            if not up:
                raise GenerationUnavailable(
                    "no model server is answering ("
                    + ", ".join(c.url for c in self.clients)
                    + "); start them with `kb llm serve` or check llm.endpoints"
                )
            best = min(up, key=lambda i: (self._busy[i], i))
            self._busy[best] += 1
            return best

    def _release(self, index: int, failed: bool = False) -> None:
        with self._lock:
            self._busy[index] -= 1
            if failed:
                self._down_until[index] = self._clock() + self.retry_after_s
        if failed:
            logger.warning(
                "model server %s set aside for %.0fs", self.clients[index].url, self.retry_after_s
            )

    def _first_up(self, tried: set[int], call: Callable[[LlmClient], T]) -> tuple[int, T]:
        """`call` on the replica `_take` picks, moving to the next one (and setting the failed
        one aside) while replicas fail; the replica it succeeded on stays taken."""
        while True:
            index = self._take(tried)
            try:
                return index, call(self.clients[index])
            except REPLICA_FAULTS:
                self._release(index, failed=True)
                tried.add(index)
            except BaseException:
                self._release(index)
                raise

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        prompt_bound: int | None = None,
    ) -> TokenStream:
        def start(client: LlmClient) -> TokenStream:
            return client.stream(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                extra_body=extra_body,
                prompt_bound=prompt_bound,
            )

        return _FailoverStream(self, start)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> Completion:
        index, completion = self._first_up(
            set(),
            lambda client: client.complete(
                messages, max_tokens=max_tokens, temperature=temperature, extra_body=extra_body
            ),
        )
        self._release(index)
        return completion

    def close(self) -> None:
        for client in self.clients:
            client.close()


class _FailoverStream:
    """A stream that moves to another replica until its first piece has arrived."""

    def __init__(self, pool: ReplicaPool, start: Callable[[LlmClient], TokenStream]) -> None:
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self._pool = pool
        self._start = start
        self._tried: set[int] = set()
        self._index: int | None = None
        self._inner: TokenStream | None = None
        self._yielded = False
        self._open()  # budget errors (PromptTooLong) surface here, as with one client

    def _open(self) -> None:
        self._index, self._inner = self._pool._first_up(self._tried, self._start)

    def _done(self, failed: bool = False) -> None:
        if self._index is not None:
            self._pool._release(self._index, failed)
            self._index = None

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while True:
            if self._inner is None:
                raise StopIteration
            try:
                piece = next(self._inner)
            except StopIteration:
                self.usage, self.finish_reason = self._inner.usage, self._inner.finish_reason
                self._inner = None
                self._done()
                raise
            except REPLICA_FAULTS:
                failed = self._index
                self._inner.close()
                self._inner = None
                self._done(failed=True)
                if self._yielded:
                    raise
                if failed is not None:
                    self._tried.add(failed)
                self._open()  # GenerationUnavailable when no replica is left
                continue
            except GenerationError:
                self._inner.close()
                self._inner = None
                self._done()
                raise
            self._yielded = True
            return piece

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()
            self._inner = None
        self._done()

    def __enter__(self) -> _FailoverStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
