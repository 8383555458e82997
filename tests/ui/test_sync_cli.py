"""`kb sync` and `kb worker` as an admin types them (click's runner, a config file naming a real
folder, a real store): the brake's exit code and message, the confirmation, the audit trail,
and a file uploaded through the app beside the synced folder left alone."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from core.config import load_settings
from ingest import pipeline
from ui.admin import uploads
from ui.cli import main
from ui.wiring import store_for

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"
FILES = ["Employee-Leave-Policy.pdf", "Code-of-Conduct.docx", "IT-Security-Policy.docx",
         "New-Hire-Onboarding-Guide.pdf", "日常费用报销规定.docx"]


def sync_config(tmp_path: Path, share: Path) -> Path:
    """config.toml with one [[sources]] entry for `share`."""
    config = tmp_path / "config.toml"
    config.write_text((REPO / "config.toml").read_text(encoding="utf-8") + (
        f'\n[[sources]]\nname = "hr"\npath = "{share}"\ngroups = ["hr"]\nevery = "1h"\n'),
        encoding="utf-8")
    return config


def test_sync_once_brakes_then_an_admin_confirms(make_settings: Any, tmp_path: Path) -> None:
    share = tmp_path / "hr-share"
    share.mkdir()
    for name in FILES:
        shutil.copy2(SAMPLES / name, share / name)
    store_dir = make_settings().store_path()
    config = sync_config(tmp_path, share)
    args = ["--config", str(config), "--store", str(store_dir)]
    env = {"KB_EMBED_CACHE": make_settings().embed.cache}
    run = CliRunner().invoke

    first = run(main, ["sync", "--once", *args], env=env)
    assert first.exit_code == 0, first.output
    assert "hr: ok, 5 files seen, 5 changed, 0 failed" in first.output
    quiet = run(main, ["sync", "--once", *args], env=env)  # nothing changed: not recorded
    assert "hr: ok, 5 files seen, 0 changed, 0 failed" in quiet.output

    # an admin uploads a copy of a synced file through the app: stored and ingested beside it
    settings = load_settings(config, environ={}).with_store(store_dir)
    settings = dataclasses.replace(settings, embed=make_settings().embed)
    temp = tmp_path / "upload-temp.pdf"
    shutil.copy2(SAMPLES / "Employee-Leave-Policy.pdf", temp)
    stored, rejected = uploads.store_uploads(settings, [(temp, "Employee-Leave-Policy.pdf")],
                                           ["all"])
    assert rejected == []
    with store_for(settings) as store:
        pipeline.ingest_paths(store, stored, ["all"])

    for name in FILES[:3]:
        (share / name).unlink()
    braked = run(main, ["sync", "--once", *args], env=env)
    assert braked.exit_code == 1
    assert "hr: braked, 2 files seen, 0 changed, 0 failed: 3 of 5 files vanished (60% > 20%); " \
           "check the share is mounted, then `kb sync --confirm-deletes hr`" in braked.output
    assert "Error: hr braked: see the reason above" in braked.output

    unknown = run(main, ["sync", "--confirm-deletes", "finance", *args], env=env)
    assert unknown.exit_code == 2 and "no such source (known: hr)" in unknown.output

    confirmed = run(main, ["sync", "--confirm-deletes", "hr", *args], env=env)
    assert confirmed.exit_code == 0, confirmed.output
    assert confirmed.output.count("  deleted   ") == 3
    with store_for(settings) as store:
        paths = sorted((r.meta.root, r.meta.path, r.status) for r in store.ledger.documents())
        deletes = list(store.ledger.audit_records(event="sync.delete"))
        runs = list(store.ledger.audit_records(event="sync.run"))
    upload_root = str(stored[0].parent)
    assert paths == sorted([(str(share), "New-Hire-Onboarding-Guide.pdf", "ok"),
                            (str(share), "日常费用报销规定.docx", "ok"),
                            (upload_root, "Employee-Leave-Policy.pdf", "ok")])
    assert sorted(r.object for r in deletes) == sorted(FILES[:3])
    assert all(json.loads(r.details)["confirmed"] for r in deletes)
    assert [r.outcome for r in runs] == ["ok", "braked", "ok"]


def test_sync_without_sources_says_what_to_add(make_settings: Any) -> None:
    done = CliRunner().invoke(main, ["sync", "--once", "--config", str(REPO / "config.toml"),
                                     "--store", str(make_settings().store_path())])
    assert done.exit_code == 1 and "no [[sources]] in the config" in done.output


def test_the_worker_syncs_due_sources_between_jobs(make_settings: Any, tmp_path: Path) -> None:
    share = tmp_path / "hr-share"
    share.mkdir()
    shutil.copy2(SAMPLES / "Code-of-Conduct.docx", share)
    store_dir = make_settings().store_path()
    args = ["--config", str(sync_config(tmp_path, share)), "--store", str(store_dir)]
    env = {"KB_EMBED_CACHE": make_settings().embed.cache}
    worker = CliRunner().invoke(main, ["worker", "--drain", "--threads", "1", *args], env=env)
    assert worker.exit_code == 0, worker.output
    assert "hr: ok, 1 files seen, 1 changed, 0 failed" in worker.output
    assert "0 jobs done" in worker.output
