"""The admin tab's policy dates: the list of documents due for review or about to expire, and
the dates an upload gives its files (written to the ledger as an admin's, like `kb docs set`:
kept through re-ingests and re-indexes; ingest/dates.py). What the dates mean is
core/policy_dates.py.

    due_rows(records, date(2026, 12, 3)) -> [["leave.pdf", "review overdue by 3 days (…)", …]]
    upload_dates("2024-01-01", "", "") -> {"effective": "2024-01-01"}
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import KbError
from core.policy_dates import DUE_WITHIN_DAYS, due
from core.types import DocRecord
from ingest.dates import checked_dates, set_dates
from ingest.discover import doc_id_for
from store.store import Store
from ui.audit import AuditTrail
from ui.handlers import UserError
from ui.i18n import t

DUE_HEADERS = ["document", "due", "date", "days left", "groups"]


def due_rows(records: Sequence[DocRecord], today: dt.date,
             within: int = DUE_WITHIN_DAYS) -> list[list[Any]]:
    """The documents due for review (or overdue) or expiring within `within` days, soonest
    first, as the admin tab's table shows them."""
    groups = {r.meta.id: ",".join(r.meta.groups) for r in records}
    return [[d.meta.path, d.note, d.day, d.days_left, groups[d.meta.id]]
            for d in due([r.meta for r in records], today, within)]


def upload_dates(effective: str | None, review_by: str | None,
                 expires: str | None) -> dict[str, str]:
    """The upload form's dates (empty fields: not given), checked before anything is stored;
    gr.Error naming the field and the form it wants."""
    given = {"effective": effective, "review_by": review_by, "expires": expires}
    try:
        return checked_dates({k: v for k, v in given.items() if (v or "").strip()},
                             lambda key: t(f"date_{key}"))
    except KbError as exc:
        raise UserError(f"{exc}; nothing was stored") from exc


def date_uploads(store: Store, audit: AuditTrail, stored: Sequence[Path],
                 dates: dict[str, str], actor: str, address: str) -> None:
    """Give the uploaded files the form's dates, as an admin's, each recorded in the audit
    trail (a file that failed before the ledger knew it has none to take)."""
    if not dates:
        return
    for path in stored:
        doc_id = doc_id_for(str(path.parent), path.name)
        if store.ledger.document(doc_id) is None:
            continue
        record = set_dates(store, doc_id, dates)
        audit.record("document.dates", actor, object=record.meta.path, address=address,
                     doc_id=doc_id, **dates)
