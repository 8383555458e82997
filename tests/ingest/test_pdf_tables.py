"""PDF tables on generated PDFs: rows with their header, across pages, text around unchanged."""

from __future__ import annotations

import re
from pathlib import Path

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from core.types import Block, ParsedDoc
from ingest.chunk import chunk_blocks
from ingest.parse.pdf import parse_pdf
from ingest.parse.pdf_tables import place_tables, table_rows

ZH_HEADER = ["城市级别", "城市范围", "住宿标准（元/人·晚）"]
ZH_ROWS = [
    ["一线城市", "北京、上海、广州、深圳", "800"],
    ["新一线城市", "杭州、成都、南京、武汉", "550"],
    ["其他城市", "除上述城市外的国内城市", "350"],
]
EN_HEADER = ["Grade", "Band", "Annual leave (days)"]


def _pdf(path: Path, story_rows: list[list[str]], font: str, before: str, after: str,
         repeat_header: int = 0) -> Path:
    style = ParagraphStyle("body", fontName=font, fontSize=11, leading=15)
    table = Table(story_rows, repeatRows=repeat_header)
    table.setStyle(TableStyle([
        ("FONT", (0, 0), (-1, -1), font, 10),
        ("GRID", (0, 0), (-1, -1), 0.5, colors.black),
    ]))
    doc = SimpleDocTemplate(str(path), pagesize=A4)
    doc.build([Paragraph(before, style), Spacer(1, 12), table, Spacer(1, 12),
               Paragraph(after, style)])
    return path


def _zh_font() -> str:
    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    return "STSong-Light"


def _tables(doc: ParsedDoc) -> list[Block]:
    return [b for b in doc.blocks if b.kind == "table"]


def test_chinese_table_becomes_rows_with_header(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "zh.pdf", [ZH_HEADER, *ZH_ROWS], _zh_font(),
                "住宿费按出差目的地城市级别实行限额标准，具体如下表：",
                "住宿费超出标准的部分由员工个人承担。")
    doc = parse_pdf(path)
    [table] = _tables(doc)
    assert table.text.splitlines() == [
        "| 城市级别 | 城市范围 | 住宿标准（元/人·晚） |",
        "| 一线城市 | 北京、上海、广州、深圳 | 800 |",
        "| 新一线城市 | 杭州、成都、南京、武汉 | 550 |",
        "| 其他城市 | 除上述城市外的国内城市 | 350 |",
    ]
    assert table.page == 1
    # The text around it stays as it was (without tables, the header ran into the sentence).
    assert [b.text for b in doc.blocks if b.kind != "table"] == [
        "住宿费按出差目的地城市级别实行限额标准，具体如下表：",
        "住宿费超出标准的部分由员工个人承担。",
    ]
    plain = parse_pdf(path, tables=False)
    assert plain.blocks[0].text.endswith("具体如下表：城市级别")
    assert plain.blocks[-1].text == doc.blocks[-1].text


def test_english_table_crossing_a_page_repeats_its_header(tmp_path: Path) -> None:
    rows = [[f"G{i}", f"Band {chr(65 + i % 26)}", str(20 + i % 7)] for i in range(70)]
    path = _pdf(tmp_path / "en.pdf", [EN_HEADER, *rows], "Helvetica",
                "Annual leave depends on the grade as follows.",
                "Leave is pro-rated for part-time staff.")
    doc = parse_pdf(path)
    tables = _tables(doc)
    assert [t.page for t in tables] == [1, 2]
    header = "| Grade | Band | Annual leave (days) |"
    assert all(t.text.splitlines()[0] == header for t in tables)
    body = [row for t in tables for row in t.text.splitlines()[1:]]
    assert body == [f"| G{i} | Band {chr(65 + i % 26)} | {20 + i % 7} |" for i in range(70)]
    assert doc.blocks[-1].text == "Leave is pro-rated for part-time staff."


def test_a_header_the_pdf_repeats_is_not_doubled(tmp_path: Path) -> None:
    rows = [[f"G{i}", "Band A", "25"] for i in range(70)]
    path = _pdf(tmp_path / "rep.pdf", [EN_HEADER, *rows], "Helvetica", "Before.", "After.",
                repeat_header=1)
    tables = _tables(parse_pdf(path))
    assert len(tables) == 2
    assert all(t.text.count("| Grade |") == 1 for t in tables)


def test_chunks_never_split_a_row_from_its_header(tmp_path: Path) -> None:
    rows = [[f"G{i}", f"Band {i}", str(20 + i % 7)] for i in range(70)]
    path = _pdf(tmp_path / "en.pdf", [EN_HEADER, *rows], "Helvetica", "Before.", "After.")
    doc = parse_pdf(path)
    chunks = chunk_blocks("d", doc.blocks, lambda ts: [len(t.split()) for t in ts], 60, 10)
    with_rows = [c for c in chunks if re.search(r"^\| G\d", c.text, re.M)]
    assert len(with_rows) > 3
    for chunk in with_rows:
        lines = chunk.text.splitlines()
        first_row = next(i for i, line in enumerate(lines) if re.match(r"\| G\d", line))
        assert first_row > 0
        assert lines[first_row - 1] == "| Grade | Band | Annual leave (days) |"
    # Every row is in some chunk, whole.
    texts = "\n".join(c.text for c in with_rows)
    assert all(f"| G{i} | Band {i} | {20 + i % 7} |" in texts for i in range(70))


def test_place_tables_finds_cells_read_row_by_row() -> None:
    lines = ["Rates:", "Grade Band Days", "G1 Band A 25", "G2 Band B 30", "After."]
    cells = [["Grade", "Band", "Days"], ["G1", "Band A", "25"], ["G2", "Band B", "30"]]
    out, placed = place_tables(lines, [cells], 0)
    assert out[0] == "Rates:" and out[2] == "After." and len(out) == 3
    assert table_rows(placed[0])[1] == "| G1 | Band A | 25 |"


def test_a_table_whose_lines_are_not_found_leaves_the_text() -> None:
    lines = ["nothing", "like it"]
    out, placed = place_tables(lines, [[["a", "b"], ["c", "d"]]], 0)
    assert out == lines and placed == []
