"""Structure- and sentence-aware chunking, sized in the embedder's tokens.

A chunk never crosses a heading: blocks are grouped by their heading path, each group is cut
into sentences (Chinese 。！？；… and English .!?), and sentences are packed greedily up to
`max_tokens` with about `overlap` tokens repeated from the end of the previous chunk. A sentence
longer than `max_tokens` is cut into windows. Chunk ids hash the document id, the heading path,
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
    block_start: bool  # the first sentence of its block: joined with a line break

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


def _sentences(blocks: Sequence[Block], count_many: CountMany, max_tokens: int) -> list[_Sentence]:
    raw: list[tuple[str, Block, bool]] = []
    for block in blocks:
        for i, piece in enumerate(split_sentences(block.text)):
            raw.append((piece, block, i == 0))
    counts = count_many([piece for piece, _, _ in raw])
    out: list[_Sentence] = []
    for (piece, block, first), tokens in zip(raw, counts, strict=True):
        pieces = [piece] if tokens <= max_tokens else _windows(piece, tokens, max_tokens)
        sub_counts = [tokens] if len(pieces) == 1 else count_many(pieces)
        for j, (sub, n) in enumerate(zip(pieces, sub_counts, strict=True)):
            out.append(
                _Sentence(sub, n, block.page, block.page_end or block.page, first and j == 0)
            )
    return out


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
            groups.append(current)
            current, size, fresh = [], 0, 0
        if current and size + sentence.tokens > max_tokens and fresh:
            groups.append(current)
            tail: list[_Sentence] = []
            tail_size = 0
            for prev in reversed(current):
                if (
                    tail_size + prev.tokens > overlap
                    or tail_size + prev.tokens + sentence.tokens > max_tokens
                ):
                    break
                tail.insert(0, prev)
                tail_size += prev.tokens
            current, size, fresh = tail, tail_size, 0
        current.append(sentence)
        size += sentence.tokens
        fresh += 1
    if fresh:
        groups.append(current)
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
