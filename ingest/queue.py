"""The ingest queue: `kb ingest --queue` puts files on the ledger's `jobs` table, `kb worker`
processes on any machine that shares the ledger and the vector store take them.

    report = ingest_paths(store, [Path("/srv/policies")], queue=True)   # ingest/pipeline.py
    run_worker(store, drain=True)          # a `kb worker`: take jobs until none is left
    report = wait_for_batch(store, report) # the per-file outcomes, once the batch is done

A worker claims the oldest open job (`Ledger.claim_job`: `FOR UPDATE SKIP LOCKED` on
PostgreSQL, a `BEGIN IMMEDIATE` transaction on SQLite), parses the file in its time-limited
parse process (ingest/parse/), chunks and embeds it (ingest/prepare.py) without any lock, and
only then takes the store's write lock for the commit: recovery of an interrupted writer, the
vectors Chroma lacks, the ledger switch (`Writer.commit`, the path `kb ingest` takes), the job's
outcome. So there is one writer at a time, as with `kb ingest`, and the slow work (parsing,
embedding) runs in parallel outside the lock. We chose this over workers that write results
for a separate writer to commit: nothing but the ledger carries the results (no vectors in
the ledger), a batch completes without any process waiting on it, and the commit is the one
every other writer uses. With an embedded Chroma, the workers must share the store folder (one
machine); across machines use a Chroma server (`store.mode = "server"`).

While it holds a job a worker renews its lease (`ingest.job_lease_s`) from a heartbeat thread.
A worker killed at any point (SIGKILL) stops renewing: when the lease runs out the job is open
again and the next claim takes it; an interrupted commit is recovered under the write lock like
an interrupted `kb ingest`. A job whose workers died `ingest.job_attempts` times is failed
(`broken`) instead of being tried again. The worker that finishes a batch's last job ends its
run in the ledger.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType

from core.errors import BrokenFile, IngestError
from core.types import FileOutcome, IngestReport
from ingest.discover import sha256_file
from ingest.parse import ParsePool
from ingest.pipeline import Progress
from ingest.prepare import Prepared, prepare
from ingest.writer import Writer, recover
from store.ledger import Job
from store.store import Store

logger = logging.getLogger(__name__)


def worker_name() -> str:
    """What this worker is called in the jobs table and in lock messages: host:pid:random."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class _Lease:
    """Renews a job's lease every third of its length from a thread, for a `with` block."""

    def __init__(self, store: Store, job: Job, worker: str) -> None:
        self.store, self.job, self.worker = store, job, worker
        self.lease_s = store.settings.ingest.job_lease_s
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="kb-lease", daemon=True)

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            if not self.store.ledger.renew_job(self.job.id, self.worker, self.lease_s):
                logger.warning("job %s: lease lost (another worker took it)", self.job.id)
                self.lost = True
                return

    def __enter__(self) -> _Lease:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()


def run_worker(
    store: Store,
    *,
    drain: bool = False,
    name: str | None = None,
    stop: threading.Event | None = None,
    between: Callable[[], object] | None = None,
) -> int:
    """Take and finish jobs until `stop` is set or, with `drain`, until no job is open (queued,
    or running under another worker, whose lease may still run out); returns the jobs done.
    `between` is called before each look at the queue (`kb worker` runs the folders kept in
    sync that are due, ingest/sync/schedule.py)."""
    name = name or worker_name()
    settings = store.settings.ingest
    stop = stop or threading.Event()
    done = 0
    logger.info("worker %s: taking jobs", name)
    with ParsePool(settings, workers=1) as parser:
        while not stop.is_set():
            if between is not None:
                between()
            job = store.ledger.claim_job(name, settings.job_lease_s)
            if job is None:
                counts = store.ledger.job_counts()
                if drain and not counts.get("queued") and not counts.get("running"):
                    break
                stop.wait(settings.queue_poll_s)
                continue
            with _Lease(store, job, name) as lease:
                _do_job(store, parser, job, name, lease)
            done += 1
    logger.info("worker %s: stopping after %d jobs", name, done)
    return done


def _do_job(store: Store, parser: ParsePool, job: Job, name: str, lease: _Lease) -> None:
    meta = job.meta
    path = Path(meta.root) / meta.path
    logger.info("job %s: %s (attempt %d)", job.id, path, job.attempts)
    result: Prepared | IngestError
    limit = store.settings.ingest.job_attempts
    if job.attempts > limit:
        result = BrokenFile(
            f"{path.name}: {limit} workers stopped (killed or crashed) while ingesting it; see "
            "the workers' logs, then ingest it again"
        )
    else:
        try:
            stat = path.lstat()
            meta = replace(meta, sha256=sha256_file(path, Path(meta.root)), size=stat.st_size,
                           mtime=stat.st_mtime)
            [(_, parsed)] = list(parser.imap([path], [meta.root]))
            if isinstance(parsed, IngestError):
                raise parsed
            result = prepare(store.settings, store.embedder, meta, parsed)
        except IngestError as exc:
            result = exc
        except OSError as exc:
            result = BrokenFile(f"{path.name}: cannot be read ({exc}); check the file")
    with store.writing(f"kb worker {name}"):
        if lease.lost or not store.ledger.job_held(job.id, name):
            logger.warning("job %s: no longer this worker's; its result is dropped", job.id)
            return
        store.ledger.check_text_version()
        recover(store)
        label = str(path)
        if isinstance(result, IngestError):
            store.ledger.mark_failed(meta, result.status, str(result))
            outcome = FileOutcome(label, "failed", result.status, str(result))
        else:
            chunks = Writer(store, store.collection).commit(result)
            kind = "updated" if job.had_version else "ingested"
            outcome = FileOutcome(label, kind, chunks=chunks)
        store.ledger.set_meta("dirty", "0")
        embedded = result.embedded if isinstance(result, Prepared) else 0
        left = store.ledger.finish_job(job, name, outcome, embedded)
        if left == 0:
            store.ledger.finish_run(job.run_id, store.ledger.run_counts(job.run_id))
    logger.info("job %s: %s %s", job.id, outcome.outcome, path.name)


def wait_for_batch(
    store: Store, report: IngestReport, progress: Progress | None = None
) -> IngestReport:
    """Wait until every job of the report's batch is done; the report then holds every file's
    outcome (those the queueing run decided itself first, then the jobs' in queue order)."""
    started = time.perf_counter() - report.seconds
    planned = len(report.outcomes)
    total = planned + report.queued
    seen = -1
    while report.batch:
        jobs = store.ledger.batch_jobs(report.batch)
        finished = [j for j in jobs if j.state == "done"]
        if progress and len(finished) != seen:
            progress(planned + len(finished), total, finished[-1].meta.path if finished else "")
        seen = len(finished)
        if len(finished) == len(jobs):
            report.outcomes += [
                FileOutcome(
                    str(Path(j.meta.root) / j.meta.path), j.outcome, j.status or "ok", j.reason,
                    j.chunks,
                )
                for j in jobs
            ]
            report.embedded += sum(j.embedded for j in jobs)
            break
        time.sleep(store.settings.ingest.queue_poll_s)
    report.seconds = time.perf_counter() - started
    return report
