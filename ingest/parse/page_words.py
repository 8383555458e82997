"""Where a quoted sentence stands on a PDF page: the boxes of its words.

Words and their boxes come from the page's text layer (pdfplumber), or from OCR for a page that
has none; `find_boxes` matches the quote against the words ignoring spaces and punctuation (the
text layer and the passage differ in both), so the source view can mark it on the page image.

    find_boxes([Word("Sick", (10, 20, 30, 30)), Word("leave", (32, 20, 60, 30))], "sick leave")
        -> [(10, 20, 30, 30), (32, 20, 60, 30)]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

from ingest.parse.ocr import OcrOptions, Word, check_tesseract, ocr_page

logger = logging.getLogger(__name__)

Box = tuple[float, float, float, float]  # x0, top, x1, bottom in PDF points from the top left
_DROP = re.compile(r"[\W_]+")


def _key(text: str) -> str:
    return _DROP.sub("", text).lower()


def find_boxes(words: Sequence[Word], quote: str) -> list[Box]:
    """The boxes of the words that spell `quote` (its first occurrence); [] when it is not on
    the page. A word only partly in the quote is boxed whole."""
    want = _key(quote)
    if not want:
        return []
    starts: list[int] = []
    spelled = ""
    for word in words:
        starts.append(len(spelled))
        spelled += _key(word.text)
    at = spelled.find(want)
    if at < 0:
        return []
    end = at + len(want)
    out = []
    for word, start in zip(words, starts, strict=True):
        stop = start + len(_key(word.text))
        if stop > at and start < end:
            out.append(word.box)
    return out


def page_words(path: Path, page: int, ocr: OcrOptions | None = None) -> list[Word]:
    """The words of 1-based `page` with their boxes: the text layer's, else OCR's (when `ocr`
    is given and Tesseract is installed); [] when neither can be read."""
    import pdfplumber

    try:
        with pdfplumber.open(path) as pdf:
            found = pdf.pages[page - 1].extract_words(use_text_flow=True)
    except Exception as exc:
        logger.warning("%s: page %d: words unreadable: %s", path.name, page, exc)
        return []
    words = [Word(w["text"], (w["x0"], w["top"], w["x1"], w["bottom"])) for w in found]
    if words or ocr is None:
        return words
    try:
        check_tesseract(ocr.languages)
        return ocr_page(path, page - 1, ocr).words
    except Exception as exc:
        logger.warning("%s: page %d: OCR for word boxes failed: %s", path.name, page, exc)
        return []


def cited_boxes(path: Path, page: int, quote: str, ocr: OcrOptions | None = None) -> list[Box]:
    """The boxes of `quote` on 1-based `page` of the PDF at `path`.

    cited_boxes(Path("leave.pdf"), 2, "Sick leave is paid") -> [(72.0, 90.1, 98.4, 102.3), ...]
    """
    return find_boxes(page_words(path, page, ocr), quote)
