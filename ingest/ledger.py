"""The ledger: a SQLite database of record beside the Chroma store.

It holds documents (path, sha256, status, reason, groups, chunk count, times), the live chunks
with their lexical tokens (this table is the lexical index: BM25 is built from it in memory),
ingestion runs with per-file results, and the query side's users, questions and feedback.
Schema changes are named migrations applied in order and recorded in `migrations`.

Which chunks of a document are live is decided in one transaction (`replace_document`), so a
crash at any point leaves either the old or the new version live, never neither, never both.

    ledger = Ledger(Path("data/store/ledger.sqlite"))
    ledger.document_by_path("/srv/docs", "leave.pdf").status -> "ok"
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.errors import StoreError
from assistant.types import Chunk, DocMeta

MIGRATIONS: list[tuple[str, str]] = [
    (
        "001_documents_chunks_runs",
        """
        CREATE TABLE documents (
            id TEXT PRIMARY KEY,
            root TEXT NOT NULL,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL DEFAULT '',
            size INTEGER NOT NULL DEFAULT 0,
            mtime REAL NOT NULL DEFAULT 0,
            title TEXT NOT NULL DEFAULT '',
            lang TEXT NOT NULL DEFAULT 'en',
            groups TEXT NOT NULL DEFAULT '["all"]',
            version TEXT NOT NULL DEFAULT '',
            effective_date TEXT NOT NULL DEFAULT '',
            series TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            chunk_count INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            UNIQUE (root, path)
        );
        CREATE TABLE chunks (
            id TEXT PRIMARY KEY,
            doc_id TEXT NOT NULL REFERENCES documents(id),
            ordinal INTEGER NOT NULL,
            text TEXT NOT NULL,
            section TEXT NOT NULL,
            page INTEGER,
            page_end INTEGER,
            tokens TEXT NOT NULL
        );
        CREATE INDEX chunks_doc ON chunks (doc_id, ordinal);
        CREATE TABLE chunks_staging AS SELECT * FROM chunks WHERE 0;
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            args TEXT NOT NULL DEFAULT '',
            started_at REAL NOT NULL,
            ended_at REAL,
            ingested INTEGER NOT NULL DEFAULT 0,
            unchanged INTEGER NOT NULL DEFAULT 0,
            updated INTEGER NOT NULL DEFAULT 0,
            removed INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE run_files (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            path TEXT NOT NULL,
            outcome TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE sources (path TEXT PRIMARY KEY, groups TEXT NOT NULL DEFAULT '');
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
    ),
    (
        "002_users_questions_feedback",
        """
        CREATE TABLE users (
            name TEXT PRIMARY KEY,
            password_hash TEXT NOT NULL,
            groups TEXT NOT NULL DEFAULT '["all"]',
            is_admin INTEGER NOT NULL DEFAULT 0,
            api_token_hash TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL
        );
        CREATE TABLE questions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user TEXT NOT NULL DEFAULT '',
            question TEXT NOT NULL,
            answer TEXT NOT NULL DEFAULT '',
            mode TEXT NOT NULL DEFAULT '',
            chunk_ids TEXT NOT NULL DEFAULT '[]',
            timings TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        );
        CREATE TABLE feedback (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            question_id INTEGER REFERENCES questions(id),
            user TEXT NOT NULL DEFAULT '',
            rating INTEGER NOT NULL,
            comment TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL
        );
        """,
    ),
    (
        "003_page_labels",
        """
        ALTER TABLE documents ADD COLUMN page_labels TEXT NOT NULL DEFAULT '[]';
        """,
    ),
]

SECTION_JSON = json.dumps
# Appended to the reason of a failed document whose previous version stays live.
KEPT_NOTE = " (the previous version stays searchable)"


@dataclass(frozen=True)
class DocRecord:
    """A documents row: the metadata plus what the last run did with it."""

    meta: DocMeta
    status: str
    reason: str
    chunk_count: int
    updated_at: float


def _doc_from_row(row: sqlite3.Row) -> DocRecord:
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
    )
    return DocRecord(meta, row["status"], row["reason"], row["chunk_count"], row["updated_at"])


def chunk_row(chunk: Chunk, tokens: Sequence[str]) -> tuple[Any, ...]:
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


