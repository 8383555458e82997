"""The live chunks as one retrieval reads them: `Snapshot` holds their columns (ids, texts,
sections, pages), their BM25 index and the documents' titles, as of one ledger generation.

Access control and liveness are one boolean mask over those chunks (`Snapshot.allowed`), built
per set of groups and cached for the snapshot's life, as are the visible vectors of a mask that
the dense side searches exactly (`visible_vectors`) and which documents a newer version replaces
as a group set sees them (`superseded_for`).

    snap = Snapshot(store)
    snap.passage(snap.row_of[chunk_id], groups=["all"]).file -> "员工手册.pdf"
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from assistant.retrieve.lexical import BM25Index, TitleIndex
from core.types import DocRecord, Passage
from store.store import Store

# Which rows of a snapshot a set of groups may see (searchable documents only).
Mask = npt.NDArray[np.bool_]


class Snapshot:
    """The live chunks as of one ledger generation, with their BM25 index and group masks."""

    def __init__(self, store: Store) -> None:
        ledger = store.ledger
        self.generation = ledger.generation()
        self.collection = store.collection
        self.docs: dict[str, DocRecord] = {r.meta.id: r for r in ledger.documents()}
        # The columns of every live chunk, read from the ledger in batches while the BM25 index
        # is built from the same stream: a million chunks' token lists never sit in memory.
        self.ids: list[str] = []
        self.doc_ids: list[str] = []
        self.ordinals: list[int] = []
        self.texts: list[str] = []
        self.sections: list[tuple[str, ...]] = []
        self.pages: list[tuple[int | None, int | None]] = []
        # Each row's document as a number (len(docs) for one the ledger no longer lists), so a
        # group set's mask is one lookup per document, then one vectorised gather.
        self._doc_numbers = {doc_id: i for i, doc_id in enumerate(self.docs)}
        doc_index: list[npt.NDArray[np.int32]] = []

        def rows() -> Iterator[tuple[str, list[str]]]:
            missing = len(self._doc_numbers)
            for batch in ledger.chunk_batches():
                self.ids += batch.ids
                self.doc_ids += batch.doc_ids
                self.ordinals += batch.ordinals
                self.texts += batch.texts
                self.sections += batch.sections
                self.pages += batch.pages
                numbers = self._doc_numbers
                doc_index.append(
                    np.fromiter(
                        (numbers.get(d, missing) for d in batch.doc_ids),
                        dtype=np.int32,
                        count=len(batch.doc_ids),
                    )
                )
                yield from zip(batch.ids, batch.tokens, strict=True)

        self.bm25 = BM25Index.build(rows())
        self._doc_index = np.concatenate(doc_index) if doc_index else np.zeros(0, np.int32)
        self.row_of = {cid: i for i, cid in enumerate(self.ids)}
        self.superseded = self._superseded(self.docs.values())
        self._superseded_for: dict[frozenset[str], dict[str, str]] = {}
        self.titles = TitleIndex({doc_id: r.meta.title for doc_id, r in self.docs.items()})
        self._masks: dict[frozenset[str], Mask] = {}
        self._vectors: dict[bytes, tuple[list[str], npt.NDArray[np.float32]]] = {}

    @staticmethod
    def _superseded(records: Iterable[DocRecord]) -> dict[str, str]:
        """doc id -> version string, for documents that a newer one of their series replaces."""
        records = list(records)
        newest: dict[str, tuple[str, str]] = {}
        for record in records:
            meta = record.meta
            if meta.series:
                key = (meta.effective_date, meta.version)
                if meta.series not in newest or key > newest[meta.series]:
                    newest[meta.series] = key
        return {
            r.meta.id: r.meta.version or r.meta.effective_date
            for r in records
            if r.meta.series and (r.meta.effective_date, r.meta.version) < newest[r.meta.series]
        }

    def superseded_for(self, groups: Sequence[str]) -> dict[str, str]:
        """`superseded` among the documents these groups see: a newer version the asker may
        not see neither marks nor demotes the one they may."""
        key = frozenset(groups)
        if key not in self._superseded_for:
            self._superseded_for[key] = self._superseded(
                r for r in self.docs.values() if r.searchable and key & set(r.meta.groups)
            )
        return self._superseded_for[key]

    def allowed(self, groups: Sequence[str]) -> Mask:
        """The rows these groups may see: live chunks of searchable documents they share."""
        key = frozenset(groups)
        if key not in self._masks:
            visible = np.fromiter(
                (r.searchable and bool(key & set(r.meta.groups)) for r in self.docs.values()),
                dtype=bool,
                count=len(self.docs),
            )
            self._masks[key] = np.append(visible, False)[self._doc_index]
        return self._masks[key]

    def visible_vectors(
        self, allowed: Mask, store: Store
    ) -> tuple[list[str], npt.NDArray[np.float32]]:
        """The ids and vectors of the allowed rows, fetched from Chroma once per mask."""
        key = np.packbits(allowed).tobytes()
        if key not in self._vectors:
            ids = [self.ids[i] for i in np.flatnonzero(allowed)]
            self._vectors[key] = (ids, store.vectors.vectors(self.collection, ids))
        return self._vectors[key]

    def passage(self, row: int, score: float = 0.0, groups: Sequence[str] | None = None) -> Passage:
        """The passage of a row; `superseded` as the `groups` see it (all groups: None)."""
        record = self.docs[self.doc_ids[row]]
        superseded = self.superseded if groups is None else self.superseded_for(groups)
        page, page_end = self.pages[row]
        return Passage(
            chunk_id=self.ids[row],
            doc_id=record.meta.id,
            file=record.meta.path,
            text=self.texts[row],
            section=self.sections[row],
            page=page,
            page_end=page_end,
            page_labels=record.meta.page_labels,
            ocr_pages=record.meta.ocr_pages,
            score=score,
            title=record.meta.title,
            superseded=record.meta.id in superseded,
            groups=record.meta.groups,
            ordinal=self.ordinals[row],
        )
