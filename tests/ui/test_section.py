"""A Word citation opens its document at the cited section: a .docx written here with
python-docx, ingested into a real store (real parser, chunker, embedder, Chroma), then the
source view's frame fetched from the app's `/section/{chunk_id}` route, which checks the
asker's groups as `/page` does."""

from __future__ import annotations

import html
import json
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docx
import gradio as gr
import pytest
from fastapi.testclient import TestClient

from assistant.section import overlap, section_span
from core.config import load_settings
from tests.support.stores import ingest_paths
from tests.ui.conftest import PASSWORDS, REPO
from ui.web.server import create_server
from ui.wiring import open_services, users_for

pytestmark = pytest.mark.slow

# 2.2 is long enough for several chunks (the chunker repeats ~30 tokens between them).
CARRY = [f"Rule C{i}: carried-over leave item {i} is taken before the new year's days, "
         f"and the manager signs form L-{i} within {i + 2} working days." for i in range(1, 25)]
CITED = CARRY[17]


def write_handbook(path: Path) -> None:
    document = docx.Document()
    document.add_heading("Leave Handbook", 0)
    document.add_heading("1 Scope", 1)
    document.add_paragraph("This handbook covers every employee of Northwind on a contract.")
    document.add_heading("2 Annual Leave", 1)
    document.add_heading("2.1 Entitlement", 2)
    document.add_paragraph("Full-time employees receive 15 days of paid annual leave a year.")
    document.add_heading("2.2 Carry-over", 2)
    for rule in CARRY:
        document.add_paragraph(rule)
    document.add_heading("3 Sick Leave", 1)
    document.add_paragraph("Sick leave is paid for up to ten days a year with a doctor's note.")
    document.save(str(path))


@dataclass
class Handbook:
    client: TestClient
    app: Any  # ui.page.app.App
    chunks: list[tuple[str, tuple[str, ...], str]]  # (chunk id, heading path, text) in order
    secret: str  # a chunk of a document of group hr only


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Handbook]:
    root = tmp_path_factory.mktemp("section")
    (root / "docs").mkdir()
    (root / "hr").mkdir()
    write_handbook(root / "docs" / "Leave-Handbook.docx")
    secret = docx.Document()
    secret.add_heading("Pay bands", 1)
    secret.add_paragraph("Band 7 starts at 31,000 a month.")
    secret.save(str(root / "hr" / "Pay-Bands.docx"))
    settings = load_settings(REPO / "config.toml", environ={}).with_store(root / "store")
    assert ingest_paths(settings, [root / "docs"]).counts["failed"] == 0
    assert ingest_paths(settings, [root / "hr"], ["hr"]).counts["failed"] == 0
    with users_for(settings) as users:
        rows = users.ledger.db.execute(
            "SELECT c.id, c.section, c.text, d.path FROM chunks c JOIN documents d "
            "ON d.id = c.doc_id ORDER BY d.path, c.ordinal").fetchall()
    chunks = [(r[0], tuple(json.loads(r[1])), r[2]) for r in rows
              if r[3] == "Leave-Handbook.docx"]
    secret_id = next(r[0] for r in rows if r[3] == "Pay-Bands.docx")
    services = open_services(settings)
    try:
        server = create_server(services, demo=True)  # everyone is the demo user, group all
        with TestClient(server) as client:
            yield Handbook(client, server.state.kb_app, chunks, secret_id)
    finally:
        services.close()


def frame_src(view: str) -> str:
    found = re.search(r'<iframe class="kb-section" src="([^"]+)"', view)
    assert found, view
    return found.group(1).replace("&amp;", "&")