class Ledger:
    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(
                path, timeout=30, check_same_thread=False, isolation_level=None
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"ledger {path} could not be opened ({exc})") from exc
        self.path = path
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def _migrate(self) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL)"
        )
        done = {r[0] for r in self.db.execute("SELECT name FROM migrations")}
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            with self.transaction():
                for statement in filter(str.strip, sql.split(";")):
                    self.db.execute(statement)
                self.db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    # --- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str, default: str = "") -> str:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else default

    def set_meta(self, key: str, value: str, db: sqlite3.Connection | None = None) -> None:
        (db or self.db).execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """Bumped by every change to live chunks or document metadata; readers reload on change."""
        return int(self.get_meta("generation", "0"))

    def _bump(self, db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE "
            "SET value = CAST(value AS INTEGER) + 1"
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
        self, db: sqlite3.Connection, meta: DocMeta, status: str, reason: str, chunk_count: int
    ) -> None:
        now = time.time()
        db.execute(
            """INSERT INTO documents (id, root, path, sha256, size, mtime, title, lang, groups,
                   version, effective_date, series, page_labels, status, reason, chunk_count,
                   created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(id) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
                   mtime = excluded.mtime, title = excluded.title, lang = excluded.lang,
                   groups = excluded.groups, version = excluded.version,
                   effective_date = excluded.effective_date, series = excluded.series,
                   page_labels = excluded.page_labels,
                   status = excluded.status, reason = excluded.reason,
                   chunk_count = excluded.chunk_count, updated_at = excluded.updated_at""",
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
                [chunk_row(c, t) for c, t in zip(chunks, tokens, strict=True)],
            )
            self._bump(db)
        live = {c.id for c in chunks}
        return [i for i in old if i not in live]

    def update_document_meta(self, meta: DocMeta) -> None:
        """Metadata changed (groups, sidecar, mtime) but the text did not."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT status, reason, chunk_count FROM documents WHERE id = ?", (meta.id,)
            ).fetchone()
            self._upsert_document(db, meta, row["status"], row["reason"], row["chunk_count"])
            self._bump(db)

    def mark_failed(self, meta: DocMeta, status: str, reason: str) -> None:
        """Record a failure. A document that had a live version keeps it (and says so)."""
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

    def delete_document(self, doc_id: str) -> list[str]:
        """Remove a document and its live chunks; returns the chunk ids that went."""
        with self.transaction() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]
            db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
            self._bump(db)
        return ids

    # --- chunks -------------------------------------------------------------------------
    def chunk_ids(self, doc_id: str | None = None) -> list[str]:
        if doc_id is None:
            return [r[0] for r in self.db.execute("SELECT id FROM chunks")]
        return [r[0] for r in self.db.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]

    def chunk_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def stage_chunks(self, rows: Iterable[tuple[Any, ...]]) -> None:
        with self.transaction() as db:
            db.executemany("INSERT INTO chunks_staging VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def clear_staging(self) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM chunks_staging")

    def swap_in_staging(
        self, documents: Sequence[tuple[DocMeta, str, str, int]], collection: str
    ) -> None:
        """The end of a full re-index: staged chunks, these documents and the new collection
        become live in one transaction."""
        with self.transaction() as db:
            db.execute("DELETE FROM chunks")
            db.execute("INSERT INTO chunks SELECT * FROM chunks_staging")
            db.execute("DELETE FROM chunks_staging")
            for meta, status, reason, count in documents:
                self._upsert_document(db, meta, status, reason, count)
            self.set_meta("collection", collection, db)
            self._bump(db)

    # --- sources and runs ---------------------------------------------------------------
    def remember_source(self, path: str, groups: Sequence[str] | None) -> None:
        """An ingested path (file or folder) and its --groups, for `kb reindex`."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO sources VALUES (?, ?)", (path, ",".join(groups or ()))
            )

    def sources(self) -> list[tuple[str, tuple[str, ...] | None]]:
        rows = self.db.execute("SELECT path, groups FROM sources ORDER BY path")
        return [(r[0], tuple(r[1].split(",")) if r[1] else None) for r in rows]

    def start_run(self, kind: str, args: str) -> int:
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO runs (kind, args, started_at) VALUES (?, ?, ?)",
                (kind, args, time.time()),
            )
            return int(cur.lastrowid or 0)

    def record_file(self, run_id: int, path: str, outcome: str, reason: str = "") -> None:
        self.db.execute(
            "INSERT INTO run_files VALUES (?, ?, ?, ?)", (run_id, path, outcome, reason)
        )

    def finish_run(self, run_id: int, counts: dict[str, int]) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET ended_at = ?, ingested = ?, unchanged = ?, updated = ?, "
                "removed = ?, failed = ? WHERE id = ?",
                (
                    time.time(),
                    counts.get("ingested", 0),
                    counts.get("unchanged", 0),
                    counts.get("updated", 0),
                    counts.get("removed", 0),
                    counts.get("failed", 0),
                    run_id,
                ),
            )

    def last_run(self) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        return dict(row) if row else None
