"""The vector index opened on first use (issue 12's cold start): the same answers as Chroma
opened at once, nothing opened until a call needs it, and an opening error raised to the
caller that needs the index and tried again on the next call."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import StoreError
from store.lazy_vectors import LazyVectorIndex
from store.store import open_store
from store.vectors import VectorStore, group_metadata, open_vector_index


def test_a_lazy_chroma_answers_as_chroma(make_settings) -> None:  # type: ignore[no-untyped-def]
    settings = make_settings()
    lazy = LazyVectorIndex(lambda: open_vector_index(settings))
    assert not lazy.opened
    vectors = np.eye(3, 8, dtype=np.float32)
    lazy.upsert("c_1", ["a", "b", "c"], vectors, [group_metadata("d", ["all"])] * 3)
    assert lazy.opened and isinstance(lazy.index(), VectorStore)
    assert lazy.query("c_1", vectors[1], 1)[0][0] == "b"
    assert lazy.count("c_1") == 3 and lazy.existing("c_1", ["a", "x"]) == {"a"}
    assert np.allclose(lazy.vectors("c_1", ["c"]), vectors[2:])
    lazy.delete("c_1", ["a"])
    assert lazy.all_ids("c_1") == {"b", "c"}
    again = open_vector_index(settings)  # what the lazy one wrote is in the folder
    assert again.all_ids("c_1") == {"b", "c"}


def test_open_store_with_lazy_vectors_opens_chroma_on_first_use(make_settings) -> None:  # type: ignore[no-untyped-def]
    store = open_store(make_settings(), lazy_vectors=True)
    try:
        assert isinstance(store.vectors, LazyVectorIndex) and not store.vectors.opened
        assert store.vectors.collections() == []
        assert store.vectors.opened and isinstance(store.vectors.index(), VectorStore)
    finally:
        store.close()


def test_an_opening_error_reaches_the_caller_and_is_tried_again() -> None:
    calls: list[int] = []

    def opening() -> VectorStore:
        calls.append(1)
        raise StoreError("Chroma store at /nowhere could not be opened (test)")

    lazy = LazyVectorIndex(opening)
    assert calls == []  # nothing opened before a call needs it
    for _ in range(2):
        with pytest.raises(StoreError, match="/nowhere"):
            lazy.count("c_1")
    assert len(calls) == 2 and not lazy.opened
