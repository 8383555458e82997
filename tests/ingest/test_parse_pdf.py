from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import BrokenFile, EncryptedFile, NoText
from core.types import ParsedDoc
from ingest.parse.pdf import parse_pdf


def _text(doc: ParsedDoc) -> str:
    return "\n".join(block.text for block in doc.blocks)


def _block(doc: ParsedDoc, start: str) -> int:
    return next(i for i, b in enumerate(doc.blocks) if b.text.startswith(start))


def test_running_header_and_footer_are_removed(fixtures: dict[str, Path]) -> None:
    text = _text(parse_pdf(fixtures["english"]))
    assert "ACME Corp Employee Handbook" not in text
    assert "Page 1 of 3" not in text and "of 3" not in text
    assert "Every employee accrues annual leave" in text


def test_outline_gives_sections_and_heading_blocks(fixtures: dict[str, Path]) -> None:
    doc = parse_pdf(fixtures["english"])
    headings = [(b.text, b.section, b.page) for b in doc.blocks if b.kind == "heading"]
    assert headings == [
        ("Leave", ("Leave",), 1),
        ("Annual leave", ("Leave", "Annual leave"), 1),
        ("Sick leave", ("Leave", "Sick leave"), 2),
        ("Travel", ("Travel",), 3),
    ]
    before = doc.blocks[_block(doc, "Before the section heading")]
    assert before.section == ("Leave", "Annual leave") and before.page == 2
    assert doc.blocks[_block(doc, "- Book travel")].section == ("Travel",)


def test_paragraphs_join_wrapped_lines_and_hyphenated_words(fixtures: dict[str, Path]) -> None:
    doc = parse_pdf(fixtures["english"])
    first = doc.blocks[_block(doc, "Every employee")]
    assert first.text.endswith("part-time staff receive a pro-rated amount.")
    carried = doc.blocks[_block(doc, "Leave that is not used")]
    assert "the year accrues to the next year" in carried.text
    items = [b.text for b in doc.blocks if b.text.startswith("- ")]
    assert len(items) == 2  # each bullet is its own paragraph


def test_a_paragraph_runs_on_across_a_page_break(fixtures: dict[str, Path]) -> None:
    doc = parse_pdf(fixtures["english"])
    block = doc.blocks[_block(doc, "Sick leave is paid")]
    assert (block.page, block.page_end) == (2, 3)
    assert block.text.endswith("who lives with the employee, within the limits set by law.")


def test_title_pages_and_labels(fixtures: dict[str, Path]) -> None:
    doc = parse_pdf(fixtures["english"])
    assert doc.title == "ACME Leave Policy"
    assert doc.pages == 3
    assert doc.page_labels == ["i", "ii", "iii"]


def test_chinese_cid_font_text_without_extraction_spaces(fixtures: dict[str, Path]) -> None:
    doc = parse_pdf(fixtures["chinese"])
    assert doc.blocks[0].kind == "heading" and doc.blocks[0].section == ("第一章总则",)
    assert doc.title == "第一章总则"  # no metadata title: the first outline entry
    assert [b.text for b in doc.blocks[1:]] == [
        "第一条为了规范职工请假管理，保障职工休息休假的权利，根据有关法律法规，制定本制度。",
        "第二条职工请假应当提前3个工作日提出申请。",
    ]


def test_encrypted_pdf_needs_a_configured_password(fixtures: dict[str, Path]) -> None:
    with pytest.raises(EncryptedFile, match=r"english-user-pw\.pdf: encrypted PDF.*pdf_passwords"):
        parse_pdf(fixtures["english_user_pw"], passwords=("wrong",))
    opened = parse_pdf(fixtures["english_user_pw"], passwords=("wrong", "s3cret"))
    assert "Sick leave is paid" in _text(opened)


def test_copy_protected_pdf_opens_without_a_password(fixtures: dict[str, Path]) -> None:
    assert "Sick leave is paid" in _text(parse_pdf(fixtures["english_owner_only"]))


def test_scanned_pdf_has_no_text(fixtures: dict[str, Path]) -> None:
    with pytest.raises(NoText, match="scanned.pdf: no text layer: needs OCR"):
        parse_pdf(fixtures["scanned"])


def test_broken_pdf(tmp_path: Path, fixtures: dict[str, Path]) -> None:
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(fixtures["english"].read_bytes()[:300])
    with pytest.raises((BrokenFile, NoText), match="truncated.pdf"):
        parse_pdf(truncated)
    garbage = tmp_path / "garbage.pdf"
    garbage.write_bytes(b"%PDF-1.4\n" + b"\x00garbage" * 100)
    with pytest.raises(BrokenFile, match="garbage.pdf: pypdf cannot read"):
        parse_pdf(garbage)
