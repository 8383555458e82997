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
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.config import Settings
from core.errors import IngestError, KbError
from core.ports import Vectors
from core.text import load_segmenter
from core.types import Chunk, DocMeta, DocRecord, FileOutcome, IngestReport, ParsedDoc
from ingest.embed_ahead import EmbedAhead
from ingest.parse import ParsePool
from ingest.parse.legacy_doc import soffice
from ingest.prepare import Prepared, chunk_document
from ingest.prepare import lexical_terms as lexical_terms  # re-exported: callers import it here
from ingest.workers import prepare_in_processes
from store.lazy_vectors import LazyVectorIndex
from store.store import Store
from store.vectors import group_metadata

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
SIDECAR_SUFFIX = ".meta.toml"
SIDECAR_KEYS = {"title", "version", "effective_date", "series", "groups"}



def doc_id_for(root: str, rel: str) -> str:
    return hashlib.sha1(f"{root}\0{rel}".encode()).hexdigest()[:16]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sidecar(path: Path) -> dict[str, Any]:
    """`NAME.meta.toml` or `STEM.meta.toml` beside the file, if present."""
    for candidate in (
        path.with_name(path.name + SIDECAR_SUFFIX),
        path.with_name(path.stem + SIDECAR_SUFFIX),
    ):
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise IngestError(
                    f"{candidate.name}: sidecar is not valid TOML ({exc}); fix or remove it"
                ) from exc
            unknown = set(data) - SIDECAR_KEYS
            if unknown:
                raise IngestError(
                    f"{candidate.name}: unknown sidecar key {sorted(unknown)[0]!r} "
                    f"(known: {', '.join(sorted(SIDECAR_KEYS))})"
                )
            return {k: (tuple(v) if isinstance(v, list) else str(v)) for k, v in data.items()}
    return {}


def _groups_for(
    settings: Settings, rel: str, explicit: Sequence[str] | None, sidecar: dict[str, Any]
) -> tuple[str, ...]:
    """--groups, else the sidecar's groups, else the longest matching folder mapping, else the
    default groups."""
    if explicit:
        return tuple(sorted(set(explicit)))
    if sidecar.get("groups"):
        return tuple(sorted(set(sidecar["groups"])))
    best = ""
    for prefix in settings.ingest.folder_groups:
        norm = prefix.strip("/") + "/"
        if rel.startswith(norm) and len(norm) > len(best):
            best = prefix
    groups = settings.ingest.folder_groups[best] if best else settings.ingest.default_groups
    return tuple(sorted(set(groups)))


def discover(paths: Sequence[Path]) -> Iterator[tuple[Path, Path]]:
    """(root, file) pairs: a folder is walked (hidden entries and sidecars skipped), a file is
    its own root's only member."""
    for given in paths:
        path = given.expanduser().resolve()
        if path.is_file():
            yield path.parent, path
        elif path.is_dir():
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if not name.startswith(".") and not name.endswith(SIDECAR_SUFFIX):
                        yield path, Path(dirpath) / name
        else:
            raise KbError(f"{given}: no such file or folder (check the path)")


def _describe(settings: Settings, root: Path, path: Path, groups: Sequence[str] | None) -> DocMeta:
    rel = path.relative_to(root).as_posix()
    stat = path.stat()
    sidecar = _sidecar(path)
    return DocMeta(
        id=doc_id_for(str(root), rel),
        path=rel,
        root=str(root),
        sha256="",
        size=stat.st_size,
        mtime=stat.st_mtime,
        title=str(sidecar.get("title", "")),
        groups=_groups_for(settings, rel, groups, sidecar),
        version=str(sidecar.get("version", "")),
        effective_date=str(sidecar.get("effective_date", "")),
        series=str(sidecar.get("series", "")),
    )


def _same_meta(a: DocMeta, b: DocMeta) -> bool:
    keys = ("groups", "version", "effective_date", "series")
    return all(getattr(a, k) == getattr(b, k) for k in keys) and (not b.title or a.title == b.title)


