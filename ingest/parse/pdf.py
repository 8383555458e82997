"""PDF -> blocks with pypdf: paragraphs in reading order, each with its pages and outline path.

One pass of `page.extract_text()` per page; everything after it is linear in the text:
running headers and footers are dropped (`clean.strip_running_lines`), the outline (bookmarks)
gives the section path, wrapped lines are joined into paragraphs (a short line, a bullet or a
Chinese article opener ends a paragraph), and a paragraph may run on across a page break.
Ruled tables (found by pdfplumber, `ingest/parse/pdf_tables.py`) become table blocks of `| a | b |`
rows, header first; a table that runs on to the next page repeats its header there.

    parse_pdf(Path("leave.pdf"), passwords=()).blocks[1]
      -> Block(text="Leave types", section=("Leave types",), page=1, page_end=1, kind="heading")
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypdf import PasswordType, PdfReader
from pypdf.generic import Destination

from core.errors import BrokenFile, EncryptedFile, NoText
from core.types import Block, ParsedDoc
from ingest.parse import pdf_tables
from ingest.parse.clean import (
    clean_text,
    compact,
    display_width,
    join_lines,
    starts_item,
    strip_running_lines,
    typical_width,
    word_vocabulary,
)
from ingest.parse.ocr import OcrOptions, check_tesseract, ocr_page

logger = logging.getLogger(__name__)

SHORT_LINE = 0.8  # a line narrower than this share of a full line ends its paragraph
SHORT_SENTENCE_LINE = 0.9  # the same for a line that ends a sentence
_SPLIT_WORD = re.compile(r"[A-Za-z]-$")
_SENTENCE_END = re.compile(r"[.!?。！？;；:：]['\"”’)）]?$")
MAX_CARRY_CHARS = 2000  # a paragraph this long does not run on across a page break
_NUMBERING = re.compile(
    r"[\d.\-)(（）]+|第?[一二三四五六七八九十百\d]+[章节条、.]?|[IVXivx]+\.?|[A-Z]\.?"
)

Outline = dict[int, list[tuple[str, tuple[str, ...]]]]  # page index -> [(title, path)]


def parse_pdf(
    path: Path,
    passwords: Sequence[str] = (),
    *,
    tables: bool = True,
    table_seconds: float | None = None,
    ocr: OcrOptions | None = None,
) -> ParsedDoc:
    """Parse a PDF; raises EncryptedFile, BrokenFile or NoText for files it cannot use.

    `tables`: find ruled tables and keep their rows whole (pdfplumber; slower on pages that
    draw lines), spending at most `table_seconds` on the search. `ocr`: read pages that draw
    an image but have no text by OCR (Tesseract); None leaves them empty."""
    reader, password = _open(path, passwords)
    texts = _page_texts(path, reader)
    raw_pages = [text.splitlines() for text in texts]
    found: dict[str, pdf_tables.Cells] = {}
    if tables and any(text.strip() for text in texts):
        deadline = None if table_seconds is None else time.monotonic() + table_seconds
        raw_pages, found = _place_tables(path, reader, password, raw_pages, deadline)
    pages = strip_running_lines(raw_pages)
    if not any(line.strip() for lines in pages for line in lines) and any(
        text.strip() for text in texts
    ):
        # The same few lines on every page and nothing else: a label over scanned images, or
        # a document that really is one line repeated (then that line is its text).
        if not _has_images(reader):
            pages = raw_pages
    scanned = [
        index
        for index, lines in enumerate(pages)
        if not any(line.strip() for line in lines) and _page_has_image(reader, index)
    ]
    ocr_pages: list[int] = []
    if scanned and ocr is not None:
        try:
            exe = check_tesseract(ocr.languages)
        except NoText as exc:
            if not any(line.strip() for lines in pages for line in lines):
                raise NoText(f"{path.name}: {exc}") from exc
            logger.warning("%s: %d scanned pages left unread: %s", path.name, len(scanned), exc)
        else:
            for index in scanned:
                # A blank line first: text read from a scan never runs on from the page before.
                pages[index] = ["", *ocr_page(path, index, ocr, password, exe).lines]
                ocr_pages.append(index + 1)
    if not any(line.strip() for lines in pages for line in lines):
        if ocr_pages:
            raise NoText(
                f"{path.name}: no text layer, and OCR read no words on its {len(ocr_pages)} "
                "page images (pictures without text, or too faint: try a higher ingest.ocr_dpi)"
            )
        raise NoText(
            f"{path.name}: no text layer: needs OCR (scanned or image-only PDF; enable "
            "ingest.ocr, or run OCR, e.g. ocrmypdf, and ingest the result)"
        )
    outline = _outline(reader)
    text = "\n".join([*texts, *("\n".join(pages[i - 1]) for i in ocr_pages)])
    blocks = _blocks(pages, outline, found, *word_vocabulary(text))
    first_heading = next((titles[0][0] for _, titles in sorted(outline.items())), "")
    return ParsedDoc(
        blocks=blocks,
        title=_metadata_title(reader) or first_heading or path.stem,
        pages=len(texts),
        page_labels=_page_labels(reader),
        ocr_pages=tuple(ocr_pages),
    )


def _open(path: Path, passwords: Sequence[str]) -> tuple[PdfReader, str | None]:
    """The reader and the password that opened it (None when it is not encrypted)."""
    try:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted:
            for password in ("", *passwords):
                if reader.decrypt(password) != PasswordType.NOT_DECRYPTED:
                    return reader, password
            raise EncryptedFile(
                f"{path.name}: encrypted PDF, no configured password opens it "
                "(set ingest.pdf_passwords or remove the file)"
            )
        return reader, None
    except EncryptedFile:
        raise
    except Exception as exc:
        raise BrokenFile(
            f"{path.name}: pypdf cannot read this PDF ({type(exc).__name__}: {exc}); "
            "re-export or repair it, or remove the file"
        ) from exc


def _page_texts(path: Path, reader: PdfReader) -> list[str]:
    try:
        pages = list(reader.pages)
    except Exception as exc:
        raise BrokenFile(
            f"{path.name}: the page tree is broken ({type(exc).__name__}: {exc}); "
            "re-export or repair the PDF, or remove the file"
        ) from exc
    texts: list[str] = []
    failed = 0
    for number, page in enumerate(pages, start=1):
        try:
            texts.append(page.extract_text() or "")
        except Exception as exc:  # one bad page must not lose the rest of the document
            failed += 1
            logger.warning("%s: page %d: text extraction failed: %s", path.name, number, exc)
            texts.append("")
    if failed and failed == len(pages):
        raise BrokenFile(
            f"{path.name}: text extraction failed on every page; repair or re-export the PDF"
        )
    return texts


def _place_tables(
    path: Path,
    reader: PdfReader,
    password: str | None,
    pages: list[list[str]],
    deadline: float | None,
) -> tuple[list[list[str]], dict[str, pdf_tables.Cells]]:
    """Pages with each found table's lines replaced by its marker; the tables by marker."""
    candidates = []
    for index, lines in enumerate(pages):
        try:
            contents = reader.pages[index].get_contents()
            if lines and contents is not None and pdf_tables.draws_lines(contents.get_data()):
                candidates.append(index)
        except Exception:  # no content stream, or one pypdf cannot decode: no tables there
            continue
    try:
        tables = pdf_tables.find_tables(path, password, candidates, deadline)
    except Exception as exc:  # pdfminer fails where pypdf did not: keep the text as read
        logger.warning("%s: table detection failed, tables read as text: %s", path.name, exc)
        return pages, {}
    found: dict[str, pdf_tables.Cells] = {}
    out = list(pages)
    for index, cells in tables.items():
        out[index], placed = pdf_tables.place_tables(pages[index], cells, index)
        found.update((pdf_tables.marker(index, i), table) for i, table in enumerate(placed))
    return out, found


