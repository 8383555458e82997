"""A vector index opened on first use: Chroma's import (0.6 s of CPU, half of a cold `kb ask`'s:
it pulls in opentelemetry, grpc, protobuf) is paid by the first question that searches densely,
and never by one that does not (a question in a language the embedder does not read, an
abstention before the dense side, a command that only reads the ledger).

    vectors = LazyVectorIndex(lambda: open_vector_index(settings))   # returns at once
    vectors.query("kb_chunks_1", vector, 10)    # opens Chroma (once), then asks it

An opening that fails (`StoreError`: the Chroma folder or server) is raised to the caller and tried
again on the next use (a Chroma server may come up later). Opening it in a background thread instead
was measured slower (docs/benchmarks-history.md, "cold start and overhead, second pass"): the import
holds the GIL and the import lock against the main thread's own imports.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from core.ports import Metadata, VectorIndex, Vectors


class LazyVectorIndex:
    """`VectorIndex` whose real index `open` makes on the first call that needs it."""

    def __init__(self, open: Callable[[], VectorIndex]) -> None:
        self._open = open
        self._index: VectorIndex | None = None
        self._lock = threading.Lock()

    @property
    def opened(self) -> bool:
        """Whether the real index has been made."""
        return self._index is not None

    def index(self) -> VectorIndex:
        """The real index, made now if it was not yet (one opening at a time)."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._open()
        return self._index

    def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: Vectors,
        metadatas: Sequence[Metadata],
    ) -> None:
        self.index().upsert(collection, ids, vectors, metadatas)

    def update_metadata(
        self, collection: str, ids: Sequence[str], metadatas: Sequence[Metadata]
    ) -> None:
        self.index().update_metadata(collection, ids, metadatas)

    def query(
        self, collection: str, vector: Vectors, n: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        return self.index().query(collection, vector, n, where)

    def existing(self, collection: str, ids: Sequence[str]) -> set[str]:
        return self.index().existing(collection, ids)

    def vectors(self, collection: str, ids: Sequence[str]) -> Vectors:
        return self.index().vectors(collection, ids)

    def all_ids(self, collection: str) -> set[str]:
        return self.index().all_ids(collection)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        self.index().delete(collection, ids)

    def count(self, collection: str) -> int:
        return self.index().count(collection)

    def collections(self) -> list[str]:
        return self.index().collections()

    def drop(self, collection: str) -> None:
        self.index().drop(collection)

    def collect_garbage(self, collection: str, live: set[str]) -> int:
        return self.index().collect_garbage(collection, live)
