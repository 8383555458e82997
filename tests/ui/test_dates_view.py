"""Policy dates where admins and employees see them: `kb docs set`, `kb docs` and `kb docs --due`
as a user types them (click's runner, a real store, real dates counted from today), the admin
tab's upload with dates, documents table and due list (the page's handlers over real services),
and the source card of a citation past its review."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from click.testing import CliRunner

from core.config import Settings
from core.types import Citation
from tests.support.stores import ingest_paths, list_documents
from tests.ui.test_app import FakeRequest
from ui.cli import main
from ui.page import render
from ui.page.app import App
from ui.wiring import ledger_for, open_services, users_for

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "docs"
OLD, NEW = "差旅费管理办法-2023.pdf", "差旅费管理办法-2024.pdf"
TODAY = dt.date.today()


def day(offset: int) -> str:
    return (TODAY + dt.timedelta(days=offset)).isoformat()


@pytest.fixture
def travel(make_settings: Any, tmp_path: Path) -> Settings:
    """A store of the two travel policies (their sidecars set series, version, effective)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in (OLD, NEW):
        shutil.copy2(SAMPLES / name, docs / name)  # without sidecars: the dates are ours to set
    settings: Settings = make_settings()
    ingest_paths(settings, [docs])
    return settings


def test_kb_docs_set_lists_and_due(travel: Settings) -> None:
    store = str(travel.store_path())
    env = {"KB_EMBED_CACHE": travel.embed.cache}

    def kb(*args: str) -> Any:
        return CliRunner().invoke(main, [*args, "--store", store], env=env)

    bad = kb("docs", "set", OLD, "--expires", "2023/12/31")
    assert bad.exit_code == 1
    assert "--expires: '2023/12/31' is not a date; write it as YYYY-MM-DD" in bad.output
    assert kb("docs", "set", OLD).exit_code == 2  # no date given
    assert "no such document" in kb("docs", "set", "nothing.pdf", "--expires", day(1)).output

    done = kb("docs", "set", OLD, "--expires", "2023-12-31")
    assert done.exit_code == 0, done.output
    assert done.output.strip() == (
        f"{OLD}: effective (none), review_by (none), expires 2023-12-31 (expired 2023-12-31)")
    kb("docs", "set", NEW, "--review-by", day(-3), "--effective", "2024-01-01")
    listed = kb("docs").output
    assert f"{OLD}  expired 2023-12-31" in listed
    assert f"{NEW}  review was due by {day(-3)}" in listed
    rows = {r["path"]: r for r in json.loads(kb("docs", "--json").output)}
    assert rows[OLD]["in_force"] is False and rows[OLD]["expires"] == "2023-12-31"
    assert rows[NEW]["in_force"] is True and rows[NEW]["effective_date"] == "2024-01-01"
    assert rows[NEW]["dates_set_by_admin"] == ["effective", "review_by"]

    due = kb("docs", "--due").output
    assert f"review overdue by 3 days (due {day(-3)})" in due and OLD not in due
    kb("docs", "set", OLD, "--expires", day(40))
    assert OLD not in kb("docs", "--due").output
    soon = json.loads(kb("docs", "--due", "--within", "45", "--json").output)
    assert [(d["path"], d["what"], d["days_left"]) for d in soon] == [
        (NEW, "review", -3), (OLD, "expires", 40)]
    kb("docs", "set", NEW, "--review-by", "")  # cleared
    assert "0 due within 30 days" in kb("docs", "--due").output

    with ledger_for(travel) as ledger:
        records = [(r.object, json.loads(r.details), r.actor)
                   for r in ledger.audit_records(event="document.dates")]
    assert len(records) == 4 and all(actor.startswith("cli:") for _, _, actor in records)
    assert [(path, {k: v for k, v in details.items() if k != "doc_id"})
            for path, details, _ in records] == [
        (OLD, {"expires": "2023-12-31"}),
        (NEW, {"review_by": day(-3), "effective": "2024-01-01"}),
        (OLD, {"expires": day(40)}),
        (NEW, {"review_by": ""}),
    ]


