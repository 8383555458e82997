"""The audit trail of the real app (uvicorn on loopback, the sample store, the model
unreachable): sign-ins that succeed, fail or are locked, with the method and the client's
address; sign-out; a source view (who opened which document's section) and one refused; an
upload with its ingest run; the admin tab's audit view (admins only, its CSV recorded)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docx
import httpx
import pytest
from gradio_client import handle_file

from store.ledger import AuditRecord
from tests.ui.conftest import PASSWORDS
from tests.ui.test_app import hr_chunk_ids

pytestmark = pytest.mark.slow


def waiting_for(login_server: Any, since: float,
                wanted: Callable[[AuditRecord], bool]) -> list[AuditRecord]:
    """The records after `since` once one is `wanted` (sign-ins and views are written by the
    trail's writer thread, within a fraction of a second)."""
    ledger = login_server.app.store.ledger
    deadline = time.monotonic() + 10
    while True:
        found = list(ledger.audit_records(since=since))
        if any(wanted(r) for r in found) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def login(url: str, name: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    client.post("login", data={"username": name, "password": password})
    return client


def test_sign_ins_and_sign_out_are_recorded(login_server: Any, fresh_guard: Any) -> None:
    since = time.time()
    alice = login(login_server.url, "alice", PASSWORDS["alice"])
    login(login_server.url, "bob", "wrong-password").close()
    for _ in range(3):  # bob's limit is 3 failures: the fourth try is locked out
        login(login_server.url, "bob", "wrong-password").close()
    found = waiting_for(login_server, since, lambda r: r.outcome == "locked")
    signins = [(r.actor, r.outcome) for r in found if r.event == "signin"]
    assert ("alice", "ok") in signins and signins.count(("bob", "failed")) == 3
    assert ("bob", "locked") in signins, signins
    for record in (r for r in found if r.event == "signin"):
        assert record.address == "127.0.0.1" and json.loads(record.details)["method"] == \
            "password"
    assert any(r.event == "session.create" and r.actor == "alice" for r in found)

    since = time.time()
    alice.get("logout", follow_redirects=False)
    alice.close()
    found = waiting_for(login_server, since, lambda r: r.event == "signout")
    assert any(r.event == "signout" and r.actor == "alice" for r in found), found
    assert login_server.app.store.ledger.verify_audit().ok


def test_source_views_are_recorded(login_server: Any, fresh_guard: Any) -> None:
    app = login_server.app
    hr_id = next(i for i in hr_chunk_ids(login_server.settings)
                 if not app.assistant.source(i, ["hr"]).page)  # the .docx of hr-only/
    since = time.time()
    alice = login(login_server.url, "alice", PASSWORDS["alice"])
    bob = login(login_server.url, "bob", PASSWORDS["bob"])
    try:
        assert alice.get(f"section/{hr_id}").status_code == 200
        assert bob.get(f"section/{hr_id}").status_code == 404
    finally:
        alice.close()
        bob.close()
    found = waiting_for(login_server, since,
                        lambda r: r.event == "source.view" and r.outcome == "denied")
    views = [r for r in found if r.event == "source.view"]
    seen = next(r for r in views if r.actor == "alice")
    assert seen.outcome == "ok" and seen.object.endswith(".docx") and "hr-only" in seen.object
    assert json.loads(seen.details)["kind"] == "section" and seen.address == "127.0.0.1"
    refused = next(r for r in views if r.actor == "bob")
    assert refused.outcome == "denied" and refused.object == hr_id


def test_uploads_and_the_admin_view(login_server: Any, fresh_guard: Any,
                                    tmp_path: Path) -> None:
    doc = docx.Document()
    doc.add_heading("Quorple Allowance Policy", level=1)
    doc.add_paragraph("Every employee receives 7 quorple vouchers per year.")
    path = tmp_path / "Quorple Allowance.docx"
    doc.save(str(path))
    since = time.time()
    alice = login_server.client("alice")
    alice.predict([handle_file(str(path))], ["all"], api_name="/ingest")
    ledger = login_server.app.store.ledger
    found = list(ledger.audit_records(since=since))
    upload = next(r for r in found if r.event == "document.upload")
    assert upload.actor == "alice" and upload.object.endswith("Quorple_Allowance.docx")
    run = next(r for r in found if r.event == "ingest.run")
    assert json.loads(run.details)["ingested"] == 1 and run.object == "upload"

    bob = login_server.client("bob")
    with pytest.raises(Exception, match="Administrators only"):
        bob.predict("document.", "", "", api_name="/audit_trail")
    table, export = alice.predict("document.", "", "", api_name="/audit_trail")
    events = {row[4] for row in table["data"]}
    assert "document.upload" in events and all(e.startswith("document.") for e in events)
    assert any("Quorple_Allowance.docx" in row[5] for row in table["data"])
    assert export
    # opening the trail is no export; the download is
    assert not list(ledger.audit_records(since=since, event="audit.export"))
    alice.predict("document.", "", "", api_name="/audit_downloaded")
    exported = [r for r in ledger.audit_records(since=since, event="audit.export")]
    assert [(r.actor, r.object) for r in exported] == [("alice", "csv")]
    # the insights' gap list likewise: opening it exports nothing, its download does
    alice.predict(api_name="/insights")
    assert not list(ledger.audit_records(since=since, event="export"))
    alice.predict(api_name="/gaps_downloaded")
    gaps = list(ledger.audit_records(since=since, event="export"))
    assert [(r.actor, r.object) for r in gaps] == [("alice", "knowledge-gaps.csv")]
    csv_text = (login_server.settings.store_path() / "cache" / "exports" /
                "audit-alice.csv").read_text(encoding="utf-8")
    assert csv_text.startswith("seq,time,actor") and "Quorple_Allowance.docx" in csv_text
    assert ledger.verify_audit().ok
