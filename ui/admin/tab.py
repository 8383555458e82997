"""The admin tab as the page shows it: its components, built in the order they appear (uploads
with their groups and dates, the documents and those due, delete and re-index, store status,
feedback, the insights, the editor of approved answers, the audit trail and the folders kept
in sync), and their events, tied to the admin tab's handlers.

    with gr.Tabs():
        tab = build_admin_tab(lab)         # inside the page's Blocks (ui/page/app.py)
    wire_admin_tab(app, tab)               # app: the page's handlers, an AdminTabHandlers

The handlers are those of documents.py, approved.py and sources.py; every one of them is
refused to anyone but an admin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ui.admin import insights, policy_dates, uploads
from ui.admin.approved import (
    ApprovedHandlers,
    ApprovedView,
    build_approved_view,
    wire_approved_view,
)
from ui.admin.audit import AuditView, build_audit_view, wire_audit_view
from ui.admin.documents import AdminHandlers
from ui.admin.sources import SourcesHandlers, SourcesView, build_sources_view, wire_sources_view
from ui.i18n import Labels, t


class AdminTabHandlers(AdminHandlers, ApprovedHandlers, SourcesHandlers):
    """Every handler of the admin tab, over one set of services."""


@dataclass
class Insights:
    box: gr.Accordion
    show: gr.Button
    figures: gr.Markdown
    per_day: gr.BarPlot
    latency: gr.BarPlot
    cited: gr.Dataframe
    never: gr.Textbox
    gaps: gr.Dataframe
    gap_pick: gr.Dropdown
    gap_note: gr.Textbox
    save_note: gr.Button
    export: gr.DownloadButton

    @property
    def outputs(self) -> list[Any]:
        """What `AdminHandlers.insights` fills, in its order."""
        return [self.figures, self.per_day, self.latency, self.cited, self.never, self.gaps,
                self.gap_pick, self.export]


@dataclass
class AdminTab:
    tab: gr.Tab
    files: gr.File
    groups: gr.Dropdown
    dates: list[gr.Textbox]  # the upload's effective, review-by and expiry dates
    ingest: gr.Button
    report: gr.Dataframe
    docs: gr.Dataframe
    due: gr.Dataframe  # documents due for review or expiring (ui/admin/policy_dates.py)
    refresh: gr.Button
    doc_ref: gr.Textbox
    delete: gr.Button
    mode: gr.Radio
    reindex: gr.Button
    message: gr.Markdown
    stats: gr.Markdown
    feedback: gr.Dataframe
    insights: Insights
    audit: AuditView
    approved: ApprovedView
    synced: SourcesView

    @property
    def tables(self) -> list[Any]:
        """What `AdminHandlers.admin_tables` fills, in its order."""
        return [self.docs, self.stats, self.feedback]


def build_admin_tab(lab: Labels) -> AdminTab:
    """Uploads with their groups and dates, the documents and those due for review or expiring,
    re-index, store status, feedback, the insights, the approved answers' editor, the audit
    trail and the folders kept in sync; hidden until the page's `on_load` finds an admin."""
    with gr.Tab(t("admin_tab"), id="admin", visible=False) as tab:
        lab(tab, label="admin_tab")
        with gr.Row():
            files = lab(gr.File(label=t("upload"), file_count="multiple",
                                file_types=[".pdf", ".docx"]), label="upload")
            with gr.Column():
                groups = lab(gr.Dropdown(choices=[], value=[], multiselect=True,
                                         allow_custom_value=True, label=t("groups")),
                             label="groups")
                with gr.Row():
                    dates = [lab(gr.Textbox(label=t(f"date_{key}"), lines=1, max_lines=1,
                                            placeholder="2027-01-01"), label=f"date_{key}")
                             for key in ("effective", "review_by", "expires")]
                ingest = lab(gr.Button(t("ingest"), variant="primary"), value="ingest")
        report = lab(gr.Dataframe(headers=uploads.REPORT_HEADERS, label=t("report"),
                                  interactive=False), label="report")
        docs = lab(gr.Dataframe(headers=uploads.DOC_HEADERS, label=t("documents"),
                                interactive=False), label="documents")
        due = lab(gr.Dataframe(headers=policy_dates.DUE_HEADERS, label=t("due_list"),
                               interactive=False, elem_id="kb-due"), label="due_list")
        with gr.Row():
            refresh = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
            doc_ref = lab(gr.Textbox(label=t("delete_doc"), lines=1), label="delete_doc")
            delete = lab(gr.Button(t("delete"), variant="stop", size="sm"), value="delete")
            mode = lab(gr.Radio(["incremental", "full"], value="incremental",
                                label=t("reindex_mode")), label="reindex_mode")
            reindex = lab(gr.Button(t("reindex"), size="sm"), value="reindex")
        message = gr.Markdown()
        stats = gr.Markdown(elem_id="kb-store-status")
        feedback = lab(gr.Dataframe(headers=uploads.FEEDBACK_HEADERS, label=t("feedback_list"),
                                    interactive=False), label="feedback_list")
        seen = _insights(lab)
        approved = build_approved_view(lab)
        trail = build_audit_view(lab, t)
        synced = build_sources_view(lab, t)
    return AdminTab(tab, files, groups, dates, ingest, report, docs, due, refresh, doc_ref,
                    delete, mode, reindex, message, stats, feedback, seen, trail, approved,
                    synced)


