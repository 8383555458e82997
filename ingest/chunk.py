"""Structure- and sentence-aware chunking, sized in the embedder's tokens.

A chunk never crosses a heading: blocks are grouped by their heading path, each group is cut
into sentences (Chinese 。！？；… and English .!?), and sentences are packed greedily up to
`max_tokens` with about `overlap` tokens repeated from the end of the previous chunk. A sentence
longer than `max_tokens` is cut into windows. A table block is cut into its rows instead, and
a chunk that holds a row holds its table's header row before it (a table split over chunks
repeats its header). Chunk ids hash the document id, the heading path,
the text and its occurrence, so an unchanged passage keeps its id across runs.

    chunk_blocks("d1", [Block("请假。报销！", ("制度",))], count_many, 200, 30)[0].text
        -> "请假。报销！"
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

from core.text import CJK_CHAR, split_sentences
from core.types import Block, Chunk

CountMany = Callable[[Sequence[str]], list[int]]

# A numbered article or clause (第十二条, 第3条) opens a new passage: laws and Chinese policies
# are written in self-contained articles, and one article per passage cites precisely.
_ARTICLE = re.compile(r"^\s*第[一二三四五六七八九十百零〇两\d]+条")


@dataclass(frozen=True)
class _Sentence:
    text: str
    tokens: int
    page: int | None
    page_end: int | None
    block_start: bool  # the first sentence of its block (or a table row): after a line break
    header: _Sentence | None = None  # a table row's header row, which goes wherever it goes

    @property
    def opens_article(self) -> bool:
        return bool(_ARTICLE.match(self.text))


def _is_cjk(char: str) -> bool:
    return bool(CJK_CHAR.match(char))


def _join(sentences: Sequence[_Sentence]) -> str:
    out: list[str] = []
    for sentence in sentences:
        piece = sentence.text.strip()
        if out:
            if sentence.block_start:
                out.append("\n")
            elif not (_is_cjk(out[-1][-1]) or _is_cjk(piece[0])):
                out.append(" ")
        out.append(piece)
    return "".join(out)


def _windows(text: str, tokens: int, max_tokens: int) -> list[str]:
    """Cut an over-long sentence into pieces of about `max_tokens` (by character share)."""
    parts = -(-tokens // max_tokens)
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _units(block: Block) -> list[tuple[str, bool, bool]]:
    """(text, starts a line, is a table's header row) of a block: its sentences, or, for a
    table, its rows (the first is the header)."""
    if block.kind == "table":
        rows = [row for row in block.text.split("\n") if row.strip()]
        return [(row, True, i == 0 and len(rows) > 1) for i, row in enumerate(rows)]
    return [(piece, i == 0, False) for i, piece in enumerate(split_sentences(block.text))]


def _sentences(blocks: Sequence[Block], count_many: CountMany, max_tokens: int) -> list[_Sentence]:
    raw: list[tuple[str, Block, bool, bool]] = []
    for block in blocks:
        raw.extend((text, block, first, header) for text, first, header in _units(block))
    counts = count_many([piece for piece, _, _, _ in raw])
    out: list[_Sentence] = []
    header: _Sentence | None = None
    for (piece, block, first, is_header), tokens in zip(raw, counts, strict=True):
        if block.kind != "table":
            header = None
        # A header is kept whole with each row: its room is taken from the row's windows.
        room = max_tokens - (header.tokens if header and not is_header else 0)
        room = max(room, max_tokens // 2)
        pieces = [piece] if tokens <= room else _windows(piece, tokens, room)
        sub_counts = [tokens] if len(pieces) == 1 else count_many(pieces)
        for j, (sub, n) in enumerate(zip(pieces, sub_counts, strict=True)):
            page, end = block.page, block.page_end or block.page
            sentence = _Sentence(sub, n, page, end, first and j == 0, None if is_header else header)
            out.append(sentence)
            if is_header and len(pieces) == 1:
                header = sentence
    return out


def _with_headers(group: list[_Sentence]) -> list[_Sentence]:
    """The group with each table row's header in front of the first of its rows, when the
    group does not hold the header already."""
    out: list[_Sentence] = []
    for sentence in group:
        header = sentence.header
        if header is not None and not any(s is header for s in out):
            out.append(header)
        out.append(sentence)
    return out


def _size(group: Sequence[_Sentence]) -> int:
    return sum(s.tokens for s in _with_headers(list(group)))


def _chunk_id(doc_id: str, section: tuple[str, ...], text: str, occurrence: int) -> str:
    key = "\x1f".join((doc_id, *section, text, str(occurrence)))
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:24]


def _pack(sentences: list[_Sentence], max_tokens: int, overlap: int) -> list[list[_Sentence]]:
    """Greedy packing with a tail of earlier sentences (≤ overlap tokens) carried forward."""
    groups: list[list[_Sentence]] = []
    current: list[_Sentence] = []
    size = 0
    fresh = 0  # sentences in `current` not carried over from the previous chunk
    for sentence in sentences:
        if current and fresh and sentence.opens_article and size >= max_tokens // 4:
            groups.append(_with_headers(current))
            current, size, fresh = [], 0, 0
        if current and _size([*current, sentence]) > max_tokens and fresh:
            groups.append(_with_headers(current))
            tail: list[_Sentence] = []
            for prev in reversed(current):
                candidate = [prev, *tail]
                if _size(candidate) > overlap or _size([*candidate, sentence]) > max_tokens:
                    break
                tail = candidate
            current, fresh = tail, 0
        current.append(sentence)
        size = _size(current)
        fresh += 1
    if fresh:
        groups.append(_with_headers(current))
    return groups


def _only_headings(blocks: Sequence[Block]) -> bool:
    return all(b.kind == "heading" for b in blocks)


def chunk_blocks(
    doc_id: str,
    blocks: Sequence[Block],
    count_many: CountMany,
    max_tokens: int,
    overlap: int,
) -> list[Chunk]:
    """Chunks of one document, in document order, with stable ids.

    `max_tokens` bounds the passage text; the caller leaves room for the heading path that
    `Chunk.embed_text()` puts in front of it.
    """
    chunks: list[Chunk] = []
    seen: dict[tuple[tuple[str, ...], str], int] = {}
    groups = [(section, list(group)) for section, group in groupby(blocks, key=lambda b: b.section)]
    for i, (section, group) in enumerate(groups):
        following = groups[i + 1][0] if i + 1 < len(groups) else ()
        if _only_headings(group) and following[: len(section)] == section and following != section:
            continue  # a parent heading with no body: its text leads every child's heading path
        sentences = _sentences(group, count_many, max_tokens)
        for packed in _pack(sentences, max_tokens, overlap):
            text = _join(packed)
            pages = [s.page for s in packed if s.page is not None]
            ends = [s.page_end for s in packed if s.page_end is not None]
            occurrence = seen.get((section, text), 0)
            seen[(section, text)] = occurrence + 1
            chunks.append(
                Chunk(
                    id=_chunk_id(doc_id, section, text, occurrence),
                    doc_id=doc_id,
                    ordinal=len(chunks),
                    text=text,
                    section=section,
                    page=min(pages) if pages else None,
                    page_end=max(ends) if ends else None,
                )
            )
    return chunks
