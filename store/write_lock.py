"""The store's write lock: one writer at a time, across processes and threads.

Every write to a store (ingest, re-index, delete, an upload through the app) runs inside
`store.writing(...)`; readers never take it and keep answering from the live version. The lock is
an exclusive `flock` on `write.lock` in the store folder, which the kernel releases when its
holder dies (a killed writer never leaves a stale lock); the file names the holder for the
message a second writer gets. A second writer waits up to `store.lock_wait_s` seconds, saying
so once, then gives up with a StoreError; 0 refuses at once. When the ledger is PostgreSQL
(`store.ledger_url`) the lock is a PostgreSQL advisory lock instead (`AdvisoryLock`), so writers
on several machines take turns the same way.

    lock = WriteLock(Path("data/store"), wait_s=600)
    with lock.hold("kb ingest"):      # re-entrant within the process (reindex -> ingest_paths)
        ...
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from core.errors import StoreError
from store.ledger import Ledger, WriterSession

logger = logging.getLogger(__name__)

LOCK_FILE = "write.lock"
POLL_S = 0.2


class WriteLock:
    """The write lock of one store folder; see the module docstring. Subclasses change how the
    lock is taken (`_try`, `_release`, `holder`); waiting, refusing and re-entry stay here."""

    def __init__(self, folder: Path, wait_s: float) -> None:
        self.path = folder / LOCK_FILE
        self.where = str(folder)
        self.wait_s = wait_s
        self._threads = threading.RLock()  # the lock does not tell this process's threads apart
        self._depth = 0
        self._file: IO[str] | None = None

    @property
    def held(self) -> bool:
        """Whether this process holds the lock (some thread of it, inside `hold`)."""
        return self._depth > 0

    def holder(self) -> str:
        """What the lock file says about its holder ("" when nobody wrote to it)."""
        try:
            return self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return ""

    def _refused(self, what: str) -> StoreError:
        holder = self.holder() or "another writer"
        waited = f" after waiting {self.wait_s:g}s" if self.wait_s > 0 else ""
        return StoreError(
            f"store {self.where} is being written by {holder}; {what} did not start"
            f"{waited}: run it again when that finishes (or raise store.lock_wait_s)"
        )

    @contextmanager
    def hold(self, what: str) -> Iterator[None]:
        """Hold the lock for the block; `what` names this writer in others' messages."""
        deadline = time.monotonic() + self.wait_s
        if self.wait_s > 0:
            taken = self._threads.acquire(timeout=self.wait_s)
        else:
            taken = self._threads.acquire(blocking=False)
        if not taken:
            raise self._refused(what)
        try:
            if self._depth == 0:
                self._take(what, deadline)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()
        finally:
            self._threads.release()

    def _take(self, what: str, deadline: float) -> None:
        said = False
        while not self._try(what):
            if time.monotonic() >= deadline:
                self._release()
                raise self._refused(what) from None
            if not said:
                logger.warning(
                    "store %s is being written by %s; %s waits up to %gs",
                    self.where,
                    self.holder() or "another writer",
                    what,
                    self.wait_s,
                )
                said = True
            time.sleep(POLL_S)

    def _try(self, what: str) -> bool:
        """Take the lock now if it is free, naming the holder in the lock file."""
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self._file.seek(0)
        self._file.truncate()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._file.write(f"`{what}` (pid {os.getpid()}, since {stamp})\n")
        self._file.flush()
        return True

    def _release(self) -> None:
        """Let go of the lock (or of the attempt to take it)."""
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class AdvisoryLock(WriteLock):
    """The write lock of a store whose ledger is PostgreSQL: a session-level advisory lock
    (`pg_try_advisory_lock`) on a connection held for the run, so writers on any machine take
    turns; PostgreSQL releases it when the holder's connection ends, also when it dies. The
    holder is named by that connection's application_name."""

    def __init__(self, ledger: Ledger, wait_s: float) -> None:
        super().__init__(Path(), wait_s)
        self.ledger = ledger
        self.where = ledger.where
        self._session: WriterSession | None = None

    def holder(self) -> str:
        return self.ledger.writer()

    def _try(self, what: str) -> bool:
        if self._session is None:
            self._session = self.ledger.writer_session(what)
        return self._session.try_lock()

    def _release(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def write_lock(folder: Path, ledger: Ledger, wait_s: float) -> WriteLock:
    """The store's write lock: an advisory lock when the ledger is PostgreSQL (writers may be
    on other machines), else `write.lock` in the store folder."""
    if ledger.dialect == "postgres":
        return AdvisoryLock(ledger, wait_s)
    return WriteLock(folder, wait_s)
