"""The ledger: the database of record beside the Chroma store: a SQLite file in the store folder,
or PostgreSQL (`store.ledger_url`) when several app and ingest processes share one deployment.

It holds documents (path, sha256, status, reason, groups, chunk count, times), the live chunks
with their lexical tokens (this table is the lexical index: BM25 is built from it in memory),
ingestion runs with per-file results, and the query side's users, questions and feedback.
Schema changes are named migrations applied in order and recorded in `migrations`.

Which chunks of a document are live is decided in one transaction (`replace_document`), so a
crash at any point leaves either the old or the new version live, never neither, never both.

    ledger = Ledger(Path("data/store/ledger.sqlite"))   # or Ledger("postgresql://kb@db/kb")
    ledger.document_by_path("/srv/docs", "leave.pdf").status -> "ok"

Both dialects run the same statements: methods are written for SQLite with `?` placeholders
and portable SQL (`ON CONFLICT`, `RETURNING`, no `INSERT OR`, no `lastrowid`), and on
PostgreSQL each statement passes through `to_postgres` (placeholders, the reserved column name
`user`) and each migration through `postgres_ddl` (types, `AUTOINCREMENT`). `ledger.dialect`
says which one a ledger speaks, for the few statements that must differ.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from core.errors import ConfigError, StoreError
from core.text import TEXT_VERSION
from core.types import (
    Answer,
    Chunk,
    Citation,
    ConversationRecord,
    DocMeta,
    DocRecord,
    FileOutcome,
    QuestionRecord,
    StoredTurn,
    User,
)

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
    (
        "007_conversations",
        """
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX conversations_owner ON conversations (owner, updated_at);
        CREATE TABLE conversation_turns (
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            question TEXT NOT NULL,
            answer TEXT NOT NULL DEFAULT '',
            citations TEXT NOT NULL DEFAULT '[]',
            mode TEXT NOT NULL DEFAULT '',
            unverified INTEGER NOT NULL DEFAULT 0,
            raw_answer TEXT NOT NULL DEFAULT '',
            question_id BIGINT NOT NULL DEFAULT 0,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (conversation_id, ordinal)
        );
        """,
    ),
    # --- 008_sessions (issue 13): web sessions and the login throttle, shared by every app
    # process of a deployment. Session tokens are kept as their SHA-256 only.
    (
        "008_sessions",
        """
        CREATE TABLE sessions (
            token_hash TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            opened_at REAL NOT NULL,
            expires_at REAL NOT NULL
        );
        CREATE INDEX sessions_expiry ON sessions (expires_at);
        CREATE TABLE login_failures (
            key TEXT NOT NULL,
            failed_at REAL NOT NULL
        );
        CREATE INDEX login_failures_key ON login_failures (key, failed_at);
        CREATE INDEX login_failures_time ON login_failures (failed_at);
        """,
    ),
    # --- 009_jobs: the ingest queue (ingest/queue.py); portable SQL (SQLite and PostgreSQL) ---
    (
        "009_jobs",
        """
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            batch TEXT NOT NULL,
            run_id BIGINT NOT NULL,
            seq INTEGER NOT NULL,
            doc_id TEXT NOT NULL,
            meta TEXT NOT NULL,
            had_version INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT 'queued',
            attempts INTEGER NOT NULL DEFAULT 0,
            worker TEXT NOT NULL DEFAULT '',
            lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
            outcome TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT '',
            reason TEXT NOT NULL DEFAULT '',
            chunks INTEGER NOT NULL DEFAULT 0,
            embedded INTEGER NOT NULL DEFAULT 0,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX jobs_state ON jobs (state, created_at, seq);
        CREATE INDEX jobs_batch ON jobs (batch, seq)
        """,
    ),
]

# Appended to the reason of a failed document whose previous version stays live.
KEPT_NOTE = " (the previous version stays searchable)"

# --- dialects ---------------------------------------------------------------------------------
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# The advisory lock keys (two int4) of the store's write lock and of schema migrations.
LOCK_SPACE = 0x6B62  # "kb"
WRITER_KEY, MIGRATE_KEY = 1, 2
# Type and syntax differences a migration written for SQLite needs on PostgreSQL. REAL is 4 bytes
# there (epoch seconds would lose minutes), INTEGER 4 bytes (SQLite's are 8).
_DDL = [
    (re.compile(r"CAST\(strftime\('%s', 'now'\) AS REAL\)"), "EXTRACT(EPOCH FROM now())"),
    (re.compile(r"\bINTEGER PRIMARY KEY(?: AUTOINCREMENT)?", re.I),
     "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    (re.compile(r"\bINTEGER\b", re.I), "BIGINT"),
    (re.compile(r"\bREAL\b", re.I), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b", re.I), "BYTEA"),
    (re.compile(r"\bWHERE 0\b", re.I), "WHERE false"),
]
_LITERAL = re.compile(r"('(?:[^']|'')*'|--[^\n]*)")  # quoted strings and comments
_USER = re.compile(r'(?<![".\w])user\b(?!")|(?<=\.)user\b', re.I)


def is_postgres_url(url: str) -> bool:
    return url.startswith(POSTGRES_SCHEMES)


@lru_cache(maxsize=1024)
def to_postgres(sql: str) -> str:
    """A statement written for SQLite as psycopg takes it: `?` placeholders become `%s`, a
    literal `%` is doubled, and the column `user` (a reserved word there) is quoted; quoted
    strings and `--` comments keep their `?` and `user`.

    to_postgres("SELECT q.user FROM questions q WHERE id = ?") -> 'SELECT q."user" FROM ... = %s'
    """
    parts = _LITERAL.split(sql)
    for i, part in enumerate(parts):
        part = part.replace("%", "%%")
        if i % 2 == 0:  # outside quotes
            part = _USER.sub('"user"', part.replace("?", "%s"))
        parts[i] = part
    return "".join(parts)


def postgres_ddl(sql: str) -> str:
    """A migration statement written for SQLite, in PostgreSQL's types and syntax.

    postgres_ddl("id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL")
        -> "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, at DOUBLE PRECISION"
    """
    for pattern, replacement in _DDL:
        sql = pattern.sub(replacement, sql)
    return sql


def redact_url(url: str) -> str:
    """The URL without its password, for messages.

    redact_url("postgresql://kb:secret@db:5432/kb") -> "postgresql://kb@db:5432/kb"
    """
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1@", url)


class Cursor(Protocol):
    """What callers use of a cursor, in both dialects."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A ledger connection: `sqlite3.Connection` or `PostgresConnection`. Rows index by
    position and by column name (`row[0]`, `row["id"]`, `dict(row)`)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...
    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any: ...
    def close(self) -> None: ...


