"""The ingest queue (ingest/queue.py): `kb ingest --queue` puts files on the ledger's jobs table,
real `kb worker` processes take them, and a worker killed with SIGKILL mid-job loses nothing:
its lease runs out, another worker finishes the job, and ledger and Chroma agree.

The store comes from the `queue_store` fixture: settings for this process and the environment a
`kb` subprocess needs to open the same store. The two-worker test runs on both ledgers: SQLite
and a throwaway PostgreSQL database (`FOR UPDATE SKIP LOCKED`).

    pytest -m crash tests/ingest/test_queue.py     # the other kill points (scripts/test.sh)
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings
from core.types import IngestReport
from devtools.postgres import RunningPostgres, with_ledger
from ingest import pipeline
from ingest.queue import run_worker, wait_for_batch
from store.ledger import Job
from store.store import open_store
from tests.support.stores import ingest_paths, list_documents, store_problems

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
FILES = ["Employee-Leave-Policy.pdf", "Code-of-Conduct.docx", "员工福利手册.docx"]
LEASE_S = 3.0
RUN_LIMIT_S = 300

pytestmark = pytest.mark.slow  # real `kb worker` processes


@dataclass(frozen=True)
class QueueStore:
    """A store for this process (`settings`) and for `kb` subprocesses (`env`, `--store`)."""

    settings: Settings
    env: dict[str, str]

    def kb(self, *args: str) -> list[str]:
        store = str(self.settings.store_path())
        return [sys.executable, "-c", "from ui.cli import main; main()", "-v", *args,
                "--store", store]


@pytest.fixture
def queue_ledger(request: pytest.FixtureRequest) -> str:
    """`store.ledger_url`: "" (SQLite in the store folder) unless a test asks for "postgres"
    (indirect parametrization), then a fresh database of the throwaway cluster."""
    if getattr(request, "param", "sqlite") != "postgres":
        return ""
    running: RunningPostgres = request.getfixturevalue("postgres")
    return running.database(request.node.name)


@pytest.fixture
def queue_store(make_settings: Any, embed_cache: Path, queue_ledger: str) -> QueueStore:
    """Short leases and polls, so a killed worker's job comes back within seconds."""
    queue = {"job_lease_s": LEASE_S, "queue_poll_s": 0.2}
    settings = with_ledger(make_settings(ingest=queue), queue_ledger)
    env = {
        **os.environ,
        "KB_EMBED_CACHE": str(embed_cache),
        "KB_INGEST_JOB_LEASE_S": str(LEASE_S),
        "KB_INGEST_QUEUE_POLL_S": "0.2",
        **({"KB_STORE_LEDGER_URL": queue_ledger} if queue_ledger else {}),
    }
    return QueueStore(settings, env)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in FILES:
        shutil.copy(SAMPLES / name, folder)
    return folder


def enqueue(settings: Settings, docs: Path) -> IngestReport:
    store = open_store(settings)
    try:
        return pipeline.ingest_paths(store, [docs], queue=True)
    finally:
        store.close()


def wait(settings: Settings, report: IngestReport) -> IngestReport:
    store = open_store(settings)
    try:
        return wait_for_batch(store, report)
    finally:
        store.close()


def worker(queue: QueueStore) -> subprocess.Popen[str]:
    return subprocess.Popen(
        queue.kb("worker", "--drain", "--threads", "1"),
        cwd=REPO,
        env=queue.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its parse process goes with it when the group is killed
    )


def finish(process: subprocess.Popen[str]) -> None:
    _, err = process.communicate(timeout=RUN_LIMIT_S)
    assert process.returncode == 0, err[-2000:]


def jobs(settings: Settings, batch: str) -> list[Job]:
    store = open_store(settings)
    try:
        return store.ledger.batch_jobs(batch)
    finally:
        store.close()


