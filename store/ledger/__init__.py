"""The ledger: the database of record beside the Chroma store: a SQLite file in the store folder,
or PostgreSQL (`store.ledger_url`) when several app and ingest processes share one deployment.

It holds documents (path, sha256, status, reason, groups, chunk count, times), the live chunks
with their lexical tokens (this table is the lexical index: BM25 is built from it in memory),
ingestion runs with per-file results and the ingest queue's jobs, and the query side's users,
sessions, questions, feedback and conversations, the audit trail (who did what, hash-chained),
and the answers admins approved. Schema changes are the named migrations of
`store/ledger/migrations.py`, applied in order and recorded in the `migrations` table.

Which chunks of a document are live is decided in one transaction (`replace_document`), so a
crash at any point leaves either the old or the new version live, never neither, never both.

    ledger = Ledger(Path("data/store/ledger.sqlite"))   # or Ledger("postgresql://kb@db/kb")
    ledger.document_by_path("/srv/docs", "leave.pdf").status -> "ok"

Both dialects run the same statements: methods are written for SQLite with `?` placeholders
and portable SQL (`ON CONFLICT`, `RETURNING`, no `INSERT OR`, no `lastrowid`), and on
PostgreSQL each statement passes through `to_postgres` (placeholders, the reserved column name
`user`) and each migration through `postgres_ddl` (types, `AUTOINCREMENT`). `ledger.dialect`
says which one a ledger speaks, for the few statements that must differ.

`Ledger` is put together from one part per concern, each in its own module:

    sql.py            the two dialects: statement translation, connections, the writer's session
    base.py           opening, migrations, transactions, `meta` and the generation counter
    documents.py      documents, live chunks, the staging of a full re-index
    runs.py           sources, ingestion runs and their files, the ingest queue's jobs
    accounts.py       users and API tokens, web sessions, the login throttle
    questions.py      questions, feedback, notes on knowledge gaps
    conversations.py  conversations and their turns
    audit.py          the audit trail: appended, chained by hash, verified, pruned
    sources.py        the folders kept in sync: each one's last pass and state, its documents
    approved.py       approved answers and their citations, suspended when a cited doc changes
    channels.py       the chat platforms: each event seen once, each answer posted and where
    migrations.py     the schema, as named migrations

Only these modules speak SQL (and the embedding cache, store/embed/embedder.py, in its own
file; tests/test_layers.py checks it): everyone else calls `Ledger`'s typed methods.

It imports core only. A new table is a named migration in migrations.py and its methods in the
module of its concern, or in a new module whose class `Ledger` mixes in.
"""

from __future__ import annotations

from store.ledger.accounts import Accounts
from store.ledger.approved import Approved
from store.ledger.audit import Audit, AuditCheck, AuditEntry, AuditRecord
from store.ledger.channels import ChannelLog
from store.ledger.conversations import Conversations
from store.ledger.documents import KEPT_NOTE, ChunkTable, Documents
from store.ledger.migrations import MIGRATIONS
from store.ledger.questions import Questions
from store.ledger.runs import Job, Runs
from store.ledger.sources import SyncSources, SyncState
from store.ledger.sql import WriterSession, postgres_ddl, redact_url, to_postgres

__all__ = [
    "AuditCheck",
    "AuditEntry",
    "AuditRecord",
    "KEPT_NOTE",
    "MIGRATIONS",
    "ChunkTable",
    "Job",
    "Ledger",
    "SyncState",
    "WriterSession",
    "postgres_ddl",
    "redact_url",
    "to_postgres",
]


class Ledger(Documents, Runs, Accounts, Questions, Conversations, Audit, Approved, SyncSources,
             ChannelLog):
    """The ledger of one store. Safe to share between threads: each thread gets its own
    connection (SQLite: to the same file, in WAL mode; PostgreSQL: to the same database), so a
    transaction in one never meets another's.

    `where` is the SQLite file, or a `postgresql://` URL."""