class PostgresRow(tuple[Any, ...]):
    """A row that, like `sqlite3.Row`, reads by position and by column name."""

    _index: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


def _row_factory(cursor: Any) -> Any:
    index = {d.name: i for i, d in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> PostgresRow:
        row = PostgresRow(values)
        row._index = index
        return row

    return make


class PostgresConnection:
    """A psycopg connection in autocommit mode (transactions are explicit `BEGIN`/`COMMIT`, as
    on SQLite) that takes the ledger's SQLite-style statements through `to_postgres`."""

    def __init__(self, url: str, application_name: str = "kb-assistant") -> None:
        import psycopg

        self.raw = psycopg.connect(url, autocommit=True, row_factory=_row_factory,
                                   connect_timeout=10, application_name=application_name)

    @property
    def broken(self) -> bool:
        return bool(self.raw.closed or self.raw.broken)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.raw.execute(to_postgres(sql), parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any:
        cursor = self.raw.cursor()
        cursor.executemany(to_postgres(sql), list(parameters))
        return cursor

    def close(self) -> None:
        self.raw.close()


def connect_postgres(url: str, application_name: str = "kb-assistant") -> PostgresConnection:
    """A connection, or a StoreError that names the server and what to check."""
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigError(
            "store.ledger_url names PostgreSQL but psycopg is not installed: "
            "pip install 'kb-assistant[postgres]' (or psycopg[binary])"
        ) from exc
    try:
        return PostgresConnection(url, application_name)
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(
            f"ledger {redact_url(url)}: PostgreSQL refused the connection ({reason}); check "
            "store.ledger_url (or KB_STORE_LEDGER_URL) and that the server is running"
        ) from exc


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


@dataclass(frozen=True)
class Job:
    """One file of `kb ingest --queue` (table `jobs`): queued, then running under a worker's
    lease (`lease_until`, epoch seconds), then done with its outcome."""

    id: str
    batch: str
    run_id: int
    seq: int
    meta: DocMeta
    had_version: bool
    state: str
    attempts: int
    worker: str
    outcome: str
    status: str
    reason: str
    chunks: int
    embedded: int


def _job_from_row(row: Any) -> Job:
    meta = json.loads(row["meta"])
    for key in ("groups", "page_labels", "ocr_pages"):
        meta[key] = tuple(meta[key])
    return Job(
        row["id"],
        row["batch"],
        int(row["run_id"]),
        int(row["seq"]),
        DocMeta(**meta),
        bool(row["had_version"]),
        row["state"],
        int(row["attempts"]),
        row["worker"],
        row["outcome"],
        row["status"],
        row["reason"],
        int(row["chunks"]),
        int(row["embedded"]),
    )


def _user_from_row(row: Any) -> User:
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
    """The ledger of one store. Safe to share between threads: each thread gets its own
    connection (SQLite: to the same file, in WAL mode; PostgreSQL: to the same database), so a
    transaction in one never meets another's.

    `where` is the SQLite file, or a `postgresql://` URL."""

    def __init__(self, where: Path | str) -> None:
        self.dialect = "sqlite"
        self.path: Path | None = None
        self._url = ""
        if isinstance(where, str) and is_postgres_url(where):
            self.dialect, self._url = "postgres", where
            self.where = redact_url(where)
        elif isinstance(where, str) and "://" in where:
            raise ConfigError(
                f"store.ledger_url {redact_url(where)!r}: not a PostgreSQL URL; use "
                "postgresql://USER@HOST:PORT/DATABASE, or leave it empty for the SQLite file "
                "in the store folder"
            )
        else:
            self.path = Path(where)
            self.where = str(self.path.parent)
        self._local = threading.local()
        self._connections: list[Connection] = []
        self._connections_lock = threading.Lock()
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._migrate()
        except (OSError, sqlite3.Error, self._errors()) as exc:
            self.close()
            where = self.path or self.where
            raise StoreError(f"ledger {where} could not be opened ({exc})") from exc

    @property
    def db(self) -> Connection:
        """This thread's connection, opened on first use (again, after PostgreSQL dropped it)."""
        db: Connection | None = getattr(self._local, "db", None)
        if db is not None and getattr(db, "broken", False):
            db = None
        if db is None:
            db = self._connect()
            self._local.db = db
            with self._connections_lock:
                self._connections.append(db)
        return db

    def _connect(self) -> Connection:
        if self.dialect == "postgres":
            return connect_postgres(self._url)
        assert self.path is not None
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        return db

    def _migrate(self) -> None:
        """Apply the missing MIGRATIONS in order, each in its own transaction. Processes that
        open a new ledger at once take turns (SQLite: BEGIN IMMEDIATE; PostgreSQL: an
        advisory lock), and each re-reads what is applied once it has its turn."""
        create = "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL)"
        try:
            done = {r[0] for r in self.db.execute("SELECT name FROM migrations")}
        except (sqlite3.Error, self._errors()):
            done = set()
        if all(name in done for name, _ in MIGRATIONS):
            return
        ddl = postgres_ddl if self.dialect == "postgres" else str
        with self.transaction() as db:
            self._schema_turn(db)
            db.execute(ddl(create))
        for name, sql in MIGRATIONS:
            with self.transaction() as db:
                self._schema_turn(db)
                if db.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                    continue
                for statement in filter(str.strip, sql.split(";")):
                    db.execute(ddl(statement))
                db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))

    def _errors(self) -> type[Exception]:
        """The database errors of this dialect's driver."""
        if self.dialect == "postgres":
            import psycopg

            return psycopg.Error
        return sqlite3.Error

    def _schema_turn(self, db: Connection) -> None:
        if self.dialect == "postgres":
            db.execute("SELECT pg_advisory_xact_lock(?, ?)", (LOCK_SPACE, MIGRATE_KEY))

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        db = self.db
        db.execute("BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN")
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

    def set_meta(self, key: str, value: str, db: Connection | None = None) -> None:
        (db or self.db).execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

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
                f"store {self.where} was indexed with text rules v{stored}, this kb uses "
                f"v{TEXT_VERSION}: run `kb reindex --full` to rebuild its lexical index"
            )

    def _bump(self, db: Connection) -> None:
        db.execute(
            "INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE "
            "SET value = CAST(meta.value AS INTEGER) + 1"
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
            self._bump(db)

    # --- sources and runs ---------------------------------------------------------------
    def remember_source(self, path: str, groups: Sequence[str] | None) -> None:
        """An ingested path (file or folder) and its --groups, for `kb reindex`."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO sources VALUES (?, ?) "
                "ON CONFLICT(path) DO UPDATE SET groups = excluded.groups",
                (path, ",".join(groups or ())),
            )

    def sources(self) -> list[tuple[str, tuple[str, ...] | None]]:
        rows = self.db.execute("SELECT path, groups FROM sources ORDER BY path")
        return [(r[0], tuple(r[1].split(",")) if r[1] else None) for r in rows]

    def start_run(self, kind: str, args: str) -> int:
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO runs (kind, args, started_at) VALUES (?, ?, ?) RETURNING id",
                (kind, args, time.time()),
            )
            return int(cur.fetchall()[0][0])

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
            added = db.execute(
                "INSERT INTO users (name, password_hash, groups, is_admin, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO NOTHING",
                (name, password_hash, json.dumps(list(groups)), int(is_admin), time.time()),
            ).rowcount
        return bool(added)

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
            return bool(db.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount > 0)

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
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
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
            return int(cursor.fetchall()[0][0])

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
                "VALUES (?, ?, ?, ?, ?) RETURNING id",
                (question_id, user, rating, comment, time.time()),
            )
            return int(cursor.fetchall()[0][0])

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
                "INSERT INTO gap_notes VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "note = excluded.note, user = excluded.user, updated_at = excluded.updated_at",
                (key, note, user, time.time()),
            )

    # --- 008_sessions: what several app processes share (issue 13) ------------------------
    def meta_default(self, key: str, value: str) -> str:
        """The stored value of `key`; `value` is stored first when there is none (the first
        process to ask wins, every later one reads its value)."""
        with self.transaction() as db:
            db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO NOTHING", (key, value))
        return self.get_meta(key, value)

    def open_session(self, token_hash: str, name: str, epoch: int, opened_at: float,
                     expires_at: float) -> None:
        """A web login; sessions that expired by `opened_at` go."""
        with self.transaction() as db:
            db.execute("DELETE FROM sessions WHERE expires_at <= ?", (opened_at,))
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?) ON CONFLICT(token_hash) DO UPDATE "
                "SET name = excluded.name, epoch = excluded.epoch, "
                "opened_at = excluded.opened_at, expires_at = excluded.expires_at",
                (token_hash, name, epoch, opened_at, expires_at),
            )

    def session(self, token_hash: str) -> tuple[str, int, float] | None:
        """(user name, the user's epoch at login, expiry) of a session."""
        row = self.db.execute(
            "SELECT name, epoch, expires_at FROM sessions WHERE token_hash = ?", (token_hash,)
        ).fetchone()
        return (str(row[0]), int(row[1]), float(row[2])) if row else None

    def sessions(self) -> list[tuple[str, str]]:
        """(token hash, user name) of every session on record."""
        return [(r[0], r[1]) for r in self.db.execute("SELECT token_hash, name FROM sessions")]

    def end_session(self, token_hash: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash,))

    def login_failures(self, keys: Sequence[str], since: float) -> dict[str, tuple[int, float]]:
        """key -> (failures after `since`, the oldest of them), for the keys that have some."""
        out: dict[str, tuple[int, float]] = {}
        for key in keys:
            row = self.db.execute(
                "SELECT COUNT(*), MIN(failed_at) FROM login_failures "
                "WHERE key = ? AND failed_at > ?",
                (key, since),
            ).fetchone()
            if row and row[0]:
                out[key] = (int(row[0]), float(row[1]))
        return out

    def add_login_failure(self, keys: Sequence[str], at: float, forget_before: float) -> None:
        """A failed login counted under each key; failures before `forget_before` go."""
        with self.transaction() as db:
            db.execute("DELETE FROM login_failures WHERE failed_at <= ?", (forget_before,))
            db.executemany("INSERT INTO login_failures VALUES (?, ?)", [(k, at) for k in keys])

    def clear_login_failures(self, key: str | None = None) -> None:
        """Forget the failures of `key` (all of them when None)."""
        with self.transaction() as db:
            if key is None:
                db.execute("DELETE FROM login_failures")
            else:
                db.execute("DELETE FROM login_failures WHERE key = ?", (key,))

    # --- the store's write lock on PostgreSQL (ingest/lock.py) -----------------------------
    def writer_session(self, what: str) -> WriterSession:
        """A connection of its own for a writer's run, to take the store's advisory lock."""
        if self.dialect != "postgres":
            raise StoreError(f"ledger {self.where}: advisory locks need PostgreSQL")
        stamp = time.strftime("%H:%M:%S")
        name = f"`{what}` (pid {os.getpid()} on {socket.gethostname()}, since {stamp})"
        name = name.encode()[:63].decode(errors="ignore")  # PostgreSQL keeps 63 bytes of it
        return WriterSession(connect_postgres(self._url, name))

    def writer(self) -> str:
        """Who holds the store's advisory lock (their application_name), "" when unknown."""
        row = self.db.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = ? AND l.objid = ? "
            "AND l.objsubid = 2 AND l.database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())",
            (LOCK_SPACE, WRITER_KEY),
        ).fetchone()
        return str(row[0] or "") if row else ""


    # --- conversations (issue 15) ------------------------------------------------------------
    # Every method takes the owner: a conversation id of another user reads as no conversation.
    def create_conversation(self, conversation_id: str, owner: str, title: str) -> None:
        now = time.time()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO conversations (id, owner, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (conversation_id, owner, title, now, now),
            )

    def conversations(self, owner: str, limit: int = 100) -> list[ConversationRecord]:
        """The owner's conversations, the one with the newest turn first."""
        rows = self.db.execute(
            "SELECT c.id, c.owner, c.title, c.created_at, c.updated_at, "
            "(SELECT COUNT(*) FROM conversation_turns t WHERE t.conversation_id = c.id) AS turns "
            "FROM conversations c WHERE c.owner = ? ORDER BY c.updated_at DESC, c.id LIMIT ?",
            (owner, limit),
        )
        return [_conversation_from_row(r) for r in rows]

    def conversation(self, conversation_id: str, owner: str) -> ConversationRecord | None:
        row = self.db.execute(
            "SELECT c.id, c.owner, c.title, c.created_at, c.updated_at, "
            "(SELECT COUNT(*) FROM conversation_turns t WHERE t.conversation_id = c.id) AS turns "
            "FROM conversations c WHERE c.id = ? AND c.owner = ?",
            (conversation_id, owner),
        ).fetchone()
        return _conversation_from_row(row) if row else None

    def conversation_turns(self, conversation_id: str, owner: str) -> list[StoredTurn]:
        """The turns of the owner's conversation, oldest first (none for anyone else)."""
        rows = self.db.execute(
            "SELECT t.* FROM conversation_turns t JOIN conversations c "
            "ON c.id = t.conversation_id WHERE c.id = ? AND c.owner = ? ORDER BY t.ordinal",
            (conversation_id, owner),
        )
        return [_turn_from_row(r) for r in rows]

    def add_conversation_turn(
        self, conversation_id: str, owner: str, question: str, answer: Answer
    ) -> int:
        """Append a turn to the owner's conversation; returns its ordinal, or -1 when the
        conversation is not the owner's (or is gone)."""
        citations = [
            {"n": c.n, "file": c.file, "page": c.page, "section": c.section, "quote": c.quote,
             "chunk_id": c.chunk_id, "supported": c.supported, "page_label": c.page_label}
            for c in answer.citations
        ]
        now = time.time()
        with self.transaction() as db:
            if not db.execute(
                "SELECT 1 FROM conversations WHERE id = ? AND owner = ?", (conversation_id, owner)
            ).fetchone():
                return -1
            ordinal = int(db.execute(
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM conversation_turns "
                "WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()[0])
            db.execute(
                "INSERT INTO conversation_turns (conversation_id, ordinal, question, answer, "
                "citations, mode, unverified, raw_answer, question_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    ordinal,
                    question,
                    answer.answer,
                    json.dumps(citations, ensure_ascii=False),
                    "abstained" if answer.abstained else answer.mode,
                    int(answer.unverified),
                    answer.raw_answer if answer.mode == "fallback" else "",
                    answer.question_id,
                    now,
                ),
            )
            db.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
            )
        return ordinal

    def rename_conversation(self, conversation_id: str, owner: str, title: str) -> bool:
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE conversations SET title = ? WHERE id = ? AND owner = ?",
                (title, conversation_id, owner),
            )
            return bool(cursor.rowcount > 0)

    def delete_conversation(self, conversation_id: str, owner: str) -> bool:
        """Remove the owner's conversation and its turns (the questions stay on record)."""
        with self.transaction() as db:
            if not db.execute(
                "SELECT 1 FROM conversations WHERE id = ? AND owner = ?", (conversation_id, owner)
            ).fetchone():
                return False
            db.execute(
                "DELETE FROM conversation_turns WHERE conversation_id = ?", (conversation_id,)
            )
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            return True

    # --- ingest jobs (009_jobs; ingest/queue.py) ------------------------------------------
    def add_jobs(self, run_id: int, files: Sequence[tuple[DocMeta, bool]]) -> str:
        """Queue (meta, had a live version) files as one batch of `run_id`; returns the batch."""
        batch = uuid.uuid4().hex
        now = time.time()
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO jobs (id, batch, run_id, seq, doc_id, meta, had_version, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        uuid.uuid4().hex,
                        batch,
                        run_id,
                        seq,
                        meta.id,
                        json.dumps(dataclasses.asdict(meta), ensure_ascii=False),
                        int(had),
                        now,
                        now,
                    )
                    for seq, (meta, had) in enumerate(files)
                ],
            )
        return batch

    def claim_job(self, worker: str, lease_s: float) -> Job | None:
        """The oldest job that is queued, or running under a lease that ran out (its worker
        died), now `worker`'s for `lease_s` seconds; None when there is none. One claim at a
        time: `FOR UPDATE SKIP LOCKED` on PostgreSQL, the `BEGIN IMMEDIATE` of `transaction()`
        on SQLite."""
        skip = " FOR UPDATE SKIP LOCKED" if self.dialect == "postgres" else ""
        now = time.time()
        with self.transaction() as db:
            rows = db.execute(
                "UPDATE jobs SET state = 'running', worker = ?, lease_until = ?, "
                "attempts = attempts + 1, updated_at = ? WHERE id = (SELECT id FROM jobs "
                "WHERE state = 'queued' OR (state = 'running' AND lease_until < ?) "
                f"ORDER BY created_at, seq LIMIT 1{skip}) RETURNING *",
                (worker, now + lease_s, now, now),
            ).fetchall()
        return _job_from_row(rows[0]) if rows else None

    def renew_job(self, job_id: str, worker: str, lease_s: float) -> bool:
        """Extend `worker`'s lease on the job; False when the job is no longer its."""
        now = time.time()
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE jobs SET lease_until = ?, updated_at = ? "
                "WHERE id = ? AND worker = ? AND state = 'running'",
                (now + lease_s, now, job_id, worker),
            )
            return bool(cursor.rowcount > 0)

    def job_held(self, job_id: str, worker: str) -> bool:
        """Whether `worker` still holds the job (running, under its lease)."""
        row = self.db.execute(
            "SELECT 1 FROM jobs WHERE id = ? AND worker = ? AND state = 'running'",
            (job_id, worker),
        ).fetchone()
        return row is not None

    def finish_job(self, job: Job, worker: str, outcome: FileOutcome, embedded: int) -> int | None:
        """Record the job's outcome (and its file in the run) if `worker` still holds it;
        returns the jobs of its batch still open, or None when the job was not `worker`'s."""
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE jobs SET state = 'done', outcome = ?, status = ?, reason = ?, "
                "chunks = ?, embedded = ?, updated_at = ? "
                "WHERE id = ? AND worker = ? AND state = 'running'",
                (
                    outcome.outcome,
                    outcome.status,
                    outcome.reason,
                    outcome.chunks,
                    embedded,
                    time.time(),
                    job.id,
                    worker,
                ),
            )
            if cursor.rowcount == 0:
                return None
            db.execute(
                "INSERT INTO run_files VALUES (?, ?, ?, ?)",
                (job.run_id, outcome.path, outcome.outcome, outcome.reason),
            )
            row = db.execute(
                "SELECT COUNT(*) FROM jobs WHERE batch = ? AND state != 'done'", (job.batch,)
            ).fetchone()
            return int(row[0])

    def batch_jobs(self, batch: str) -> list[Job]:
        rows = self.db.execute("SELECT * FROM jobs WHERE batch = ? ORDER BY seq", (batch,))
        return [_job_from_row(r) for r in rows.fetchall()]

    def job_counts(self) -> dict[str, int]:
        """Jobs by state: {"queued": 3, "running": 2, "done": 40}."""
        rows = self.db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def run_counts(self, run_id: int) -> dict[str, int]:
        """The run's files by outcome, as `finish_run` takes them."""
        rows = self.db.execute(
            "SELECT outcome, COUNT(*) FROM run_files WHERE run_id = ? GROUP BY outcome", (run_id,)
        ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}


