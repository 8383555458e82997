"""PDF tables: found by pdfplumber (ruled tables), put back where pypdf's text has their cells.

pypdf reads a table as loose lines (one cell, or one visual row, per line), so a passage could
hold "800" without the row it belongs to. `find_tables` asks pdfplumber for the ruled tables of
the pages that draw lines at all; `place_tables` finds the run of pypdf lines that spells each
table and replaces it with one marker line, so the rest of the page's text is untouched. The
parser turns a marker into a table block of `| a | b |` rows, header first.

    table_rows([["城市级别", "住宿标准"], ["一线城市", "800"]])
        -> ["| 城市级别 | 住宿标准 |", "| 一线城市 | 800 |"]
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from pathlib import Path

from ingest.parse.clean import clean_text

logger = logging.getLogger(__name__)

Cells = list[list[str]]  # rows of cell texts, the header row first

MARK = "\x00table "
_KEY_DROP = re.compile(r"[\W_]+")  # what matching ignores: spaces, punctuation, symbols
_PATH = re.compile(rb"\s(?:re|l)\s")  # a rectangle or line path operator
# A 2 x 2 ruled table takes at least 4 rectangles (cells) or 6 lines; pages with fewer (a rule
# under the running header, a clip rectangle) are not worth pdfminer's layout pass.
MIN_PATHS = 4


def _key(text: str) -> str:
    """Letters, digits and CJK only: pdfplumber and pypdf differ in spaces and odd glyphs.

    _key("住宿标准（元/人·晚）") -> "住宿标准元人晚"
    """
    return _KEY_DROP.sub("", text).lower()


def _letters(number: int) -> str:
    """A number in lowercase letters, so a marker never looks like a running page number."""
    out = ""
    while True:
        number, digit = divmod(number, 26)
        out = chr(ord("a") + digit) + out
        if not number:
            return out


def marker(page: int, index: int) -> str:
    """The line that stands for table `index` of page `page` (unique, never a running line)."""
    return f"{MARK}{_letters(page)} {_letters(index)}"


def table_rows(cells: Cells) -> list[str]:
    """`| a | b |` lines, one per row that has any text.

    table_rows([["a", None], ["", ""]]) -> ["| a |  |"]
    """
    rows = []
    for row in cells:
        texts = [clean_text((cell or "").replace("\n", " ")) for cell in row]
        if any(texts):
            rows.append("| " + " | ".join(texts) + " |")
    return rows


def draws_lines(content: bytes) -> bool:
    """Whether a page's content stream draws enough rectangles or lines for a ruled table.

    draws_lines(b"0 0 m 10 0 l S 0 0 5 5 re f") -> False
    """
    count = 0
    for _ in _PATH.finditer(content):
        count += 1
        if count >= MIN_PATHS:
            return True
    return False


def find_tables(
    path: Path, password: str | None, pages: Sequence[int], deadline: float | None = None
) -> dict[int, list[Cells]]:
    """Ruled tables of the given 0-based pages, top to bottom, each with at least 2 rows and
    2 columns. A page pdfplumber cannot read just has none (the text stays as pypdf read it);
    past `deadline` (time.monotonic()) the remaining pages are not searched."""
    if not pages:
        return {}
    import pdfplumber  # only PDFs with drawn lines pay for loading pdfminer

    found: dict[int, list[Cells]] = {}
    wanted = sorted(set(pages))
    # Only the wanted pages: pdfplumber would otherwise set up every page of a long document.
    with pdfplumber.open(path, password=password or "", pages=[i + 1 for i in wanted]) as pdf:
        for page in pdf.pages:
            index = page.page_number - 1
            if deadline is not None and time.monotonic() > deadline:
                logger.warning("%s: table search stopped at page %d (time budget spent); "
                               "later tables are read as text", path.name, index + 1)
                break
            try:
                tables = sorted(page.find_tables(), key=lambda t: (t.bbox[1], t.bbox[0]))
                cells = [[[c or "" for c in row] for row in t.extract()] for t in tables]
            except Exception as exc:  # a table we cannot read costs its layout, not its text
                logger.warning("%s: page %d: table detection failed: %s", path.name, index + 1, exc)
                continue
            cells = [c for c in cells if len(c) >= 2 and max(len(r) for r in c) >= 2]
            if cells:
                found[index] = cells
            page.close()
    return found


def _cell_lines(lines: Sequence[str], start: int, cells: Cells) -> tuple[int, Cells] | None:
    """Lines from `start` that spell the table's cells in reading order (pypdf reads a table
    cell by cell or row by row): the end of that run and the cells with pypdf's text, which
    keeps glyphs pdfplumber may drop. None when the lines are in another order."""
    flat = [(r, c, _key(text)) for r, row in enumerate(cells) for c, text in enumerate(row)]
    flat = [item for item in flat if item[2]]
    out = [list(row) for row in cells]
    i, pending, spelled = start, "", ""
    pieces: list[str] = []
    for r, c, want in flat:
        while len(spelled) < len(want):
            if not pending:
                if i >= len(lines):
                    return None
                pending = _key(lines[i])
                i += 1
                if not pending:
                    continue
            take = len(want) - len(spelled)
            spelled += pending[:take]
            pending = pending[take:]
            pieces.append(lines[i - 1])
        if spelled != want:
            return None
        # A cell that is whole lines of pypdf text takes that text; else pdfplumber's stays.
        if not pending and _key("".join(pieces)) == want:
            out[r][c] = " ".join(piece.strip() for piece in pieces)
        spelled, pieces = "", []
    return (i, out) if not pending else None


def _segmentable(key: str, pieces: set[str], longest: int) -> bool:
    """Whether `key` is a concatenation of `pieces` (word break)."""
    reach = [True] + [False] * len(key)
    for end in range(1, len(key) + 1):
        for size in range(1, min(end, longest) + 1):
            if reach[end - size] and key[end - size : end] in pieces:
                reach[end] = True
                break
    return reach[-1]


def _loose_lines(lines: Sequence[str], start: int, cells: Cells) -> int | None:
    """The end of the run of lines from `start` made only of the table's cell lines, in any
    order (pypdf reads a wrapped cell's second line after the row); None when the run does not
    hold about the whole table."""
    pieces = {_key(part) for row in cells for cell in row for part in cell.splitlines()} - {""}
    longest = max((len(p) for p in pieces), default=0)
    total = sum(len(_key(cell)) for row in cells for cell in row)
    i, size = start, 0
    while i < len(lines) and size < total:
        key = _key(lines[i])
        if key and not _segmentable(key, pieces, longest):
            break
        size += len(key)
        i += 1
    return i if i > start and size == total else None


def place_tables(
    lines: Sequence[str], tables: Sequence[Cells], page: int
) -> tuple[list[str], list[Cells]]:
    """Replace the lines of each table with its marker; the tables found, in marker order.

    A table whose lines cannot be found is left out: its text stays as it was read.
    """
    out = list(lines)
    placed: list[Cells] = []
    cursor = 0
    for cells in tables:
        first = next((_key(cell) for row in cells for cell in row if _key(cell)), "")
        if not first:
            continue
        for start in range(cursor, len(out)):
            key = _key(out[start])
            if not key or not (key.startswith(first) or first.startswith(key)):
                continue
            exact = _cell_lines(out, start, cells)
            end = exact[0] if exact else _loose_lines(out, start, cells)
            if end is None:
                continue
            out[start:end] = [marker(page, len(placed))]
            placed.append(exact[1] if exact else cells)
            cursor = start + 1
            break
        else:
            logger.debug("page %d: a table's lines were not found; its text stays", page + 1)
    return out, placed
