"""The admin tab's handlers: uploads ingested into the groups an admin may give, documents
deleted, the store re-indexed, the tables of documents (with their dates, and those due for
review or expiring: `ui/admin/policy_dates.py`), store status and feedback, the insights (use,
latency, cited documents, knowledge gaps and their notes) and the audit trail.

    handlers.ingest_upload(files, groups, "", "2027-06-30", "", request)  # dates optional
    #   -> (report rows, document rows)
    handlers.insights(request)                        # -> figures, plots, tables, the gaps' CSV

Every handler is refused to anyone but an admin (`Handlers.admin`), and shows only what lies in
the admin's groups (everything to a see-all admin). The tables' rows and the upload checks are in
`ui/admin/uploads.py`, the insights' figures in `ui/admin/insights.py`.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from core.access import parse_groups
from core.errors import KbError
from core.types import User
from ingest.pipeline import delete_document, ingest_paths, list_documents, store_status
from ingest.reindex import reindex
from ui.admin import figures, insights, policy_dates, uploads
from ui.admin.audit import AUDIT_HEADERS, SHOWN, audit_rows
from ui.audit import export_lines, parse_when, run_details, run_outcome
from ui.handlers import Handlers, UserError
from ui.i18n import t

logger = logging.getLogger(__name__)


class AdminHandlers(Handlers):
    """The admin tab's handlers."""

    def ingest_upload(self, files: list[Any] | None, groups: list[str] | None,
                      effective: str | None = None, review_by: str | None = None,
                      expires: str | None = None, request: gr.Request | None = None,
                      progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:  # noqa: B008
        """Store and ingest the uploads into the chosen groups, giving them the form's dates
        (checked first: a bad one stores nothing)."""
        user = self.admin(request)
        dates = policy_dates.upload_dates(effective, review_by, expires)
        chosen = parse_groups(groups or []) or self.settings.ingest.default_groups
        if not user.see_all and not set(chosen) <= set(user.groups):
            raise UserError(t("groups_outside", groups=", ".join(user.groups)))
        pairs = []
        for f in files or []:
            temp = Path(f if isinstance(f, str) else getattr(f, "name", str(f)))
            pairs.append((temp, getattr(f, "orig_name", None) or temp.name))
        stored, rejected = uploads.store_uploads(self.settings, pairs, chosen)
        address = self.address(request)
        for r in rejected:
            self.audit.record("document.upload", user.name, object=r.name, outcome="rejected",
                              address=address, reason=r.reason)
        for path in stored:
            self.audit.record("document.upload", user.name, object=str(path), address=address,
                              groups=list(chosen), bytes=path.stat().st_size)
        report = None
        started = time.perf_counter()
        if stored:
            progress((0, len(stored)), desc="ingest")

            def step(done: int, total: int, path: str) -> None:
                progress((done, total), desc=Path(path).name)

            report = ingest_paths(self.store, stored, list(chosen), progress=step)
            policy_dates.date_uploads(self.store, self.audit, stored, dates, user.name, address)
            self.metrics.ingested(report)
            self.audit.record("ingest.run", user.name, object="upload", address=address,
                              outcome=run_outcome(report), **run_details(report),
                              groups=list(chosen))
            logger.info("%s ingested %d uploads into %s", user.name, len(stored), chosen)
        line = figures.report_line("upload", report, time.perf_counter() - started)
        if rejected:
            line += f" ({len(rejected)} rejected: see the report)"
        # the upload box emptied: its files are in
        return uploads.report_rows(report, rejected), self._docs(user), line, None

    def delete(self, ref: str, request: gr.Request) -> tuple[Any, ...]:
        user = self.admin(request)
        ref = (ref or "").strip()
        found = [r for r in list_documents(self.store) if ref in (r.meta.id, r.meta.path)]
        if not found or not all(self.sees(user, r.meta.groups) for r in found):
            raise UserError(f"no document {ref!r} in your groups")
        record = delete_document(self.store, ref)
        self.audit.record("document.delete", user.name, object=record.meta.path,
                          address=self.address(request), doc_id=record.meta.id,
                          chunks=record.chunk_count)
        return f"deleted {record.meta.path} ({record.chunk_count} chunks)", self._docs(user)

    def reindex(self, mode: str, request: gr.Request,
                progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:  # noqa: B008
        user = self.admin(request)

        def step(done: int, total: int, path: str) -> None:
            progress((done, max(total, 1)), desc=Path(path).name)

        started = time.perf_counter()
        report = reindex(self.store, full=(mode == "full"), progress=step)
        line = f"{figures.report_line('reindex', report, time.perf_counter() - started)} ({mode})"
        self.metrics.ingested(report)
        self.audit.record("reindex.run", user.name, object="full" if mode == "full" else
                          "incremental", address=self.address(request),
                          outcome=run_outcome(report), **run_details(report))
        rows = [r for r in uploads.report_rows(report) if self._row_visible(user, r[0])]
        return rows, self._docs(user), line

    def admin_tables(self, request: gr.Request) -> tuple[Any, ...]:
        user = self.admin(request)
        return self._docs(user), figures.status_lines(self._status(user)), uploads.feedback_rows(
            self.users.feedback(viewer=user))

    def _status(self, user: User) -> dict[str, Any]:
        """The store's status; to an admin without see-all, the documents counted within their
        groups and the last run without what it was given (its paths and groups: another
        group's file names). Chunks, vectors, bytes and jobs stay the whole store's counts."""
        status = store_status(self.store)
        if user.see_all:
            return status
        shown = [r for r in list_documents(self.store) if self.sees(user, r.meta.groups)]
        status["documents"] = len(shown)
        status["by_status"] = dict(Counter(r.status for r in shown))
        if status["last_run"]:
            status["last_run"] = {k: v for k, v in status["last_run"].items() if k != "args"}
        return status

    def due_list(self, request: gr.Request) -> pd.DataFrame:
        """The documents in the admin's groups due for review or expiring soon."""
        user = self.admin(request)
        records = [r for r in list_documents(self.store) if self.sees(user, r.meta.groups)]
        rows = policy_dates.due_rows(records, self.assistant.retriever.today())
        return pd.DataFrame(rows, columns=policy_dates.DUE_HEADERS)

    def insights(self, request: gr.Request) -> tuple[Any, ...]:
        """The admin's view of use: figures, plots, cited documents and knowledge gaps, all
        within what the admin may see; the gaps also as a CSV file."""
        user = self.admin(request)
        rows = self.users.question_records(viewer=user)
        names = {r.meta.id: r.meta.path for r in list_documents(self.store)
                 if r.status == "ok" and self.sees(user, r.meta.groups)}
        doc_of = {chunk: names[doc] for chunk, doc in self.store.ledger.chunk_documents().items()
                  if doc in names}
        most, never = insights.cited_documents(rows, doc_of, names.values())
        gaps = insights.knowledge_gaps(rows, self.users.gap_notes())
        export = self.exports / f"knowledge-gaps-{user.name}.csv"
        export.write_text(insights.gaps_csv(gaps), encoding="utf-8")  # recorded when downloaded
        per_day = pd.DataFrame(insights.daily_table(rows), columns=["day", "language",
                                                                    "questions"])
        latency = pd.DataFrame([(stage, pct, ms) for stage, by in insights.latency(rows).items()
                                for pct, ms in by.items() if ms is not None],
                               columns=["stage", "percentile", "ms"])
        return (
            figures.insight_lines(insights.summary(rows), user.see_all),
            gr.update(value=per_day, visible=not per_day.empty),
            gr.update(value=latency, visible=not latency.empty),
            [[name, n] for name, n in most],
            ", ".join(never),
            insights.gap_rows(gaps),
            gr.update(choices=[(g.question, g.key) for g in gaps], value=None),
            str(export),
        )

    def gaps_downloaded(self, request: gr.Request) -> None:
        """The knowledge gaps' CSV was downloaded: recorded (opening the insights is not)."""
        user = self.admin(request)
        self.audit.record("export", user.name, object="knowledge-gaps.csv",
                          address=self.address(request))

    def save_gap_note(self, key: str | None, note: str, request: gr.Request) -> tuple[Any, ...]:
        user = self.admin(request)
        if key:
            self.users.set_gap_note(key, note or "", user.name)
        return self.insights(request)

    def audit_trail(self, event: str, actor: str, since: str,
                    request: gr.Request) -> tuple[Any, ...]:
        """The audit trail's newest records matching the filters (chunk ids and paths shown as
        file names), and all of them as a CSV file; admins only. The CSV is recorded as an
        export when it is downloaded (`audit_downloaded`), not when the trail is opened."""
        user = self.admin(request)
        try:
            start = parse_when(since or "")
        except KbError as exc:
            raise UserError(str(exc)) from exc
        event, actor = (event or "").strip(), (actor or "").strip()
        ledger = self.store.ledger
        rows = audit_rows(ledger.audit_records(start, None, event, actor, SHOWN, True),
                          self._chunk_names())
        export = self.exports / f"audit-{user.name}.csv"
        with export.open("w", encoding="utf-8", newline="") as fh:
            fh.writelines(export_lines(ledger.audit_records(start, None, event, actor), "csv"))
        return pd.DataFrame(rows, columns=AUDIT_HEADERS), str(export)

    def audit_downloaded(self, event: str, actor: str, since: str,
                         request: gr.Request) -> None:
        """The audit trail's CSV was downloaded: the export recorded, with its filters."""
        user = self.admin(request)
        self.audit.record("audit.export", user.name, object="csv", address=self.address(request),
                          event_filter=(event or "").strip(), actor_filter=(actor or "").strip(),
                          since=since or "")

    def _chunk_names(self) -> dict[str, str]:
        """Every chunk id of the ledger -> its document's file name (the audit trail's
        details name files, not chunk ids)."""
        names = {r.meta.id: Path(r.meta.path).name for r in list_documents(self.store)}
        return {chunk: names[doc] for chunk, doc in self.store.ledger.chunk_documents().items()
                if doc in names}

    def known_groups(self, admin_user: User | None = None) -> list[str]:
        """The groups an admin may give documents: their own, or every known one (see-all)."""
        if admin_user is not None and not admin_user.see_all:
            return sorted(admin_user.groups)
        groups = {"all"}
        for user in self.users.list_users():
            groups.update(user.groups)
        for record in list_documents(self.store):
            groups.update(record.meta.groups)
        groups.update(g for gs in self.settings.ingest.folder_groups.values() for g in gs)
        return sorted(groups)

    def _row_visible(self, user: User, name: str) -> bool:
        docs = [r for r in list_documents(self.store) if Path(r.meta.path).name == name]
        return not docs or any(self.sees(user, r.meta.groups) for r in docs)

    def _docs(self, user: User) -> list[list[Any]]:
        return uploads.document_rows([r for r in list_documents(self.store)
                                    if self.sees(user, r.meta.groups)],
                                   self.assistant.retriever.today())
