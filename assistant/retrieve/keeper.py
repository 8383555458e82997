"""A store's current retrieval snapshot (`snapshot.py`), kept fresh: rebuilt when the ledger's
generation moves, by the question that finds it moved, or by a refresher thread (the app) that
also prepares each one it builds (`Retriever.prepare`) so that no question waits for either.

    keeper = SnapshotKeeper(store)
    keeper.current().generation -> 12
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from assistant.retrieve.snapshot import Snapshot
from store.store import Store

logger = logging.getLogger(__name__)


class SnapshotKeeper:
    """One store's current snapshot; one builder at a time."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._snapshot: Snapshot | None = None
        self._building = threading.Lock()
        self._seen_writes = -1
        self._refresher: threading.Thread | None = None

    def current(self) -> Snapshot:
        """The current snapshot. Without a refresher thread the ledger's generation is read on
        every call and the snapshot rebuilt when it moved; with one (`refresh_every`, the app),
        the thread keeps it fresh and a call reads nothing, unless this process wrote to the
        store since (then it waits for the rebuild: an upload is answerable at once)."""
        snap = self._snapshot
        if snap is not None and self._refresher is not None and (
            self.store.writes == self._seen_writes
        ):
            return snap
        return self.refresh()

    @property
    def generation(self) -> int:
        """The ledger generation of the current snapshot (-1 before the first)."""
        snap = self._snapshot
        return snap.generation if snap is not None else -1

    def refresh(self) -> Snapshot:
        """Rebuild the snapshot if the ledger's generation moved."""
        with self._building:
            writes = self.store.writes
            if (
                self._snapshot is None
                or self._snapshot.generation != self.store.ledger.generation()
            ):
                self.store.ledger.check_text_version()
                started = time.perf_counter()
                self._snapshot = Snapshot(self.store)
                logger.info(
                    "retrieval snapshot: generation %d, %d chunks in %.2f s",
                    self._snapshot.generation,
                    len(self._snapshot.ids),
                    time.perf_counter() - started,
                )
            self._seen_writes = writes
            return self._snapshot

    def refresh_every(
        self, seconds: float, prepare: Callable[[Snapshot], None]
    ) -> Callable[[], None]:
        """Read the ledger's generation now and then every `seconds` in a background thread,
        rebuild the snapshot when it moved and `prepare` it, so a document another process
        ingested is answerable here within `seconds` plus the rebuild time, and no question
        waits for a rebuild. Returns the function that stops the thread."""
        stop = threading.Event()

        def run() -> None:
            while True:
                try:
                    prepare(self.refresh())
                except Exception as exc:  # noqa: BLE001  (a ledger hiccup: try again later)
                    logger.warning("retrieval snapshot not refreshed: %s", exc)
                if stop.wait(seconds):
                    return

        self._refresher = threading.Thread(target=run, name="snapshot-refresh", daemon=True)
        self._refresher.start()

        def halt() -> None:
            stop.set()
            if self._refresher is not None:
                self._refresher.join(timeout=seconds + 30)
            self._refresher = None

        return halt
