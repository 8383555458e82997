"""OCR of PDF pages without a text layer: the page rendered by pdfium, read by Tesseract.

Runs inside the parse worker, so a long scan is under `ingest.file_timeout_s` like any file.
Tesseract runs on one thread (OMP_THREAD_LIMIT=1): the parse workers are the parallelism, and
on 2 cores its own threads made a page about 3x slower.
Tesseract's TSV output gives words with their boxes; words become lines (Tesseract's own line
grouping), and a blank line separates its paragraphs, so the PDF parser's paragraph rules apply
to OCR text as to any other.

    ocr_page(Path("scan.pdf"), 0, OcrOptions(200, "chi_sim+eng"))
        -> OcrPage(lines=["第一条 职工请假应当提前3个工作日提出申请。", ""], words=[...])
"""

from __future__ import annotations

import csv
import io
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from core.config import IngestSettings
from core.errors import NoText
from core.text import CJK_CHAR

logger = logging.getLogger(__name__)

PACKAGES = "tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng"
PAGE_TIMEOUT_S = 300.0  # one page; the worker's per-file limit usually ends a long scan first


@dataclass(frozen=True)
class OcrOptions:
    dpi: int = 200
    languages: str = "chi_sim+eng"


def ocr_options(settings: IngestSettings) -> OcrOptions | None:
    """The OCR options of `[ingest]`; None when `ingest.ocr` is off."""
    return OcrOptions(settings.ocr_dpi, settings.ocr_languages) if settings.ocr else None


@dataclass(frozen=True)
class Word:
    """A word and its box in PDF points, from the page's top-left corner (x0, top, x1, bottom)."""

    text: str
    box: tuple[float, float, float, float]


@dataclass(frozen=True)
class OcrPage:
    lines: list[str]
    words: list[Word] = field(default_factory=list)


def check_tesseract(languages: str) -> str:
    """The tesseract executable; NoText naming the packages to install when it or a language
    pack is missing."""
    exe = shutil.which("tesseract")
    if exe is None:
        raise NoText(
            "no text layer: needs OCR, and Tesseract is not installed (install the Debian "
            f"packages {PACKAGES}, e.g. scripts/install_ocr.sh; or set ingest.ocr = false)"
        )
    listed = subprocess.run(
        [exe, "--list-langs"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.split()
    missing = [lang for lang in languages.split("+") if lang not in listed]
    if missing:
        raise NoText(
            f"no text layer: needs OCR, and Tesseract lacks the language data {missing} "
            f"(install {PACKAGES}, or change ingest.ocr_languages)"
        )
    return exe


def _join(words: list[str]) -> str:
    """Words of one line: no space between two CJK characters.

    _join(["请假", "制度", "HR", "Links"]) -> "请假制度 HR Links"
    """
    out = ""
    for word in words:
        if out and not (CJK_CHAR.match(out[-1]) and CJK_CHAR.match(word[0])):
            out += " "
        out += word
    return out


def read_tsv(tsv: str, scale: float) -> OcrPage:
    """Tesseract TSV -> lines (a blank line between paragraphs) and word boxes in points."""
    lines: list[str] = []
    words: list[Word] = []
    current: list[str] = []
    line_key: tuple[str, ...] = ()
    par_key: tuple[str, ...] = ()
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        par = (row["page_num"], row["block_num"], row["par_num"])
        key = (*par, row["line_num"])
        if key != line_key and current:
            lines.append(_join(current))
            current = []
            if par != par_key:
                lines.append("")
        line_key, par_key = key, par
        current.append(text)
        left, top = float(row["left"]) * scale, float(row["top"]) * scale
        width, height = float(row["width"]) * scale, float(row["height"]) * scale
        words.append(Word(text, (left, top, left + width, top + height)))
    if current:
        lines.append(_join(current))
    return OcrPage(lines, words)


def _render(path: Path, index: int, dpi: int, password: str | None, target: Path) -> None:
    import pypdfium2  # loaded only by files that need OCR

    document = pypdfium2.PdfDocument(path, password=password)
    try:
        image = document[index].render(scale=dpi / 72).to_pil()
        image.save(target)
    finally:
        document.close()


def ocr_page(
    path: Path, index: int, options: OcrOptions, password: str | None = None, exe: str = ""
) -> OcrPage:
    """The text of page `index` (0-based) read by Tesseract (`exe`: from `check_tesseract`)."""
    exe = exe or check_tesseract(options.languages)
    with tempfile.TemporaryDirectory(prefix="kb-ocr-") as tmp:
        image = Path(tmp) / "page.png"
        _render(path, index, options.dpi, password, image)
        done = subprocess.run(
            [exe, str(image), "stdout", "-l", options.languages, "--dpi", str(options.dpi), "tsv"],
            capture_output=True,
            text=True,
            timeout=PAGE_TIMEOUT_S,
            check=False,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        )
    if done.returncode != 0:
        logger.warning("%s: page %d: tesseract failed: %s", path.name, index + 1, done.stderr)
        return OcrPage([])
    logger.info("%s: page %d: OCR at %d dpi", path.name, index + 1, options.dpi)
    return read_tsv(done.stdout, 72 / options.dpi)


def image_only_pdf(path: Path, index: int, folder: Path, dpi: int) -> Path:
    """Page `index` of `path` as a one-page PDF that holds only its image (a "scan"), for tests
    and the benchmark."""
    from PIL import Image

    png = folder / f"{path.stem}-{index + 1}.png"
    _render(path, index, dpi, None, png)
    out = folder / f"{path.stem}-{index + 1}-scan.pdf"
    with Image.open(png) as image:
        image.convert("RGB").save(out, resolution=float(dpi))
    return out
