"""Small PDF and DOCX files for the parser tests, generated with reportlab and python-docx.

    python tests/data/make_fixtures.py [FOLDER]     (default: tests/data/generated)

The tests call `build(folder)` into a temporary folder, so nothing generated needs committing.
Every file's content is written out here, so a test can name the text it expects.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from reportlab.lib.pagesizes import A4
from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.pdfgen.canvas import Canvas

HEADER = "ACME Corp Employee Handbook"
# Each page: (outline entries starting on it as (title, level)), body lines.
ENGLISH_PAGES: list[tuple[list[tuple[str, int]], list[str]]] = [
    (
        [("Leave", 0), ("Annual leave", 1)],
        [
            "Leave",
            "Annual leave",
            "Every employee accrues annual leave from the first day of work. The amount",
            "of leave depends on the years of service with the company and the contract",
            "type of the employee; part-time staff receive a pro-rated amount.",
            "Leave that is not used by the end of the year ac-",
            "crues to the next year, up to a maximum of forty hours in total.",
        ],
    ),
    (
        [("Sick leave", 1)],
        [
            "Before the section heading this text still belongs to annual leave.",
            "Sick leave",
            "Sick leave is paid from the first day of illness. Employees must tell their",
            "manager before the start of the working day and send a doctor's note after",
            "three days of absence. Sick leave does not reduce the annual leave balance,",
            "and it can be taken for the care of a child or a parent who lives with the",
        ],
    ),
    (
        [("Travel", 0)],
        [
            "employee, within the limits set by law.",
            "Travel",
            "- Book travel through the travel desk at least two weeks ahead.",
            "- Keep every receipt for the expense report.",
        ],
    ),
]
CHINESE_LINES = [
    "第一章 总则",
    "第一条 为了规范职工请假管理，保障职工休息休假的权利，根据有关法律法规，制定本",
    "制度。",
    "第二条 职工请假应当提前 3 个工作日提出申请。",
]


def english_pdf(path: Path, encrypt: StandardEncryption | None = None) -> Path:
    """Three pages with a running header and footer, an outline, page labels, a hyphen."""
    canvas = Canvas(str(path), pagesize=A4, encrypt=encrypt)
    canvas.setTitle("ACME Leave Policy")
    _, height = A4
    for number, (entries, lines) in enumerate(ENGLISH_PAGES, start=1):
        canvas.setFont("Helvetica", 10)
        canvas.drawString(72, height - 40, HEADER)
        y = height - 90
        for line in lines:
            canvas.drawString(72, y, line)
            y -= 14
        canvas.drawString(72, 40, f"Page {number} of {len(ENGLISH_PAGES)}")
        for title, level in entries:
            key = f"p{number}-{title}"
            canvas.bookmarkPage(key)
            canvas.addOutlineEntry(title, key, level=level)
        canvas.showPage()
    canvas.addPageLabel(0, style="ROMAN_LOWER")
    canvas.save()
    return path


def chinese_pdf(path: Path) -> Path:
    """One page of Chinese text in the built-in STSong-Light CID font, with an outline."""
    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    canvas = Canvas(str(path), pagesize=A4)
    canvas.setFont("STSong-Light", 12)
    _, height = A4
    y = height - 72
    for line in CHINESE_LINES:
        canvas.drawString(72, y, line)
        y -= 18
    canvas.bookmarkPage("ch1")
    canvas.addOutlineEntry("第一章 总则", "ch1", level=0)
    canvas.showPage()
    canvas.save()
    return path


def scanned_pdf(path: Path) -> Path:
    """Two pages with drawings and no text at all, like a scan."""
    canvas = Canvas(str(path), pagesize=A4)
    for _ in range(2):
        canvas.rect(72, 72, 300, 400, fill=1)
        canvas.showPage()
    canvas.save()
    return path


def _heading_style(document: docx.document.Document, name: str, level: int) -> None:
    style = document.styles.add_style(name, WD_STYLE_TYPE.PARAGRAPH)
    ppr = style.element.get_or_add_pPr()
    outline = OxmlElement("w:outlineLvl")
    outline.set(qn("w:val"), str(level - 1))
    ppr.append(outline)


def headings_docx(path: Path) -> Path:
    """Title, Heading 1-2, Chinese 标题 styles, an outline-level paragraph, a merged table."""
    document = docx.Document()
    document.core_properties.title = ""
    document.add_paragraph("Leave Policy", style="Title")
    document.add_paragraph("Annual leave", style="Heading 1")
    document.add_paragraph("Employees accrue 6 hours per pay period.")
    document.add_paragraph("Carry-over", style="Heading 2")
    document.add_paragraph("You can carry over at most 240 hours.")
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["Years", "Hours", ""], ["0-3", "4", ""], ["3-15", "6", ""]]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    table.cell(0, 1).merge(table.cell(0, 2))  # horizontal merge: "Hours" once
    table.cell(1, 2).text = "per pay period"
    table.cell(1, 2).merge(table.cell(2, 2))  # vertical merge: the text once
    document.add_paragraph("Sick leave", style="Heading 1")
    document.add_paragraph("Sick leave has no cap.")
    style = document.styles.add_style("标题 1", WD_STYLE_TYPE.PARAGRAPH)
    style.base_style = document.styles["Normal"]
    document.add_paragraph("第一章 总则", style="标题 1")
    document.add_paragraph("第一条 为了规范请假管理，制定本制度。")
    _heading_style(document, "Custom Outline Two", 2)
    document.add_paragraph("第一节 年假", style="Custom Outline Two")
    document.add_paragraph("第二条 职工享受带薪年休假。")
    document.add_paragraph("第二节 病假")  # plain text, not a heading
    paragraph = document.add_paragraph("第三节 事假")
    ppr = paragraph._p.get_or_add_pPr()
    outline = OxmlElement("w:outlineLvl")
    outline.set(qn("w:val"), "1")
    ppr.append(outline)
    document.add_paragraph("第三条 事假不计工资。")
    document.save(str(path))
    return path


def titled_docx(path: Path) -> Path:
    """Core-properties title and body text."""
    document = docx.Document()
    document.core_properties.title = "Travel Rules 2024"
    document.add_paragraph("Book trains in second class.")
    document.save(str(path))
    return path


def entity_docx(path: Path, secret_file: Path) -> Path:
    """A .docx whose document.xml declares an external entity pointing at `secret_file`."""
    source = path.with_name(path.stem + "-plain.docx")
    document = docx.Document()
    document.add_paragraph("ENTITY_HERE")
    document.save(str(source))
    with zipfile.ZipFile(source) as plain, zipfile.ZipFile(path, "w") as crafted:
        for info in plain.infolist():
            data = plain.read(info)
            if info.filename == "word/document.xml":
                head, _, body = data.partition(b"?>")
                doctype = f'<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file://{secret_file}">]>'
                data = head + b"?>" + doctype.encode() + body.replace(b"ENTITY_HERE", b"&xxe;")
            crafted.writestr(info, data)
    source.unlink()
    return path


def build(folder: Path) -> dict[str, Path]:
    """Write every fixture into `folder`; returns them by name."""
    folder.mkdir(parents=True, exist_ok=True)
    secret = folder / "secret.txt"
    secret.write_text("TOP-SECRET-TOKEN", encoding="utf-8")
    return {
        "english": english_pdf(folder / "english.pdf"),
        "english_user_pw": english_pdf(
            folder / "english-user-pw.pdf", StandardEncryption("s3cret", ownerPassword="owner")
        ),
        "english_owner_only": english_pdf(
            folder / "english-owner-only.pdf",
            StandardEncryption("", ownerPassword="owner", canCopy=0, canModify=0),
        ),
        "chinese": chinese_pdf(folder / "chinese.pdf"),
        "scanned": scanned_pdf(folder / "scanned.pdf"),
        "headings": headings_docx(folder / "headings.docx"),
        "titled": titled_docx(folder / "titled.docx"),
        "entity": entity_docx(folder / "entity.docx", secret),
    }


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "generated"
    for name, made in build(target).items():
        sys.stdout.write(f"{name}: {made}\n")
