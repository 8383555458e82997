"""VectorStore over a real embedded Chroma: a collection created with HNSW settings, `add`."""

from __future__ import annotations

from pathlib import Path

import chromadb
import numpy as np
from chromadb.config import Settings as ChromaSettings

from store.vectors import VectorStore, group_metadata


def open_chroma(path: Path) -> VectorStore:
    client = chromadb.PersistentClient(
        path=str(path), settings=ChromaSettings(anonymized_telemetry=False)
    )
    return VectorStore(client)


def unit_vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_create_sets_the_collections_hnsw_settings_once(tmp_path: Path) -> None:
    store = open_chroma(tmp_path)
    assert store.create("bench_chunks", {"space": "cosine", "sync_threshold": 5000})
    # a second create leaves the collection and its settings as they were
    assert not store.create("bench_chunks", {"space": "l2", "sync_threshold": 7})
    reopened = chromadb.PersistentClient(
        path=str(tmp_path), settings=ChromaSettings(anonymized_telemetry=False)
    ).get_collection("bench_chunks")
    hnsw = reopened.configuration["hnsw"]
    assert hnsw["sync_threshold"] == 5000
    assert hnsw["space"] == "cosine"


def test_add_stores_new_ids_and_keeps_an_existing_ids_vector(tmp_path: Path) -> None:
    store = open_chroma(tmp_path)
    store.create("bench_chunks", {"space": "cosine", "sync_threshold": 5000})
    vectors = unit_vectors(30, 1)
    ids = [f"c{i}" for i in range(30)]
    store.add("bench_chunks", ids, vectors, [group_metadata("d1", ["all"])] * 30)
    assert store.count("bench_chunks") == 30
    assert store.query("bench_chunks", vectors[7], 1)[0][0] == "c7"
    store.add("bench_chunks", ["c7"], unit_vectors(1, 2), [group_metadata("d1", ["all"])])
    np.testing.assert_allclose(store.vectors("bench_chunks", ["c7"])[0], vectors[7], atol=1e-6)
    assert store.count("bench_chunks") == 30


def test_vectors_added_after_the_last_persist_are_found_after_reopening(tmp_path: Path) -> None:
    """A build stopped between two of Chroma's persists (sync_threshold) leaves the rest in
    Chroma's log: a new process still finds every vector."""
    store = open_chroma(tmp_path)
    store.create("bench_chunks", {"space": "cosine", "sync_threshold": 100})
    vectors = unit_vectors(250, 3)
    ids = [f"c{i}" for i in range(250)]
    for s in range(0, 250, 50):
        store.add(
            "bench_chunks",
            ids[s : s + 50],
            vectors[s : s + 50],
            [group_metadata("d1", ["all"])] * 50,
        )
    reopened = open_chroma(tmp_path)
    assert reopened.count("bench_chunks") == 250
    for i in (3, 120, 249):  # persisted, persisted, in the log only
        assert reopened.query("bench_chunks", vectors[i], 1)[0][0] == f"c{i}"


def test_query_answers_an_empty_collection_and_more_asked_than_held(tmp_path: Path) -> None:
    store = open_chroma(tmp_path)
    store.create("bench_chunks", {"space": "cosine"})
    assert store.query("bench_chunks", unit_vectors(1, 4)[0], 10) == []
    vectors = unit_vectors(3, 5)
    store.add("bench_chunks", ["a", "b", "c"], vectors, [group_metadata("d1", ["all"])] * 3)
    hits = store.query("bench_chunks", vectors[1], 10)
    assert [c for c, _ in hits][0] == "b" and {c for c, _ in hits} == {"a", "b", "c"}
    assert abs(hits[0][1] - 1.0) < 1e-5
    assert store.query("bench_chunks", vectors[1], 10, where={"g_hr": True}) == []


def test_a_new_collection_takes_store_hnsw_sync_threshold(tmp_path: Path) -> None:
    import dataclasses

    from core.config import load_settings
    from store.vectors import open_vector_index

    base = load_settings(None, environ={}).with_store(tmp_path / "store")
    settings = dataclasses.replace(
        base, store=dataclasses.replace(base.store, hnsw_sync_threshold=20_000)
    )
    store = open_vector_index(settings)
    store.upsert("kb_chunks_9", ["c1"], unit_vectors(1, 6), [group_metadata("d1", ["all"])])
    reopened = chromadb.PersistentClient(
        path=str(settings.store_path() / "chroma"),
        settings=ChromaSettings(anonymized_telemetry=False),
    ).get_collection("kb_chunks_9")
    assert reopened.configuration["hnsw"]["sync_threshold"] == 20_000
    assert reopened.configuration["hnsw"]["space"] == "cosine"
