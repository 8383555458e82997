"""Parsing entry point: sniff the type by content, check the size, parse within a time limit.

    parse_file(Path("policy.pdf"), settings.ingest) -> ParsedDoc(blocks=[...], pages=12)

    with ParsePool(settings.ingest, workers=2) as pool:
        for path, result in pool.imap(paths, roots):  # result: ParsedDoc or an IngestError
            ...                                        # meanwhile the workers parse the next files

`parse_file` raises only `IngestError` subclasses for files it cannot use, among them the
bounds: `max_file_mb`, `max_unpacked_mb` (TooLarge), `max_blocks` (TooManyBlocks) and running
out of memory (OverMemory). `ParsePool` parses in worker processes (ingest/processes.py)
forked from a clean server process (`_start_method`: never from the parent, which may hold
torch and threads) whose address space is limited to `parse_memory_mb` (`resource.RLIMIT_AS`),
kills and replaces a worker whose file takes longer than `file_timeout_s` (ParseTimeout),
replaces one that ran out of memory, and gives the file of a worker that died (segfault) a
BrokenFile; the batch always goes on.

Given the folder each file is known under (`roots`), a worker parses a private copy of the
file: it reads the file once through `open_beneath` (no symbolic link at or below the folder
is followed: SymbolicLink), hashing the bytes as it copies them into its own temp folder, and
returns that hash with the parse (`ParsedDoc.sha256`), so the hash a document is recorded under
is that of the bytes its passages came from, whatever happens to the file meanwhile. Each
worker's temp files (copies, OCR images, LibreOffice's output) live in a folder of the pool's
that goes when the worker is killed or the pool closes.

The parsers, each imported when a file of its kind comes:

    pdf.py         PDF pages to blocks, with their printed page labels
    pdf_tables.py  ruled tables as rows under their header
    ocr.py         OCR of scanned pages (Tesseract)
    page_words.py  where a cited sentence stands on a page
    word.py        .docx to blocks: headings, tables, notes, text boxes
    legacy_doc.py  legacy .doc through LibreOffice
    clean.py       text clean-up

It imports core and, from the ingest floor's hall, the worker processes (ingest/processes.py)
and `open_beneath` (ingest/discover.py). A new file type gets its parser here, a kind from
`sniff` and a branch in `_parse_kind`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import multiprocessing
import os
import resource
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, SpawnContext
from pathlib import Path
from types import TracebackType

from core.config import IngestSettings
from core.errors import (
    BrokenFile,
    EncryptedFile,
    IngestError,
    NoText,
    OverMemory,
    ParseTimeout,
    TooLarge,
    TooManyBlocks,
    UnsupportedFile,
)
from core.types import ParsedDoc
from ingest.discover import open_beneath
from ingest.processes import WorkerProcess, serve, wait_for_any

logger = logging.getLogger(__name__)

Parser = Callable[[Path, IngestSettings], ParsedDoc]
Result = ParsedDoc | IngestError

_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP = b"PK\x03\x04"
_OLE_ENCRYPTED = "EncryptionInfo".encode("utf-16-le")
TABLE_SHARE = 0.15  # of a file's time limit, at most, spent looking for PDF tables
WORKER_START_S = 60.0  # a worker that is not ready by then is a broken installation
STARTING_STOP_S = 2.0  # a worker told to stop while it starts is killed after this long


def sniff(path: Path) -> str:
    """ "pdf", "docx" or "doc" (legacy Word, or another old Office file) by content, not by
    name; UnsupportedFile or EncryptedFile otherwise."""
    with path.open("rb") as handle:
        head = handle.read(1024)
    if b"%PDF-" in head:
        return "pdf"
    if head.startswith(_ZIP):
        try:
            with zipfile.ZipFile(path) as package:
                names = set(package.namelist())
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise BrokenFile(
                f"{path.name}: a damaged zip file ({exc}); re-save it as .docx or remove it"
            ) from exc
        if "word/document.xml" in names:
            return "docx"
        raise UnsupportedFile(
            f"{path.name}: a zip file that is not a Word document (only PDF and .docx are "
            "ingested; export it to PDF or .docx, or remove it)"
        )
    if head.startswith(_OLE2):
        if _OLE_ENCRYPTED in path.read_bytes():
            raise EncryptedFile(
                f"{path.name}: a password-protected Office file (remove the password in Word "
                "and save as .docx, or remove the file)"
            )
        return "doc"
    if head.lstrip().startswith(b"{\\rtf"):
        raise UnsupportedFile(f"{path.name}: RTF is not ingested: save it as .docx or PDF")
    raise UnsupportedFile(
        f"{path.name}: not a PDF or .docx by its content (only those are ingested); "
        "export it to PDF or .docx, or remove it"
    )


def parse_file(path: Path, settings: IngestSettings) -> ParsedDoc:
    """Parse one file in this process; raises only IngestError subclasses for bad files."""
    try:
        size = path.stat().st_size
        if size > settings.max_file_mb * 1024 * 1024:
            raise _too_large(path, size, settings)
        if size == 0:
            raise NoText(f"{path.name}: empty file (0 bytes); nothing to ingest, remove it")
        parsed = _parse_kind(path, sniff(path), settings)
        if len(parsed.blocks) > settings.max_blocks:
            raise TooManyBlocks(
                f"{path.name}: {len(parsed.blocks)} blocks (paragraphs, headings, tables) is "
                f"over ingest.max_blocks = {settings.max_blocks} (split the file, or raise the "
                "limit)"
            )
        return parsed
    except IngestError:
        raise
    except MemoryError as exc:
        raise _over_memory(path, settings) from exc
    except OSError as exc:
        raise BrokenFile(f"{path.name}: cannot be read ({exc}); check the file") from exc
    except Exception as exc:  # MemoryError, RecursionError, a parser bug on a strange file
        logger.warning("%s: unexpected parser failure", path.name, exc_info=True)
        raise BrokenFile(
            f"{path.name}: the parser failed ({type(exc).__name__}: {exc}); "
            "re-save or re-export the file, or remove it"
        ) from exc


def _parse_kind(path: Path, kind: str, settings: IngestSettings) -> ParsedDoc:
    """`path` parsed by the parser of its `kind` (what `sniff` found)."""
    # Each kind's parser is imported when a file of that kind comes: a process that only
    # hands files to workers (ingest, re-index, the app) imports neither (pypdf and
    # python-docx: ~0.25 s); the workers' server imports both once (`_start_method`)
    if kind == "pdf":
        from ingest.parse.ocr import ocr_options
        from ingest.parse.pdf import parse_pdf

        return parse_pdf(path, settings.pdf_passwords, tables=settings.pdf_tables,
                         table_seconds=settings.file_timeout_s * TABLE_SHARE,
                         ocr=ocr_options(settings))
    from ingest.parse.word import parse_docx

    unpacked = int(settings.max_unpacked_mb * 1024 * 1024)
    if kind == "doc":
        from ingest.parse.legacy_doc import doc_to_docx

        with tempfile.TemporaryDirectory(prefix="kb-doc-") as folder:
            return parse_docx(doc_to_docx(path, Path(folder)), unpacked, settings.max_blocks)
    return parse_docx(path, unpacked, settings.max_blocks)
def _too_large(path: Path, size: int, settings: IngestSettings) -> TooLarge:
    return TooLarge(
        f"{path.name}: {size / 1024 / 1024:.1f} MB is over ingest.max_file_mb = "
        f"{settings.max_file_mb:g} (raise the limit or split the file)"
    )


def private_copy(root: Path, path: Path, folder: Path, settings: IngestSettings
                 ) -> tuple[Path, str]:
    """`path` copied into `folder` under its own name, read through `open_beneath(root, path)`,
    and the SHA-256 of the bytes copied; TooLarge past `max_file_mb`, before or while copying."""
    limit = settings.max_file_mb * 1024 * 1024
    copy = folder / path.name
    digest = hashlib.sha256()
    with open_beneath(root, path) as source, copy.open("xb") as out:
        size = os.fstat(source.fileno()).st_size
        if size > limit:
            raise _too_large(path, size, settings)
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
            out.write(block)
            if out.tell() > limit:
                raise _too_large(path, out.tell(), settings)
    return copy, digest.hexdigest()


def _over_memory(path: Path, settings: IngestSettings) -> OverMemory:
    return OverMemory(
        f"{path.name}: parsing needed more than ingest.parse_memory_mb = "
        f"{settings.parse_memory_mb:g} MiB (a malformed or oversized file: split or re-save it, "
        "or raise the limit)"
    )


def _limit_memory(megabytes: float) -> None:
    """Cap this process's address space; a larger allocation raises MemoryError."""
    if megabytes > 0:
        limit = int(megabytes * 1024 * 1024)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@functools.cache
