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
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path

from core.config import Settings
from core.errors import BrokenFile, IngestError, KbError
from core.types import DocMeta, ParsedDoc
from ingest.parse import ParsePool
from ingest.prepare import Prepared, prepare
from store.embed.embedder import open_embedder
from store.store import embed_cache_path

logger = logging.getLogger(__name__)

Result = Prepared | IngestError


def limit_torch_threads(threads: int) -> None:
    """Run this process's torch on `threads` threads (0: leave torch's default)."""
    if threads > 0:
        import torch

        torch.set_num_threads(threads)


def threads_per_worker(workers: int) -> int:
    """The cores each of `workers` processes gets: threads_per_worker(2) -> 1 on 2 cores."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _embed_worker(conn: Connection, settings: Settings, threads: int) -> None:
    """Receive (meta, parsed), send back a Prepared or an IngestError; None stops."""
    limit_torch_threads(threads)
    try:
        embedder = open_embedder(settings.embed, embed_cache_path(settings))
    except KbError as exc:
        conn.send(exc)
        return
    conn.send("ready")
    try:
        while True:
            try:
                job = conn.recv()
            except EOFError:
                return
            if job is None:
                return
            meta, parsed = job
            result: Result
            try:
                result = prepare(settings, embedder, meta, parsed)
            except IngestError as exc:
                result = exc
            conn.send(result)
    finally:
        embedder.close()


class _EmbedWorker:
    """One embedding process and its pipe; `index` of the document it holds, or None."""

    def __init__(self, settings: Settings, threads: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=_embed_worker, args=(child, settings, threads), daemon=True, name="kb-embed"
        )
        self.process.start()
        child.close()
        self.ready = False
        self.index: int | None = None
        self.name = ""

    def give(self, index: int, meta: DocMeta, parsed: ParsedDoc) -> None:
        if not self.ready:
            # loading torch and the model takes seconds, minutes on a busy machine: wait for
            # the answer or the process's end, however long it takes
            wait([self.conn, self.process.sentinel])
            answer = self.conn.recv() if self.conn.poll() else None
            if isinstance(answer, KbError):
                raise answer
            if answer != "ready":
                raise KbError(
                    f"embedding worker exited (code {self.process.exitcode}) while loading "
                    "the embedder; run `kb ingest` with --workers 1 to see why"
                )
            self.ready = True
        self.index, self.name = index, Path(meta.path).name
        self.conn.send((meta, parsed))

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.conn.close()


class _EmbedPool:
    """N embedding processes; `give` to an idle one, `collect` finished documents."""

    def __init__(self, settings: Settings, workers: int) -> None:
        self.settings = settings
        self.threads = threads_per_worker(workers)
        self.workers = [_EmbedWorker(settings, self.threads) for _ in range(workers)]

    def busy(self) -> list[_EmbedWorker]:
        return [w for w in self.workers if w.index is not None]

    def idle(self) -> _EmbedWorker | None:
        return next((w for w in self.workers if w.index is None), None)

    def collect(self, timeout: float | None) -> list[tuple[int, Result]]:
        """Finished documents, waiting up to `timeout` seconds (None: until one finishes)."""
        busy = self.busy()
        if not busy:
            return []
        wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout)
        out: list[tuple[int, Result]] = []
        for worker in busy:
            assert worker.index is not None  # busy
            result: Result | None = None
            try:
                if worker.conn.poll():
                    result = worker.conn.recv()
            except (EOFError, OSError):
                pass
            if result is None and worker.process.is_alive():
                continue
            if result is None:
                code = worker.process.exitcode
                logger.warning("%s: embedding worker died (exit code %s)", worker.name, code)
                result = BrokenFile(
                    f"{worker.name}: the embedding process died (exit code {code}: out of "
                    "memory?); ingest it again, with fewer --workers if it recurs"
                )
                worker.stop()
                self.workers[self.workers.index(worker)] = _EmbedWorker(
                    self.settings, self.threads
                )
            out.append((worker.index, result))
            worker.index = None
        return out

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()


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
            for index, (_, parsed) in enumerate(parsers.imap([path for _, path in items])):
                if isinstance(parsed, IngestError):
                    done[index] = parsed
                else:
                    while (worker := embedders.idle()) is None:
                        done.update(embedders.collect(None))
                    worker.give(index, metas[index], parsed)
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
