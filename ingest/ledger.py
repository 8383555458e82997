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
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import StoreError
from core.text import TEXT_VERSION
from core.types import Answer, Chunk, DocMeta, DocRecord, QuestionRecord, User

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
    (
        "004_gap_notes",
        """
        CREATE TABLE gap_notes (
            key TEXT PRIMARY KEY,
            note TEXT NOT NULL,
            user TEXT NOT NULL DEFAULT '',
            updated_at REAL NOT NULL
        );
        """,
    ),
    (
        "005_auth_accounts",
        """
        ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE users ADD COLUMN see_all INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE users ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE users ADD COLUMN token_expires_at REAL NOT NULL DEFAULT 0;
        UPDATE users SET token_expires_at = CAST(strftime('%s', 'now') AS REAL) + 7776000
            WHERE api_token_hash != ''
        """,
    ),
    (
        "006_ocr_pages",
        """
        ALTER TABLE documents ADD COLUMN ocr_pages TEXT NOT NULL DEFAULT '[]';
        """,
    ),
]

# Appended to the reason of a failed document whose previous version stays live.
KEPT_NOTE = " (the previous version stays searchable)"


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
        ocr_pages=tuple(json.loads(row["ocr_pages"])),
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


def _chunk_from_row(row: sqlite3.Row) -> Chunk:
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


def _user_from_row(row: sqlite3.Row) -> User:
    return User(
        row["name"],
        tuple(json.loads(row["groups"])),
        bool(row["is_admin"]),
        bool(row["api_token_hash"]),
        float(row["created_at"]),
        bool(row["disabled"]),
        bool(row["see_all"]),
        int(row["epoch"]),
        float(row["token_expires_at"]),
    )


