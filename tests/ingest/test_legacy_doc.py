"""Legacy .doc: converted through LibreOffice when `soffice` is installed, else `unsupported`
with the hint. The conversion test makes its .doc from a generated .docx with LibreOffice."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.config import IngestSettings
from core.errors import UnsupportedFile
from ingest.parse import legacy_doc, parse_file

OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def test_without_libreoffice_a_doc_is_unsupported_with_the_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(legacy_doc, "soffice", lambda: None)
    path = tmp_path / "old.doc"
    path.write_bytes(OLE2 + bytes(600))
    with pytest.raises(UnsupportedFile, match=r"old.doc: legacy Word .doc.*install LibreOffice"):
        parse_file(path, IngestSettings())


@pytest.mark.skipif(legacy_doc.soffice() is None,
                    reason="LibreOffice (soffice) is not installed: .doc conversion is optional")
def test_a_doc_is_converted_and_parsed(tmp_path: Path) -> None:
    source = tmp_path / "leave.html"  # LibreOffice writes a .doc with its table from HTML
    source.write_text(
        "<html><body><h1>Annual leave</h1>"
        "<p>Employees accrue two days of annual leave per month.</p><table border=1>"
        "<tr><td>Years</td><td>Days</td></tr><tr><td>5</td><td>20</td></tr></table>"
        "</body></html>"
    )
    subprocess.run([str(legacy_doc.soffice()), "--headless", "--convert-to", "doc:MS Word 97",
                    "--outdir", str(tmp_path / "doc"), str(source)], check=True,
                   capture_output=True, timeout=120)
    doc = tmp_path / "doc" / "leave.doc"
    assert doc.read_bytes().startswith(OLE2)
    parsed = parse_file(doc, IngestSettings())
    assert [(b.kind, b.text) for b in parsed.blocks] == [
        ("heading", "Annual leave"),
        ("text", "Employees accrue two days of annual leave per month."),
        ("table", "| Years | Days |\n| 5 | 20 |"),
    ]