def _has_images(reader: PdfReader, sample: int = 5) -> bool:
    """Whether any of the first `sample` pages draws an image XObject."""
    try:
        for page in reader.pages[:sample]:
            resources = page.get("/Resources")
            xobjects = resources.get_object().get("/XObject") if resources else None
            if xobjects and any(
                xobjects[name].get_object().get("/Subtype") == "/Image" for name in xobjects
            ):
                return True
    except Exception:
        return False
    return False


def _page_has_image(reader: PdfReader, index: int) -> bool:
    """Whether page `index` draws an image, or a form that may hold one (some scanners wrap
    the page image in a form XObject)."""
    try:
        resources = reader.pages[index].get("/Resources")
        xobjects: Any = resources.get_object().get("/XObject") if resources else None
        return bool(xobjects) and any(
            xobjects[name].get_object().get("/Subtype") in ("/Image", "/Form")
            for name in xobjects
        )
    except Exception:
        return False


def _outline(reader: PdfReader) -> Outline:
    """Outline entries by page index, each with its title path (None when there is none)."""
    found: Outline = {}

    def walk(items: list[Any], parent: tuple[str, ...]) -> None:
        path = parent
        for item in items:
            if isinstance(item, list):
                walk(item, path)
                continue
            if not isinstance(item, Destination):
                continue
            title = clean_text(str(item.title or ""))[:200]
            if not title:
                continue
            path = (*parent, title)
            page = reader.get_destination_page_number(item)
            if page is not None and page >= 0:
                found.setdefault(page, []).append((title, path))

    try:
        walk(reader.outline, ())
    except Exception as exc:  # a broken outline costs the sections, not the text
        logger.warning("outline unreadable, sections left empty: %s", exc)
        return {}
    return found


