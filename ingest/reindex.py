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
from core.types import DocMeta, DocRecord, FileOutcome, IngestReport, ParsedDoc
from ingest.parse import ParsePool
from ingest.pipeline import Progress, ingest_paths
from ingest.prepare import lexical_terms
from ingest.writer import Writer, recover
from store.ledger import KEPT_NOTE
from store.store import Store

logger = logging.getLogger(__name__)

DROP_GRACE_S = 5.0  # the old collection outlives the switch by this long (questions in flight)
Final = tuple[DocMeta, str, str, int]  # a document as the switch leaves it: status, reason, chunks


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
    recover(store)
    generation = store.ledger.generation()
    old_collection = store.collection
    new_collection = _empty_next_collection(store)
    logger.info("full re-index into %s (live until the switch: %s)", new_collection, old_collection)
    report = IngestReport(run_id=store.ledger.start_run("reindex-full", ""))
    records = store.ledger.documents()
    by_path = {Path(r.meta.root) / r.meta.path: r for r in records}
    writer = Writer(store, new_collection)
    finals: list[Final] = []
    existing = [p for p in by_path if p.exists()]
    with ParsePool(store.settings.ingest, workers=workers) as pool:
        roots = [by_path[path].meta.root for path in existing]
        for i, (path, result) in enumerate(pool.imap(existing, roots), 1):
            final, outcome = _restage(store, writer, by_path[path], path, result)
            finals.append(final)
            report.outcomes.append(outcome)
            store.ledger.record_file(report.run_id, outcome.path, outcome.outcome, outcome.reason)
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
    _drop_after_grace(store, old_collection)
    logger.info("full re-index done, marking the store clean")
    store.ledger.set_meta("dirty", "0")
    return store.finish_run(report, started, embedded_before)


def _empty_next_collection(store: Store) -> str:
    """The next collection's name (kb_chunks_1 -> kb_chunks_2), dropped if an interrupted
    rebuild left it, with nothing staged and the store marked dirty (so that a rebuild
    interrupted now is collected by the next run's `recover`)."""
    current = store.collection
    number = int(current.rsplit("_", 1)[-1]) + 1 if current[-1].isdigit() else 1
    name = f"{store.settings.store.collection}_{number}"
    store.vectors.drop(name)
    store.ledger.clear_staging()
    store.ledger.set_meta("dirty", "1")
    return name


def _restage(
    store: Store, writer: Writer, record: DocRecord, path: Path, result: ParsedDoc | IngestError
) -> tuple[Final, FileOutcome]:
    """One document parsed again into the new collection and the staging table (recorded under
    the hash of the bytes parsed); one whose file no longer parses, or is now a symbolic link,
    keeps its live chunks (`_carry_over`) and is reported failed."""
    stat = path.lstat()
    meta = replace(record.meta, size=stat.st_size, mtime=stat.st_mtime)
    try:
        if isinstance(result, IngestError):
            raise result
        meta, chunks, tokens = writer.prepare(meta, result)  # IngestError past ingest.max_chunks
    except IngestError as exc:
        kept = _carry_over(store, writer, record)
        reason = str(exc) + (KEPT_NOTE if kept else "")
        final = (record.meta if kept else meta, exc.status, reason, kept)
        return final, FileOutcome(str(path), "failed", exc.status, str(exc))
    writer.upsert(meta, chunks, skip_existing=False)
    logger.info("%s: staging %d chunks", meta.path, len(chunks))
    store.ledger.stage_chunks(chunks, tokens)
    outcome = "updated" if record.chunk_count else "ingested"
    return (meta, "ok", "", len(chunks)), FileOutcome(str(path), outcome, chunks=len(chunks))


def _drop_after_grace(store: Store, collection: str) -> None:
    """Drop the old collection DROP_GRACE_S after the switch."""
    # A question that took its snapshot before the switch may still be querying the old
    # collection: give it time to finish before the collection goes.
    logger.info("waiting %gs for questions in flight on %s", DROP_GRACE_S, collection)
    time.sleep(DROP_GRACE_S)
    store.vectors.drop(collection)


def _carry_over(store: Store, writer: Writer, record: DocRecord) -> int:
    """Keep a document's live chunks through a full re-index when its file no longer parses."""
    chunks = [chunk for chunk, _ in store.ledger.chunks_of(record.meta.id)]
    if not chunks:
        return 0
    writer.upsert(record.meta, chunks, skip_existing=False)
    # the terms again, under today's text rules (the stored ones may be older)
    store.ledger.stage_chunks(chunks, lexical_terms(record.meta.title, chunks))
    return len(chunks)
