"""A vector index opened in a background thread: a query process starts with Chroma's import
(seconds on a busy 2-core machine: it pulls in opentelemetry, grpc, protobuf) running beside
its own start, and a question that needs no dense search never waits for it.

    vectors = DeferredVectorIndex(lambda: open_vector_index(settings))   # returns at once
    vectors.query("kb_chunks_1", vector, 10)    # waits for the opening, then asks Chroma

An error of the opening (`StoreError`: the Chroma folder or server) is raised by the first call
that needs the index, every time it is called.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from core.ports import Metadata, VectorIndex, Vectors


class DeferredVectorIndex:
    """`VectorIndex` whose real index is made by `open` in a daemon thread, started here."""

    def __init__(self, open: Callable[[], VectorIndex]) -> None:
        self._open = open
        self._index: VectorIndex | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="open-vector-index", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._index = self._open()
        except BaseException as exc:  # handed to the caller that needs the index
            self._error = exc

    @property
    def opened(self) -> bool:
        """Whether the opening has finished (well or not)."""
        return not self._thread.is_alive()

    def index(self) -> VectorIndex:
        """The real index, once opened (waits for it)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._index is not None
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
