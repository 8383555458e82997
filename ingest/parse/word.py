"""DOCX -> blocks with python-docx: body paragraphs and tables in document order.

Each paragraph is a block under the heading path in effect (Title is level 0, Heading 1-9 /
标题 1-9 / outline-level paragraphs are levels 1-9); each heading is also a block of its own
(kind "heading"). A table is one block of rows `| a | b |`, standing where it stands; a merged
cell is written once. The paragraphs of a text box, and the footnotes and endnotes a paragraph
or table refers to, follow it as blocks of their own under the same heading path. Headers,
footers and comments are left out.

Before python-docx sees the file, every XML part is checked: a part that declares a DOCTYPE
(the door to external and recursive entities) makes the file refused, whatever the parser's
entity settings are.

    parse_docx(Path("leave.docx")).blocks[0] -> Block(text="请假制度", section=("请假制度",), kind="heading")
"""  # noqa: E501

from __future__ import annotations

import logging
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docx
from docx.document import Document
from docx.oxml import parse_xml
from docx.text.paragraph import Paragraph

from core.errors import BrokenFile, NoText, TooLarge, TooManyBlocks, UnsupportedFile
from core.types import Block, ParsedDoc
from ingest.parse.clean import clean_text

logger = logging.getLogger(__name__)

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
# Word writes each text box twice: as DrawingML (mc:Choice) and as VML in mc:Fallback.
MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# Relationship type (its last segment) -> the note element that part holds.
NOTE_PARTS = {"footnotes": "footnote", "endnotes": "endnote"}
NOTE_SEPARATORS = {"separator", "continuationSeparator", "continuationNotice"}
MAX_UNPACKED_BYTES = 1 << 30  # larger when unpacked, media included: refused as a zip bomb
DEFAULT_MAX_XML_BYTES = 64 << 20  # ingest.max_unpacked_mb: the XML python-docx would parse
DEFAULT_MAX_BLOCKS = 50_000  # ingest.max_blocks
_HEADING_NAME = re.compile(
    r"(?:heading|标题|標題|titre|überschrift|encabezado|título|titolo|kop|заголовок|見出し|제목)"
    r"\s*([1-9])",
    re.IGNORECASE,
)
_TITLE_NAMES = {"title", "标题", "標題", "titre", "titel", "título", "titolo", "заголовок"}
_DOCTYPE = (b"<!DOCTYPE", b"<!ENTITY")
_STRICT_OOXML = b"purl.oclc.org/ooxml/officeDocument"


def parse_docx(path: Path, max_xml_bytes: int = DEFAULT_MAX_XML_BYTES,
               max_blocks: int = DEFAULT_MAX_BLOCKS) -> ParsedDoc:
    """Parse a .docx; raises BrokenFile, TooLarge (XML unpacking past `max_xml_bytes`: a zip
    bomb), TooManyBlocks (more than `max_blocks` paragraphs and tables, empty ones included,
    or blocks: counted as they come, so a file of a million empty paragraphs stops early),
    UnsupportedFile or NoText for files it cannot use."""
    _check_package(path, max_xml_bytes)
    try:
        document = docx.Document(str(path))
    except Exception as exc:
        raise BrokenFile(
            f"{path.name}: python-docx cannot open it ({type(exc).__name__}: {exc}); "
            "open and re-save it in Word, or remove the file"
        ) from exc
    levels = _style_levels(document)
    notes = _notes(document)
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    first_heading = ""
    for count, element in enumerate(_body_elements(document.element.body), start=1):
        if count > max_blocks or len(blocks) > max_blocks:
            raise TooManyBlocks(
                f"{path.name}: more than {max_blocks} paragraphs, tables or blocks (empty "
                f"paragraphs included) is over ingest.max_blocks = {max_blocks} (split the "
                "file, or raise the limit)"
            )
        section = tuple(text for _, text in stack)
        if element.tag == f"{W}tbl":
            rows = _table_rows(element, document)
            if rows:
                blocks.append(Block("\n".join(rows), section, kind="table"))
        elif text := clean_text(Paragraph(element, document).text):
            level = _paragraph_level(element, levels)
            if level is None:
                blocks.append(Block(text, section))
            else:
                text = " ".join(text.split())
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
                section = tuple(t for _, t in stack)
                blocks.append(Block(text, section, kind="heading"))
                if not first_heading and level <= 1:
                    first_heading = text
        blocks.extend(Block(text, section) for text in _held_texts(element, document, notes))
    if not blocks:
        raise NoText(f"{path.name}: the document body has no text")
    return ParsedDoc(blocks=blocks, title=_core_title(document) or first_heading or path.stem)


