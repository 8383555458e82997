"""The files a retention pass looks after (store/retention.py): an upload whose document was
deleted is moved aside when a pass finds it, and removed `uploads_days` later; an upload still
live, or just arrived, stays; the model server's logs and the admin tab's downloads go when old."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from core.config import Settings
from core.settings.privacy import RetentionSettings
from core.types import DocMeta
from store.ledger import Ledger
from store.retention import DELETED, EXPORTS, prune_pass

DAY = 86400.0


def aged(path: Path, days: float, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    when = time.time() - days * DAY
    os.utime(path, (when, when))
    return path


def test_files_of_deleted_uploads_old_logs_and_downloads_go(tmp_path: Path) -> None:
    settings = dataclasses.replace(
        Settings().with_store(tmp_path / "store"),
        retention=RetentionSettings(uploads_days=30, logs_days=30))
    store = settings.store_path()
    uploads = store / "uploads" / "all"
    live = aged(uploads / "leave.pdf", 400)
    deleted = aged(uploads / "old-policy.pdf", 400)
    arriving = aged(uploads / "just-uploaded.pdf", 0)  # no document yet: may be on its way in
    old_log = aged(store / "logs" / "vllm-8000.log", 40)
    new_log = aged(store / "logs" / "vllm-8001.log", 1)
    download = aged(store / EXPORTS / "knowledge-gaps-admin.csv", 2)
    ledger = Ledger(store / "ledger.sqlite")
    try:
        ledger.replace_document(DocMeta("d1", "leave.pdf", str(uploads), "ab" * 32, 1, 0.0), [], [])
        report = prune_pass(ledger, settings, "cli:ops", pause_s=0)
        aside = store / "uploads" / DELETED / "all" / "old-policy.pdf"
        assert live.exists() and arriving.exists() and not deleted.exists() and aside.exists()
        assert report.removed["uploads"] == 0  # found deleted today: kept 30 days from now
        assert not old_log.exists() and new_log.exists() and report.removed["logs"] == 1
        assert not download.exists() and report.removed["exports"] == 1

        later = time.time() + 31 * DAY
        report = prune_pass(ledger, settings, "cli:ops", now=later, pause_s=0)
        assert not aside.exists() and report.removed["uploads"] == 1
        assert live.exists() and not new_log.exists()  # 32 days unwritten by then
    finally:
        ledger.close()


def test_no_limit_keeps_every_file(tmp_path: Path) -> None:
    settings = dataclasses.replace(Settings().with_store(tmp_path / "store"),
                                   retention=RetentionSettings(uploads_days=0, logs_days=0))
    store = settings.store_path()
    deleted = aged(store / "uploads" / "all" / "gone.pdf", 400)
    log = aged(store / "logs" / "vllm-8000.log", 4000)
    ledger = Ledger(store / "ledger.sqlite")
    try:
        prune_pass(ledger, settings, "cli:ops", pause_s=0)
    finally:
        ledger.close()
    assert deleted.exists() and log.exists()
