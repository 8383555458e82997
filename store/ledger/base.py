"""What every part of the ledger stands on: `LedgerBase` opens the ledger (a SQLite file or a
PostgreSQL URL), gives each thread its connection, applies the named migrations
(`store/ledger/migrations.py`), runs transactions, and keeps the `meta` table (key -> value; the
`generation` counter that readers reload on). It also opens the session a writer holds for the
store's write lock on PostgreSQL (`store/write_lock.py`).

The tables themselves are read and written by the parts built on it (`documents.py`, `runs.py`,
`accounts.py`, `questions.py`, `conversations.py`), which `Ledger` (store/ledger/__init__.py)
puts together.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.errors import ConfigError, StoreError
from core.privacy import mask_personal, mask_values
from store.ledger.migrations import MIGRATIONS
from store.ledger.sql import (
    LOCK_SPACE,
    MIGRATE_KEY,
    WRITER_KEY,
    Connection,
    WriterSession,
    connect_postgres,
    is_postgres_url,
    postgres_ddl,
    redact_url,
)


class LedgerBase:
    """The connections, migrations, transactions and `meta` of one ledger; `where` is the SQLite
    file, or a `postgresql://` URL. With `mask`, the free text people write (questions,
    answers, comments, notes, conversations, audit details) is kept with its personal numbers
    masked (`keep`, `keep_values`: core/privacy.py)."""

    def __init__(self, where: Path | str, mask: bool = False) -> None:
        self.mask = mask
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

    def keep(self, text: str) -> str:
        """`text` as the ledger keeps it: personal numbers masked where the ledger masks."""
        return mask_personal(text) if self.mask else text

    def keep_values(self, value: Any) -> Any:
        """`keep` applied to every string of a JSON-like value (audit details)."""
        return mask_values(value) if self.mask else value

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
        began = time.perf_counter()
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        held = time.perf_counter() - began
        if held > getattr(self._local, "longest", 0.0):
            self._local.longest = held

    def longest_transaction_s(self) -> float:
        """The longest transaction of this thread since the last call (from the moment it had
        the database's write turn to its commit): how long a writer waited on it at most."""
        longest, self._local.longest = getattr(self._local, "longest", 0.0), 0.0
        return float(longest)

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

    def _bump_generation(self, db: Connection) -> None:
        """Within `db`'s transaction: the live chunks or document metadata changed."""
        db.execute(
            "INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE "
            "SET value = CAST(meta.value AS INTEGER) + 1"
        )

    def meta_default(self, key: str, value: str) -> str:
        """The stored value of `key`; `value` is stored first when there is none (the first
        process to ask wins, every later one reads its value)."""
        with self.transaction() as db:
            db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO NOTHING", (key, value))
        return self.get_meta(key, value)

    # --- the store's write lock on PostgreSQL (store/write_lock.py) ----------------------
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