@pytest.mark.parametrize("queue_ledger", ["sqlite", "postgres"], indirect=True)
def test_two_workers_take_a_batch_and_the_waiter_reports_it(
    queue_store: QueueStore, docs: Path, make_settings: Any, tmp_path: Path
) -> None:
    settings = queue_store.settings
    queued = enqueue(settings, docs)
    assert queued.queued == 3 and queued.outcomes == [] and queued.batch
    assert {j.state for j in jobs(settings, queued.batch)} == {"queued"}

    workers = [worker(queue_store), worker(queue_store)]
    for process in workers:
        finish(process)
    report = wait(settings, queued)

    assert [(Path(o.path).name, o.outcome, o.status) for o in report.outcomes] == [
        (name, "ingested", "ok") for name in sorted(FILES)
    ]
    assert {r.meta.path: r.status for r in list_documents(settings)} == {n: "ok" for n in FILES}
    assert store_problems(settings) == []
    assert {j.state for j in jobs(settings, queued.batch)} == {"done"}
    # the worker that finished the batch ended the run
    store = open_store(settings)
    try:
        run = store.ledger.last_run()
    finally:
        store.close()
    assert run is not None and run["ended_at"] and run["ingested"] == 3

    # the same documents and passages as a direct ingest
    direct = make_settings(store=tmp_path / "direct")
    ingest_paths(direct, [docs])
    assert chunk_texts(direct) == chunk_texts(settings)

    # queued again: nothing changed, nothing is queued
    again = enqueue(settings, docs)
    assert again.queued == 0 and again.counts["unchanged"] == 3


def chunk_texts(settings: Settings) -> list[tuple[str, str]]:
    store = open_store(settings)
    try:
        table = store.ledger.chunk_table()
        return list(zip(table.ids, table.texts, strict=True))
    finally:
        store.close()


# A kill lands a little after its line: "embed" and "parse" are mid-job for sure; "vector
# write" (under the write lock) lands in the commit, or just after it when the commit is quick.
KILL_POINTS = {
    "embed": r": embedding \d+ passages",
    "parse": r"job \w+: .* \(attempt 1\)",
    "vector write": r"chroma upsert \d+ vectors",
}


@pytest.mark.parametrize(
    "point",
    [
        pytest.param(name, marks=() if name == "embed" else pytest.mark.crash)
        for name in KILL_POINTS
    ],
)
def test_a_worker_killed_mid_job_loses_nothing(
    point: str, queue_store: QueueStore, docs: Path
) -> None:
    settings = queue_store.settings
    queued = enqueue(settings, docs)
    victim = worker(queue_store)
    assert victim.stderr is not None
    pattern = re.compile(KILL_POINTS[point])
    deadline = time.monotonic() + RUN_LIMIT_S
    killed = False
    for line in victim.stderr:
        if pattern.search(line):
            os.killpg(victim.pid, signal.SIGKILL)
            killed = True
            break
        if time.monotonic() > deadline:
            break
    if not killed:
        os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert killed, f"the worker never logged {KILL_POINTS[point]!r}"
    held = [j for j in jobs(settings, queued.batch) if j.state == "running"]
    # the killed worker's job, under a lease nobody renews
    assert len(held) == 1 or (point == "vector write" and not held)

    rescuer = worker(queue_store)
    finish(rescuer)
    report = wait(settings, queued)

    assert [o.outcome for o in report.outcomes] == ["ingested"] * 3
    assert {r.meta.path: r.status for r in list_documents(settings)} == {n: "ok" for n in FILES}
    assert store_problems(settings) == []
    for job in held:
        retried = next(j for j in jobs(settings, queued.batch) if j.id == job.id)
        assert retried.attempts == 2 and retried.worker != job.worker
    store = open_store(settings)
    try:
        assert store.ledger.get_meta("dirty") == "0"
    finally:
        store.close()


def test_a_job_whose_workers_keep_dying_is_failed(queue_store: QueueStore, docs: Path) -> None:
    """After `ingest.job_attempts` claims whose workers died, the next worker fails the job
    (`broken`) instead of trying the file again; the other files are ingested."""
    settings = queue_store.settings
    queued = enqueue(settings, docs)
    store = open_store(settings)
    try:
        # workers that took the first job and died: each lease runs out at once
        for attempt in range(settings.ingest.job_attempts):
            claimed = store.ledger.claim_job(f"gone:{attempt}", lease_s=0.0)
            assert claimed is not None and claimed.seq == 0
            time.sleep(0.01)
        assert run_worker(store, drain=True) == 3  # a worker in this process
        report = wait_for_batch(store, queued)
    finally:
        store.close()
    first = report.outcomes[0]
    assert first.outcome == "failed" and first.status == "broken"
    assert "workers stopped (killed or crashed)" in first.reason
    assert [o.outcome for o in report.outcomes[1:]] == ["ingested", "ingested"]
    assert store_problems(settings) == []
