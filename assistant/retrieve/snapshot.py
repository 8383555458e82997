"""The live chunks as one retrieval reads them: `Snapshot` holds their columns (ids, texts,
sections, pages), their BM25 index and the documents' titles, as of one ledger generation.

Access control, liveness and policy dates are one boolean mask over those chunks
(`Snapshot.allowed`), built per set of groups and day, as are the visible vectors of a mask that
the dense side searches exactly (`visible_vectors`) and which documents a newer version replaces
as a group set sees them (`superseded_for`). A document before its effective date or after its
expiry (core/policy_dates.py) is masked out like one of another group; the caches hold while the
documents in force stay the same, so a long-running process answers by the new day's documents
the morning one expires, without rebuilding its BM25 index.

    snap = Snapshot(store)
    snap.passage(snap.row_of[chunk_id], groups=["all"], day=date.today()).file -> "员工手册.pdf"
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from assistant.retrieve.lexical import BM25Index, TitleIndex
from assistant.retrieve.owners import OwnerIndex
from assistant.retrieve.spelling import Speller, dictionary_english
from core.policy_dates import has_taken_effect, out_of_force, review_overdue
from core.types import Chunk, DocRecord, Passage
from store.store import Store

# Which rows of a snapshot a set of groups may see (searchable documents only).
Mask = npt.NDArray[np.bool_]


@dataclass
class _DayView:
    """What the snapshot's documents' dates decide on the days that share them: the documents
    out of force, and the masks and superseded versions drawn under that (a new view, swapped
    in whole, when a day changes them: readers on other threads keep the one they hold)."""

    day: dt.date | None
    out: frozenset[str]  # documents not in force
    future: frozenset[str]  # documents whose effective date has not come
    overdue: dict[str, str]  # doc id -> its passed review-by date
    masks: dict[frozenset[str], Mask] = field(default_factory=dict)
    superseded_for: dict[frozenset[str], dict[str, str]] = field(default_factory=dict)


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
        self.titles = TitleIndex({doc_id: r.meta.title for doc_id, r in self.docs.items()})
        self.owners = OwnerIndex({doc_id: r.meta.title for doc_id, r in self.docs.items()})
        # the library's spellings of a question's misspelt words, read on the first that has one
        self.speller = Speller(self.bm25.vocab, self.texts, dictionary_english)
        self._any_day = _DayView(None, frozenset(), frozenset(), {})
        self._view = self._any_day
        self._vectors: dict[bytes, tuple[list[str], npt.NDArray[np.float32]]] = {}
        # set once what its first questions would build is built (`Retriever.prepare`)
        self.prepared = threading.Event()

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

    def names_other(self, question: str, lang: str) -> bool:
        """Whether the question names an organisation (`owners.py`) whose documents are all in
        another language than `lang`."""
        named = self.owners.named(question)
        return bool(named) and all(self.docs[d].meta.lang != lang for d in named)

    def day_view(self, day: dt.date | None) -> _DayView:
        """The documents' dates as of `day` (None: every day, dates ignored), with the caches
        of the days that put the same documents out of force."""
        view = self._view
        if day is None or view.day == day:
            return self._any_day if day is None else view
        metas = [r.meta for r in self.docs.values()]
        out = frozenset(m.id for m in metas if out_of_force(m, day))
        future = frozenset(m.id for m in metas if not has_taken_effect(m, day))
        overdue = {m.id: due for m in metas if (due := review_overdue(m, day))}
        if (out, future) == (view.out, view.future):
            view = _DayView(day, out, future, overdue, view.masks, view.superseded_for)
        else:
            view = _DayView(day, out, future, overdue)
        self._view = view
        return view

    def superseded_for(self, groups: Sequence[str], day: dt.date | None = None) -> dict[str, str]:
        """`superseded` among the documents these groups see, of the versions that have taken
        effect by `day`: a newer version the asker may not see, or one not yet in force,
        neither marks nor demotes the one they may."""
        key, view = frozenset(groups), self.day_view(day)
        if key not in view.superseded_for:
            view.superseded_for[key] = self._superseded(
                r for r in self.docs.values()
                if r.searchable and key & set(r.meta.groups) and r.meta.id not in view.future
            )
        return view.superseded_for[key]

    def allowed(self, groups: Sequence[str], day: dt.date | None = None) -> Mask:
        """The rows these groups may see: live chunks of searchable documents they share, in
        force on `day` (None: whatever their dates, as a source view of an earlier answer's
        citation checks)."""
        key, view = frozenset(groups), self.day_view(day)
        if key not in view.masks:
            visible = np.fromiter(
                (r.searchable and bool(key & set(r.meta.groups)) and r.meta.id not in view.out
                 for r in self.docs.values()),
                dtype=bool,
                count=len(self.docs),
            )
            view.masks[key] = np.append(visible, False)[self._doc_index]
        return view.masks[key]

    def visible_vectors(
        self, allowed: Mask, store: Store
    ) -> tuple[list[str], npt.NDArray[np.float32]]:
        """The ids and vectors of the allowed rows, read once per mask (`Store.stored_vectors`:
        from the embedding cache, else Chroma)."""
        key = np.packbits(allowed).tobytes()
        if key not in self._vectors:
            rows = np.flatnonzero(allowed).tolist()
            vectors = store.stored_vectors(self.collection, self.chunks(rows), store.cached_name)
            self._vectors[key] = ([self.ids[i] for i in rows], vectors)
        return self._vectors[key]

    def chunks(self, rows: Sequence[int]) -> list[Chunk]:
        """The chunks of `rows`, as the ledger holds them (their texts as embedded)."""
        return [Chunk(self.ids[r], self.doc_ids[r], self.ordinals[r], self.texts[r],
                      self.sections[r]) for r in rows]

    def passage(self, row: int, score: float = 0.0, groups: Sequence[str] | None = None,
                day: dt.date | None = None) -> Passage:
        """The passage of a row; `superseded` as the `groups` see it on `day` (all groups:
        None), `review_due` where its document's review date had passed on `day`."""
        record = self.docs[self.doc_ids[row]]
        superseded = (self.superseded if groups is None
                      else self.superseded_for(groups, day))
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
            review_due=self.day_view(day).overdue.get(record.meta.id, "") if day else "",
        )
