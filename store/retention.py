"""The retention pass: every kind of record kept past its limit (`[retention]`,
core/settings/privacy.py) removed, the audit trail pruned (`audit.keep_days`), text written
before masking was on masked, and the pass recorded in the audit trail with its counts. People
on legal hold keep their records (store/ledger/privacy/people.py).

The ledger's rows go a batch at a time (store/ledger/privacy/retention.py), each batch one short
transaction of a few rows followed by a pause, so a question recorded during a pass waits for
one such transaction at most (bench/serving/retention_pass.py measures `POST /api/ask` during a
pass over a million questions). Files go too: uploads of documents since deleted (moved aside to
`uploads/.deleted/` when a pass first finds them deleted, removed `uploads_days` later), the
log files kb writes in the store (the model server's, `logs/`) not written for `logs_days`, and
the admin tab's downloads (`cache/exports/`) after a day.

    report = prune_pass(store_ledger, settings, actor="cli:ops")
    report.removed -> {"questions": 1200, "feedback": 3, ..., "logs": 1}

`kb prune` runs a pass by hand; `kb serve`, `kb worker` and `kb sync` run one every
`retention.every_hours` (`RetentionSchedule`): the process that claims it in the ledger runs it
in a child process of its own, so a long pass never holds the app's interpreter.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from core.config import Settings
from core.privacy import mask_personal
from store.ledger import AuditEntry, Ledger
from store.ledger.privacy.retention import TEXTS, Marker

logger = logging.getLogger(__name__)

# Rows per transaction: 50 deletes hold SQLite's write turn about 1 ms (100: 2 ms, 400: 9 ms,
# medians on the 2-core test host), which a question's own write then waits for at most. The
# masking reads 4 batches' rows at a time and writes only those it changes.
BATCH = 50
# After each batch the pass waits PAUSE_SHARE times as long as the batch took, PAUSE_S at
# least (0: no pause, for tests): with a batch's transaction at about 1.5 ms, about 1.5% of
# the write turns go to the pass, and 2% of the writes of a question asked meanwhile waited
# more than 1 ms (at 20 ms, 7.5%). Masking a million questions took 13 minutes, deleting them
# 68 (docs/benchmarks-history.md, "A retention pass: the detail").
PAUSE_S, PAUSE_SHARE = 0.1, 2.0
FRESH_UPLOAD_S = 3600.0  # an upload younger than this may still be on its way in: never moved
DELETED = ".deleted"  # the uploads' folder for the files of deleted documents
# The admin tab's downloads (ui/admin/documents.py: knowledge gaps, the audit trail as CSV), in the
# store: questions and audit records written out, kept a day.
EXPORTS = Path("cache") / "exports"
EXPORTS_DAYS = 1.0
DAY = 86400.0


@dataclass
class PassReport:
    """What a pass removed (rows or files, by kind), masked and pruned; how long it took, its
    batches, and the longest of their transactions (what a question recorded meanwhile may
    wait for)."""

    removed: dict[str, int] = field(default_factory=dict)
    masked: int = 0
    audit_pruned: int = 0
    batches: int = 0
    longest_transaction_ms: float = 0.0
    seconds: float = 0.0


class _Batches:
    """Runs a pass's batches: counts what each changed, pauses after each at least as long as
    it took."""

    def __init__(self, ledger: Ledger, report: PassReport, pause_s: float) -> None:
        self.ledger, self.report, self.pause_s = ledger, report, pause_s

    def run(self, step: Callable[[Marker], tuple[dict[str, int], Marker]],
            marker: Marker = None) -> tuple[Counter[str], Marker]:
        """`step` from `marker` until it reports no rows left; (rows changed by table or kind,
        the last marker)."""
        total: Counter[str] = Counter()
        while True:
            started = time.perf_counter()
            changed, after = step(marker)
            took = time.perf_counter() - started
            self.report.batches += 1
            self.report.longest_transaction_ms = max(
                self.report.longest_transaction_ms, self.ledger.longest_transaction_s() * 1000)
            if after is None:
                return total, marker
            if any(changed.values()):
                self.ledger.checkpoint()
            total.update(changed)
            marker = after
            if self.pause_s:
                time.sleep(max(self.pause_s, PAUSE_SHARE * took))


def cutoff(days: float, now: float) -> float:
    """The time before which a record of a `days` limit goes; 0 (nothing) for 0 days."""
    return now - days * DAY if days > 0 else 0.0


def prune_pass(ledger: Ledger, settings: Settings, actor: str, now: float | None = None,
               batch: int = BATCH, pause_s: float = PAUSE_S) -> PassReport:
    """One pass over every kind of record (see the module's docstring); recorded in the audit
    trail as `retention.pass`."""
    started = time.perf_counter()
    now = time.time() if now is None else now
    keep = settings.retention
    report = PassReport()
    batches = _Batches(ledger, report, pause_s)
    gaps = cutoff(keep.gaps_days, now)
    limits = {"questions": (keep.questions_days, gaps), "feedback": (keep.feedback_days, None),
              "conversation_turns": (keep.conversations_days, None),
              "conversations": (keep.conversations_days, None),
              "channel_messages": (keep.conversations_days, None)}  # a chat thread's turns
    removed: Counter[str] = Counter()
    ledger.longest_transaction_s()  # from here on
    for table, (days, gaps_before) in limits.items():
        gone, _ = batches.run(partial(
            ledger.prune_batch, table, cutoff(days, now), batch=batch, gaps_before=gaps_before))
        removed.update(gone)
    report.removed = {table: removed[table] for table in limits}
    report.masked = mask_old_text(ledger, batches, batch)
    store = settings.store_path()
    report.removed["uploads"] = prune_uploads(ledger, store / "uploads", keep.uploads_days, now)
    report.removed["logs"] = prune_files(store / "logs", keep.logs_days, now)
    report.removed["exports"] = prune_files(store / EXPORTS, EXPORTS_DAYS, now)
    if settings.audit.keep_days > 0:
        report.audit_pruned = ledger.prune_audit(cutoff(settings.audit.keep_days, now), actor,
                                                 "local")
    report.seconds = round(time.perf_counter() - started, 3)
    report.longest_transaction_ms = round(report.longest_transaction_ms, 1)
    ledger.append_audit([AuditEntry(time.time(), actor, "local", "retention.pass", "ledger",
                                    "ok", {**asdict(report), "limits": keep.limits()})])
    logger.info("retention pass: %s", asdict(report))
    return report


def mask_old_text(ledger: Ledger, batches: _Batches, batch: int) -> int:
    """Mask the text of rows written before the ledger masked, from where the last pass left
    off; with masking off, forget where that was (rows written meanwhile are not masked)."""
    masked = 0
    for table in TEXTS:
        if not ledger.mask:
            ledger.set_marker(table, None)
            continue
        upto = ledger.last_key(table)  # rows written from now on are masked as they come
        changed, last = batches.run(partial(ledger.mask_batch, table, mask_personal,
                                            batch=4 * batch, upto=upto), ledger.marker(table))
        ledger.set_marker(table, last)
        masked += changed["masked"]
    return masked


def prune_uploads(ledger: Ledger, uploads: Path, days: float, now: float) -> int:
    """Move the uploads no document names any more to `uploads/.deleted/` (stamped with the
    time they were found), and remove those found more than `days` ago; how many went. 0
    days keeps them all where they are."""
    if days <= 0 or not uploads.is_dir():
        return 0
    aside = uploads / DELETED
    live = {(Path(r.meta.root) / r.meta.path).resolve() for r in ledger.documents()}
    for path in sorted(uploads.rglob("*")):
        if (aside in path.parents or not path.is_file() or path.is_symlink()
                or path.resolve() in live or path.stat().st_mtime > now - FRESH_UPLOAD_S):
            continue
        target = aside / path.relative_to(uploads)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        os.utime(target, (now, now))
        logger.info("upload %s: its document was deleted; moved to %s", path, target)
    return prune_files(aside, days, now)


def prune_files(folder: Path, days: float, now: float) -> int:
    """Remove the files under `folder` not written for `days`; how many went. 0 days keeps
    them all."""
    return remove_files(folder, cutoff(days, now)) if days > 0 else 0


def remove_files(folder: Path, before: float) -> int:
    """Remove the files under `folder` last written before `before` (epoch seconds; inf: all)
    and the folders left empty; how many files went. Links are left alone."""
    if not folder.is_dir():
        return 0
    gone = 0
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_file() and not path.is_symlink() and path.stat().st_mtime < before:
            path.unlink()
            gone += 1
        elif path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
            path.rmdir()
    return gone


# --- the schedule: kb serve, kb worker, kb sync ------------------------------------------
NEXT_PASS = "retention_next"  # meta: when the next scheduled pass is due (epoch seconds)
LOOK_EVERY_S = 600.0  # how often a process looks whether a pass is due


def run_pass(settings: Settings, actor: str) -> None:
    """A pass in a process of its own (the schedule's child)."""
    from store.store import open_ledger

    logging.basicConfig(level=logging.INFO)
    ledger = open_ledger(settings)
    try:
        prune_pass(ledger, settings, actor)
    finally:
        ledger.close()


class RetentionSchedule:
    """In a long-running process: every LOOK_EVERY_S, claim the pass in the ledger when it is
    due (`Ledger.claim_due`: one process of a deployment wins) and run it in a child process.

        schedule = RetentionSchedule(ledger, settings, "kb serve"); schedule.start()
        schedule.stop()
    """

    def __init__(self, ledger: Ledger, settings: Settings, actor: str,
                 look_every_s: float = LOOK_EVERY_S) -> None:
        self.ledger, self.settings, self.actor = ledger, settings, actor
        self.look_every_s = look_every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.settings.retention.every_hours <= 0:
            return
        self._thread = threading.Thread(target=self._run, name="retention", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        every = self.settings.retention.every_hours * 3600
        while not self._stop.wait(self.look_every_s):  # not at once: a start has enough to do
            try:
                if self.ledger.claim_due(NEXT_PASS, time.time(), every):
                    self.run_now()
            except Exception as exc:  # noqa: BLE001  the process goes on; the next look retries
                logger.error("retention pass not run: %s", exc)

    def run_now(self) -> None:
        """The pass in a child process, waited for."""
        child = multiprocessing.get_context("spawn").Process(
            target=run_pass, args=(self.settings, self.actor), name="kb-retention", daemon=True)
        child.start()
        child.join()
        if child.exitcode:
            logger.error("retention pass ended with exit code %s (its log says why)",
                         child.exitcode)


@contextmanager
def scheduled_passes(ledger: Ledger, settings: Settings, actor: str) -> Iterator[None]:
    """A `RetentionSchedule` for the length of a `with` block (`kb worker`, `kb sync`)."""
    schedule = RetentionSchedule(ledger, settings, actor)
    schedule.start()
    try:
        yield
    finally:
        schedule.stop()


def report_lines(report: PassReport) -> list[str]:
    """The pass for a person to read, a line per kind."""
    lines = [f"{kind:<20} {n} removed" for kind, n in report.removed.items()]
    lines += [f"{'masked':<20} {report.masked} rows",
              f"{'audit records':<20} {report.audit_pruned} pruned",
              f"{report.batches} batches in {report.seconds:.1f} s (the longest "
              f"transaction {report.longest_transaction_ms:.0f} ms)"]
    return lines