def _insights(lab: Labels) -> Insights:
    """The admin's view of use, folded until opened: figures, plots, cited documents and the
    knowledge gaps with their notes."""
    with gr.Accordion(t("insights"), open=False) as box:
        lab(box, label="insights")
        show = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
        figures = gr.Markdown(elem_id="kb-figures")
        with gr.Row():
            per_day = lab(gr.BarPlot(x="day", y="questions", color="language",
                                     label=t("per_day")), label="per_day")
            latency = lab(gr.BarPlot(x="stage", y="ms", color="percentile",
                                     label=t("latency")), label="latency")
        cited = lab(gr.Dataframe(headers=["document", "answers citing it"],
                                 label=t("most_cited"), interactive=False), label="most_cited")
        never = lab(gr.Textbox(label=t("never_cited"), interactive=False), label="never_cited")
        gaps = lab(gr.Dataframe(headers=list(insights.GAP_COLUMNS), label=t("gaps"),
                                interactive=False), label="gaps")
        with gr.Row():
            gap_pick = lab(gr.Dropdown(choices=[], label=t("gap")), label="gap")
            gap_note = lab(gr.Textbox(label=t("gap_note"), lines=1), label="gap_note")
            save_note = lab(gr.Button(t("save"), size="sm"), value="save")
        export = lab(gr.DownloadButton(t("export_csv"), size="sm"), label="export_csv")
    return Insights(box, show, figures, per_day, latency, cited, never, gaps, gap_pick, gap_note,
                    save_note, export)


def wire_admin_tab(app: AdminTabHandlers, tab: AdminTab) -> None:
    """Uploads, the tables (the due list beside them), delete, re-index, the insights with
    their gap notes, the audit trail, the editor of approved answers and the folders kept in
    sync."""
    tab.refresh.click(app.admin_tables, None, tab.tables, api_name="admin_tables")
    tab.refresh.click(app.due_list, None, tab.due, api_name="due_list")  # named before the
    # private listeners of the same handler, which would take its name
    tab.ingest.click(app.ingest_upload, [tab.files, tab.groups, *tab.dates],
                     [tab.report, tab.docs, tab.message, tab.files], api_name="ingest").then(
        app.due_list, None, tab.due, api_visibility="private").then(
        app.admin_tables, None, tab.tables, api_visibility="private")
    tab.tab.select(app.admin_tables, None, tab.tables, api_visibility="private")
    tab.tab.select(app.due_list, None, tab.due, api_visibility="private")
    tab.delete.click(app.delete, [tab.doc_ref], [tab.message, tab.docs], api_name="delete").then(
        app.admin_tables, None, tab.tables, api_visibility="private")
    tab.reindex.click(app.reindex, [tab.mode], [tab.report, tab.docs, tab.message],
                      api_name="reindex").then(
        app.admin_tables, None, tab.tables, api_visibility="private")
    seen = tab.insights
    seen.show.click(app.insights, None, seen.outputs, api_name="insights")
    seen.box.expand(app.insights, None, seen.outputs, api_visibility="private")
    seen.save_note.click(app.save_gap_note, [seen.gap_pick, seen.gap_note], seen.outputs,
                         api_name="gap_note")
    seen.export.click(app.gaps_downloaded, None, None, api_name="gaps_downloaded")
    wire_audit_view(app.audit_trail, app.audit_downloaded, tab.audit)
    wire_approved_view(app, tab.approved)
    wire_sources_view(app.synced_sources, tab.synced)
