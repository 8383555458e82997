"""The folders kept in sync as the real app shows them (uvicorn on loopback, a fresh store, the
model unreachable): `/metrics`' kb_sync_* gauges per source, with the brake's reason, and the
admin tab's table (admins only, the sources their groups reach)."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings.sources import SourceSettings
from ingest.sync.folder import sync_source
from tests.ui.conftest import PASSWORDS, _serve
from ui.wiring import store_for, users_for

pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "docs"
FILES = ["Employee-Leave-Policy.pdf", "Code-of-Conduct.docx", "IT-Security-Policy.docx",
         "New-Hire-Onboarding-Guide.pdf", "日常费用报销规定.docx"]
T0 = 1_796_115_600.0  # 2026-12-01 09:00 UTC


def test_metrics_and_the_admin_table_say_which_source_braked_and_why(
        make_settings: Any, tmp_path: Path) -> None:
    hr_share, finance_share = tmp_path / "hr", tmp_path / "finance"
    for folder, names in ((hr_share, FILES), (finance_share, ["差旅费管理办法-2024.pdf"])):
        folder.mkdir()
        for name in names:
            shutil.copy2(SAMPLES / name, folder / name)
    sources = (SourceSettings("hr", str(hr_share), ("hr",), 600.0),
               SourceSettings("finance", str(finance_share), ("finance",), 3600.0))
    settings = dataclasses.replace(make_settings(), sources=sources)
    with store_for(settings) as store:
        for source in sources:
            sync_source(store, source, 0.2, T0)
        for name in FILES[:2]:
            (hr_share / name).unlink()
        sync_source(store, sources[0], 0.2, T0 + 600)
    with users_for(settings) as users:
        users.add("alice", PASSWORDS["alice"], ["all", "hr"], is_admin=True)
        users.add("bob", PASSWORDS["bob"], ["all"])

    for running in _serve(settings, demo=False):
        text = httpx.get(running.url + "metrics", timeout=30).text
        reason = ("2 of 5 files vanished (40% > 20%); check the share is mounted, then "
                  "`kb sync --confirm-deletes hr`")
        assert f'kb_sync_braked{{reason="{reason}",source="hr"}} 1.0' in text
        assert 'kb_sync_braked{reason="",source="finance"} 0.0' in text
        assert 'kb_sync_files_seen{source="hr"} 3.0' in text
        assert 'kb_sync_pending_deletes{source="hr"} 2.0' in text
        assert 'kb_sync_files_changed{source="finance"} 1.0' in text
        assert 'kb_sync_files_failed{source="finance"} 0.0' in text
        last = re.search(r'kb_sync_last_run_timestamp_seconds\{source="hr"\} (\S+)', text)
        upcoming = re.search(r'kb_sync_next_run_timestamp_seconds\{source="hr"\} (\S+)', text)
        assert last and upcoming
        assert (float(last.group(1)), float(upcoming.group(1))) == (T0 + 600, T0 + 1200)

        with pytest.raises(Exception, match="Administrators only"):
            running.client("bob").predict(api_name="/synced_sources")
        table = running.client("alice").predict(api_name="/synced_sources")
        assert table["headers"][:3] == ["source", "folder", "state"]
        [row] = table["data"]  # finance is outside alice's groups
        assert row[:8] == ["hr", str(hr_share), "braked", "2026-12-01 09:10:00", 3, 0, 0,
                           "2026-12-01 09:20:00"]
        assert row[8] == reason


def test_the_admin_table_names_skipped_links_and_metrics_show_the_audit_head(
        make_settings: Any, tmp_path: Path) -> None:
    """A link in a synced folder is named in the admin table's reason; `/metrics` carries the
    audit trail's head, which `kb audit verify --expect` can check."""
    share, hr = tmp_path / "public", tmp_path / "hr"
    for folder in (share, hr):
        folder.mkdir()
    shutil.copy2(SAMPLES / FILES[0], share)
    shutil.copy2(SAMPLES / "hr-only" / "Compensation-Review-Guidelines.pdf", hr)
    (share / "leak-hr.pdf").symlink_to(hr / "Compensation-Review-Guidelines.pdf")
    sources = (SourceSettings("public", str(share), ("all",), 600.0),)
    settings = dataclasses.replace(make_settings(), sources=sources)
    with store_for(settings) as store:
        sync_source(store, sources[0], 0.2, T0)
    with users_for(settings) as users:
        users.add("alice", PASSWORDS["alice"], ["all"], is_admin=True)

    for running in _serve(settings, demo=False):
        [row] = running.client("alice").predict(api_name="/synced_sources")["data"]
        assert row[:7] == ["public", str(share), "ok", "2026-12-01 09:00:00", 2, 1, 0]
        assert row[8] == "symbolic links skipped, not followed: leak-hr.pdf"
        text = httpx.get(running.url + "metrics", timeout=30).text
        seq = re.search(r"^kb_audit_head_seq (\S+)$", text, re.M)
        prefix = re.search(r"^kb_audit_head_hash_prefix (\S+)$", text, re.M)
        assert seq and prefix, text
        head = (int(float(seq.group(1))), format(int(float(prefix.group(1))), "012x"))
        with store_for(settings) as store:
            assert head[0] > 1 and store.ledger.verify_audit(head).ok
            assert store.ledger.verify_audit((head[0], "0" * 12)).ok is False
