"""Every file of ../shared/corpus (real-world, broken, encrypted, scanned, huge) goes through
ParsePool within the time limit and comes back as a ParsedDoc or an IngestError with a reason.
OCR is off here (it would double the run; tests/ingest/test_ocr.py reads the corpus's scans);
legacy .doc files are converted by a fake LibreOffice (tests/support/fake_soffice.py), so they are
expected to come back as documents whether or not LibreOffice is installed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.config import IngestSettings
from core.errors import IngestError
from core.types import ParsedDoc
from ingest.parse import ParsePool
from tests.support.fake_soffice import install_fake_soffice

# Statuses known for certain files ("ok" for a ParsedDoc).
EXPECTED = {
    "pdf/sample-files/005-encrypted-password-openpassword.pdf": "encrypted",
    "pdf/unstructured/password.pdf": "ok",  # "password" is configured below
    "pdf/unstructured/copy-protected.pdf": "ok",  # owner password only
    "pdf/sample-files/007-imagemagick-images-only.pdf": "no_text",
    "pdf/sample-files/007-imagemagick-CCITTFax.pdf": "no_text",
    "pdf/unstructured/single_table.pdf": "no_text",  # an image of a table
    "pdf/unstructured/table-multi-row-column-cells.pdf": "no_text",
    "pdf/sample-files/017-unreadable-metadata.pdf": "broken",  # pypdf: invalid /Pages object
    "pdf/unstructured/failure-after-repair.pdf": "ok",  # pypdf reads all 76 pages
    "pdf/unstructured/DA-619p.pdf": "ok",
    "pdf/sample-files/009-GeoTopo-117pages-de.pdf": "ok",
    "pdf/sample-files/015-arabic-habibi-rotated.pdf": "ok",
    "docx/unstructured/handbook-872p.docx": "ok",
    "docx/unstructured/simple.doc": "ok",  # through the fake LibreOffice
    "docx/unstructured/fake-doc-emphasized-text.doc": "ok",
    "docx/mammoth/strict-format.docx": "unsupported",  # Strict OOXML
    "docx/mammoth/empty.docx": "no_text",
    "docx/mammoth/text-box.docx": "ok",  # its only text is inside a text box
    "docx/unstructured/tables-with-incomplete-rows.docx": "ok",
    "README.md": "unsupported",
    "pdf/sample-files/LICENSE-CC-BY-SA-4.0.txt": "unsupported",
}
PAGES = {"pdf/unstructured/DA-619p.pdf": 619, "pdf/sample-files/009-GeoTopo-117pages-de.pdf": 117}


@pytest.mark.slow
def test_every_corpus_file_gets_a_document_or_a_reason(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = shared / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"{corpus} is absent")
    paths = sorted(p for p in corpus.rglob("*") if p.is_file())
    settings = IngestSettings(file_timeout_s=120.0, pdf_passwords=("password",), ocr=False)
    fake = install_fake_soffice(tmp_path, monkeypatch)
    started = time.monotonic()
    with ParsePool(settings, workers=2, parser=fake.parser) as pool:
        results = {p.relative_to(corpus).as_posix(): r for p, r in pool.imap(paths)}
    elapsed = time.monotonic() - started

    assert len(results) == len(paths)
    statuses = {}
    for name, result in results.items():
        if isinstance(result, ParsedDoc):
            assert result.blocks and all(b.text.strip() for b in result.blocks), name
            assert result.title, name
            statuses[name] = "ok"
        else:
            assert isinstance(result, IngestError), name
            assert Path(name).name in str(result), f"{name}: {result}"  # names the file
            statuses[name] = result.status
    assert "timeout" not in statuses.values(), statuses
    converted = sorted(Path(call[-1]).name for call in fake.calls())
    assert converted == ["fake-doc-emphasized-text.doc", "simple.doc"]
    assert {name: statuses[name] for name in EXPECTED} == EXPECTED
    for name, pages in PAGES.items():
        parsed = results[name]
        assert isinstance(parsed, ParsedDoc) and parsed.pages == pages
    assert sum(s == "ok" for s in statuses.values()) >= 60
    assert elapsed < 120, f"corpus took {elapsed:.0f}s"
