"""What ingestion did and has yet to do (tables `sources`, `runs`, `run_files`, `jobs`): the
paths it was given (for `kb reindex`), each run with its files' outcomes, and the queue of
`kb ingest --queue` (ingest/queue.py), whose workers claim one file at a time under a lease.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.types import DocMeta, FileOutcome
from store.ledger.base import LedgerBase


@dataclass(frozen=True)
class Job:
    """One file of `kb ingest --queue` (table `jobs`): queued, then running under a worker's
    lease (`lease_until`, epoch seconds), then done with its outcome."""

    id: str
    batch: str
    run_id: int
    seq: int
    meta: DocMeta
    had_version: bool
    state: str
    attempts: int
    worker: str
    outcome: str
    status: str
    reason: str
    chunks: int
    embedded: int


def _job_from_row(row: Any) -> Job:
    meta = json.loads(row["meta"])
    for key in ("groups", "page_labels", "ocr_pages", "admin_dates"):
        meta[key] = tuple(meta.get(key, ()))  # a job queued by an older kb lacks newer keys
    return Job(
        row["id"],
        row["batch"],
        int(row["run_id"]),
        int(row["seq"]),
        DocMeta(**meta),
        bool(row["had_version"]),
        row["state"],
        int(row["attempts"]),
        row["worker"],
        row["outcome"],
        row["status"],
        row["reason"],
        int(row["chunks"]),
        int(row["embedded"]),
    )


class Runs(LedgerBase):
    """Sources, ingestion runs with their files, and the ingest queue's jobs."""

    # --- sources and runs ------------------------------------------------------------------
    def remember_source(self, path: str, groups: Sequence[str] | None) -> None:
        """An ingested path (file or folder) and its --groups, for `kb reindex`."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO sources VALUES (?, ?) "
                "ON CONFLICT(path) DO UPDATE SET groups = excluded.groups",
                (path, ",".join(groups or ())),
            )

    def sources(self) -> list[tuple[str, tuple[str, ...] | None]]:
        rows = self.db.execute("SELECT path, groups FROM sources ORDER BY path")
        return [(r[0], tuple(r[1].split(",")) if r[1] else None) for r in rows]

    def start_run(self, kind: str, args: str) -> int:
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO runs (kind, args, started_at) VALUES (?, ?, ?) RETURNING id",
                (kind, args, time.time()),
            )
            return int(cur.fetchall()[0][0])

    def record_file(self, run_id: int, path: str, outcome: str, reason: str = "") -> None:
        self.db.execute(
            "INSERT INTO run_files VALUES (?, ?, ?, ?)", (run_id, path, outcome, reason)
        )

    def finish_run(self, run_id: int, counts: dict[str, int]) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET ended_at = ?, ingested = ?, unchanged = ?, updated = ?, "
                "removed = ?, failed = ? WHERE id = ?",
                (
                    time.time(),
                    counts.get("ingested", 0),
                    counts.get("unchanged", 0),
                    counts.get("updated", 0),
                    counts.get("removed", 0),
                    counts.get("failed", 0),
                    run_id,
                ),
            )

    def last_run(self) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        return dict(row) if row else None

    def run_counts(self, run_id: int) -> dict[str, int]:
        """The run's files by outcome, as `finish_run` takes them."""
        rows = self.db.execute(
            "SELECT outcome, COUNT(*) FROM run_files WHERE run_id = ? GROUP BY outcome", (run_id,)
        ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    # --- ingest jobs (009_jobs; ingest/queue.py) ------------------------------------------
    def add_jobs(self, run_id: int, files: Sequence[tuple[DocMeta, bool]]) -> str:
        """Queue (meta, had a live version) files as one batch of `run_id`; returns the batch."""
        batch = uuid.uuid4().hex
        now = time.time()
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO jobs (id, batch, run_id, seq, doc_id, meta, had_version, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        uuid.uuid4().hex,
                        batch,
                        run_id,
                        seq,
                        meta.id,
                        json.dumps(dataclasses.asdict(meta), ensure_ascii=False),
                        int(had),
                        now,
                        now,
                    )
                    for seq, (meta, had) in enumerate(files)
                ],
            )
        return batch

    def claim_job(self, worker: str, lease_s: float) -> Job | None:
        """The oldest job that is queued, or running under a lease that ran out (its worker
        died), now `worker`'s for `lease_s` seconds; None when there is none. One claim at a
        time: `FOR UPDATE SKIP LOCKED` on PostgreSQL, the `BEGIN IMMEDIATE` of `transaction()`
        on SQLite."""
        skip = " FOR UPDATE SKIP LOCKED" if self.dialect == "postgres" else ""
        now = time.time()
        with self.transaction() as db:
            rows = db.execute(
                "UPDATE jobs SET state = 'running', worker = ?, lease_until = ?, "
                "attempts = attempts + 1, updated_at = ? WHERE id = (SELECT id FROM jobs "
                "WHERE state = 'queued' OR (state = 'running' AND lease_until < ?) "
                f"ORDER BY created_at, seq LIMIT 1{skip}) RETURNING *",
                (worker, now + lease_s, now, now),
            ).fetchall()
        return _job_from_row(rows[0]) if rows else None

    def renew_job(self, job_id: str, worker: str, lease_s: float) -> bool:
        """Extend `worker`'s lease on the job; False when the job is no longer its."""
        now = time.time()
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE jobs SET lease_until = ?, updated_at = ? "
                "WHERE id = ? AND worker = ? AND state = 'running'",
                (now + lease_s, now, job_id, worker),
            )
            return bool(cursor.rowcount > 0)

    def job_held(self, job_id: str, worker: str) -> bool:
        """Whether `worker` still holds the job (running, under its lease)."""
        row = self.db.execute(
            "SELECT 1 FROM jobs WHERE id = ? AND worker = ? AND state = 'running'",
            (job_id, worker),
        ).fetchone()
        return row is not None

    def finish_job(self, job: Job, worker: str, outcome: FileOutcome, embedded: int) -> int | None:
        """Record the job's outcome (and its file in the run) if `worker` still holds it;
        returns the jobs of its batch still open, or None when the job was not `worker`'s."""
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE jobs SET state = 'done', outcome = ?, status = ?, reason = ?, "
                "chunks = ?, embedded = ?, updated_at = ? "
                "WHERE id = ? AND worker = ? AND state = 'running'",
                (
                    outcome.outcome,
                    outcome.status,
                    outcome.reason,
                    outcome.chunks,
                    embedded,
                    time.time(),
                    job.id,
                    worker,
                ),
            )
            if cursor.rowcount == 0:
                return None
            db.execute(
                "INSERT INTO run_files VALUES (?, ?, ?, ?)",
                (job.run_id, outcome.path, outcome.outcome, outcome.reason),
            )
            row = db.execute(
                "SELECT COUNT(*) FROM jobs WHERE batch = ? AND state != 'done'", (job.batch,)
            ).fetchone()
            return int(row[0])

    def batch_jobs(self, batch: str) -> list[Job]:
        rows = self.db.execute("SELECT * FROM jobs WHERE batch = ? ORDER BY seq", (batch,))
        return [_job_from_row(r) for r in rows.fetchall()]

    def job_counts(self) -> dict[str, int]:
        """Jobs by state: {"queued": 3, "running": 2, "done": 40}."""
        rows = self.db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
        return {str(r[0]): int(r[1]) for r in rows}
