"""Ingestion: files → parse → chunk → embed → Chroma + ledger (with the lexical tokens).

Public functions (the CLI and the app call these and nothing deeper):

    store = open_store(settings)                          (store/store.py; one per process)
    ingest_paths(store, [Path("data/samples")], groups=None, prune=False) -> IngestReport
    reindex(store, full=False) -> IngestReport            (ingest/reindex.py)
    delete_document(store, "leave.pdf") -> DocRecord
    list_documents(store) -> list[DocRecord]
    store_status(store) -> dict

Per file: an unchanged file (same size and mtime, or same sha256) is skipped without parsing; a new
or changed one is parsed in a worker process with a time limit (the next file is parsed while this
one is written), chunked, its new passages embedded (through the cache, together with other files'
passages in waves of `ingest.embed_wave`, in a background thread: ingest/embed_ahead.py) and
upserted into Chroma, and only then made live in the ledger in one transaction, files in the order
they were found; vectors that stopped being live are deleted afterwards. A crash anywhere leaves the
old or the new version live; orphans are collected at the start of the next run. Every writing
function holds the store's write lock (`store.writing`, store/write_lock.py) for its whole run, so
that collection never meets another run's unfinished work.

Parallel ingestion keeps this one writer: `workers=N` parses and embeds in N processes each
(ingest/workers.py) and commits here with `Writer.commit`; `queue=True` decides what changed as
above but leaves the new and changed files to `kb worker` processes (ingest/queue.py).

Finding and describing the files (ids, hashes, sidecars, groups; symbolic links never followed)
is ingest/discover.py, deciding which of them changed ingest/triage.py; how a document becomes
live (the writer, staging, crash recovery) is ingest/writer.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import Settings
from core.errors import IngestError, KbError
from core.ports import Vectors
from core.text import load_segmenter
from core.types import DocRecord, FileOutcome, IngestReport
from ingest.discover import discover, doc_id_for
from ingest.embed_ahead import EmbedAhead
from ingest.parse import ParsePool
from ingest.parse.legacy_doc import soffice
from ingest.triage import ToDo, triage
from ingest.workers import prepare_in_processes
from ingest.writer import Parsed, Staged, recover
from ingest.writer import Writer as Writer  # re-exported: tests import it here
from store.lazy_vectors import LazyVectorIndex
from store.store import Store

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]


@dataclass
class _Run:
    """One run's report; `finish` adds a file's outcome to it and to the ledger and reports
    progress."""

    store: Store
    report: IngestReport
    total: int  # files found
    progress: Progress | None
    done: int = 0
    embedded_elsewhere: int = 0  # passages embedded in worker processes (`workers` > 1)

    def finish(self, outcome: FileOutcome) -> None:
        self.report.outcomes.append(outcome)
        self.store.ledger.record_file(
            self.report.run_id, outcome.path, outcome.outcome, outcome.reason
        )
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total, outcome.path)


def ingest_paths(
    store: Store,
    paths: Sequence[Path],
    groups: Sequence[str] | None = None,
    prune: bool = False,
    progress: Progress | None = None,
    workers: int = 1,
    queue: bool = False,
    root: Path | None = None,
) -> IngestReport:
    """Ingest files and folders, holding the store's write lock; see the module docstring.
    `workers` > 1: parse and embed in that many processes each (ingest/workers.py). `queue`:
    the new and changed files become jobs for `kb worker` processes (ingest/queue.py; the
    report's `batch` names them) instead of being ingested here. `root`: the files given are
    known by their path under this folder (a folder kept in sync, ingest/sync/folder.py)."""
    with store.writing("kb ingest --queue" if queue else "kb ingest"):
        return _ingest_paths(store, paths, groups, prune, progress, workers, queue, root)


def _ingest_paths(
    store: Store,
    paths: Sequence[Path],
    groups: Sequence[str] | None,
    prune: bool,
    progress: Progress | None,
    workers: int,
    queue: bool = False,
    root: Path | None = None,
) -> IngestReport:
    started = time.perf_counter()
    embedded_before = store.embedded()
    store.ledger.check_text_version()
    recover(store)
    found = list(discover(paths, root))
    for given in [root] if root else paths:
        store.ledger.remember_source(str(given.expanduser().resolve()), groups)
    report = IngestReport(run_id=_start_run(store, paths, groups, prune))
    run = _Run(store, report, len(found), progress)
    fingerprint = _parse_fingerprint(store.settings)
    retry_failed = store.ledger.get_meta("parse_fingerprint") != fingerprint
    todo = triage(store, found, groups, retry_failed, run.finish)
    if todo and not queue:
        _ingest_todo(run, todo, workers)
    if prune:
        _prune(run, paths, found)
    # Every stale vector was deleted as its document switched; only an interrupted run
    # leaves orphans, and the next run's `recover` scans for them.
    if todo and queue:
        _enqueue(store, report, todo)
    logger.info("ingest run %d: done, marking the store clean", report.run_id)
    store.ledger.set_meta("dirty", "0")
    store.ledger.set_meta("parse_fingerprint", fingerprint)
    if report.queued:  # the run ends with its last job (ingest/queue.py)
        report.seconds = time.perf_counter() - started
        return report
    report = store.finish_run(report, started, embedded_before)
    report.embedded += run.embedded_elsewhere
    return report


def _start_run(
    store: Store, paths: Sequence[Path], groups: Sequence[str] | None, prune: bool
) -> int:
    asked = {"paths": [str(p) for p in paths], "groups": list(groups or []), "prune": prune}
    return store.ledger.start_run("ingest", json.dumps(asked))


def _ingest_todo(run: _Run, todo: Sequence[ToDo], workers: int) -> None:
    """Parse, chunk, embed and commit the new and changed files, in the order they were found."""
    store, settings = run.store, run.store.settings
    logger.info("parsing %d new or changed files", len(todo))
    # the embedder, Chroma and jieba's dictionary load while the first files parse
    may_be_chinese = not all(item.was_english for item in todo)
    warm_up = threading.Thread(
        target=_warm_up, args=(store, may_be_chinese), name="kb-warm-up", daemon=True
    )
    warm_up.start()
    writer = Writer(store, store.collection)
    # passages of several files are embedded together, beside the chunking and commits
    # (ingest/embed_ahead.py); files are committed in the order they were found
    with EmbedAhead[Staged](
        lambda texts: _embed_wave(store, texts),
        settings.ingest.embed_wave,
        settings.embed.batch_size,
    ) as ahead:
        for item, result in _parsed(settings, todo, workers):
            staged = writer.stage(item.meta, item.path, item.had_version, result)
            for ready, vectors in ahead.add(staged, staged.texts()):
                _commit(run, writer, ready, vectors)
        for ready, vectors in ahead.finish():
            _commit(run, writer, ready, vectors)
    warm_up.join()  # nothing of this run outlives its write lock


def _embed_wave(store: Store, texts: Sequence[str]) -> Vectors:
    """A wave's passages by the embedder and, into its cache, by the crosslang space's (which
    `CrosslangSpace.follow` then reads at the end of the write instead of embedding them)."""
    vectors = store.embedder.embed_batch(texts)
    if store.space is not None:
        store.space.embed_ahead(texts)
    return vectors


def _commit(run: _Run, writer: Writer, staged: Staged, vectors: Vectors) -> None:
    """Make a staged file live with its new passages' `vectors`, or record why it failed."""
    try:
        if staged.error is not None:
            raise staged.error
        if staged.prepared is not None:
            run.embedded_elsewhere += staged.prepared.embedded
            count = writer.commit(staged.prepared)
        else:
            count = writer.switch(staged.meta, staged.chunks, staged.terms, staged.fresh, vectors)
    except IngestError as exc:
        run.store.ledger.mark_failed(staged.meta, exc.status, str(exc))
        run.finish(FileOutcome(staged.label, "failed", exc.status, str(exc)))
        return
    outcome = "updated" if staged.had_version else "ingested"
    run.finish(FileOutcome(staged.label, outcome, chunks=count))


def _prune(run: _Run, paths: Sequence[Path], found: Sequence[tuple[Path, Path]]) -> None:
    """Remove the documents under `paths` whose files are gone."""
    store = run.store
    seen = {doc_id_for(str(root), path.relative_to(root).as_posix()) for root, path in found}
    roots = {str(p.expanduser().resolve()) for p in paths}
    for record in store.ledger.documents():
        file = Path(record.meta.root) / record.meta.path
        inside = record.meta.root in roots or any(
            str(file).startswith(r + os.sep) for r in roots
        )
        if inside and record.meta.id not in seen and not file.exists():
            logger.info("%s: pruning (its file is gone)", record.meta.path)
            store.vectors.delete(store.collection, store.ledger.delete_document(record.meta.id))
            run.finish(FileOutcome(str(file), "removed"))


def _enqueue(store: Store, report: IngestReport, todo: Sequence[ToDo]) -> None:
    """The new and changed files as a batch of jobs for `kb worker` (ingest/queue.py)."""
    # added last, so that the worker finishing the last job counts this run's every file
    report.batch = store.ledger.add_jobs(
        report.run_id, [(item.meta, item.had_version) for item in todo]
    )
    report.queued = len(todo)
    logger.info(
        "ingest run %d: %d files queued as batch %s", report.run_id, len(todo), report.batch
    )


def _warm_up(store: Store, segmenter: bool = True) -> None:
    """Load what the first file needs: the embedder (its tokenizer chunks), Chroma where the
    store opens it on first use (the CLI's), and jieba's dictionary where a file may be Chinese
    (`segmenter`; else a Chinese passage loads it when met: half a second of CPU that a re-index
    of English files need not hold the interpreter for). Errors are left to the writer, which
    meets them again and reports them."""
    try:
        store.embedder  # noqa: B018  loads it
        if isinstance(store.vectors, LazyVectorIndex):
            store.vectors.index()
        if segmenter:
            load_segmenter()
    except Exception:  # noqa: BLE001  the writer's own call raises it where it is handled
        logger.debug("warm-up failed; the writer loads on first use", exc_info=True)


def _parsed(
    settings: Settings, todo: Sequence[ToDo], workers: int
) -> Iterator[tuple[ToDo, Parsed]]:
    """Each file to ingest with its parse (one worker: embedded by the writer), or its
    prepared document (several: parsed and embedded in processes, ingest/workers.py)."""
    if workers > 1 and len(todo) > 1:
        items = [(item.meta, item.path) for item in todo]
        prepared = prepare_in_processes(settings, items, workers)
        for item, (_, result) in zip(todo, prepared, strict=True):
            yield item, result
        return
    with ParsePool(settings.ingest, workers=workers) as pool:
        parses = pool.imap([item.path for item in todo], [item.meta.root for item in todo])
        for item, (_, parse) in zip(todo, parses, strict=True):
            yield item, parse


def _parse_fingerprint(settings: Settings) -> str:
    """Settings (and installed converters) that can turn a failed file into a good one: when
    they change, failed files are tried again even though they did not change."""
    ingest = settings.ingest
    ocr = [ingest.ocr_languages, bool(shutil.which("tesseract"))] if ingest.ocr else []
    key = json.dumps(
        [list(ingest.pdf_passwords), ingest.max_file_mb, ingest.file_timeout_s, ocr, soffice()]
    )
    return hashlib.sha1(key.encode()).hexdigest()


def find_document(store: Store, ref: str) -> DocRecord:
    """A document by id, path under its root, full path or file name; KbError when none or
    several match."""
    record = store.ledger.document(ref)
    if record:
        return record
    matches = [
        r
        for r in store.ledger.documents()
        if ref in (r.meta.path, str(Path(r.meta.root) / r.meta.path), Path(r.meta.path).name)
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise KbError(f"{ref}: no such document (see `kb docs` for ids and paths)")
    raise KbError(f"{ref}: {len(matches)} documents match; give the id from `kb docs`")


def delete_document(store: Store, ref: str) -> DocRecord:
    """Remove one document (by id, path or file name) from the ledger and Chroma."""
    with store.writing("kb delete"):
        record = find_document(store, ref)
        store.vectors.delete(store.collection, store.ledger.delete_document(record.meta.id))
    return record


def list_documents(store: Store) -> list[DocRecord]:
    return store.ledger.documents()


def _folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def store_status(store: Store) -> dict[str, Any]:
    records = store.ledger.documents()
    return {
        "store": str(store.path),
        "documents": len(records),
        "by_status": dict(Counter(r.status for r in records)),
        "chunks": store.ledger.chunk_count(),
        "vectors": store.vectors.count(store.collection),
        "collection": store.collection,
        "store_bytes": _folder_size(store.path),
        "embedder": store.settings.embed.model,
        # the second vector space (store/crosslang_space.py): on, not ready and why, or off
        "multilingual": (store.space.state() if store.space is not None
                         else "off (embed.multilingual_model is empty)"),
        "last_run": store.ledger.last_run(),
        "free_disk_bytes": shutil.disk_usage(store.path).free,
        "jobs": store.ledger.job_counts(),  # the ingest queue by state (ingest/queue.py)
    }