def _is_xml(name: str) -> bool:
    return name.endswith((".xml", ".rels"))


def _check_package(path: Path, max_xml_bytes: int) -> None:
    """Refuse packages that are not Word documents, unpack too large, or declare a DOCTYPE."""
    try:
        with zipfile.ZipFile(path) as package:
            infos = package.infolist()
            names = {info.filename for info in infos}
            if "word/document.xml" not in names:
                raise BrokenFile(
                    f"{path.name}: a zip file without word/document.xml, not a Word document "
                    "(re-save it as .docx or remove it)"
                )
            rels = package.read("_rels/.rels") if "_rels/.rels" in names else b""
            if _STRICT_OOXML in rels:
                raise UnsupportedFile(
                    f"{path.name}: a Strict Open XML document, which python-docx cannot read "
                    "(in Word: Save As > Word Document (.docx), then ingest that)"
                )
            xml = sum(info.file_size for info in infos if _is_xml(info.filename))
            if xml > max_xml_bytes:
                raise TooLarge(
                    f"{path.name}: its XML unpacks to {xml / 1024 / 1024:.0f} MiB, over "
                    f"ingest.max_unpacked_mb = {max_xml_bytes / 1024 / 1024:g} (a zip bomb, or "
                    "a document to split); remove or split the file"
                )
            if sum(info.file_size for info in infos) > MAX_UNPACKED_BYTES:
                raise BrokenFile(
                    f"{path.name}: unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB "
                    "(a zip bomb?); remove the file"
                )
            for info in infos:
                if _is_xml(info.filename) and _declares_doctype(
                    package.read(info)
                ):
                    raise BrokenFile(
                        f"{path.name}: part {info.filename} declares a DOCTYPE or entities, "
                        "refused for safety (re-save the file in Word, or remove it)"
                    )
    except (BrokenFile, TooLarge, UnsupportedFile):
        raise
    except Exception as exc:  # BadZipFile, truncated members, bad compression, ...
        raise BrokenFile(
            f"{path.name}: the .docx package is damaged ({type(exc).__name__}: {exc}); "
            "open and re-save it in Word, or remove the file"
        ) from exc


def _declares_doctype(data: bytes) -> bool:
    """Whether an XML part holds a DOCTYPE or ENTITY declaration (UTF-8 or UTF-16).

    _declares_doctype(b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///">]>') -> True
    """  # noqa: E501
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:4]:
        data = data.decode("utf-16", errors="replace").encode("utf-8")
    return any(marker in data for marker in _DOCTYPE)


def _body_elements(body: Any) -> Iterator[Any]:
    """The body's paragraphs and tables in order, looking inside content controls (w:sdt)."""
    for child in body.iterchildren():
        if child.tag in (f"{W}p", f"{W}tbl"):
            yield child
        elif child.tag in (f"{W}sdt", f"{W}customXml"):
            content = child.find(f"{W}sdtContent") if child.tag == f"{W}sdt" else child
            if content is not None:
                yield from _body_elements(content)


def _notes(document: Document) -> dict[tuple[str, str], str]:
    """(footnote/endnote, id) -> the note's text, separators left out; {} when unreadable."""
    notes: dict[tuple[str, str], str] = {}
    for rel in document.part.rels.values():
        kind = NOTE_PARTS.get(rel.reltype.rsplit("/", 1)[-1])
        if kind is None or rel.is_external:
            continue
        try:
            root = parse_xml(rel.target_part.blob)
        except Exception as exc:
            logger.warning("%s part unreadable, its notes left out: %s", kind, exc)
            continue
        for note in root.iterchildren(f"{W}{kind}"):
            if note.get(f"{W}type") in NOTE_SEPARATORS:
                continue
            text = clean_text(" ".join(Paragraph(p, document).text for p in note.iter(f"{W}p")))
            if text:
                notes[(kind, note.get(f"{W}id", ""))] = text
    return notes


