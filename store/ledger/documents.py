"""The ledger's documents and their live chunks (tables `documents`, `chunks`,
`chunks_staging`): which version of each file is searchable, and the lexical index the query side
builds BM25 from (`chunk_table`, `chunk_batches`).

Which chunks of a document are live is decided in one transaction (`replace_document`), so a
crash at any point leaves either the old or the new version live, never neither, never both. A
full re-index stages its chunks beside the live ones and swaps them in at once
(`swap_in_staging`). Every change bumps the ledger's generation, which readers reload on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import StoreError
from core.text import TEXT_VERSION
from core.types import Chunk, DocMeta, DocRecord
from store.ledger.approved import suspend_stale
from store.ledger.base import LedgerBase
from store.ledger.sql import Connection

# Appended to the reason of a failed document whose previous version stays live.
KEPT_NOTE = " (the previous version stays searchable)"
# The live chunks as `ChunkTable` takes them, in its order.
_LIVE_CHUNKS = (
    "SELECT id, doc_id, ordinal, text, section, page, page_end, tokens FROM chunks "
    "ORDER BY doc_id, ordinal"
)


def _doc_from_row(row: Any) -> DocRecord:
    meta = DocMeta(
        id=row["id"],
        path=row["path"],
        root=row["root"],
        sha256=row["sha256"],
        size=row["size"],
        mtime=row["mtime"],
        title=row["title"],
        lang=row["lang"],
        groups=tuple(json.loads(row["groups"])),
        version=row["version"],
        effective_date=row["effective_date"],
        series=row["series"],
        page_labels=tuple(json.loads(row["page_labels"])),
        ocr_pages=tuple(json.loads(row["ocr_pages"])),
        review_by=row["review_by"],
        expires=row["expires"],
        admin_dates=tuple(json.loads(row["admin_dates"])),
    )
    return DocRecord(meta, row["status"], row["reason"], row["chunk_count"], row["updated_at"])


def _chunk_row(chunk: Chunk, tokens: Sequence[str]) -> tuple[Any, ...]:
    """A `chunks` row; `_chunk_from_row` reads it back."""
    return (
        chunk.id,
        chunk.doc_id,
        chunk.ordinal,
        chunk.text,
        json.dumps(chunk.section, ensure_ascii=False),
        chunk.page,
        chunk.page_end,
        " ".join(tokens),
    )


def _chunk_from_row(row: Any) -> Chunk:
    return Chunk(
        row["id"],
        row["doc_id"],
        row["ordinal"],
        row["text"],
        tuple(json.loads(row["section"])),
        row["page"],
        row["page_end"],
    )


@dataclass(frozen=True)
class ChunkTable:
    """Every live chunk as parallel columns, ordered by document and position: what the query
    side builds its snapshot (BM25, masks) from."""

    ids: list[str]
    doc_ids: list[str]
    ordinals: list[int]
    texts: list[str]
    sections: list[tuple[str, ...]]
    pages: list[tuple[int | None, int | None]]
    tokens: list[list[str]]


class Documents(LedgerBase):
    """Documents, their live chunks and the staging table of a full re-index."""

    # --- the text rules of the live chunks ------------------------------------------------
    def text_version(self) -> int:
        """The text rules (`core.text.TEXT_VERSION`) the live chunks' terms were made with; a
        store from before versions were kept used version 1."""
        return int(self.get_meta("text_version", "1"))

    def check_text_version(self) -> None:
        """StoreError when the live chunks' terms were made under other text rules."""
        stored = self.text_version()
        if stored != TEXT_VERSION and self.chunk_count():
            raise StoreError(
                f"store {self.where} was indexed with text rules v{stored}, this kb uses "
                f"v{TEXT_VERSION}: run `kb reindex --full` to rebuild its lexical index"
            )

    # --- documents ----------------------------------------------------------------------
    def document(self, doc_id: str) -> DocRecord | None:
        row = self.db.execute("SELECT * FROM documents WHERE id = ?", (doc_id,)).fetchone()
        return _doc_from_row(row) if row else None

    def document_by_path(self, root: str, path: str) -> DocRecord | None:
        row = self.db.execute(
            "SELECT * FROM documents WHERE root = ? AND path = ?", (root, path)
        ).fetchone()
        return _doc_from_row(row) if row else None

    def documents(self) -> list[DocRecord]:
        return [
            _doc_from_row(r) for r in self.db.execute("SELECT * FROM documents ORDER BY root, path")
        ]

    def _upsert_document(
        self, db: Connection, meta: DocMeta, status: str, reason: str, chunk_count: int
    ) -> None:
        now = time.time()
        db.execute(
            """INSERT INTO documents (id, root, path, sha256, size, mtime, title, lang, groups,
                   version, effective_date, series, page_labels, ocr_pages, review_by, expires,
                   admin_dates, status, reason, chunk_count, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(id) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
                   mtime = excluded.mtime, title = excluded.title, lang = excluded.lang,
                   groups = excluded.groups, version = excluded.version,
                   effective_date = excluded.effective_date, series = excluded.series,
                   page_labels = excluded.page_labels, ocr_pages = excluded.ocr_pages,
                   review_by = excluded.review_by, expires = excluded.expires,
                   admin_dates = excluded.admin_dates, status = excluded.status,
                   reason = excluded.reason, chunk_count = excluded.chunk_count,
                   updated_at = excluded.updated_at""",
            (
                meta.id,
                meta.root,
                meta.path,
                meta.sha256,
                meta.size,
                meta.mtime,
                meta.title,
                meta.lang,
                json.dumps(list(meta.groups)),
                meta.version,
                meta.effective_date,
                meta.series,
                json.dumps(list(meta.page_labels), ensure_ascii=False),
                json.dumps(list(meta.ocr_pages)),
                meta.review_by,
                meta.expires,
                json.dumps(list(meta.admin_dates)),
                status,
                reason,
                chunk_count,
                now,
                now,
            ),
        )

    def replace_document(
        self, meta: DocMeta, chunks: Sequence[Chunk], tokens: Sequence[Sequence[str]]
    ) -> list[str]:
        """Make `chunks` the live version of the document, atomically; returns the chunk ids
        that stopped being live (their vectors can go)."""
        with self.transaction() as db:
            old = [r[0] for r in db.execute("SELECT id FROM chunks WHERE doc_id = ?", (meta.id,))]
            self._upsert_document(db, meta, "ok", "", len(chunks))
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (meta.id,))
            db.executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [_chunk_row(c, t) for c, t in zip(chunks, tokens, strict=True)],
            )
            self.set_meta("text_version", str(TEXT_VERSION), db)
            self._bump_generation(db)
            suspend_stale(db, meta.id)  # approved answers citing its previous version
        live = {c.id for c in chunks}
        return [i for i in old if i not in live]

    def update_document_meta(self, meta: DocMeta) -> None:
        """Metadata changed (groups, sidecar, mtime) but the text did not."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT status, reason, chunk_count FROM documents WHERE id = ?", (meta.id,)
            ).fetchone()
            self._upsert_document(db, meta, row["status"], row["reason"], row["chunk_count"])
            self._bump_generation(db)

    def set_dates(self, meta: DocMeta) -> None:
        """A document's dates (and which of them an admin set) as `meta` has them; readers
        reload, since what retrieval may use changed."""
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET effective_date = ?, review_by = ?, expires = ?, "
                "admin_dates = ? WHERE id = ?",
                (meta.effective_date, meta.review_by, meta.expires,
                 json.dumps(list(meta.admin_dates)), meta.id),
            )
            self._bump_generation(db)

    def mark_failed(self, meta: DocMeta, status: str, reason: str) -> None:
        """Record a failure. A document that had a live version keeps it, searchable
        (`DocRecord.searchable`), and its reason says so; readers reload either way."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT chunk_count, status FROM documents WHERE id = ?", (meta.id,)
            ).fetchone()
            if row is not None and row["chunk_count"] > 0:
                db.execute(
                    "UPDATE documents SET status = ?, reason = ?, updated_at = ? WHERE id = ?",
                    (
                        status,
                        reason + KEPT_NOTE,
                        time.time(),
                        meta.id,
                    ),
                )
            else:
                self._upsert_document(db, meta, status, reason, 0)
            self._bump_generation(db)

    def delete_document(self, doc_id: str) -> list[str]:
        """Remove a document and its live chunks; returns the chunk ids that went."""
        with self.transaction() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
            self._bump_generation(db)
            suspend_stale(db, doc_id)  # approved answers citing it
        return ids

    # --- chunks -------------------------------------------------------------------------
    def chunk_ids(self, doc_id: str | None = None) -> list[str]:
        if doc_id is None:
            return [r[0] for r in self.db.execute("SELECT id FROM chunks")]
        return [r[0] for r in self.db.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]

    def chunk_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def chunk_groups(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The groups of each chunk's document; chunks no longer stored are left out."""
        out: dict[str, tuple[str, ...]] = {}
        for chunk_id in chunk_ids:
            row = self.db.execute(
                "SELECT d.groups FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id = ?",
                (chunk_id,),
            ).fetchone()
            if row:
                out[chunk_id] = tuple(json.loads(row["groups"]))
        return out

    def chunk_documents(self) -> dict[str, str]:
        """Live chunk id -> the id of its document."""
        return dict(self.db.execute("SELECT id, doc_id FROM chunks").fetchall())

    def chunks_of(self, doc_id: str) -> list[tuple[Chunk, list[str]]]:
        """A document's live chunks in order, each with its stored lexical tokens."""
        rows = self.db.execute(
            "SELECT * FROM chunks WHERE doc_id = ? ORDER BY ordinal", (doc_id,)
        ).fetchall()
        return [(_chunk_from_row(r), r["tokens"].split()) for r in rows]

    def chunk_table(self) -> ChunkTable:
        """Every live chunk, as the query side's snapshot takes them."""
        rows = self.db.execute(_LIVE_CHUNKS).fetchall()
        return ChunkTable(
            ids=[r[0] for r in rows],
            doc_ids=[r[1] for r in rows],
            ordinals=[r[2] for r in rows],
            texts=[r[3] for r in rows],
            sections=[tuple(json.loads(r[4])) for r in rows],
            pages=[(r[5], r[6]) for r in rows],
            tokens=[r[7].split() for r in rows],
        )

    # --- the live chunks in batches (a snapshot of a million chunks) ----------------------
    def chunk_batches(self, size: int = 20_000) -> Iterator[ChunkTable]:
        """`chunk_table` in pieces of at most `size` rows, read by one statement (one consistent
        view of the ledger), so a large store's rows never sit in memory all at once. Equal
        document ids and sections share one object (they repeat along a document)."""
        sections: dict[str, tuple[str, ...]] = {}
        doc_ids: dict[str, str] = {}
        cursor = self.db.execute(_LIVE_CHUNKS)
        while rows := cursor.fetchmany(size):
            yield ChunkTable(
                ids=[r[0] for r in rows],
                doc_ids=[doc_ids.setdefault(r[1], r[1]) for r in rows],
                ordinals=[r[2] for r in rows],
                texts=[r[3] for r in rows],
                sections=[
                    sections[r[4]] if r[4] in sections
                    else sections.setdefault(r[4], tuple(json.loads(r[4])))
                    for r in rows
                ],
                pages=[(r[5], r[6]) for r in rows],
                tokens=[r[7].split() for r in rows],
            )

    # --- a full re-index (`kb reindex --full`): staged chunks, swapped in at once ------------
    def stage_chunks(self, chunks: Sequence[Chunk], tokens: Sequence[Sequence[str]]) -> None:
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO chunks_staging VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [_chunk_row(c, t) for c, t in zip(chunks, tokens, strict=True)],
            )

    def clear_staging(self) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM chunks_staging")

    def swap_in_staging(
        self,
        documents: Sequence[tuple[DocMeta, str, str, int]],
        collection: str,
        generation: int,
    ) -> None:
        """The end of a full re-index: staged chunks, these documents and the new collection
        become live in one transaction, unless the live chunks changed since `generation`
        (StoreError: the staged copy is stale, and nothing is switched)."""
        with self.transaction() as db:
            if self.generation() != generation:
                raise StoreError(
                    f"store {self.where}: the ledger changed during the full re-index "
                    "(a writer without the store's write lock?); nothing was switched: run "
                    "`kb reindex --full` again"
                )
            db.execute("DELETE FROM chunks")
            db.execute("INSERT INTO chunks SELECT * FROM chunks_staging")
            db.execute("DELETE FROM chunks_staging")
            for meta, status, reason, count in documents:
                self._upsert_document(db, meta, status, reason, count)
            self.set_meta("collection", collection, db)
            self.set_meta("text_version", str(TEXT_VERSION), db)
            self._bump_generation(db)
            suspend_stale(db)  # approved answers whose passages did not come back
