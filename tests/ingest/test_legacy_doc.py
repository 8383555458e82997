"""Legacy .doc: converted through LibreOffice when `soffice` is installed, else `unsupported`
with the hint. The command line, the output's name and the failures are tested against a fake
`soffice` (tests/support/fake_soffice.py), so they run where LibreOffice is absent (CI); the real
conversion test makes its .doc from HTML with LibreOffice and runs where it is installed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from core.config import IngestSettings
from core.errors import UnsupportedFile
from ingest.parse import legacy_doc, parse_file
from tests.support.fake_soffice import BLOCKS, FAILURE, install_fake_soffice

OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def test_without_libreoffice_a_doc_is_unsupported_with_the_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(legacy_doc, "soffice", lambda: None)
    path = tmp_path / "old.doc"
    path.write_bytes(OLE2 + bytes(600))
    with pytest.raises(UnsupportedFile, match=r"old.doc: legacy Word .doc.*install LibreOffice"):
        parse_file(path, IngestSettings())


def test_the_fake_soffice_is_run_with_a_private_profile_and_its_output_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_soffice(tmp_path, monkeypatch)
    path = tmp_path / "in" / "Old Policy.doc"
    path.parent.mkdir()
    path.write_bytes(OLE2 + bytes(600))
    folder = tmp_path / "work"
    folder.mkdir()
    out = legacy_doc.doc_to_docx(path, folder)
    assert out == folder / "Old Policy.docx"
    assert out.read_bytes() == fake.known.read_bytes()
    assert (folder / "Old Policy.doc").read_bytes() == path.read_bytes()  # converted a copy
    assert fake.calls() == [[f"-env:UserInstallation=file://{folder / 'profile'}", "--headless",
                             "--norestore", "--convert-to", "docx", "--outdir", str(folder),
                             str(folder / "Old Policy.doc")]]


def test_a_doc_is_parsed_through_the_fake_soffice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake_soffice(tmp_path, monkeypatch)
    path = tmp_path / "old.doc"
    path.write_bytes(OLE2 + bytes(600))
    parsed = parse_file(path, IngestSettings())
    assert [(b.kind, b.text) for b in parsed.blocks] == BLOCKS


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [("fail", FAILURE), ("nothing", "no output")],
)
def test_a_conversion_that_fails_or_writes_nothing_is_unsupported_with_what_it_said(
    behaviour: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake_soffice(tmp_path, monkeypatch, behaviour)
    path = tmp_path / "old.doc"
    path.write_bytes(OLE2 + bytes(600))
    message = rf"old.doc: .*LibreOffice could not convert it \({said}\); convert to .docx"
    with pytest.raises(UnsupportedFile, match=message):
        parse_file(path, IngestSettings())


def test_a_conversion_that_hangs_is_stopped_at_the_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake_soffice(tmp_path, monkeypatch, "hang")
    monkeypatch.setattr(legacy_doc, "CONVERT_TIMEOUT_S", 1.0)
    path = tmp_path / "old.doc"
    path.write_bytes(OLE2 + bytes(600))
    started = time.monotonic()
    (tmp_path / "work").mkdir()
    with pytest.raises(UnsupportedFile, match=r"old.doc: .*LibreOffice failed \(.*timed out"):
        legacy_doc.doc_to_docx(path, tmp_path / "work")
    assert time.monotonic() - started < 30  # the fake sleeps 60 s: it was killed


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