def _held_texts(element: Any, document: Document, notes: dict[tuple[str, str], str]) -> list[str]:
    """What a body paragraph or table holds beyond its own text, in order: the paragraphs of
    its text boxes (the VML fallback copy skipped), then the notes it refers to."""
    texts: list[str] = []
    for box in _not_fallback(element.iter(f"{W}txbxContent")):
        for p in box.iterchildren(f"{W}p"):
            if text := clean_text(Paragraph(p, document).text):
                texts.append(text)
    for ref in _not_fallback(element.iter(f"{W}footnoteReference", f"{W}endnoteReference")):
        kind = ref.tag[len(W) : -len("Reference")]
        if note := notes.get((kind, ref.get(f"{W}id", ""))):
            texts.append(note)
    return texts


def _not_fallback(elements: Iterator[Any]) -> Iterator[Any]:
    return (e for e in elements if not any(a.tag == MC_FALLBACK for a in e.iterancestors()))


def _name_level(name: str) -> int | None:
    """Heading level a style name stands for: Title 0, Heading n / 标题 n n.

    _name_level("标题 2") -> 2
    """
    name = name.strip().lower()
    if name in _TITLE_NAMES:
        return 0
    match = _HEADING_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def _outline_level(ppr: Any) -> int | None:
    """Level (1-9) from a w:pPr's w:outlineLvl (0-8); 9 means body text."""
    if ppr is None:
        return None
    found = ppr.find(f"{W}outlineLvl")
    value = found.get(f"{W}val") if found is not None else None
    if value is None or not value.isdigit() or int(value) > 8:
        return None
    return int(value) + 1


def _style_levels(document: Document) -> dict[str, int]:
    """Paragraph style id -> heading level, following basedOn for outline levels."""
    try:
        styles = document.styles.element
    except Exception as exc:
        logger.warning("styles unreadable, no headings from styles: %s", exc)
        return {}
    own: dict[str, int | None] = {}
    based_on: dict[str, str] = {}
    for style in styles.iterchildren(f"{W}style"):
        if style.get(f"{W}type") != "paragraph" or style.get(f"{W}styleId") is None:
            continue
        style_id = style.get(f"{W}styleId")
        name = style.find(f"{W}name")
        level = _name_level(name.get(f"{W}val", "") if name is not None else "")
        own[style_id] = level if level is not None else _outline_level(style.find(f"{W}pPr"))
        parent = style.find(f"{W}basedOn")
        if parent is not None and parent.get(f"{W}val"):
            based_on[style_id] = parent.get(f"{W}val")
    levels: dict[str, int] = {}
    for style_id in own:
        current: str | None = style_id
        for _ in range(10):  # basedOn chains are short; a cycle stops here
            if current is None or current not in own:
                break
            if own[current] is not None:
                levels[style_id] = own[current]  # type: ignore[assignment]
                break
            current = based_on.get(current)
    return levels


def _paragraph_level(element: Any, levels: dict[str, int]) -> int | None:
    ppr = element.find(f"{W}pPr")
    own = _outline_level(ppr)
    if own is not None:
        return own
    style = ppr.find(f"{W}pStyle") if ppr is not None else None
    return levels.get(style.get(f"{W}val", "")) if style is not None else None


def _cell_text(tc: Any, document: Document) -> str:
    parts: list[str] = []
    for child in tc.iterchildren():
        if child.tag == f"{W}p":
            parts.append(Paragraph(child, document).text)
        elif child.tag == f"{W}tbl":
            parts.extend(_table_rows(child, document))
    return clean_text(" ".join(parts).replace("\n", " "))


def _table_rows(tbl: Any, document: Document) -> list[str]:
    """Rows as `| a | b |`; the continuation of a vertically merged cell is left empty."""
    rows: list[str] = []
    for tr in tbl.iterchildren(f"{W}tr"):
        cells: list[str] = []
        for tc in tr.iterchildren(f"{W}tc"):
            merge = tc.find(f"{W}tcPr/{W}vMerge")
            continued = merge is not None and merge.get(f"{W}val", "continue") == "continue"
            cells.append("" if continued else _cell_text(tc, document))
        if any(cells):
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def _core_title(document: Document) -> str:
    try:
        return clean_text(document.core_properties.title or "")
    except Exception:
        return ""