class Writer:
    """Turns a parsed document into live chunks: chunk, tokenize, embed new passages, upsert,
    then switch the ledger."""

    def __init__(self, store: Store, collection: str) -> None:
        self.store = store
        self.collection = collection
        self.settings = store.settings

    def prepare(
        self, meta: DocMeta, parsed: ParsedDoc
    ) -> tuple[DocMeta, list[Chunk], list[list[str]]]:
        return chunk_document(self.settings, self.store.embedder, meta, parsed)

    def upsert(self, meta: DocMeta, chunks: Sequence[Chunk], skip_existing: bool = True) -> None:
        ids = [c.id for c in chunks]
        present = self.store.vectors.existing(self.collection, ids) if skip_existing else set()
        fresh = [c for c in chunks if c.id not in present]
        if not fresh:
            return
        self.store.ledger.set_meta("dirty", "1")
        logger.info("%s: embedding %d new passages", meta.path, len(fresh))
        vectors = self.store.embedder.embed_batch([c.embed_text() for c in fresh])
        metadata = group_metadata(meta.id, meta.groups)
        self.store.vectors.upsert(
            self.collection, [c.id for c in fresh], vectors, [metadata] * len(fresh)
        )

    def write(self, meta: DocMeta, parsed: ParsedDoc) -> int:
        meta, chunks, tokens = self.prepare(meta, parsed)
        self.upsert(meta, chunks)
        logger.info("%s: switching to %d live chunks", meta.path, len(chunks))
        stale = self.store.ledger.replace_document(meta, chunks, tokens)
        self.store.vectors.delete(self.collection, stale)
        return len(chunks)

    def fresh(self, chunks: Sequence[Chunk]) -> list[int]:
        """Indexes of the chunks Chroma lacks; the others keep their vectors (ids are stable)."""
        present = self.store.vectors.existing(self.collection, [c.id for c in chunks])
        return [i for i, c in enumerate(chunks) if c.id not in present]

    def switch(
        self,
        meta: DocMeta,
        chunks: Sequence[Chunk],
        terms: Sequence[Sequence[str]],
        fresh: Sequence[int],
        vectors: Vectors,
    ) -> int:
        """Upsert `vectors[k]` as the vector of `chunks[fresh[k]]`, then make the document live
        in one ledger transaction and delete the vectors that stopped being live."""
        if fresh:
            self.store.ledger.set_meta("dirty", "1")
            self.store.vectors.upsert(
                self.collection,
                [chunks[i].id for i in fresh],
                vectors,
                [group_metadata(meta.id, meta.groups)] * len(fresh),
            )
        logger.info("%s: switching to %d live chunks", meta.path, len(chunks))
        stale = self.store.ledger.replace_document(meta, list(chunks), [list(t) for t in terms])
        self.store.vectors.delete(self.collection, stale)
        return len(chunks)

    def commit(self, prepared: Prepared) -> int:
        """`write` for a document prepared elsewhere (ingest/prepare.py): its vectors came with
        it, so nothing is embedded here; only passages Chroma lacks are upserted."""
        fresh = self.fresh(prepared.chunks)
        return self.switch(
            prepared.meta, prepared.chunks, prepared.terms, fresh, prepared.vectors[fresh]
        )


@dataclass
class _Staged:
    """A file on its way to the ledger: chunked, with the passages Chroma lacks (`fresh`) still
    to embed; or prepared elsewhere (`--workers`); or failed."""

    meta: DocMeta
    label: str
    had_version: bool
    chunks: list[Chunk] = field(default_factory=list)
    terms: list[list[str]] = field(default_factory=list)
    fresh: list[int] = field(default_factory=list)
    prepared: Prepared | None = None
    error: IngestError | None = None

    def texts(self) -> list[str]:
        return [self.chunks[i].embed_text() for i in self.fresh]


def _stage(
    writer: Writer, meta: DocMeta, path: Path, had: bool, result: ParsedDoc | Prepared | IngestError
) -> _Staged:
    """Chunk a parsed file and find the passages it needs embedded (IngestErrors kept)."""
    staged = _Staged(meta, str(path), had)
    if isinstance(result, IngestError):
        staged.error = result
    elif isinstance(result, Prepared):
        staged.prepared = result
    else:
        try:
            staged.meta, staged.chunks, staged.terms = writer.prepare(meta, result)
        except IngestError as exc:
            staged.error = exc
            return staged
        staged.fresh = writer.fresh(staged.chunks)
        if staged.fresh:
            logger.info("%s: embedding %d new passages", meta.path, len(staged.fresh))
    return staged


def recover(store: Store) -> None:
    """After an interrupted run: drop vectors the ledger does not list, staged chunks and
    collections that are not live. Only under the write lock: another run's unfinished work
    looks the same as an interrupted one's."""
    if not store.writing_now:
        raise RuntimeError("recover() runs only inside store.writing(): another run may be live")
    if store.ledger.get_meta("dirty") == "1":
        logger.info("recovering %s from an interrupted run", store.path)
        removed = store.vectors.collect_garbage(store.collection, set(store.ledger.chunk_ids()))
        store.ledger.clear_staging()
        for name in store.vectors.collections():
            if name.startswith(store.settings.store.collection) and name != store.collection:
                store.vectors.drop(name)
        store.ledger.set_meta("dirty", "0")
        logger.info("recovered from an interrupted run: %d orphan vectors removed", removed)