class Ledger:
    """The ledger of one store. Safe to share between threads: each thread gets its own SQLite
    connection to the same file (WAL), so a transaction in one never meets another's."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._migrate()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"ledger {path} could not be opened ({exc})") from exc

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(
                self.path, timeout=30, check_same_thread=False, isolation_level=None
            )
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            self._local.db = db
            with self._connections_lock:
                self._connections.append(db)
        return db

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
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        with self._connections_lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()

    # --- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str, default: str = "") -> str:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else default

    def set_meta(self, key: str, value: str, db: sqlite3.Connection | None = None) -> None:
        (db or self.db).execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """Bumped by every change to live chunks or document metadata; readers reload on change."""
        return int(self.get_meta("generation", "0"))

    def text_version(self) -> int:
        """The text rules (`core.text.TEXT_VERSION`) the live chunks' terms were made with; a
        store from before versions were kept used version 1."""
        return int(self.get_meta("text_version", "1"))

    def check_text_version(self) -> None:
        """StoreError when the live chunks' terms were made under other text rules."""
        stored = self.text_version()
        if stored != TEXT_VERSION and self.chunk_count():
            raise StoreError(
                f"store {self.path.parent} was indexed with text rules v{stored}, this kb uses "
                f"v{TEXT_VERSION}: run `kb reindex --full` to rebuild its lexical index"
            )

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
                   version, effective_date, series, page_labels, ocr_pages, status, reason,
                   chunk_count, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(id) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
                   mtime = excluded.mtime, title = excluded.title, lang = excluded.lang,
                   groups = excluded.groups, version = excluded.version,
                   effective_date = excluded.effective_date, series = excluded.series,
                   page_labels = excluded.page_labels, ocr_pages = excluded.ocr_pages,
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
                json.dumps(list(meta.ocr_pages)),
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
            self._bump(db)

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

    def chunk_table(self) -> ChunkTable:
        rows = self.db.execute(
            "SELECT id, doc_id, ordinal, text, section, page, page_end, tokens FROM chunks "
            "ORDER BY doc_id, ordinal"
        ).fetchall()
        return ChunkTable(
            ids=[r[0] for r in rows],
            doc_ids=[r[1] for r in rows],
            ordinals=[r[2] for r in rows],
            texts=[r[3] for r in rows],
            sections=[tuple(json.loads(r[4])) for r in rows],
            pages=[(r[5], r[6]) for r in rows],
            tokens=[r[7].split() for r in rows],
        )

    # --- the live chunks in batches (issue 12: a snapshot of a million chunks) -------------
    def chunk_batches(self, size: int = 20_000) -> Iterator[ChunkTable]:
        """`chunk_table` in pieces of at most `size` rows, read by one statement (one consistent
        view of the ledger), so a large store's rows never sit in memory all at once. Equal
        document ids and sections share one object (they repeat along a document)."""
        sections: dict[str, tuple[str, ...]] = {}
        doc_ids: dict[str, str] = {}
        cursor = self.db.execute(
            "SELECT id, doc_id, ordinal, text, section, page, page_end, tokens FROM chunks "
            "ORDER BY doc_id, ordinal"
        )
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

    def chunks_of(self, doc_id: str) -> list[tuple[Chunk, list[str]]]:
        """A document's live chunks in order, each with its stored lexical tokens."""
        rows = self.db.execute(
            "SELECT * FROM chunks WHERE doc_id = ? ORDER BY ordinal", (doc_id,)
        ).fetchall()
        return [(_chunk_from_row(r), r["tokens"].split()) for r in rows]

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
                    f"store {self.path.parent}: the ledger changed during the full re-index "
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

    # --- users ----------------------------------------------------------------------------
    def add_user(
        self, name: str, password_hash: str, groups: Sequence[str], is_admin: bool
    ) -> bool:
        """A new user; False when the name is taken."""
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                return False
            db.execute(
                "INSERT INTO users (name, password_hash, groups, is_admin, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (name, password_hash, json.dumps(list(groups)), int(is_admin), time.time()),
            )
        return True

    def user(self, name: str) -> tuple[User, str] | None:
        """The user and their password hash."""
        row = self.db.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
        return (_user_from_row(row), str(row["password_hash"])) if row else None

    def users(self) -> list[User]:
        return [_user_from_row(r) for r in self.db.execute("SELECT * FROM users ORDER BY name")]

    def set_password_hash(self, name: str, password_hash: str) -> None:
        """The new hash; the user's epoch moves on, so their open sessions end."""
        with self.transaction() as db:
            db.execute(
                "UPDATE users SET password_hash = ?, epoch = epoch + 1 WHERE name = ?",
                (password_hash, name),
            )

    def set_user_disabled(self, name: str, disabled: bool) -> None:
        """Disable (ending sessions and the token) or enable a user."""
        with self.transaction() as db:
            db.execute(
                "UPDATE users SET disabled = ?, epoch = epoch + 1 WHERE name = ?",
                (int(disabled), name),
            )

    def bump_user_epoch(self, name: str) -> None:
        """End every open session of the user."""
        with self.transaction() as db:
            db.execute("UPDATE users SET epoch = epoch + 1 WHERE name = ?", (name,))

    def set_user_see_all(self, name: str, see_all: bool) -> None:
        with self.transaction() as db:
            db.execute("UPDATE users SET see_all = ? WHERE name = ?", (int(see_all), name))

    def delete_user(self, name: str) -> bool:
        """Remove the account (its questions and feedback stay, under its name)."""
        with self.transaction() as db:
            return db.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount > 0

    def set_user_groups(self, name: str, groups: Sequence[str], is_admin: bool | None) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE users SET groups = ? WHERE name = ?", (json.dumps(list(groups)), name)
            )
            if is_admin is not None:
                db.execute("UPDATE users SET is_admin = ? WHERE name = ?", (int(is_admin), name))

    def set_token_hash(self, name: str, token_hash: str, expires_at: float) -> None:
        """The API token's hash and expiry; an empty hash revokes the token."""
        with self.transaction() as db:
            db.execute(
                "UPDATE users SET api_token_hash = ?, token_expires_at = ? WHERE name = ?",
                (token_hash, expires_at if token_hash else 0.0, name),
            )

    def token_hashes(self) -> list[tuple[User, str]]:
        """Every user holding an API token, with the token's hash."""
        rows = self.db.execute("SELECT * FROM users WHERE api_token_hash != ''")
        return [(_user_from_row(r), str(r["api_token_hash"])) for r in rows]

    # --- questions and feedback -----------------------------------------------------------
    def record_question(self, user: str, question: str, answer: Answer) -> int:
        """Keep a question with its answer, mode, cited chunks and timings; returns its id."""
        cited = [c.chunk_id for c in answer.citations if c.chunk_id]
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO questions (user, question, answer, mode, chunk_ids, timings, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    user,
                    question,
                    answer.answer,
                    answer.mode,
                    json.dumps(cited),
                    json.dumps(answer.timings_ms),
                    time.time(),
                ),
            )
            return int(cursor.lastrowid or 0)

    def question_owner(self, question_id: int) -> str | None:
        row = self.db.execute("SELECT user FROM questions WHERE id = ?", (question_id,)).fetchone()
        return str(row["user"]) if row else None

    def replace_feedback(self, question_id: int, user: str, rating: int, comment: str) -> int:
        """The user's rating of the question, replacing an earlier one; returns its id."""
        with self.transaction() as db:
            db.execute(
                "DELETE FROM feedback WHERE question_id = ? AND user = ?", (question_id, user)
            )
            cursor = db.execute(
                "INSERT INTO feedback (question_id, user, rating, comment, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (question_id, user, rating, comment, time.time()),
            )
            return int(cursor.lastrowid or 0)

    def feedback(self, limit: int) -> list[dict[str, Any]]:
        """Newest first, joined with the question, its answer, cited chunks and timings."""
        rows = self.db.execute(
            "SELECT f.id, f.created_at, f.user, f.rating, f.comment, q.id AS question_id, "
            "q.question, q.answer, q.mode, q.chunk_ids, q.timings FROM feedback f "
            "LEFT JOIN questions q ON q.id = f.question_id ORDER BY f.id DESC LIMIT ?",
            (limit,),
        )
        return [dict(r) for r in rows]

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

    # --- what was asked (the admin view) ---------------------------------------------------
    def question_records(self, since: float = 0.0) -> list[QuestionRecord]:
        """Questions asked since `since` (epoch seconds), oldest first, with their rating."""
        rows = self.db.execute(
            "SELECT q.id, q.user, q.question, q.mode, q.chunk_ids, q.timings, q.created_at, "
            "(SELECT f.rating FROM feedback f WHERE f.question_id = q.id "
            "ORDER BY f.id DESC LIMIT 1) AS rating FROM questions q "
            "WHERE q.created_at >= ? ORDER BY q.id",
            (since,),
        )
        return [
            QuestionRecord(
                r["id"],
                r["user"],
                r["question"],
                r["mode"],
                tuple(json.loads(r["chunk_ids"] or "[]")),
                r["timings"],
                r["created_at"],
                r["rating"],
            )
            for r in rows
        ]

    def chunk_documents(self) -> dict[str, str]:
        """Live chunk id -> the id of its document."""
        return dict(self.db.execute("SELECT id, doc_id FROM chunks").fetchall())

    def gap_notes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, note FROM gap_notes").fetchall())

    def set_gap_note(self, key: str, note: str, user: str) -> None:
        """An admin's note on a knowledge gap ("which document should answer this?")."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO gap_notes VALUES (?, ?, ?, ?)",
                (key, note, user, time.time()),
            )
