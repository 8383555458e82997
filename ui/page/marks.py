"""The cited words marked on the page image of the source view.

`draw_boxes` is pure (an image and boxes in PDF points in, a new image out); `mark_page` finds
the quote's boxes on the page (ingest.parse.page_words: text layer, else OCR) and writes the marked
copy beside the rendered page.

    draw_boxes(Image.new("RGB", (100, 100), "white"), [(10, 10, 20, 20)], 72).getpixel((15, 15))
        -> (255, 237, 145)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw

from assistant.best_sentence import GAP, cells, is_row
from core.text import split_sentences
from ingest.parse.ocr import OcrOptions
from ingest.parse.page_words import Box, cited_boxes

logger = logging.getLogger(__name__)

FILL = (255, 214, 0, 110)  # translucent yellow, like a highlighter
EDGE = (230, 120, 0, 255)
PAD = 1.5  # points around each word
PAGE_DPI = 80  # the resolution the source view renders pages at


def draw_boxes(image: Image.Image, boxes: Sequence[Box], dpi: float) -> Image.Image:
    """A copy of the page image with each box (PDF points, top-left origin) highlighted."""
    scale = dpi / 72
    base = image.convert("RGBA")
    layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    for x0, top, x1, bottom in boxes:
        rect = ((x0 - PAD) * scale, (top - PAD) * scale, (x1 + PAD) * scale, (bottom + PAD) * scale)
        draw.rectangle(rect, fill=FILL, outline=EDGE, width=max(1, round(scale)))
    return Image.alpha_composite(base, layer).convert("RGB")


def what_to_mark(quote: str, passage_text: str) -> str:
    """The quote the answer cited (of a retrieval-only quote, its leading best sentence, which
    stands before the " … " gap), else the passage's first sentence.

    what_to_mark("", "请假。报销！") -> "请假。"
    what_to_mark("Pay is 5 days. … Leave is paid.", "") -> "Pay is 5 days."
    """
    if GAP in quote:
        quote = quote.split(GAP, 1)[0]
    if is_row(quote):  # a table row: its cells, as the page's words hold them
        quote = " ".join(cells(quote))
    if quote.strip():
        return quote
    sentences = split_sentences(passage_text)
    return sentences[0] if sentences else ""


def mark_page(
    image: Path, pdf: Path, page: int, quote: str, dpi: float, ocr: OcrOptions | None = None
) -> Path:
    """The rendered page with `quote` marked, written beside it; the page itself when the
    quote is not found on it."""
    target = image.with_name(f"m{abs(hash(quote)):x}-{image.name}")  # keeps "-p<page>.png"
    if target.exists():  # marked before (a scanned page's words cost an OCR run)
        return target
    boxes = cited_boxes(pdf, page, quote, ocr)
    if not boxes:
        return image
    with Image.open(image) as source:
        draw_boxes(source, boxes, dpi).save(target)
    logger.info("marked %d words on %s page %d", len(boxes), pdf.name, page)
    return target