def test_a_word_citation_opens_its_document_at_the_cited_section(handbook: Handbook) -> None:
    carry = [c for c in handbook.chunks if c[1][-1:] == ("2.2 Carry-over",)]
    assert len(carry) >= 3, "2.2 spans several chunks"
    cited_id = next(cid for cid, _, text in carry[1:] if CITED in text)
    conv = handbook.app.mine(None, handbook.app.who(None))
    conv.quotes[cited_id] = CITED
    view = handbook.app.view_source(cited_id, "en", conv, None)
    assert "Leave-Handbook.docx" in view and "2 Annual Leave › 2.2 Carry-over" in view
    src = frame_src(view)
    path, _, fragment = src.partition("#")
    assert fragment == "kb-cited" and path.startswith("section/")
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)["q"] == [CITED]

    reply = handbook.client.get("/" + path)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/html")
    assert "no-store" in reply.headers["cache-control"]
    assert "default-src 'none'" in reply.headers["content-security-policy"]
    page = reply.text
    # the chapter of the cited section, its headings in order, not the other chapters
    headings = re.findall(r"<h\d>([^<]+)</h\d>", page)
    assert headings[-3:] == ["2 Annual Leave", "2.1 Entitlement", "2.2 Carry-over"], headings
    assert "15 days of paid annual leave" in page
    assert "1 Scope" not in page.split("</header>")[1] and "Sick leave" not in page
    # the cited passage is the scroll target, with the cited sentence marked
    cited = re.search(r'<div id="kb-cited"[^>]*>(.*?)</div>', page, re.S)
    assert cited and f"<mark>{html.escape(CITED)}</mark>" in cited.group(1)
    # the section reads as the document does: every rule once, in order, despite the overlap
    body = html.unescape(re.sub(r"<[^>]+>", " ", page))
    places = [body.find(rule) for rule in CARRY]
    assert all(p >= 0 for p in places) and places == sorted(places)
    assert all(body.count(rule) == 1 for rule in CARRY), "the chunk overlap is shown once"


def test_the_section_route_checks_the_askers_groups(handbook: Handbook) -> None:
    assert handbook.client.get(f"/section/{handbook.secret}").status_code == 404
    assert handbook.client.get("/section/no-such-chunk").status_code == 404
    with pytest.raises(gr.Error):
        handbook.app.view_source(handbook.secret, "en", None, None)


def test_section_route_needs_login_and_the_documents_group(login_server: Any) -> None:
    """With logins: alice (hr) gets the hr-only Word table's section, bob (all) a 404, and a
    client without a session a 401, as for `/page`."""
    import httpx

    from tests.ui.test_app import FakeRequest, hr_chunk_ids

    app = login_server.app
    hr_id = next(i for i in hr_chunk_ids(login_server.settings)
                 if not app.assistant.source(i, ["hr"]).page)  # the .docx of hr-only/
    view = app.view_source(hr_id, "en", None, FakeRequest("alice"))
    src = frame_src(view)
    assert src.startswith(f"section/{urllib.parse.quote(hr_id, safe='')}?")

    def login(name: str) -> httpx.Client:
        client = httpx.Client(base_url=login_server.url, timeout=30)
        reply = client.post("login", data={"username": name, "password": PASSWORDS[name]})
        assert reply.status_code == 200, reply.text
        return client

    alice, bob = login("alice"), login("bob")
    try:
        reply = alice.get(src)
        assert reply.status_code == 200 and 'id="kb-cited"' in reply.text
        assert "薪酬" in reply.text  # the hr-only 薪酬等级表.docx
        assert bob.get(src).status_code == 404
    finally:
        alice.close()
        bob.close()
    assert httpx.get(login_server.url + src).status_code == 401


def test_section_span_and_overlap_are_pure() -> None:
    sections = [("1 Scope",), ("2 Leave",), ("2 Leave", "2.1 Annual"), ("3 Sick",)]
    assert section_span(sections, 2, 10) == range(1, 3)
    assert section_span([("a",)] * 100, 50, 10) == range(45, 55)
    assert section_span([("a",)] * 100, 98, 10) == range(90, 100)
    assert section_span([()] * 5, 0, 10) == range(0, 5)
    titled = [("T",), ("T", "1 Scope"), ("T", "2 Leave"), ("T", "2 Leave", "2.1")]
    assert section_span(titled, 3, 10) == range(2, 4)  # the title heads all: one level below
    assert overlap("Leave is paid. Carry over 5 days.", "Carry over 5 days. Ask HR.") == 18
    assert overlap("Leave is paid.", "Ask HR. paid.") == 0