@pytest.fixture
def app(travel: Settings) -> Iterator[App]:
    with users_for(travel) as users:
        users.add("alice", "alice-password", ("all",), is_admin=True)
    services = open_services(travel)
    try:
        yield App(services, demo=False)
    finally:
        services.close()


def test_the_admin_tab_uploads_with_dates_and_lists_the_due(app: App, tmp_path: Path) -> None:
    alice = FakeRequest("alice")
    upload = tmp_path / "Leave Policy.pdf"
    shutil.copy2(SAMPLES / "Employee-Leave-Policy.pdf", upload)

    with pytest.raises(gr.Error, match="Review by .*: '30 June' is not a date.*nothing was"):
        app.ingest_upload([str(upload)], ["all"], "", "30 June", "", alice)
    assert not (app.settings.store_path() / "uploads").exists()

    report, docs, line, _box = app.ingest_upload([str(upload)], ["all"], day(1), day(10), "",
                                                 alice)
    assert line.startswith("Upload: 1 file in ") and line.endswith(": 1 ingested")
    assert report[0][:2] == ["Leave_Policy.pdf", "ingested"]
    row = next(r for r in docs if r[1] == "Leave_Policy.pdf")
    assert row[3] == f"not in force until {day(1)}"
    assert row[7:10] == [day(1), day(10), ""]
    stored = next(r.meta for r in list_documents(app.settings) if r.meta.path == row[1])
    assert stored.admin_dates == ("effective", "review_by")  # kept through re-ingests
    (dated,) = app.store.ledger.audit_records(event="document.dates")
    assert (dated.actor, dated.object) == ("alice", "Leave_Policy.pdf")
    assert json.loads(dated.details)["review_by"] == day(10)
    found = app.assistant.retrieve("How many days of paid sick leave?", ["all"])
    assert found and "Leave_Policy.pdf" not in {p.file for p in found}  # not in force yet

    due = app.due_list(alice)
    assert due.values.tolist() == [
        ["Leave_Policy.pdf", f"review due in 10 days ({day(10)})", day(10), 10, "all"]]


def test_a_source_card_says_the_document_is_past_its_review() -> None:
    late = Citation(1, "travel.pdf", 2, "", "住宿标准", "c1", review_due="2024-06-30")
    english = render.source_card(late, None, "q1", "en")
    assert "past its review date (2024-06-30): check with the document&#x27;s owner" in english
    assert "已过复审日期（2024-06-30）" in render.source_card(late, None, "q1", "zh")
    on_time = Citation(1, "travel.pdf", 2, "", "住宿标准", "c1")
    assert "review" not in render.source_card(on_time, None, "q1", "en")


def test_the_page_takes_an_upload_with_dates_and_shows_the_due_list(
    login_server: Any, fresh_guard: Any, tmp_path: Path
) -> None:
    """Through the served page (Gradio's API, as the browser's events): the upload form's
    three date fields, then the admin tab's due list; bob, no admin, gets neither."""
    import docx
    from gradio_client import handle_file

    doc = docx.Document()
    doc.add_heading("Blorp Stipend Policy", level=1)
    doc.add_paragraph("Every employee may claim one blorp stipend per year.")
    path = tmp_path / "Blorp Stipend.docx"
    doc.save(str(path))
    alice = login_server.client("alice")
    _report, docs, *_ = alice.predict([handle_file(str(path))], ["all"], "", day(5), day(20),
                                      api_name="/ingest")
    row = next(r for r in docs["data"] if r[1] == "Blorp_Stipend.docx")
    assert row[8:10] == [day(5), day(20)]
    due = alice.predict(api_name="/due_list")
    assert [r[:2] for r in due["data"] if r[0] == "Blorp_Stipend.docx"] == [
        ["Blorp_Stipend.docx", f"review due in 5 days ({day(5)})"],
        ["Blorp_Stipend.docx", f"expires in 20 days ({day(20)})"],
    ]
    with pytest.raises(Exception, match="Administrators only"):
        login_server.client("bob").predict(api_name="/due_list")
