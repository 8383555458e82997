"""Re-indexing: every remembered source again (incremental), or a full rebuild into a fresh
Chroma collection that becomes live in one ledger transaction at the end; until then queries
keep using the old collection, which is dropped DROP_GRACE_S after the switch (a question in
flight at the switch finishes on it).

    reindex(store) -> IngestReport             # unchanged files skipped, vanished ones pruned
    reindex(store, full=True) -> IngestReport
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from core.errors import IngestError
from core.types import DocMeta, DocRecord, FileOutcome, IngestReport
from ingest.parse import ParsePool
from ingest.pipeline import Progress, Writer, ingest_paths, recover, sha256_file
from ingest.prepare import lexical_terms
from store.ledger import KEPT_NOTE
from store.store import Store

logger = logging.getLogger(__name__)

DROP_GRACE_S = 5.0  # the old collection outlives the switch by this long (questions in flight)


def reindex(
    store: Store, full: bool = False, progress: Progress | None = None, workers: int = 1
) -> IngestReport:
    """Incremental: ingest every remembered source again, pruning what disappeared.
    Full: rebuild every document into a fresh collection and switch over at the end. Either
    holds the store's write lock throughout."""
    with store.writing("kb reindex --full" if full else "kb reindex"):
        if full:
            return _full_reindex(store, progress, workers)
        return _incremental(store, progress, workers)


def _incremental(store: Store, progress: Progress | None, workers: int) -> IngestReport:
    started = time.perf_counter()
    report = IngestReport()
    for source, groups in store.ledger.sources():
        if not Path(source).exists():
            continue
        part = ingest_paths(
            store, [Path(source)], groups, prune=True, progress=progress, workers=workers
        )
        report.outcomes += part.outcomes
        report.embedded += part.embedded
        report.run_id = part.run_id
    report.seconds = time.perf_counter() - started
    return report


def _full_reindex(store: Store, progress: Progress | None, workers: int) -> IngestReport:
    started = time.perf_counter()
    embedded_before = store.embedded()
    settings = store.settings
    recover(store)
    generation = store.ledger.generation()
    old_collection = store.collection
    number = int(old_collection.rsplit("_", 1)[-1]) + 1 if old_collection[-1].isdigit() else 1
    new_collection = f"{settings.store.collection}_{number}"
    store.vectors.drop(new_collection)
    store.ledger.clear_staging()
    store.ledger.set_meta("dirty", "1")
    logger.info("full re-index into %s (live until the switch: %s)", new_collection, old_collection)
    report = IngestReport(run_id=store.ledger.start_run("reindex-full", ""))
    writer = Writer(store, new_collection)
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
            try:
                if isinstance(result, IngestError):
                    raise result
                prepared = writer.prepare(meta, result)  # IngestError past ingest.max_chunks
            except IngestError as exc:
                result = exc
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
                meta, chunks, tokens = prepared
                writer.upsert(meta, chunks, skip_existing=False)
                logger.info("%s: staging %d chunks", meta.path, len(chunks))
                store.ledger.stage_chunks(chunks, tokens)
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
    logger.info("switching to collection %s", new_collection)
    store.ledger.swap_in_staging(finals, new_collection, generation)
    for record in gone:
        store.ledger.delete_document(record.meta.id)
        report.outcomes.append(
            FileOutcome(str(Path(record.meta.root) / record.meta.path), "removed")
        )
    # A question that took its snapshot before the switch may still be querying the old
    # collection: give it time to finish before the collection goes.
    logger.info("waiting %gs for questions in flight on %s", DROP_GRACE_S, old_collection)
    time.sleep(DROP_GRACE_S)
    store.vectors.drop(old_collection)
    logger.info("full re-index done, marking the store clean")
    store.ledger.set_meta("dirty", "0")
    return store.finish_run(report, started, embedded_before)


def _carry_over(store: Store, writer: Writer, record: DocRecord) -> int:
    """Keep a document's live chunks through a full re-index when its file no longer parses."""
    chunks = [chunk for chunk, _ in store.ledger.chunks_of(record.meta.id)]
    if not chunks:
        return 0
    writer.upsert(record.meta, chunks, skip_existing=False)
    # the terms again, under today's text rules (the stored ones may be older)
    store.ledger.stage_chunks(chunks, lexical_terms(record.meta.title, chunks))
    return len(chunks)
