"""The ports: what the pipelines need from the outside services, as narrow protocols. Each has
one real adapter (named beside it) and, for the tests of pure logic, a fake in
`tests/support/fakes.py`.

    Embedder      texts -> unit vectors             store/embed/embedder.py (sentence-transformers)
    VectorIndex   upsert / query / delete vectors   store/vectors.py (Chroma)
    Generator     messages -> streamed answer text  assistant/llm/client.py (vLLM's OpenAI API)
    TokenCounter  tokens as the served model counts assistant/llm/tokens.py (its tokenizer)
    Reranker      re-order (question, passage)      assistant/retrieve/rerank.py (a cross-encoder)

The ledger (store/ledger/) is the store of record beside them; `store.store.Store` holds
one of each for a process.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from core.types import Message, Passage

Vectors = npt.NDArray[np.float32]
# Stored on every vector: doc id, groups as "|a|b|", one flag per group (store.vectors).
Metadata = dict[str, str | int | float | bool]


class Embedder(Protocol):
    """L2-normalised float32 vectors, so a dot product is the cosine similarity."""

    name: str
    dim: int
    max_tokens: int

    def embed_batch(self, texts: Sequence[str]) -> Vectors: ...

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]: ...


class VectorIndex(Protocol):
    """Named collections of vectors with metadata; ids are chunk ids."""

    def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: Vectors,
        metadatas: Sequence[Metadata],
    ) -> None: ...

    def update_metadata(
        self, collection: str, ids: Sequence[str], metadatas: Sequence[Metadata]
    ) -> None: ...

    def query(
        self, collection: str, vector: Vectors, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """Nearest `n` ids with cosine similarity, best first."""
        ...

    def existing(self, collection: str, ids: Sequence[str]) -> set[str]: ...

    def vectors(self, collection: str, ids: Sequence[str]) -> Vectors:
        """The stored vectors of `ids`, in that order (rows of zeros for unknown ids)."""
        ...

    def all_ids(self, collection: str) -> set[str]: ...

    def delete(self, collection: str, ids: Sequence[str]) -> None: ...

    def count(self, collection: str) -> int: ...

    def collections(self) -> list[str]: ...

    def drop(self, collection: str) -> None: ...

    def collect_garbage(self, collection: str, live: set[str]) -> int:
        """Remove vectors the ledger does not list; returns how many went."""
        ...


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    finish_reason: str  # "stop" | "length" | ...


class TokenStream(Protocol):
    """Text pieces as they arrive; `close()` (or leaving a `with` block) stops the answer."""

    usage: Usage | None
    finish_reason: str | None

    def __iter__(self) -> Iterator[str]: ...

    def __next__(self) -> str: ...

    def close(self) -> None: ...

    def __enter__(self) -> TokenStream: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Generator(Protocol):
    """What the answering pipeline needs from a model server."""

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        prompt_bound: int | None = None,
    ) -> TokenStream:
        """`prompt_bound`: at least the prompt's tokens, where the caller's packing proved it
        (then the prompt is not counted again before it is sent)."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> Completion: ...

    def close(self) -> None: ...


class TokenCounter(Protocol):
    """Counts tokens the way the served model does."""

    def count(self, text: str) -> int:
        """Tokens of `text` alone, no special tokens added."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """`count` of each text, in one batch."""
        ...

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Prompt tokens of the conversation rendered with the chat template, ready for the
        assistant's answer (what vLLM reports as `usage.prompt_tokens`)."""
        ...


class Reranker(Protocol):
    def rerank(self, question: str, passages: Sequence[Passage]) -> list[Passage]: ...