class WriterSession:
    """The connection a writer holds for its run: PostgreSQL releases the session's advisory
    lock when it ends, also when the writer dies (a killed process's socket closes; a lost
    machine's after the TCP keepalives set here, about a minute)."""

    def __init__(self, connection: PostgresConnection) -> None:
        self.connection = connection
        for setting, value in (("tcp_keepalives_idle", 30), ("tcp_keepalives_interval", 10),
                               ("tcp_keepalives_count", 3)):
            connection.execute(f"SET {setting} = {value}")

    def try_lock(self) -> bool:
        row = self.connection.execute(
            "SELECT pg_try_advisory_lock(?, ?)", (LOCK_SPACE, WRITER_KEY)
        ).fetchone()
        return bool(row[0])

    def close(self) -> None:
        """Release the lock (by ending the session)."""
        self.connection.close()


def _conversation_from_row(row: Any) -> ConversationRecord:
    return ConversationRecord(
        row["id"], row["owner"], row["title"], float(row["created_at"]),
        float(row["updated_at"]), int(row["turns"]),
    )


def _turn_from_row(row: Any) -> StoredTurn:
    citations = tuple(
        Citation(c["n"], c["file"], c["page"], c["section"], c["quote"], c.get("chunk_id", ""),
                 bool(c.get("supported", True)), c.get("page_label", ""))
        for c in json.loads(row["citations"] or "[]")
    )
    return StoredTurn(
        int(row["ordinal"]), row["question"], row["answer"], citations, row["mode"],
        bool(row["unverified"]), row["raw_answer"], int(row["question_id"]),
        float(row["created_at"]),
    )
