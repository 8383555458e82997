"""The ledger's schema: named migrations, applied in order when a ledger opens
(`LedgerBase._migrate`, store/ledger/base.py), which records each in the `migrations` table.
Written once, in SQLite's dialect kept portable (`ON CONFLICT`, no `INSERT OR`, no column named
`user` in new tables); on PostgreSQL the ledger translates the few remaining differences
(`postgres_ddl`, store/ledger/sql.py). Append new ones at the end; never edit an applied one.
"""

from __future__ import annotations

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
    # --- 008_sessions: web sessions and the login throttle, shared by every app
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
    # --- 010_login_attempts: the throttle reserves an attempt before the password
    # check; its rows carry the attempt's id, so a login that succeeds takes back its own.
    (
        "010_login_attempts",
        """
        ALTER TABLE login_failures ADD COLUMN attempt TEXT NOT NULL DEFAULT '';
        CREATE INDEX login_failures_attempt ON login_failures (attempt)
        """,
    ),
    # --- 011_turn_searched_for: what retrieval searched for, a follow-up read with
    # its history, so a resumed conversation shows it under the answer as it was shown.
    (
        "011_turn_searched_for",
        """
        ALTER TABLE conversation_turns ADD COLUMN searched_for TEXT NOT NULL DEFAULT '';
        """,
    ),
    # --- 012_audit: the audit trail, append-only and hash-chained (store/ledger/
    # audit.py); a prune leaves a checkpoint the chain is verified from.
    (
        "012_audit",
        """
        CREATE TABLE audit (
            seq BIGINT NOT NULL PRIMARY KEY,
            at DOUBLE PRECISION NOT NULL,
            actor TEXT NOT NULL,
            address TEXT NOT NULL DEFAULT '',
            event TEXT NOT NULL,
            object TEXT NOT NULL DEFAULT '',
            outcome TEXT NOT NULL DEFAULT '',
            details TEXT NOT NULL DEFAULT '{}',
            prev TEXT NOT NULL,
            hash TEXT NOT NULL
        );
        CREATE INDEX audit_at ON audit (at);
        CREATE TABLE audit_checkpoints (
            seq BIGINT NOT NULL PRIMARY KEY,
            hash TEXT NOT NULL,
            pruned BIGINT NOT NULL,
            actor TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL
        );
        """,
    ),
    # --- 013_approved_answers: answers admins approved, served before retrieval
    # (store/ledger/approved.py), with the passages they cite and each document's sha256 then.
    (
        "013_approved_answers",
        """
        CREATE TABLE approved_answers (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            question TEXT NOT NULL,
            variants TEXT NOT NULL DEFAULT '[]',
            answer TEXT NOT NULL,
            lang TEXT NOT NULL DEFAULT 'en',
            groups TEXT NOT NULL DEFAULT '["all"]',
            author TEXT NOT NULL,
            approved_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            status TEXT NOT NULL DEFAULT 'active',
            suspended_reason TEXT NOT NULL DEFAULT '',
            origin TEXT NOT NULL DEFAULT 'scratch',
            origin_ref TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE approved_citations (
            answer_id BIGINT NOT NULL REFERENCES approved_answers(id) ON DELETE CASCADE,
            n INTEGER NOT NULL,
            chunk_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            file TEXT NOT NULL,
            page INTEGER,
            section TEXT NOT NULL DEFAULT '',
            quote TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (answer_id, n)
        );
        CREATE INDEX approved_citations_doc ON approved_citations (doc_id)
        """,
    ),
    # --- 014_document_dates: when a document is reviewed and stops applying
    # (core/policy_dates.py), and which of its dates an admin set rather than its sidecar.
    (
        "014_document_dates",
        """
        ALTER TABLE documents ADD COLUMN review_by TEXT NOT NULL DEFAULT '';
        ALTER TABLE documents ADD COLUMN expires TEXT NOT NULL DEFAULT '';
        ALTER TABLE documents ADD COLUMN admin_dates TEXT NOT NULL DEFAULT '[]'
        """,
    ),
    # --- 015_sources: the folders kept in sync (store/ledger/sources.py, ingest/
    # sync.py): each source's last pass, its state (ok, braked, failed, running) and why.
    (
        "015_sources",
        """
        CREATE TABLE sync_sources (
            name TEXT PRIMARY KEY,
            root TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'ok',
            reason TEXT NOT NULL DEFAULT '',
            last_run DOUBLE PRECISION NOT NULL DEFAULT 0,
            next_run DOUBLE PRECISION NOT NULL DEFAULT 0,
            seen INTEGER NOT NULL DEFAULT 0,
            changed INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0,
            renamed INTEGER NOT NULL DEFAULT 0,
            pending_deletes INTEGER NOT NULL DEFAULT 0,
            fingerprint TEXT NOT NULL DEFAULT ''
        )
        """,
    ),
    # --- 016_account_subjects: the provider's own id of an OpenID user (issuer and subject),
    # bound at the first sign-in and held by one account only; `disabled` is an admin's choice
    # alone (a record the directory turned off says so in its password field, `-off`), so the
    # directory finding someone again no longer lifts an admin's disable. Records turned off
    # before keep the old rule: the directory lifts it.
    (
        "016_account_subjects",
        """
        ALTER TABLE users ADD COLUMN subject TEXT NOT NULL DEFAULT '';
        CREATE UNIQUE INDEX users_subject ON users (subject) WHERE subject != '';
        UPDATE users SET disabled = 0 WHERE password_hash LIKE 'directory$%-off'
        """,
    ),
    # --- 017_channels: the chat platforms (store/ledger/channels.py): each event seen once,
    # each answer posted with its thread and message.
    (
        "017_channels",
        """
        CREATE TABLE channel_events (
            platform TEXT NOT NULL,
            event_id TEXT NOT NULL,
            seen_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (platform, event_id)
        );
        CREATE INDEX channel_events_seen ON channel_events (seen_at);
        CREATE TABLE channel_messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            platform TEXT NOT NULL,
            chat TEXT NOT NULL,
            thread TEXT NOT NULL,
            message TEXT NOT NULL,
            question_id INTEGER NOT NULL,
            asker TEXT NOT NULL,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX channel_messages_thread ON channel_messages (platform, chat, thread,
                                                                  created_at);
        CREATE INDEX channel_messages_message ON channel_messages (platform, message)
        """,
    ),
    # --- 018_question_unsure: a question answered on weak evidence (Answer.unsure), which
    # the admin view counts as a knowledge gap like a refusal.
    (
        "018_question_unsure",
        """
        ALTER TABLE questions ADD COLUMN unsure INTEGER NOT NULL DEFAULT 0
        """,
    ),
]
