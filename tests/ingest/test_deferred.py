"""The vector index opened in a background thread (issue 12's cold start): the same answers as
Chroma opened in the foreground, and an opening error raised where the index is needed."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from core.errors import StoreError
from ingest.deferred import DeferredVectorIndex
from ingest.store import open_store
from ingest.vectors import VectorStore, group_metadata, open_vector_index


def test_a_deferred_chroma_answers_as_chroma(make_settings) -> None:  # type: ignore[no-untyped-def]
    settings = make_settings()
    deferred = DeferredVectorIndex(lambda: open_vector_index(settings))
    vectors = np.eye(3, 8, dtype=np.float32)
    deferred.upsert("c_1", ["a", "b", "c"], vectors, [group_metadata("d", ["all"])] * 3)
    assert deferred.opened and isinstance(deferred.index(), VectorStore)
    assert deferred.query("c_1", vectors[1], 1)[0][0] == "b"
    assert deferred.count("c_1") == 3 and deferred.existing("c_1", ["a", "x"]) == {"a"}
    assert np.allclose(deferred.vectors("c_1", ["c"]), vectors[2:])
    deferred.delete("c_1", ["a"])
    assert deferred.all_ids("c_1") == {"b", "c"}
    again = open_vector_index(settings)  # what the deferred one wrote is in the folder
    assert again.all_ids("c_1") == {"b", "c"}


def test_open_store_in_the_background_opens_chroma_in_a_thread(make_settings) -> None:  # type: ignore[no-untyped-def]
    store = open_store(make_settings(), vectors_in_background=True)
    try:
        assert isinstance(store.vectors, DeferredVectorIndex)
        assert isinstance(store.vectors.index(), VectorStore)
        assert store.vectors.collections() == []
    finally:
        store.close()


def test_the_opening_runs_beside_the_caller_and_its_error_reaches_each_use() -> None:
    release = threading.Event()

    def opening() -> VectorStore:
        release.wait(10)
        raise StoreError("Chroma store at /nowhere could not be opened (test)")

    deferred = DeferredVectorIndex(opening)
    assert not deferred.opened  # the constructor did not wait for the opening
    release.set()
    for _ in range(2):
        with pytest.raises(StoreError, match="/nowhere"):
            deferred.count("c_1")
    assert deferred.opened
