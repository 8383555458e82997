"""Policy dates on the ingest side: sidecar keys read and checked, dates an admin sets
(ingest/dates.py) kept through re-ingests and re-indexes unless a sidecar sets the key, and the
migration that adds them. Real files, real ledger (SQLite and PostgreSQL) and Chroma."""

from __future__ import annotations

import os
import shutil
from contextlib import closing
from pathlib import Path
from typing import Any

import docx
import pytest

from core.config import Settings
from core.errors import KbError
from devtools.postgres import with_ledger
from ingest.dates import set_dates
from store.ledger import Ledger
from store.store import open_store
from tests.support.stores import ingest_paths, ledger_before, list_documents, reindex

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "docs"
CONDUCT, LEAVE = "Code-of-Conduct.docx", "Employee-Leave-Policy.pdf"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in (CONDUCT, LEAVE):
        shutil.copy2(SAMPLES / name, folder / name)
    return folder


def dates_of(settings: Settings, name: str) -> tuple[str, str, str, tuple[str, ...]]:
    meta = next(r.meta for r in list_documents(settings) if r.meta.path == name)
    return meta.effective_date, meta.review_by, meta.expires, meta.admin_dates


def test_sidecar_dates_are_read_and_a_bad_one_fails_only_its_file(
    make_settings: Any, docs: Path
) -> None:
    (docs / "Code-of-Conduct.meta.toml").write_text(
        "effective = 2024-01-01\nreview_by = \"2026-06-30\"\nexpires = 2027-12-31\n")
    (docs / f"{LEAVE}.meta.toml").write_text('effective_date = "2023-01-01"\n')  # older name
    settings = make_settings()
    report = ingest_paths(settings, [docs])
    assert report.counts["ingested"] == 2, report.outcomes
    assert dates_of(settings, CONDUCT) == ("2024-01-01", "2026-06-30", "2027-12-31", ())
    assert dates_of(settings, LEAVE) == ("2023-01-01", "", "", ())

    (docs / f"{LEAVE}.meta.toml").write_text('expires = "31/12/2027"\n')
    (docs / "Code-of-Conduct.meta.toml").write_text(
        'effective = 2024-01-01\neffective_date = "2024-01-01"\n')
    again = {Path(o.path).name: o for o in ingest_paths(settings, [docs]).outcomes}
    assert again[LEAVE].outcome == "failed" and again[LEAVE].reason == (
        f"{LEAVE}.meta.toml: expires: '31/12/2027' is not a date; write it as YYYY-MM-DD "
        "(2024-01-01)")
    assert again[CONDUCT].outcome == "failed"
    assert "both effective and effective_date" in again[CONDUCT].reason
    # nothing already stored is lost: both keep their live version and their dates
    assert dates_of(settings, CONDUCT)[:3] == ("2024-01-01", "2026-06-30", "2027-12-31")
    assert all(r.searchable for r in list_documents(settings))


def test_set_dates_survive_reingests_and_reindexes_unless_a_sidecar_sets_them(
    make_settings: Any, docs: Path, ledger_url: str
) -> None:
    """On both ledgers (SQLite, PostgreSQL)."""
    settings = with_ledger(make_settings(), ledger_url)
    ingest_paths(settings, [docs])
    with closing(open_store(settings)) as store:
        record = set_dates(store, CONDUCT, {"expires": "2027-12-31", "review_by": "2026-06-30"})
        assert record.meta.admin_dates == ("expires", "review_by")
        with pytest.raises(KbError, match="no such document"):
            set_dates(store, "missing.docx", {"expires": "2027-12-31"})
    kept = ("", "2026-06-30", "2027-12-31", ("expires", "review_by"))

    assert ingest_paths(settings, [docs]).counts["unchanged"] == 2
    assert dates_of(settings, CONDUCT) == kept
    os.utime(docs / CONDUCT)  # touched: same content, described again
    ingest_paths(settings, [docs])
    assert dates_of(settings, CONDUCT) == kept
    document = docx.Document(str(docs / CONDUCT))
    document.add_paragraph(f"Gifts above fifty dollars are declared ({ledger_url or 'sqlite'}).")
    document.save(str(docs / CONDUCT))
    assert ingest_paths(settings, [docs]).counts["updated"] == 1  # a new version of the file
    assert dates_of(settings, CONDUCT) == kept
    reindex(settings)
    assert dates_of(settings, CONDUCT) == kept
    reindex(settings, full=True)
    assert dates_of(settings, CONDUCT) == kept

    # a sidecar's key prevails, and replaces what the admin set; the other key stays the admin's
    (docs / "Code-of-Conduct.meta.toml").write_text("review_by = 2027-01-31\n")
    assert ingest_paths(settings, [docs]).counts["updated"] == 1
    assert dates_of(settings, CONDUCT) == ("", "2027-01-31", "2027-12-31", ("expires",))
    with closing(open_store(settings)) as store, pytest.raises(
        KbError, match=r"its sidecar sets review_by, which prevails at every ingest"
    ):
        set_dates(store, CONDUCT, {"review_by": "2028-01-31"})


def test_a_ledger_from_before_dates_opens_with_none(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with closing(ledger_before(path, "014_document_dates")) as old:
        old.execute(
            "INSERT INTO documents (id, root, path, status, created_at, updated_at, "
            "effective_date) VALUES ('d1', '/docs', 'leave.pdf', 'ok', 0, 0, '2023-01-01')")
        old.commit()
    ledger = Ledger(path)
    try:
        meta = ledger.documents()[0].meta
        assert (meta.effective_date, meta.review_by, meta.expires, meta.admin_dates) == (
            "2023-01-01", "", "", ())
    finally:
        ledger.close()