def _metadata_title(reader: PdfReader) -> str:
    try:
        raw = reader.metadata.title if reader.metadata else None
    except Exception:
        return ""
    title = clean_text(str(raw or "")).removeprefix("Microsoft Word - ")
    return "" if title.lower() in {"", "untitled", "none"} else title


def _page_labels(reader: PdfReader) -> list[str] | None:
    try:
        if "/PageLabels" not in reader.root_object:
            return None
        return [str(label) for label in reader.page_labels]
    except Exception:
        return None


def _find_heading(lines: Sequence[str], start: int, title: str) -> tuple[int, int] | None:
    """Lines [i, j) that hold `title` (maybe numbered, maybe wrapped over two lines)."""
    wanted = compact(title)
    for i in range(start, len(lines)):
        line = compact(lines[i])
        if line == wanted:
            return i, i + 1
        if line.endswith(wanted) and _NUMBERING.fullmatch(line[: -len(wanted)]):
            return i, i + 1
        wrapped = i + 1 < len(lines) and len(line) < len(wanted)
        if wrapped and line + compact(lines[i + 1]) == wanted:
            return i, i + 2
    return None


@dataclass
class _Paragraphs:
    """Collects lines into paragraph blocks under the current section."""

    width: int
    words: set[str]
    compounds: set[str]
    blocks: list[Block] = field(default_factory=list)
    section: tuple[str, ...] = ()
    lines: list[str] = field(default_factory=list)
    page: int = 0
    page_end: int = 0
    chars: int = 0

    def add(self, line: str, page: int) -> None:
        line = line.strip()
        if not line:
            self.flush()
            return
        if self.lines and self._ends_paragraph(self.lines[-1], line, page):
            self.flush()
        if not self.lines:
            self.page = page
        self.lines.append(line)
        self.page_end = page
        self.chars += len(line)

    def _ends_paragraph(self, previous: str, line: str, page: int) -> bool:
        if starts_item(line):
            return True
        if _SPLIT_WORD.search(previous) and line[:1].islower():
            return False
        short = SHORT_SENTENCE_LINE if _SENTENCE_END.search(previous) else SHORT_LINE
        if display_width(previous) < short * self.width:
            return True
        return page != self.page_end and self.chars > MAX_CARRY_CHARS

    def heading(self, text: str, section: tuple[str, ...], page: int) -> None:
        self.flush()
        self.section = section
        self.blocks.append(Block(clean_text(text), section, page, page, "heading"))

    def table(self, cells: pdf_tables.Cells, page: int) -> None:
        """A table block; one that runs on from the previous page gets its header again."""
        self.flush()
        rows = pdf_tables.table_rows(cells)
        if not rows:
            return
        last = self.blocks[-1] if self.blocks else None
        if (
            last is not None
            and last.kind == "table"
            and last.section == self.section
            and last.page_end == page - 1
            and rows[0].count("|") == last.text.split("\n", 1)[0].count("|")
        ):
            header = last.text.split("\n", 1)[0]
            if rows[0] != header:
                rows.insert(0, header)
        self.blocks.append(Block("\n".join(rows), self.section, page, page, "table"))

    def enter(self, section: tuple[str, ...]) -> None:
        self.flush()
        self.section = section

    def flush(self) -> None:
        text = join_lines(self.lines, self.words, self.compounds)
        if text:
            self.blocks.append(Block(text, self.section, self.page, self.page_end))
        self.lines, self.chars = [], 0


def _blocks(
    pages: Sequence[Sequence[str]],
    outline: Outline,
    tables: dict[str, pdf_tables.Cells],
    words: set[str],
    compounds: set[str],
) -> list[Block]:
    width = typical_width([line for lines in pages for line in lines if line not in tables])
    paragraphs = _Paragraphs(width, words, compounds)

    def add(line: str, page: int) -> None:
        if line in tables:
            paragraphs.table(tables[line], page)
        else:
            paragraphs.add(line, page)

    for index, lines in enumerate(pages):
        page, cursor = index + 1, 0
        for title, section in outline.get(index, []):
            found = _find_heading(lines, cursor, title)
            if found is None:  # the title is not on the page: the section starts at the cursor
                paragraphs.enter(section)
                continue
            start, end = found
            for line in lines[cursor:start]:
                add(line, page)
            paragraphs.heading(" ".join(lines[start:end]), section, page)
            cursor = end
        for line in lines[cursor:]:
            add(line, page)
    paragraphs.flush()
    return paragraphs.blocks
