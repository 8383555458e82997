"""The folders kept in sync as the ledger keeps them (store/ledger/sources.py), on both dialects
(a SQLite file, a real PostgreSQL from devtools/postgres.py): each source's state, a source's
documents by their root, and a renamed file's document moved with its chunks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from core.types import Chunk, DocMeta
from store.ledger import Ledger, SyncState


@pytest.fixture
def ledger(ledger_url: str, tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger(ledger_url or tmp_path / "ledger.sqlite")
    yield opened
    opened.close()


def meta(doc_id: str, root: str, path: str) -> DocMeta:
    return DocMeta(id=doc_id, path=path, root=root, sha256="ab" * 32, size=1000,
                   mtime=1764540000.5, title="请假制度", lang="zh", groups=("hr",))


def test_states_are_saved_and_replaced(ledger: Ledger) -> None:
    assert ledger.sync_state("hr") is None and ledger.sync_states() == []
    ledger.save_sync_state(SyncState("hr", "/mnt/hr", state="running"))
    braked = SyncState("hr", "/mnt/hr", "braked", "12 of 40 files vanished (30% > 20%)",
                       1796115600.25, 1796116500.25, 28, 0, 1, 0, 0, 12, "f1")
    ledger.save_sync_state(braked)
    ledger.save_sync_state(SyncState("finance", "/mnt/finance"))
    assert ledger.sync_state("hr") == braked
    assert [s.name for s in ledger.sync_states()] == ["finance", "hr"]


def test_a_document_moves_with_its_chunks(ledger: Ledger) -> None:
    old = meta("d-old", "/mnt/hr", "leave.pdf")
    chunks = [Chunk(f"c{i}", "d-old", i, f"第{i}条", ("章",), 1, 1) for i in range(3)]
    ledger.replace_document(old, chunks, [["a"]] * 3)
    ledger.replace_document(meta("d-other", "/mnt/finance", "leave.pdf"), [], [])
    generation = ledger.generation()
    moved = replace(old, id="d-new", path="archive/leave-2026.pdf", mtime=1796115600.0)
    assert ledger.move_document("d-old", moved) == ["c0", "c1", "c2"]
    assert ledger.document("d-old") is None and ledger.generation() == generation + 1
    record = ledger.document("d-new")
    assert record is not None and record.status == "ok" and record.chunk_count == 3
    assert (record.meta.path, record.meta.title, record.meta.groups, record.meta.mtime) == (
        "archive/leave-2026.pdf", "请假制度", ("hr",), 1796115600.0)
    assert ledger.chunk_ids("d-new") == ["c0", "c1", "c2"] and ledger.chunk_ids("d-old") == []
    assert sorted(ledger.source_documents("/mnt/hr")) == ["archive/leave-2026.pdf"]
    assert sorted(ledger.source_documents("/mnt/finance")) == ["leave.pdf"]
    assert ledger.move_document("d-gone", moved) == []
