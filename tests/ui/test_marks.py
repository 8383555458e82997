"""The cited sentence marked on the page image: boxes from a generated PDF's text layer."""

from __future__ import annotations

from pathlib import Path

import pypdfium2
from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.pdfgen.canvas import Canvas

from core.types import Passage
from ingest.parse.ocr import Word
from ingest.parse.page_words import cited_boxes, find_boxes
from ui.page.marks import draw_boxes, mark_page, what_to_mark
from ui.page.render import passage_html

DPI = 80
HEIGHT = A4[1]


def _pdf(path: Path) -> Path:
    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    canvas = Canvas(str(path), pagesize=A4)
    canvas.setFont("Helvetica", 12)
    canvas.drawString(72, HEIGHT - 100, "Annual leave is granted every January.")
    canvas.drawString(72, HEIGHT - 300, "Sick leave is paid for up to ten days a year.")
    canvas.setFont("STSong-Light", 12)
    canvas.drawString(72, HEIGHT - 500, "第二条 职工请假应当提前3个工作日提出申请。")
    canvas.save()
    return path


def _render(pdf: Path, target: Path) -> Path:
    document = pypdfium2.PdfDocument(pdf)
    document[0].render(scale=DPI / 72).to_pil().save(target)
    document.close()
    return target


def _marked(image: Image.Image, x: float, y: float) -> bool:
    red, green, blue = image.getpixel((round(x * DPI / 72), round(y * DPI / 72)))[:3]
    return blue < 200 and red > 200  # yellow over white (or over black glyph edges)


def test_the_cited_sentence_is_boxed_on_the_page(tmp_path: Path) -> None:
    pdf = _pdf(tmp_path / "p.pdf")
    boxes = cited_boxes(pdf, 1, "sick leave is paid for up to ten days")
    assert len(boxes) == 9
    assert all(abs(top - 290) < 6 and abs(bottom - 302) < 6 for _, top, _, bottom in boxes)
    assert min(b[0] for b in boxes) == 72.0
    image = _render(pdf, tmp_path / "p.png")
    marked = mark_page(image, pdf, 1, "Sick leave is paid for up to ten days", DPI)
    assert marked != image
    with Image.open(marked) as out:
        assert _marked(out, 75, 291)  # inside the first word's box, above the glyphs' ink
        assert not _marked(out, 75, 91)  # the other sentence stays unmarked
        assert out.getpixel((400, 800)) == (255, 255, 255)


def test_chinese_quote_without_its_spaces_is_found(tmp_path: Path) -> None:
    pdf = _pdf(tmp_path / "p.pdf")
    boxes = cited_boxes(pdf, 1, "职工请假应当提前3个工作日提出申请")
    assert boxes and all(abs(top - 490) < 8 for _, top, _, _ in boxes)


def test_a_quote_not_on_the_page_marks_nothing(tmp_path: Path) -> None:
    pdf = _pdf(tmp_path / "p.pdf")
    image = _render(pdf, tmp_path / "p.png")
    assert mark_page(image, pdf, 1, "Travel is booked through the portal.", DPI) == image


def test_find_boxes_and_draw_boxes_are_pure() -> None:
    words = [Word("Sick", (10, 20, 30, 30)), Word("leave,", (32, 20, 60, 30))]
    words.append(Word("x", (0, 0, 1, 1)))
    assert find_boxes(words, "sick leave") == [(10, 20, 30, 30), (32, 20, 60, 30)]
    assert find_boxes(words, "annual") == []
    page = Image.new("RGB", (100, 100), "white")
    out = draw_boxes(page, [(10, 10, 20, 20)], 72)
    assert out.getpixel((15, 15)) != (255, 255, 255) and out.getpixel((50, 50)) == (255, 255, 255)
    assert page.getpixel((15, 15)) == (255, 255, 255)
    assert what_to_mark("", "请假。报销！") == "请假。" and what_to_mark("q", "x") == "q"


def test_a_passage_read_by_ocr_has_a_badge_on_its_card() -> None:
    scanned = Passage("c", "d", "scan.pdf", "text", page=2, page_end=3, ocr_pages=(3,))
    typed = Passage("c", "d", "scan.pdf", "text", page=1, ocr_pages=(3,))
    assert scanned.from_ocr and not typed.from_ocr
    assert "read by OCR" in passage_html(scanned, "", "en")
    assert "OCR" not in passage_html(typed, "", "en")
    assert "OCR识别" in passage_html(scanned, "", "zh")


def test_a_retrieval_only_quote_marks_its_leading_sentence() -> None:
    led = "一线城市住宿标准为每晚不超过800元。 … 一、住宿标准 住宿费按城市级别实行限额标准。"
    assert what_to_mark(led, "一、住宿标准") == "一线城市住宿标准为每晚不超过800元。"
    assert what_to_mark("Sick leave is paid.", "Other.") == "Sick leave is paid."
