"""When the folders kept in sync are looked at: each source is due `every` after its last pass
(at once when it never ran, or when its name now stands for another folder). `kb sync` runs
the due ones and sleeps until the next is due; `kb worker` runs the due ones between jobs.

    sources = checked_sources(settings)            # [[sources]], apart from the store folder
    run_due(store, settings, now=time.time())      # -> the passes' SyncReports
    keep_in_sync(store, settings, time.time, stop.wait, print_report, stop.is_set)

The clock and the sleep are passed in, so a test drives the schedule with a clock of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from core.config import Settings
from core.settings.sources import SourceSettings, check_apart_from_store
from ingest.sync.folder import SyncReport, sync_source
from store.ledger import SyncState
from store.store import Store

logger = logging.getLogger(__name__)

# The longest `keep_in_sync` sleeps between looks, even when nothing is due sooner, so that a
# `kb sync --confirm-deletes` or a source run by a worker meanwhile is seen in good time.
MAX_SLEEP_S = 60.0


def checked_sources(settings: Settings) -> tuple[SourceSettings, ...]:
    """`settings.sources`, after the check that none overlaps the store folder (its uploads)."""
    check_apart_from_store(settings.sources, settings.store_path())
    return settings.sources


def source_states(store: Store, sources: Sequence[SourceSettings]) -> list[SyncState]:
    """Each configured source's state, in config order; one that never ran is "waiting"."""
    stored = {s.name: s for s in store.ledger.sync_states()}
    out = []
    for source in sources:
        state = stored.get(source.name)
        if state is None or state.root != source.path:
            state = SyncState(source.name, source.path, state="waiting")
        out.append(state)
    return out


def _due_at(state: SyncState, source: SourceSettings) -> float:
    return 0.0 if state.state == "waiting" else state.last_run + source.every_s


def due_sources(store: Store, sources: Sequence[SourceSettings], now: float
                ) -> list[SourceSettings]:
    """The sources whose next pass is due at `now`."""
    states = source_states(store, sources)
    return [s for s, state in zip(sources, states, strict=True) if _due_at(state, s) <= now]


def seconds_until_due(store: Store, sources: Sequence[SourceSettings], now: float) -> float:
    """How long until the next source is due (0: one is due now), at most MAX_SLEEP_S."""
    states = source_states(store, sources)
    due = [_due_at(state, s) for s, state in zip(sources, states, strict=True)]
    return max(0.0, min([MAX_SLEEP_S, *(at - now for at in due)]))


def run_due(store: Store, settings: Settings, now: float,
            sources: Sequence[SourceSettings] | None = None) -> list[SyncReport]:
    """One pass over each source that is due at `now`."""
    share = settings.sync.max_delete_share
    return [sync_source(store, s, share, now)
            for s in due_sources(store, settings.sources if sources is None else sources, now)]


def keep_in_sync(store: Store, settings: Settings, clock: Callable[[], float],
                 sleep: Callable[[float], object], on_report: Callable[[SyncReport], None],
                 stop: Callable[[], bool]) -> None:
    """Run the due sources, sleep until the next is due, again, until `stop()`."""
    sources = checked_sources(settings)
    while not stop():
        for report in run_due(store, settings, clock(), sources):
            on_report(report)
        if not stop():
            sleep(seconds_until_due(store, sources, clock()))