def _start_method() -> ForkServerContext | SpawnContext:
    """Where workers come from: forked from a server process that multiprocessing spawns once
    per process, clean, with the parsers imported ("forkserver"; "spawn" where there is none).
    A fresh interpreter importing them took 0.3-0.5 s a worker, which every ingest, upload and
    re-index paid, however small; a fork of the server takes ~10 ms, plus what the program's
    main module imports, which each worker still runs, as under spawn
    (docs/benchmarks-history.md, "every CPU goal on an AMD EPYC host")."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, "ingest.parse.word", "ingest.parse.pdf"])
    return context


def _parse_worker(conn: Connection, settings: IngestSettings, parser: Parser,
                  scratch: Path) -> None:
    """Worker: receive (path, root or None), send back a ParsedDoc or an IngestError; None
    stops. Its temp files go to its own folder under the pool's `scratch`."""
    # The worker has no log handlers: keep pypdf's and pdfminer's per-font warnings off stderr.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    _limit_memory(settings.parse_memory_mb)
    logging.getLogger("pdfminer").setLevel(logging.ERROR)  # under pdfplumber (tables)
    own = scratch / str(os.getpid())
    own.mkdir(mode=0o700)
    tempfile.tempdir = str(own)  # this process's temp files: the pool removes them
    serve(conn, lambda job: _parse_in_worker(job[0], job[1], settings, parser))


