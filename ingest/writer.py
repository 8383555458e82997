"""How a parsed document becomes live: the one writer, staging, crash recovery.

    writer = Writer(store, store.collection)
    writer.write(meta, parsed)         # chunk, embed new passages, upsert, switch: its chunks
    staged = writer.stage(meta, path, had_version, parsed)  # chunked; `fresh` still to embed
    writer.switch(staged.meta, staged.chunks, staged.terms, staged.fresh, vectors)
    writer.commit(prepared)            # a document prepared elsewhere (ingest/prepare.py)
    recover(store)                     # after an interrupted run, under the write lock

A document's new passages are upserted into Chroma first (chunk ids are stable: passages
Chroma has keep their vectors), then the ledger switches to its new chunks in one transaction,
then the vectors that stopped being live are deleted; the store is marked dirty before the
first vector is written. A run killed in between leaves the old or the new version live and
some vectors no ledger row lists: `recover` collects them at the next run's start.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import IngestError
from core.ports import Vectors
from core.types import Chunk, DocMeta, ParsedDoc
from ingest.prepare import Prepared, chunk_document
from store.store import Store
from store.vectors import group_metadata

logger = logging.getLogger(__name__)

Parsed = ParsedDoc | Prepared | IngestError  # a file's parse, its prepared document, or why not


@dataclass
class Staged:
    """A file on its way to the ledger: chunked, with the passages Chroma lacks (`fresh`) still
    to embed; or prepared elsewhere (`--workers`); or failed."""

    meta: DocMeta
    label: str
    had_version: bool
    chunks: list[Chunk] = field(default_factory=list)
    terms: list[list[str]] = field(default_factory=list)
    fresh: list[int] = field(default_factory=list)
    prepared: Prepared | None = None
    error: IngestError | None = None

    def texts(self) -> list[str]:
        return [self.chunks[i].embed_text() for i in self.fresh]


class Writer:
    """Turns a parsed document into live chunks: chunk, tokenize, embed new passages, upsert,
    then switch the ledger."""

    def __init__(self, store: Store, collection: str) -> None:
        self.store = store
        self.collection = collection
        self.settings = store.settings

    def prepare(
        self, meta: DocMeta, parsed: ParsedDoc
    ) -> tuple[DocMeta, list[Chunk], list[list[str]]]:
        return chunk_document(self.settings, self.store.embedder, meta, parsed)

    def upsert(self, meta: DocMeta, chunks: Sequence[Chunk], skip_existing: bool = True) -> None:
        ids = [c.id for c in chunks]
        present = self.store.vectors.existing(self.collection, ids) if skip_existing else set()
        fresh = [c for c in chunks if c.id not in present]
        if not fresh:
            return
        self.store.ledger.set_meta("dirty", "1")
        logger.info("%s: embedding %d new passages", meta.path, len(fresh))
        vectors = self.store.embedder.embed_batch([c.embed_text() for c in fresh])
        metadata = group_metadata(meta.id, meta.groups)
        self.store.vectors.upsert(
            self.collection, [c.id for c in fresh], vectors, [metadata] * len(fresh)
        )

    def write(self, meta: DocMeta, parsed: ParsedDoc) -> int:
        meta, chunks, tokens = self.prepare(meta, parsed)
        self.upsert(meta, chunks)
        logger.info("%s: switching to %d live chunks", meta.path, len(chunks))
        stale = self.store.ledger.replace_document(meta, chunks, tokens)
        self.store.vectors.delete(self.collection, stale)
        return len(chunks)

    def fresh(self, chunks: Sequence[Chunk]) -> list[int]:
        """Indexes of the chunks Chroma lacks; the others keep their vectors (ids are stable)."""
        present = self.store.vectors.existing(self.collection, [c.id for c in chunks])
        return [i for i, c in enumerate(chunks) if c.id not in present]

    def stage(self, meta: DocMeta, path: Path, had_version: bool, result: Parsed) -> Staged:
        """Chunk a parsed file and find the passages it needs embedded (IngestErrors kept)."""
        staged = Staged(meta, str(path), had_version)
        if isinstance(result, IngestError):
            staged.error = result
        elif isinstance(result, Prepared):
            staged.prepared = result
        else:
            try:
                staged.meta, staged.chunks, staged.terms = self.prepare(meta, result)
            except IngestError as exc:
                staged.error = exc
                return staged
            staged.fresh = self.fresh(staged.chunks)
            if staged.fresh:
                logger.info("%s: embedding %d new passages", meta.path, len(staged.fresh))
        return staged

    def switch(
        self,
        meta: DocMeta,
        chunks: Sequence[Chunk],
        terms: Sequence[Sequence[str]],
        fresh: Sequence[int],
        vectors: Vectors,
    ) -> int:
        """Upsert `vectors[k]` as the vector of `chunks[fresh[k]]`, then make the document live
        in one ledger transaction and delete the vectors that stopped being live."""
        if fresh:
            self.store.ledger.set_meta("dirty", "1")
            self.store.vectors.upsert(
                self.collection,
                [chunks[i].id for i in fresh],
                vectors,
                [group_metadata(meta.id, meta.groups)] * len(fresh),
            )
        logger.info("%s: switching to %d live chunks", meta.path, len(chunks))
        stale = self.store.ledger.replace_document(meta, list(chunks), [list(t) for t in terms])
        self.store.vectors.delete(self.collection, stale)
        return len(chunks)

    def commit(self, prepared: Prepared) -> int:
        """`write` for a document prepared elsewhere (ingest/prepare.py): its vectors came with
        it, so nothing is embedded here; only passages Chroma lacks are upserted."""
        fresh = self.fresh(prepared.chunks)
        return self.switch(
            prepared.meta, prepared.chunks, prepared.terms, fresh, prepared.vectors[fresh]
        )


def recover(store: Store) -> None:
    """After an interrupted run: drop vectors the ledger does not list, staged chunks and
    collections that are not live. Only under the write lock: another run's unfinished work
    looks the same as an interrupted one's."""
    if not store.writing_now:
        raise RuntimeError("recover() runs only inside store.writing(): another run may be live")
    if store.ledger.get_meta("dirty") == "1":
        logger.info("recovering %s from an interrupted run", store.path)
        removed = store.vectors.collect_garbage(store.collection, set(store.ledger.chunk_ids()))
        store.ledger.clear_staging()
        for name in store.vectors.collections():
            if name.startswith(store.settings.store.collection) and name != store.collection:
                store.vectors.drop(name)
        store.ledger.set_meta("dirty", "0")
        logger.info("recovered from an interrupted run: %d orphan vectors removed", removed)
