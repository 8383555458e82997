"""The admin tab's audit trail: the newest records, filtered by event, actor and time, and the
same as a CSV file to download (admins only; the download is itself recorded).

    rows = audit_rows(ledger.audit_records(event="signin", newest_first=True, limit=500))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import gradio as gr

from store.ledger import AuditRecord
from ui.admin.figures import detail_text, shown

AUDIT_HEADERS = ["#", "time (UTC)", "actor", "address", "event", "object", "outcome", "details"]
SHOWN = 500  # records the table shows; the CSV holds every match


def audit_rows(records: Iterable[AuditRecord],
               names: Mapping[str, str] | None = None) -> list[list[Any]]:
    """The table's rows: number, UTC time, who, from where, what, to what, outcome, details;
    chunk ids (`names`: chunk id -> file name) and absolute paths shown as file names (the CSV
    keeps the records as they are)."""
    names = names or {}
    return [[r.seq, datetime.fromtimestamp(r.at, UTC).strftime("%Y-%m-%d %H:%M:%S"), r.actor,
             r.address, r.event, shown(r.object, names), r.outcome, detail_text(r.details, names)]
            for r in records]


@dataclass
class AuditView:
    box: gr.Accordion
    event: gr.Textbox
    actor: gr.Textbox
    since: gr.Textbox
    show: gr.Button
    table: gr.Dataframe
    export: gr.DownloadButton

    @property
    def inputs(self) -> list[Any]:
        return [self.event, self.actor, self.since]

    @property
    def outputs(self) -> list[Any]:
        """What `AdminHandlers.audit_trail` fills, in its order."""
        return [self.table, self.export]


def build_audit_view(lab: Any, t: Any) -> AuditView:
    """The audit trail's part of the admin tab, folded until opened."""
    with gr.Accordion(t("audit"), open=False) as box:
        lab(box, label="audit")
        with gr.Row():
            event = lab(gr.Textbox(label=t("audit_event"), lines=1, placeholder="signin"),
                        label="audit_event")
            actor = lab(gr.Textbox(label=t("audit_actor"), lines=1), label="audit_actor")
            since = lab(gr.Textbox(label=t("audit_since"), lines=1, placeholder="2026-01-31"),
                        label="audit_since")
            show = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
        table = lab(gr.Dataframe(headers=AUDIT_HEADERS, label=t("audit"), interactive=False),
                    label="audit")
        export = lab(gr.DownloadButton(t("audit_csv"), size="sm"), label="audit_csv")
    return AuditView(box, event, actor, since, show, table, export)


def wire_audit_view(handler: Any, downloaded: Any, view: AuditView) -> None:
    """The trail shown when opened or refreshed; its CSV's download recorded as an export."""
    view.show.click(handler, view.inputs, view.outputs, api_name="audit_trail")
    view.box.expand(handler, view.inputs, view.outputs, api_visibility="private")
    view.export.click(downloaded, view.inputs, None, api_name="audit_downloaded")
