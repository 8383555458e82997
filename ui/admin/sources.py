"""What the admin tab and `/metrics` say of the folders kept in sync (ingest/sync/folder.py): per
source its state (and why it is braked or failed), its last run, files seen, changed and failed,
and its next run.

    rows = source_rows(source_states(store, settings.sources))    # the admin table's rows
    watch_sources(metrics, store, settings.sources)  # kb_sync_* gauges, read at each scrape

The table is refused to anyone but an admin and lists the sources whose groups the admin sees
(every one to a see-all admin; a source without groups of its own counts as the default ones).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import gradio as gr
import pandas as pd
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from core.settings.sources import SourceSettings
from ingest.sync.schedule import source_states
from store.ledger import SyncState
from store.store import Store
from ui.handlers import Handlers
from ui.metrics import Metrics

SOURCE_HEADERS = ["source", "folder", "state", "last run (UTC)", "files seen", "changed",
                  "failed", "next run (UTC)", "reason"]


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S") if at else ""


def source_rows(states: Sequence[SyncState]) -> list[list[Any]]:
    """The admin table's rows, one per source, in config order."""
    return [[s.name, s.root, s.state, _when(s.last_run), s.seen, s.changed, s.failed,
             _when(s.next_run), s.reason] for s in states]


class SourcesCollector(Collector):
    """The kb_sync_* gauges, one sample per source (label `source`), read from the ledger at
    each scrape, so every app process shows what any `kb sync` or `kb worker` did."""

    def __init__(self, read: Callable[[], Sequence[SyncState]]) -> None:
        self.read = read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        states = self.read()
        gauges = [
            ("kb_sync_files_seen", "Files in the source's folder at its last pass", "seen"),
            ("kb_sync_files_changed", "Files ingested, updated, renamed or deleted by the last "
                                      "pass", "changed"),
            ("kb_sync_files_failed", "Files of the source that could not be ingested", "failed"),
            ("kb_sync_pending_deletes", "Vanished files the brake kept", "pending_deletes"),
            ("kb_sync_last_run_timestamp_seconds", "When the last pass ran (0: never)",
             "last_run"),
            ("kb_sync_next_run_timestamp_seconds", "When the next pass is due (0: now)",
             "next_run"),
        ]
        for name, help_text, attribute in gauges:
            family = GaugeMetricFamily(name, help_text, labels=["source"])
            for s in states:
                family.add_metric([s.name], float(getattr(s, attribute)))
            yield family
        braked = GaugeMetricFamily("kb_sync_braked", "1 while the source's deletes are held "
                                   "back (reason: why and what to do)", labels=["source", "reason"])
        failed = GaugeMetricFamily("kb_sync_pass_failed", "1 when the source's last pass "
                                   "failed (reason: why)", labels=["source", "reason"])
        for s in states:
            braked.add_metric([s.name, s.reason if s.state == "braked" else ""],
                              float(s.state == "braked"))
            failed.add_metric([s.name, s.reason if s.state == "failed" else ""],
                              float(s.state == "failed"))
        yield braked
        yield failed


def watch_sources(metrics: Metrics, store: Store, sources: Sequence[SourceSettings]) -> None:
    """Add the sources' gauges to the process's `/metrics` (none when no source is set)."""
    if sources:
        metrics.registry.register(SourcesCollector(lambda: source_states(store, sources)))


@dataclass
class SourcesView:
    box: gr.Accordion
    show: gr.Button
    table: gr.Dataframe


def build_sources_view(lab: Any, t: Any) -> SourcesView:
    """The folders kept in sync, a part of the admin tab folded until opened."""
    with gr.Accordion(t("synced_folders"), open=False) as box:
        lab(box, label="synced_folders")
        show = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
        table = lab(gr.Dataframe(headers=SOURCE_HEADERS, label=t("synced_folders"),
                                 interactive=False), label="synced_folders")
    return SourcesView(box, show, table)


def wire_sources_view(handler: Any, view: SourcesView) -> None:
    view.show.click(handler, None, view.table, api_name="synced_sources")
    view.box.expand(handler, None, view.table, api_visibility="private")


class SourcesHandlers(Handlers):
    """The admin tab's handler of the folders kept in sync."""

    def synced_sources(self, request: gr.Request) -> pd.DataFrame:
        """The sources the admin's groups reach, with their last pass; admins only."""
        user = self.admin(request)
        default = self.settings.ingest.default_groups
        sources = [s for s in self.settings.sources if self.sees(user, s.groups or default)]
        return pd.DataFrame(source_rows(source_states(self.store, sources)),
                            columns=SOURCE_HEADERS)
