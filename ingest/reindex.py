"""Re-indexing: every remembered source again (incremental), or a full rebuild into a fresh
Chroma collection that becomes live in one ledger transaction at the end; until then queries
keep using the old collection.

    reindex(settings) -> IngestReport          # unchanged files skipped, vanished ones pruned
    reindex(settings, full=True) -> IngestReport
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from assistant.config import Settings
from assistant.errors import IngestError
from assistant.types import Chunk, DocMeta
from ingest.ledger import KEPT_NOTE, DocRecord, chunk_row
from ingest.parse import ParsePool
from ingest.pipeline import (
    FileOutcome,
    IngestReport,
    Progress,
    Store,
    _recover,
    _Writer,
    ingest_paths,
    sha256_file,
)


def reindex(
    settings: Settings, full: bool = False, progress: Progress | None = None, workers: int = 1
) -> IngestReport:
    """Incremental: ingest every remembered source again, pruning what disappeared.
    Full: rebuild every document into a fresh collection and switch over at the end."""
    if not full:
        store = Store(settings)
        sources = store.ledger.sources()
        store.close()
        report = IngestReport()
        for source, groups in sources:
            if not Path(source).exists():
                continue
            part = ingest_paths(
                settings, [Path(source)], groups, prune=True, progress=progress, workers=workers
            )
            report.outcomes += part.outcomes
            report.embedded += part.embedded
            report.run_id = part.run_id
        return report
    return _full_reindex(settings, progress, workers)


def _full_reindex(settings: Settings, progress: Progress | None, workers: int) -> IngestReport:
    started = time.perf_counter()
    store = Store(settings)
    try:
        _recover(store)
        old_collection = store.collection
        number = int(old_collection.rsplit("_", 1)[-1]) + 1 if old_collection[-1].isdigit() else 1
        new_collection = f"{settings.store.collection}_{number}"
        store.vectors.drop(new_collection)
        store.ledger.clear_staging()
        store.ledger.set_meta("dirty", "1")
        report = IngestReport(run_id=store.ledger.start_run("reindex-full", ""))
        writer = _Writer(store, new_collection)
        records = store.ledger.documents()
        finals: list[tuple[DocMeta, str, str, int]] = []
        by_path = {Path(r.meta.root) / r.meta.path: r for r in records}
        existing = [p for p in by_path if p.exists()]
        with ParsePool(settings.ingest, workers=workers) as pool:
            for i, (path, result) in enumerate(pool.imap(existing), 1):
                record = by_path[path]
                stat = path.stat()
                meta = replace(
                    record.meta, sha256=sha256_file(path), size=stat.st_size, mtime=stat.st_mtime
                )
                if isinstance(result, IngestError):
                    kept = _carry_over(store, writer, record)
                    finals.append(
                        (
                            record.meta if kept else meta,
                            result.status,
                            str(result) + (KEPT_NOTE if kept else ""),
                            kept,
                        )
                    )
                    outcome = FileOutcome(str(path), "failed", result.status, str(result))
                else:
                    meta, chunks, tokens = writer.prepare(meta, result)
                    writer.upsert(meta, chunks, skip_existing=False)
                    store.ledger.stage_chunks(
                        chunk_row(c, t) for c, t in zip(chunks, tokens, strict=True)
                    )
                    finals.append((meta, "ok", "", len(chunks)))
                    outcome = FileOutcome(
                        str(path),
                        "updated" if record.chunk_count else "ingested",
                        chunks=len(chunks),
                    )
                report.outcomes.append(outcome)
                store.ledger.record_file(
                    report.run_id, outcome.path, outcome.outcome, outcome.reason
                )
                if progress:
                    progress(i, len(records), str(path))
        gone = [r for p, r in by_path.items() if not p.exists()]
        store.ledger.swap_in_staging(finals, new_collection)
        for record in gone:
            store.ledger.delete_document(record.meta.id)
            report.outcomes.append(
                FileOutcome(str(Path(record.meta.root) / record.meta.path), "removed")
            )
        store.vectors.drop(old_collection)
        store.ledger.set_meta("dirty", "0")
        return store.finish_run(report, started)
    finally:
        store.close()


def _carry_over(store: Store, writer: _Writer, record: DocRecord) -> int:
    """Keep a document's live chunks through a full re-index when its file no longer parses."""
    rows = store.ledger.db.execute(
        "SELECT * FROM chunks WHERE doc_id = ? ORDER BY ordinal", (record.meta.id,)
    ).fetchall()
    if not rows:
        return 0
    chunks = [
        Chunk(
            r["id"],
            r["doc_id"],
            r["ordinal"],
            r["text"],
            tuple(json.loads(r["section"])),
            r["page"],
            r["page_end"],
        )
        for r in rows
    ]
    writer.upsert(record.meta, chunks, skip_existing=False)
    store.ledger.stage_chunks(tuple(r) for r in rows)
    return len(chunks)
