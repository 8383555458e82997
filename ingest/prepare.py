"""One parsed document made ready to commit: its passages, their BM25 terms and their vectors.

    meta, chunks, terms = chunk_document(settings, embedder, meta, parsed)
    prepared = prepare(settings, embedder, meta, parsed)   # the same, plus a vector per chunk

`chunk_document` is what every writer does before it embeds; `prepare` also embeds every
passage (unchanged ones come from the embedding cache), so that a process that cannot see the
store (an embedding worker of `kb ingest --workers N`, a `kb worker` before it takes the write
lock) hands over everything the writer needs: `Writer.commit(prepared)` in ingest/writer.py.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from core.config import Settings
from core.errors import TooManyChunks
from core.ports import Embedder, Vectors
from core.text import detect_lang, tokenize
from core.types import Chunk, DocMeta, ParsedDoc
from ingest.chunk import chunk_blocks

logger = logging.getLogger(__name__)

PREFIX_ROOM = 32  # tokens left for the heading path in front of each passage


@dataclass(frozen=True)
class Prepared:
    """A document ready to become live: `vectors[i]` is the vector of `chunks[i]`; `embedded`
    counts the texts computed for it (cache misses)."""

    meta: DocMeta
    chunks: list[Chunk]
    terms: list[list[str]]
    vectors: Vectors
    embedded: int = 0


def printed_labels(labels: Sequence[str] | None) -> tuple[str, ...]:
    """A PDF's page labels worth keeping: () when they are just the page numbers.

    printed_labels(["i", "ii", "1"]) -> ("i", "ii", "1");  printed_labels(["1", "2"]) -> ()
    """
    if not labels or all(label == str(n) for n, label in enumerate(labels, start=1)):
        return ()
    return tuple(labels)


def lexical_terms(title: str, chunks: Sequence[Chunk]) -> list[list[str]]:
    """The BM25 terms of each chunk: its document's title, heading path and text."""
    title_terms = tokenize(title)
    return [title_terms + tokenize(c.embed_text()) for c in chunks]


def chunk_document(
    settings: Settings, embedder: Embedder, meta: DocMeta, parsed: ParsedDoc
) -> tuple[DocMeta, list[Chunk], list[list[str]]]:
    """The passages of `parsed` (sized in the embedder's tokens) with their terms, and `meta`
    completed from the parse (title, language, page labels, OCR pages, and the hash of the
    bytes parsed where the parse knows it); TooManyChunks past `ingest.max_chunks`."""
    size = min(settings.ingest.chunk_tokens, embedder.max_tokens - PREFIX_ROOM)
    chunks = chunk_blocks(
        meta.id, parsed.blocks, embedder.count_tokens_many, size, settings.ingest.chunk_overlap
    )
    if len(chunks) > settings.ingest.max_chunks:
        raise TooManyChunks(
            f"{Path(meta.path).name}: {len(chunks)} passages is over ingest.max_chunks = "
            f"{settings.ingest.max_chunks} (split the file, or raise the limit)"
        )
    sample = "".join(c.text for c in chunks[:20])
    meta = replace(
        meta,
        title=meta.title or parsed.title or Path(meta.path).stem,
        lang=detect_lang(sample) if sample else "en",
        page_labels=printed_labels(parsed.page_labels),
        ocr_pages=parsed.ocr_pages,
        sha256=parsed.sha256 or meta.sha256,
    )
    return meta, chunks, lexical_terms(meta.title, chunks)


def prepare(settings: Settings, embedder: Embedder, meta: DocMeta, parsed: ParsedDoc) -> Prepared:
    """`chunk_document`, then every passage embedded (through the cache, where there is one)."""
    meta, chunks, terms = chunk_document(settings, embedder, meta, parsed)
    before = int(getattr(embedder, "computed", 0))
    logger.info("%s: embedding %d passages", meta.path, len(chunks))
    if chunks:
        vectors = embedder.embed_batch([c.embed_text() for c in chunks])
    else:
        vectors = np.empty((0, embedder.dim), dtype=np.float32)
    embedded = int(getattr(embedder, "computed", 0)) - before
    return Prepared(meta, chunks, terms, vectors, embedded)
