"""Dates an admin sets on a document (`kb docs set`, the upload form): written to the ledger,
where a re-ingest and a re-index keep them unless the document's sidecar sets that key (a
sidecar's key prevails: `core.policy_dates.carry_admin_dates`). What the dates mean is
core/policy_dates.py.

    set_dates(store, "差旅费管理办法-2023.pdf", {"expires": "2023-12-31"}) -> DocRecord
    set_dates(store, "leave.pdf", {"review_by": ""})                    # clears it
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from core.errors import KbError
from core.policy_dates import DATE_FIELDS, parse_day, set_by_admin
from core.types import DocRecord
from ingest.discover import read_sidecar
from ingest.pipeline import find_document
from store.store import Store


def checked_dates(
    given: Mapping[str, str | None], label: Callable[[str], str] = str
) -> dict[str, str]:
    """The dates given (None: not given), each checked and written YYYY-MM-DD, "" to clear;
    KbError naming the first bad one as `label` names its key (an option, a form field).

    checked_dates({"expires": "2024-12-31", "review_by": None}) -> {"expires": "2024-12-31"}
    """
    return {key: parse_day(value, label(key)) for key, value in given.items()
            if value is not None and key in DATE_FIELDS}


def set_dates(store: Store, ref: str, dates: Mapping[str, str]) -> DocRecord:
    """Set (or clear, "") dates of one document (by id, path or file name, as `kb delete`
    finds it), holding the store's write lock; returns its record as it now stands. KbError when
    its sidecar sets one of these keys (edit the sidecar: it prevails at every ingest)."""
    with store.writing("kb docs set"):
        record = find_document(store, ref)
        owned = _sidecar_keys(Path(record.meta.root) / record.meta.path) & set(dates)
        if owned:
            raise KbError(
                f"{record.meta.path}: its sidecar sets {', '.join(sorted(owned))}, which "
                "prevails at every ingest; edit the sidecar and run `kb ingest` on the file"
            )
        meta = set_by_admin(record.meta, dates)
        store.ledger.set_dates(meta)
    return replace(record, meta=meta)


def _sidecar_keys(path: Path) -> set[str]:
    """The date keys the file's sidecar sets; none where it has none, or one that fails to
    read (the file's next ingest fails, saying why)."""
    try:
        return set(read_sidecar(path)) & set(DATE_FIELDS)
    except (OSError, KbError):
        return set()
