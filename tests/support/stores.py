"""The store functions as a `kb` command calls them, for tests that take settings: each call
opens the store, runs one public function of `ingest/` and closes the store again.

    ingest_paths(settings, [docs]).counts["ingested"] -> 11
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.config import Settings
from core.types import DocRecord, IngestReport
from ingest import pipeline
from ingest import reindex as reindexing
from ui.wiring import store_for


def ingest_paths(
    settings: Settings, paths: Sequence[Path], *args: Any, **kwargs: Any
) -> IngestReport:
    with store_for(settings) as store:
        return pipeline.ingest_paths(store, paths, *args, **kwargs)


def reindex(settings: Settings, *args: Any, **kwargs: Any) -> IngestReport:
    with store_for(settings) as store:
        return reindexing.reindex(store, *args, **kwargs)


def delete_document(settings: Settings, ref: str) -> DocRecord:
    with store_for(settings) as store:
        return pipeline.delete_document(store, ref)


def list_documents(settings: Settings) -> list[DocRecord]:
    with store_for(settings) as store:
        return pipeline.list_documents(store)


def store_status(settings: Settings) -> dict[str, Any]:
    with store_for(settings) as store:
        return pipeline.store_status(store)


def store_problems(settings: Settings) -> list[str]:
    """What is wrong between the ledger and Chroma ([] when they agree): vectors no live chunk
    owns, live chunks without a vector, documents whose chunk count is not their live chunks."""
    problems: list[str] = []
    with store_for(settings) as store:
        rows = store.ledger.db.execute("SELECT id, doc_id FROM chunks").fetchall()
        live = {r[0] for r in rows}
        per_doc = Counter(r[1] for r in rows)
        vectors = store.vectors.all_ids(store.collection)
        if vectors - live:
            problems.append(f"{len(vectors - live)} orphan vectors in {store.collection}")
        if live - vectors:
            problems.append(f"{len(live - vectors)} live chunks without a vector")
        for record in store.ledger.documents():
            if record.chunk_count != per_doc.get(record.meta.id, 0):
                problems.append(
                    f"{record.meta.path} ({record.status}): chunk_count {record.chunk_count}, "
                    f"{per_doc.get(record.meta.id, 0)} live chunks"
                )
    return problems


def ledger_before(path: Path, migration: str) -> sqlite3.Connection:
    """A SQLite ledger at `path` migrated up to, not including, `migration`: a ledger written
    by an older kb, for tests that it opens and migrates."""
    from store.ledger import MIGRATIONS

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    for name, sql in MIGRATIONS:
        if name == migration:
            break
        db.executescript(sql)
        db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
    return db
