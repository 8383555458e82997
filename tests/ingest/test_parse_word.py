from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import pytest
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from core.errors import BrokenFile, NoText
from ingest.parse.word import _declares_doctype, parse_docx


def test_headings_give_nested_paths_and_heading_blocks(fixtures: dict[str, Path]) -> None:
    doc = parse_docx(fixtures["headings"])
    headings = [(b.text, b.section) for b in doc.blocks if b.kind == "heading"]
    assert headings == [
        ("Leave Policy", ("Leave Policy",)),
        ("Annual leave", ("Leave Policy", "Annual leave")),
        ("Carry-over", ("Leave Policy", "Annual leave", "Carry-over")),
        ("Sick leave", ("Leave Policy", "Sick leave")),
        ("第一章总则", ("Leave Policy", "第一章总则")),  # a style named 标题 1
        ("第一节年假", ("Leave Policy", "第一章总则", "第一节年假")),  # style outline level
        ("第三节事假", ("Leave Policy", "第一章总则", "第三节事假")),  # paragraph outline level
    ]
    by_text = {b.text: b for b in doc.blocks}
    assert by_text["Employees accrue 6 hours per pay period."].section == (
        "Leave Policy",
        "Annual leave",
    )
    assert by_text["第二节病假"].kind == "text"
    assert all(b.page is None and b.page_end is None for b in doc.blocks)


def test_tables_stand_in_place_with_merged_cells_once(fixtures: dict[str, Path]) -> None:
    doc = parse_docx(fixtures["headings"])
    kinds = [b.kind for b in doc.blocks]
    table = doc.blocks[kinds.index("table")]
    assert table.text.splitlines() == [
        "| Years | Hours |",
        "| 0-3 | 4 | per pay period |",
        "| 3-15 | 6 |  |",
    ]
    assert table.section == ("Leave Policy", "Annual leave", "Carry-over")
    assert doc.blocks[kinds.index("table") - 1].text == "You can carry over at most 240 hours."
    assert doc.blocks[kinds.index("table") + 1].text == "Sick leave"


def test_title_from_core_properties_then_first_heading_then_stem(
    fixtures: dict[str, Path], tmp_path: Path
) -> None:
    assert parse_docx(fixtures["titled"]).title == "Travel Rules 2024"
    assert parse_docx(fixtures["headings"]).title == "Leave Policy"
    plain = tmp_path / "plain-notes.docx"
    document = docx.Document()
    document.core_properties.title = ""
    document.add_paragraph("Just text.")
    document.save(str(plain))
    assert parse_docx(plain).title == "plain-notes"


def test_external_entities_are_refused(fixtures: dict[str, Path]) -> None:
    with pytest.raises(BrokenFile, match="entity.docx: part word/document.xml declares a DOCTYPE"):
        parse_docx(fixtures["entity"])


def test_doctype_detection_in_utf8_and_utf16() -> None:
    xml = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>'
    assert _declares_doctype(xml.encode())
    assert _declares_doctype(xml.encode("utf-16"))
    assert not _declares_doctype(b'<?xml version="1.0"?><w:document>&lt;!DOCTYPE</w:document>')


def test_empty_and_damaged_documents(tmp_path: Path, fixtures: dict[str, Path]) -> None:
    empty = tmp_path / "empty.docx"
    docx.Document().save(str(empty))
    with pytest.raises(NoText, match="empty.docx: the document body has no text"):
        parse_docx(empty)
    damaged = tmp_path / "damaged.docx"
    damaged.write_bytes(fixtures["titled"].read_bytes()[:2000])
    with pytest.raises(BrokenFile, match="damaged.docx"):
        parse_docx(damaged)
    not_word = tmp_path / "sheet.docx"
    with zipfile.ZipFile(not_word, "w") as package:
        package.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(BrokenFile, match="not a Word document"):
        parse_docx(not_word)


def test_footnotes_endnotes_and_text_boxes_follow_their_paragraph(
    shared: Path, tmp_path: Path
) -> None:
    mammoth = shared / "corpus" / "docx" / "mammoth"
    for name in ("footnotes.docx", "endnotes.docx"):
        blocks = parse_docx(mammoth / name).blocks
        assert [b.text for b in blocks] == ["Ouch.", "A tachyon walks into a bar.", "Fin."]
    # Word stores a text box twice (DrawingML and a VML fallback): its text comes once.
    assert [b.text for b in parse_docx(mammoth / "text-box.docx").blocks] == ["Datum plane"]
    # A note stands under the heading path of the paragraph that refers to it.
    document = docx.Document(str(mammoth / "footnotes.docx"))
    heading = document.paragraphs[0].insert_paragraph_before("Leave rules")
    outline = OxmlElement("w:outlineLvl")
    outline.set(qn("w:val"), "0")
    heading._p.get_or_add_pPr().append(outline)
    document.save(str(tmp_path / "headed.docx"))
    blocks = parse_docx(tmp_path / "headed.docx").blocks
    assert [(b.text, b.section) for b in blocks[1:]] == [
        ("Ouch.", ("Leave rules",)),
        ("A tachyon walks into a bar.", ("Leave rules",)),
        ("Fin.", ("Leave rules",)),
    ]
