"""The store's question vectors: kept per process, least recently asked dropped first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def _store(tmp_path: Path) -> Any:
    from core.config import load_settings
    from store.ledger import Ledger
    from store.store import Store
    from tests.support.fakes import FakeEmbedder, MemoryVectorIndex

    repo = Path(__file__).resolve().parents[2]
    settings = load_settings(repo / "config.toml", environ={}).with_store(tmp_path / "store")
    return Store(settings, Ledger(tmp_path / "ledger.sqlite"), MemoryVectorIndex(), FakeEmbedder())


def test_a_repeated_question_is_embedded_once(tmp_path: Path, monkeypatch: Any) -> None:
    import store.store as store_module

    monkeypatch.setattr(store_module, "QUESTION_VECTORS", 2)
    store = _store(tmp_path)
    embedder = store.embedder
    first = store.question_vector("how many days of annual leave?")
    assert embedder.calls == 1
    again = store.question_vector("how many days of annual leave?")
    assert again is first and embedder.calls == 1
    assert np.array_equal(first, store.embed_question(["how many days of annual leave?"])[0])
    assert not first.flags.writeable  # shared by every asker: nobody may change it
    store.question_vector("who approves travel?")
    store.question_vector("how many days of annual leave?")  # now the most recent
    store.question_vector("what is the meal allowance?")  # drops "who approves travel?"
    calls = embedder.calls
    store.question_vector("how many days of annual leave?")
    assert embedder.calls == calls
    store.question_vector("who approves travel?")
    assert embedder.calls == calls + 1
    store.close()


def test_a_new_question_encoder_drops_the_kept_vectors(tmp_path: Path) -> None:
    from tests.support.fakes import FakeEmbedder

    store = _store(tmp_path)
    store.question_vector("how many days of annual leave?")
    encoder = FakeEmbedder()
    store.use_question_encoder(encoder)
    store.question_vector("how many days of annual leave?")
    assert encoder.calls == 1  # embedded again, by the new encoder
    store.close()