def _parse_in_worker(path: Path, root: Path | None, settings: IngestSettings,
                     parser: Parser) -> Result:
    """The parse of `path`; given its `root`, of a private copy, with the copy's hash."""
    try:
        if root is None:
            return parser(path, settings)
        with tempfile.TemporaryDirectory(prefix="kb-copy-") as folder:
            copy, sha256 = private_copy(root, path, Path(folder), settings)
            return dataclasses.replace(parser(copy, settings), sha256=sha256)
    except IngestError as exc:
        return exc
    except MemoryError:
        return _over_memory(path, settings)
    except OSError as exc:
        return BrokenFile(f"{path.name}: cannot be read ({exc}); check the file")
    except Exception as exc:
        return BrokenFile(f"{path.name}: the parser failed ({type(exc).__name__}: {exc})")


@dataclass(frozen=True)
class _Job:
    """What the pool remembers of a file a worker parses."""

    index: int  # in the input
    path: Path
    deadline: float  # time.monotonic() past which the worker is killed


_Worker = WorkerProcess[_Job, Result]


class ParsePool:
    """Parse files in worker processes with a per-file time limit; see the module docstring."""

    def __init__(
        self, settings: IngestSettings, workers: int = 1, *, parser: Parser = parse_file
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._settings = settings
        self._parser = parser
        self._size = workers
        self._workers: list[_Worker] = []  # started on first use: an unchanged corpus needs none
        self._scratch: Path | None = None  # the workers' temp files, made with the first one

    def imap(self, paths: Iterable[Path], roots: Sequence[Path | str] | None = None
             ) -> Iterator[tuple[Path, Result]]:
        """Yield (path, ParsedDoc or IngestError) for each path, in input order. `roots`: the
        folder each path is known under; each is then parsed from a private copy read below it
        (see the module docstring)."""
        given = [Path(p) for p in paths]
        folders = [Path(r) for r in roots] if roots is not None else [None] * len(given)
        todo = list(enumerate(zip(given, folders, strict=True)))
        todo.reverse()
        while len(self._workers) < min(self._size, len(todo)):
            self._workers.append(self._start())
        done: dict[int, tuple[Path, Result]] = {}
        next_out = 0
        while todo or any(w.job is not None for w in self._workers):
            self._refill(todo)
            for index, path, result in self._collect():
                done[index] = (path, result)
            self._refill(todo)  # the next files are parsed while the caller uses these
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1

    def _start(self) -> _Worker:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="kb-parse-"))
        return WorkerProcess(_start_method(), _parse_worker,
                             (self._settings, self._parser, self._scratch), name="kb-parse")

    def _refill(self, todo: list[tuple[int, tuple[Path, Path | None]]]) -> None:
        """Give each idle worker the next file (`todo` is reversed: the next one is last)."""
        for worker in self._workers:
            if worker.job is None and todo:
                index, (path, root) = todo.pop()
                if worker.started(WORKER_START_S) != "ready":
                    raise RuntimeError("parse worker did not start; check the installation")
                deadline = time.monotonic() + self._settings.file_timeout_s
                worker.give(_Job(index, path, deadline), (path, root))

    def _collect(self) -> list[tuple[int, Path, Result]]:
        """Wait for a result, a dead worker or the nearest deadline; replace lost workers."""
        busy = [(w, w.job) for w in self._workers if w.job is not None]
        nearest = min(job.deadline for _, job in busy)
        wait_for_any([w for w, _ in busy], max(0.0, nearest - time.monotonic()))
        out: list[tuple[int, Path, Result]] = []
        for worker, job in busy:
            result = worker.poll()
            lost = False
            if result is None and not worker.process.is_alive():
                result, lost = self._crashed(job.path, worker.process.exitcode), True
            elif result is None and time.monotonic() >= job.deadline:
                result, lost = self._timed_out(job.path), True
            if result is None:
                continue
            # a worker that ran out of memory may keep its heap: the next file gets a fresh one
            lost = lost or isinstance(result, OverMemory)
            out.append((job.index, job.path, result))
            worker.job = None
            if lost:
                worker.kill()
                self._forget(worker)
                self._workers[self._workers.index(worker)] = self._start()
        return out

    def _forget(self, worker: _Worker) -> None:
        """Remove the temp files a killed worker left."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch / str(worker.process.pid), ignore_errors=True)

    def _crashed(self, path: Path, code: int | None) -> IngestError:
        logger.warning("%s: parse worker died (exit code %s)", path.name, code)
        return BrokenFile(
            f"{path.name}: the parser process died (exit code {code}: a crash or out of "
            "memory); the file is probably malformed: re-save or re-export it, or remove it"
        )

    def _timed_out(self, path: Path) -> IngestError:
        limit = self._settings.file_timeout_s
        logger.warning("%s: parse took longer than %gs, worker killed", path.name, limit)
        return ParseTimeout(
            f"{path.name}: parsing took longer than {limit:g}s (raise "
            "ingest.file_timeout_s, or split or simplify the file)"
        )

    def close(self) -> None:
        """An idle worker is told to stop and left to exit by itself: its interpreter's
        shutdown took 0.05-0.15 s that every ingest waited for (multiprocessing reaps it when it
        next starts a process, or at exit). One still starting is told and waited for; a busy
        one is killed."""
        for worker in self._workers:
            if worker.job is not None:
                worker.kill()
            else:
                worker.stop(wait_s=None if worker.ready else STARTING_STOP_S)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
