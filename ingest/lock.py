"""The store's write lock: one writer at a time, across processes and threads.

Every write to a store (ingest, re-index, delete, an upload through the app) runs inside
`store.writing(...)`; readers never take it and keep answering from the live version. The lock is
an exclusive `flock` on `write.lock` in the store folder, which the kernel releases when its
holder dies (a killed writer never leaves a stale lock); the file names the holder for the
message a second writer gets. A second writer waits up to `store.lock_wait_s` seconds, saying
so once, then gives up with a StoreError; 0 refuses at once.

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

logger = logging.getLogger(__name__)

LOCK_FILE = "write.lock"
POLL_S = 0.2


class WriteLock:
    """The write lock of one store folder; see the module docstring."""

    def __init__(self, folder: Path, wait_s: float) -> None:
        self.path = folder / LOCK_FILE
        self.wait_s = wait_s
        self._threads = threading.RLock()  # flock does not tell this process's threads apart
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
            f"store {self.path.parent} is being written by {holder}; {what} did not start"
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
                self._file = self._take(what, deadline)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._file is not None:
                    fcntl.flock(self._file, fcntl.LOCK_UN)
                    self._file.close()
                    self._file = None
        finally:
            self._threads.release()

    def _take(self, what: str, deadline: float) -> IO[str]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        said = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.close()
                    raise self._refused(what) from None
                if not said:
                    logger.warning(
                        "store %s is being written by %s; %s waits up to %gs",
                        self.path.parent,
                        self.holder() or "another writer",
                        what,
                        self.wait_s,
                    )
                    said = True
                time.sleep(POLL_S)
        handle.seek(0)
        handle.truncate()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        handle.write(f"`{what}` (pid {os.getpid()}, since {stamp})\n")
        handle.flush()
        return handle
