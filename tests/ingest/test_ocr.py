"""OCR of scanned pages: image-only PDFs drawn in the test (English and Chinese), and a mixed
PDF whose second page is a scan. Skipped with the packages to install when Tesseract or a CJK
font is missing (scripts/install_ocr.sh installs both); failed instead under
KB_REQUIRE_SYSTEM_DEPS=1 (CI)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfWriter
from reportlab.lib.pagesizes import A5
from reportlab.pdfgen.canvas import Canvas

from assistant.answer import Assistant
from core.config import load_settings
from core.errors import NoText
from core.types import Block, DocMeta, ParsedDoc
from devtools.system_deps import skip_or_fail
from ingest.parse.ocr import OcrOptions, read_tsv
from ingest.parse.page_words import cited_boxes
from ingest.parse.pdf import parse_pdf
from ingest.pipeline import Writer
from store.ledger import Ledger
from store.store import Store
from tests.support.fakes import FakeCounter, FakeEmbedder, FakeGenerator, MemoryVectorIndex

REPO = Path(__file__).resolve().parents[2]

DPI = 150
EN_LINES = [
    "Remote work allowance",
    "Employees who work from home receive a monthly",
    "allowance of forty euros for internet costs.",
]
ZH_LINES = ["远程办公补贴", "在家办公的员工每月可领取网络费补贴", "四十元，随工资发放。"]


def _font() -> Path:
    found = subprocess.run(
        ["fc-match", "-f", "%{file}", "Noto Sans CJK SC:lang=zh"],
        capture_output=True, text=True, check=False,
    ).stdout if shutil.which("fc-match") else ""
    if not found or "CJK" not in found:
        skip_or_fail("no CJK font to draw the scans with (apt-get install fonts-noto-cjk)")
    return Path(found)


@pytest.fixture(scope="module")
def tesseract() -> None:
    if shutil.which("tesseract") is None:
        skip_or_fail(
            "Tesseract is not installed (scripts/install_ocr.sh: tesseract-ocr "
            "tesseract-ocr-chi-sim tesseract-ocr-eng)"
        )


def scan(path: Path, lines: list[str]) -> Path:
    """An image-only one-page PDF (A5 at DPI) with `lines` drawn in black on white."""
    width, height = int(5.83 * DPI), int(8.27 * DPI)
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(_font()), 26)
    for i, line in enumerate(lines):
        draw.text((60, 80 + i * 48), line, fill=0, font=font)
    image.save(path, resolution=float(DPI))
    return path


@pytest.fixture(scope="module")
def scans(tesseract: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ParsedDoc]:
    """The English and the Chinese scan, each read once for the tests below."""
    folder = tmp_path_factory.mktemp("scans")
    return {
        "en": parse_pdf(scan(folder / "en.pdf", EN_LINES), ocr=OcrOptions(DPI, "eng")),
        "zh": parse_pdf(scan(folder / "zh.pdf", ZH_LINES), ocr=OcrOptions(DPI, "chi_sim+eng")),
    }


def test_english_scan_is_read(scans: dict[str, ParsedDoc]) -> None:
    doc = scans["en"]
    text = " ".join(b.text for b in doc.blocks)
    assert "monthly allowance of forty euros for internet costs" in text
    assert doc.ocr_pages == (1,) and all(b.page == 1 for b in doc.blocks)


def test_chinese_scan_is_read(scans: dict[str, ParsedDoc]) -> None:
    text = "".join(b.text for b in scans["zh"].blocks)
    assert "远程办公补贴" in text and "网络费补贴" in text and "随工资发放" in text
    assert scans["zh"].ocr_pages == (1,)


def test_a_mixed_pdf_is_read_page_by_page(tmp_path: Path, tesseract: None) -> None:
    typed = tmp_path / "typed.pdf"
    canvas = Canvas(str(typed), pagesize=A5)
    canvas.drawString(50, 500, "Sick leave is paid for up to ten days a year.")
    canvas.save()
    writer = PdfWriter()
    writer.append(str(typed))
    writer.append(str(scan(tmp_path / "scan.pdf", EN_LINES)))
    mixed = tmp_path / "mixed.pdf"
    writer.write(mixed)
    doc = parse_pdf(mixed, ocr=OcrOptions(DPI, "eng"))
    assert doc.ocr_pages == (2,)
    pages = {b.page for b in doc.blocks if "forty euros" in b.text}
    assert pages == {2}
    assert doc.blocks[0].text == "Sick leave is paid for up to ten days a year."


def test_without_ocr_a_scan_has_no_text(tmp_path: Path) -> None:
    path = tmp_path / "blank.pdf"
    Image.new("L", (300, 400), 255).save(path, resolution=72.0)
    with pytest.raises(NoText, match="blank.pdf: no text layer.*ingest.parse.ocr"):
        parse_pdf(path, ocr=None)


def test_tsv_lines_paragraphs_and_boxes() -> None:
    header = "\t".join(
        "level page_num block_num par_num line_num word_num left top width height conf text".split()
    )
    rows = [
        "5\t1\t1\t1\t1\t1\t100\t50\t40\t20\t90\t请假",
        "5\t1\t1\t1\t1\t2\t150\t50\t40\t20\t90\t制度",
        "5\t1\t1\t1\t2\t1\t100\t80\t40\t20\t90\tHR",
        "5\t1\t1\t1\t2\t2\t150\t80\t40\t20\t90\tLinks",
        "5\t1\t1\t2\t1\t1\t100\t140\t40\t20\t90\tNext.",
    ]
    page = read_tsv("\n".join([header, *rows]), 0.5)
    assert page.lines == ["请假制度", "HR Links", "", "Next."]
    assert page.words[0].box == (50.0, 25.0, 70.0, 35.0)


def test_a_question_finds_the_scanned_words(
    tmp_path: Path, scans: dict[str, ParsedDoc]
) -> None:
    """Both scans and two typed documents in a store of fakes: each language's question
    retrieves its scan first, at page 1."""
    settings = load_settings(REPO / "config.toml", environ={}).with_store(tmp_path / "store")
    store = Store(settings, Ledger(tmp_path / "l.sqlite"), MemoryVectorIndex(), FakeEmbedder())
    docs = {
        "en-scan.pdf": scans["en"],
        "zh-scan.pdf": scans["zh"],
        "travel.pdf": ParsedDoc([Block("Travel is booked through the portal.", (), 1, 1)]),
        "leave.pdf": ParsedDoc([Block("年假天数按工龄计算，最多十五天。", (), 1, 1)]),
    }
    for name, parsed in docs.items():
        meta = DocMeta(id=name, path=name, root="/d", sha256=name, size=1, mtime=0.0)
        Writer(store, store.collection).write(meta, parsed)
    assistant = Assistant(store, FakeGenerator(), FakeCounter())
    try:
        en = assistant.retrieve("What is the monthly internet allowance at home?", ["all"])
        zh = assistant.retrieve("在家办公的网络费补贴是多少？", ["all"])
        assert (en[0].file, en[0].page) == ("en-scan.pdf", 1)
        assert (zh[0].file, zh[0].page) == ("zh-scan.pdf", 1)
        # The passages carry the fact that OCR read them (the source card's badge).
        assert en[0].from_ocr and zh[0].from_ocr
        assert not any(p.from_ocr for p in en + zh if not p.file.endswith("scan.pdf"))
        assert assistant.source(en[0].chunk_id, ["all"]).ocr_pages == (1,)
    finally:
        store.close()


def test_a_real_scanned_table_is_read(shared: Path, tesseract: None) -> None:
    """../shared/corpus's single_table.pdf: a table pasted as an image, no text layer."""
    path = shared / "corpus" / "pdf" / "unstructured" / "single_table.pdf"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    doc = parse_pdf(path, ocr=OcrOptions(200, "eng"))
    text = " ".join(b.text for b in doc.blocks)
    assert doc.ocr_pages == (1,)
    assert "Chipper" in text and "64,058" in text


def test_words_of_a_scanned_page_have_boxes_from_ocr(tmp_path: Path, tesseract: None) -> None:
    path = scan(tmp_path / "en.pdf", EN_LINES)
    boxes = cited_boxes(path, 1, "forty euros for internet costs", OcrOptions(DPI, "eng"))
    assert len(boxes) == 5
    # The third drawn line: 80 + 2 * 48 pixels from the top at DPI, in points.
    top = (80 + 2 * 48) * 72 / DPI
    assert all(abs(box[1] - top) < 12 for box in boxes)
    assert cited_boxes(path, 1, "forty euros", None) == []  # no OCR, no words
