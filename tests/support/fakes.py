"""Fakes of the ports (`core.ports`) for the tests of the pipelines' own logic: deterministic,
in memory, no torch, no Chroma, no model server.

    embedder = FakeEmbedder()                  # hashed bag of terms -> unit vector
    index = MemoryVectorIndex()                # dict-backed VectorIndex
    generator = FakeGenerator(); generator.enqueue("Five days [1].")
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

import numpy as np

from core.errors import GenerationError
from core.ports import Completion, Metadata, Usage, Vectors
from core.text import tokenize
from core.types import Message


class FakeEmbedder:
    """Each term of `core.text.tokenize` adds one to a hashed dimension; rows are L2-normalised,
    so texts sharing terms are near and texts sharing none are orthogonal (mostly)."""

    name = "fake-embedder"
    dim = 256
    max_tokens = 512

    def __init__(self) -> None:
        self.calls = 0

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in tokenize(text):
                digest = hashlib.blake2b(term.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dim] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        return [max(1, len(t) // 4) for t in texts]


class MemoryVectorIndex:
    """`VectorIndex` in dictionaries; `query` is an exact cosine search."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, tuple[Vectors, Metadata]]] = {}

    def _of(self, collection: str) -> dict[str, tuple[Vectors, Metadata]]:
        return self.data.setdefault(collection, {})

    def upsert(
        self, collection: str, ids: Sequence[str], vectors: Vectors, metadatas: Sequence[Metadata]
    ) -> None:
        target = self._of(collection)
        for cid, vector, meta in zip(ids, vectors, metadatas, strict=True):
            target[cid] = (np.asarray(vector, dtype=np.float32), dict(meta))

    def update_metadata(
        self, collection: str, ids: Sequence[str], metadatas: Sequence[Metadata]
    ) -> None:
        target = self._of(collection)
        for cid, meta in zip(ids, metadatas, strict=True):
            target[cid] = (target[cid][0], dict(meta))

    def query(
        self, collection: str, vector: Vectors, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        scored = [(cid, float(v @ vector)) for cid, (v, _) in self._of(collection).items()]
        return sorted(scored, key=lambda item: -item[1])[:n]

    def existing(self, collection: str, ids: Sequence[str]) -> set[str]:
        return set(ids) & set(self._of(collection))

    def vectors(self, collection: str, ids: Sequence[str]) -> Vectors:
        target = self._of(collection)
        dim = next((len(v) for v, _ in target.values()), 0)
        out = np.zeros((len(ids), dim), dtype=np.float32)
        for i, cid in enumerate(ids):
            if cid in target:
                out[i] = target[cid][0]
        return out

    def all_ids(self, collection: str) -> set[str]:
        return set(self._of(collection))

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        for cid in ids:
            self._of(collection).pop(cid, None)

    def count(self, collection: str) -> int:
        return len(self._of(collection))

    def collections(self) -> list[str]:
        return sorted(self.data)

    def drop(self, collection: str) -> None:
        self.data.pop(collection, None)

    def collect_garbage(self, collection: str, live: set[str]) -> int:
        orphans = self.all_ids(collection) - live
        self.delete(collection, sorted(orphans))
        return len(orphans)


class FakeCounter:
    """About four characters a token; a message costs its content plus four."""

    def count(self, text: str) -> int:
        return max(1, len(text) // 4)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def count_messages(self, messages: Sequence[Message]) -> int:
        return sum(self.count(m["content"]) + 4 for m in messages)


class FakeStream:
    def __init__(self, pieces: Sequence[str | Exception]) -> None:
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self._pieces = iter(pieces)
        self.closed = False

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        piece = next(self._pieces)
        if isinstance(piece, Exception):
            raise piece
        return piece

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> FakeStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class FakeGenerator:
    """Answers from a queue: `enqueue("text [1].")` streams it word by word; an exception in
    the pieces is raised when the stream reaches it. Every request's messages are kept."""

    def __init__(self) -> None:
        self.queue: list[list[str | Exception]] = []
        self.requests: list[list[Message]] = []
        self.prompt_bounds: list[int | None] = []  # what each stream() was told

    def enqueue(self, answer: str | Sequence[str | Exception]) -> None:
        if isinstance(answer, str):
            words = answer.split(" ")
            self.queue.append([w + " " for w in words[:-1]] + [words[-1]])
        else:
            self.queue.append(list(answer))

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        prompt_bound: int | None = None,
    ) -> FakeStream:
        self.requests.append(list(messages))
        self.prompt_bounds.append(prompt_bound)
        if not self.queue:
            raise GenerationError("FakeGenerator: nothing queued for this request")
        return FakeStream(self.queue.pop(0))

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> Completion:
        text = "".join(str(p) for p in self.stream(messages))
        return Completion(text, Usage(), "stop")

    def close(self) -> None:
        pass
