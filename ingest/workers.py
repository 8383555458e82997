"""`kb ingest --workers N` on one machine: parsing and embedding in N processes each, one writer.

    for meta, result in prepare_in_processes(settings, [(meta, path), ...], workers=2):
        writer.commit(result)     # result: a Prepared document, or the IngestError its file got

Files are parsed by `ParsePool` (ingest/parse/: N time- and memory-limited processes) and
each parsed document goes to one of N embedding processes, which chunk it and embed its
passages with an embedder of their own (through the shared embedding cache) and send back a
`Prepared` document (ingest/prepare.py). The parse processes go on with later files while
earlier ones are embedded. The calling process stays the only writer: it never embeds, and it
gets the results in input order, so it commits the same documents in the same order as one
worker would. Workers never touch the ledger or Chroma. Each embedding process runs torch on
cores // N threads, so N workers do not fight over the cores.

An embedding process that dies (out of memory, say) fails only the document it held, as a
BrokenFile, and is replaced; a model that cannot be loaded stops the run with its message.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from core.config import Settings
from core.errors import BrokenFile, IngestError, KbError
from core.ports import Embedder
from core.types import DocMeta, ParsedDoc
from ingest.parse import ParsePool
from ingest.prepare import Prepared, prepare
from ingest.processes import WorkerProcess, serve, wait_for_any
from store.embed.embedder import open_embedder
from store.store import embed_cache_path

logger = logging.getLogger(__name__)

Result = Prepared | IngestError
STOP_WAIT_S = 5.0  # for an embedding process told to stop to exit before it is killed


def limit_torch_threads(threads: int) -> None:
    """Run this process's torch on `threads` threads (0: leave torch's default)."""
    if threads > 0:
        import torch

        torch.set_num_threads(threads)


def threads_per_worker(workers: int) -> int:
    """The cores each of `workers` processes gets: threads_per_worker(2) -> 1 on 2 cores."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _embed_worker(conn: Connection, settings: Settings, threads: int) -> None:
    """Worker: receive (meta, parsed), send back a Prepared or an IngestError; None stops. A
    model that cannot be loaded is sent instead of "ready"."""
    limit_torch_threads(threads)
    try:
        embedder = open_embedder(settings.embed, embed_cache_path(settings))
    except KbError as exc:
        conn.send(exc)
        return
    try:
        serve(conn, lambda job: _prepare_in_worker(settings, embedder, *job))
    finally:
        embedder.close()


def _prepare_in_worker(
    settings: Settings, embedder: Embedder, meta: DocMeta, parsed: ParsedDoc
) -> Result:
    try:
        return prepare(settings, embedder, meta, parsed)
    except IngestError as exc:
        return exc


@dataclass(frozen=True)
class _Job:
    """What the pool remembers of a document an embedding process holds."""

    index: int  # in the input
    name: str  # its file's name, for the crash message


_Worker = WorkerProcess[_Job, Result]


class _EmbedPool:
    """N embedding processes; `give` to an idle one, `collect` finished documents."""

    def __init__(self, settings: Settings, workers: int) -> None:
        self.settings = settings
        self.threads = threads_per_worker(workers)
        self.workers = [self._start() for _ in range(workers)]

    def _start(self) -> _Worker:
        context = multiprocessing.get_context("spawn")
        return WorkerProcess(context, _embed_worker, (self.settings, self.threads), "kb-embed")

    def idle(self) -> _Worker | None:
        return next((w for w in self.workers if w.job is None), None)

    def give(self, worker: _Worker, index: int, meta: DocMeta, parsed: ParsedDoc) -> None:
        # loading torch and the model takes seconds, minutes on a busy machine: wait for the
        # answer or the process's end, however long it takes
        answer = worker.started(timeout=None)
        if isinstance(answer, KbError):
            raise answer
        if answer != "ready":
            worker.process.join(timeout=STOP_WAIT_S)  # for its exit code
            raise KbError(
                f"embedding worker exited (code {worker.process.exitcode}) while loading "
                "the embedder; run `kb ingest` with --workers 1 to see why"
            )
        worker.give(_Job(index, Path(meta.path).name), (meta, parsed))

    def collect(self, timeout: float | None) -> list[tuple[int, Result]]:
        """Finished documents, waiting up to `timeout` seconds (None: until one finishes)."""
        busy = [(w, w.job) for w in self.workers if w.job is not None]
        if not busy:
            return []
        wait_for_any([w for w, _ in busy], timeout)
        out: list[tuple[int, Result]] = []
        for worker, job in busy:
            result = worker.poll()
            if result is None and worker.process.is_alive():
                continue
            if result is None:
                result = self._crashed(job.name, worker.process.exitcode)
                worker.stop(wait_s=STOP_WAIT_S)
                self.workers[self.workers.index(worker)] = self._start()
            out.append((job.index, result))
            worker.job = None
        return out

    def _crashed(self, name: str, code: int | None) -> IngestError:
        logger.warning("%s: embedding worker died (exit code %s)", name, code)
        return BrokenFile(
            f"{name}: the embedding process died (exit code {code}: out of "
            "memory?); ingest it again, with fewer --workers if it recurs"
        )

    def close(self) -> None:
        for worker in self.workers:
            worker.stop(wait_s=STOP_WAIT_S)


def prepare_in_processes(
    settings: Settings, items: Sequence[tuple[DocMeta, Path]], workers: int
) -> Iterator[tuple[DocMeta, Result]]:
    """(meta, Prepared or IngestError) for each (meta, path), in input order; see the module
    docstring."""
    metas = [meta for meta, _ in items]
    done: dict[int, Result] = {}
    next_out = 0
    embedders = _EmbedPool(settings, max(1, min(workers, len(items))))
    try:
        with ParsePool(settings.ingest, workers=workers) as parsers:
            parses = parsers.imap([path for _, path in items], [meta.root for meta in metas])
            for index, (_, parsed) in enumerate(parses):
                if isinstance(parsed, IngestError):
                    done[index] = parsed
                else:
                    while (worker := embedders.idle()) is None:
                        done.update(embedders.collect(None))
                    embedders.give(worker, index, metas[index], parsed)
                done.update(embedders.collect(0))
                while next_out in done:
                    yield metas[next_out], done.pop(next_out)
                    next_out += 1
        while next_out < len(items):
            if next_out not in done:
                done.update(embedders.collect(None))
                continue
            yield metas[next_out], done.pop(next_out)
            next_out += 1
    finally:
        embedders.close()