def ingest_paths(
    store: Store,
    paths: Sequence[Path],
    groups: Sequence[str] | None = None,
    prune: bool = False,
    progress: Progress | None = None,
    workers: int = 1,
    queue: bool = False,
) -> IngestReport:
    """Ingest files and folders, holding the store's write lock; see the module docstring.
    `workers` > 1: parse and embed in that many processes each (ingest/workers.py). `queue`:
    the new and changed files become jobs for `kb worker` processes (ingest/queue.py; the
    report's `batch` names them) instead of being ingested here."""
    with store.writing("kb ingest --queue" if queue else "kb ingest"):
        return _ingest_paths(store, paths, groups, prune, progress, workers, queue)


def _ingest_paths(
    store: Store,
    paths: Sequence[Path],
    groups: Sequence[str] | None,
    prune: bool,
    progress: Progress | None,
    workers: int,
    queue: bool = False,
) -> IngestReport:
    started = time.perf_counter()
    embedded_before = store.embedded()
    settings = store.settings
    store.ledger.check_text_version()
    recover(store)
    found = list(discover(paths))
    for given in paths:
        store.ledger.remember_source(str(given.expanduser().resolve()), groups)
    report = IngestReport(
        run_id=store.ledger.start_run(
            "ingest",
            json.dumps(
                {"paths": [str(p) for p in paths], "groups": list(groups or []), "prune": prune}
            ),
        )
    )
    fingerprint = _parse_fingerprint(settings)
    retry_failed = store.ledger.get_meta("parse_fingerprint") != fingerprint
    writer = Writer(store, store.collection)
    todo: list[tuple[DocMeta, Path, bool]] = []
    may_be_chinese = False  # a file to do is new, or was not English last time
    done = 0

    def finish(outcome: FileOutcome) -> None:
        nonlocal done
        report.outcomes.append(outcome)
        store.ledger.record_file(report.run_id, outcome.path, outcome.outcome, outcome.reason)
        done += 1
        if progress:
            progress(done, len(found), outcome.path)

    for root, path in found:
        label = str(path)
        try:
            meta = _describe(settings, root, path, groups)
        except (OSError, KbError) as exc:
            finish(FileOutcome(label, "failed", "failed", str(exc)))
            continue
        old = store.ledger.document(meta.id)
        same_file = old is not None and (old.meta.size, old.meta.mtime) == (
            meta.size,
            meta.mtime,
        )
        if old and old.status != "ok" and same_file and not retry_failed:
            finish(FileOutcome(label, "unchanged", old.status, old.reason))
            continue
        if old and old.status == "ok" and same_file:
            meta = replace(meta, sha256=old.meta.sha256)
        else:
            meta = replace(meta, sha256=sha256_file(path))
        if old and old.status == "ok" and old.meta.sha256 == meta.sha256:
            meta = replace(
                meta,
                title=meta.title or old.meta.title,
                lang=old.meta.lang,
                page_labels=old.meta.page_labels,
                ocr_pages=old.meta.ocr_pages,
            )
            if _same_meta(old.meta, meta) and old.meta.mtime == meta.mtime:
                finish(FileOutcome(label, "unchanged", chunks=old.chunk_count))
                continue
            store.ledger.update_document_meta(meta)
            ids = store.ledger.chunk_ids(meta.id)
            store.vectors.update_metadata(
                store.collection, ids, [group_metadata(meta.id, meta.groups)] * len(ids)
            )
            changed = not _same_meta(old.meta, meta)
            finish(
                FileOutcome(
                    label, "updated" if changed else "unchanged", chunks=old.chunk_count
                )
            )
            continue
        todo.append((meta, path, old is not None and old.chunk_count > 0))
        may_be_chinese |= old is None or old.meta.lang != "en"

    if todo and not queue:
        logger.info("parsing %d new or changed files", len(todo))
        # the embedder, Chroma and jieba's dictionary load while the first files parse
        warm_up = threading.Thread(
            target=_warm_up, args=(store, may_be_chinese), name="kb-warm-up", daemon=True
        )
        warm_up.start()
    embedded_elsewhere = 0

    def commit(staged: _Staged, vectors: Vectors) -> None:
        nonlocal embedded_elsewhere
        try:
            if staged.error is not None:
                raise staged.error
            if staged.prepared is not None:
                embedded_elsewhere += staged.prepared.embedded
                count = writer.commit(staged.prepared)
            else:
                count = writer.switch(
                    staged.meta, staged.chunks, staged.terms, staged.fresh, vectors
                )
        except IngestError as exc:
            store.ledger.mark_failed(staged.meta, exc.status, str(exc))
            finish(FileOutcome(staged.label, "failed", exc.status, str(exc)))
            return
        outcome = "updated" if staged.had_version else "ingested"
        finish(FileOutcome(staged.label, outcome, chunks=count))

    if not queue and todo:
        # passages of several files are embedded together, beside the chunking and commits
        # (ingest/embed_ahead.py); files are committed in the order they were found
        with EmbedAhead[_Staged](
            lambda texts: store.embedder.embed_batch(texts),
            settings.ingest.embed_wave,
            settings.embed.batch_size,
        ) as ahead:
            for meta, path, had_version, result in _parsed(settings, todo, workers):
                staged = _stage(writer, meta, path, had_version, result)
                for ready, vectors in ahead.add(staged, staged.texts()):
                    commit(ready, vectors)
            for ready, vectors in ahead.finish():
                commit(ready, vectors)
        warm_up.join()  # nothing of this run outlives its write lock

    if prune:
        seen = {
            doc_id_for(str(root), path.relative_to(root).as_posix()) for root, path in found
        }
        roots = {str(p.expanduser().resolve()) for p in paths}
        for record in store.ledger.documents():
            inside = record.meta.root in roots or any(
                str(Path(record.meta.root) / record.meta.path).startswith(r + os.sep)
                for r in roots
            )
            if (
                inside
                and record.meta.id not in seen
                and not (Path(record.meta.root) / record.meta.path).exists()
            ):
                logger.info("%s: pruning (its file is gone)", record.meta.path)
                store.vectors.delete(
                    store.collection, store.ledger.delete_document(record.meta.id)
                )
                finish(FileOutcome(str(Path(record.meta.root) / record.meta.path), "removed"))

    # Every stale vector was deleted as its document switched; only an interrupted run
    # leaves orphans, and the next run's _recover scans for them.
    if queue and todo:
        # added last, so that the worker finishing the last job counts this run's every file
        report.batch = store.ledger.add_jobs(report.run_id, [(m, had) for m, _, had in todo])
        report.queued = len(todo)
        logger.info(
            "ingest run %d: %d files queued as batch %s", report.run_id, len(todo), report.batch
        )
    logger.info("ingest run %d: done, marking the store clean", report.run_id)
    store.ledger.set_meta("dirty", "0")
    store.ledger.set_meta("parse_fingerprint", fingerprint)
    if report.queued:  # the run ends with its last job (ingest/queue.py)
        report.seconds = time.perf_counter() - started
        return report
    report = store.finish_run(report, started, embedded_before)
    report.embedded += embedded_elsewhere
    return report


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
    settings: Settings, todo: Sequence[tuple[DocMeta, Path, bool]], workers: int
) -> Iterator[tuple[DocMeta, Path, bool, ParsedDoc | Prepared | IngestError]]:
    """Each file to ingest with its parse (one worker: embedded by the writer), or its
    prepared document (several: parsed and embedded in processes, ingest/workers.py)."""
    if workers > 1 and len(todo) > 1:
        prepared = prepare_in_processes(settings, [(meta, path) for meta, path, _ in todo], workers)
        for (meta, path, had), (_, result) in zip(todo, prepared, strict=True):
            yield meta, path, had, result
        return
    with ParsePool(settings.ingest, workers=workers) as pool:
        for (meta, path, had), (_, parsed) in zip(
            todo, pool.imap([path for _, path, _ in todo]), strict=True
        ):
            yield meta, path, had, parsed


def _parse_fingerprint(settings: Settings) -> str:
    """Settings (and installed converters) that can turn a failed file into a good one: when
    they change, failed files are tried again even though they did not change."""
    ingest = settings.ingest
    ocr = [ingest.ocr_languages, bool(shutil.which("tesseract"))] if ingest.ocr else []
    key = json.dumps(
        [list(ingest.pdf_passwords), ingest.max_file_mb, ingest.file_timeout_s, ocr, soffice()]
    )
    return hashlib.sha1(key.encode()).hexdigest()


def _find(store: Store, ref: str) -> DocRecord:
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
        record = _find(store, ref)
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
        "last_run": store.ledger.last_run(),
        "free_disk_bytes": shutil.disk_usage(store.path).free,
        "jobs": store.ledger.job_counts(),  # the ingest queue by state (ingest/queue.py)
    }
