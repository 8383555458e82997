"""What the ledger keeps about one person: every table that names people (`PERSONAL`), their
legal holds (table `holds`), and what a person may ask for: their data (`person_data`) and its
erasure (`erase_person`).

A new table of per-person rows is one line of `PERSONAL`: the condition that finds a person's
rows, the key an erasure deletes them by in batches, what an erasure does (delete the rows, or
clear the name on rows that are the organisation's), and the columns an export gives.

    ledger.hold_user("bob", "case 2026-14", "cli:legal")
    ledger.person_data("alice")["questions"][0]["question"] -> "How many sick days do I get?"
    ledger.erase_person("alice", "cli:hr")["questions"] -> 12
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from core.errors import KbError
from store.ledger.audit import Audit, AuditEntry
from store.ledger.privacy.audit_chain import ERASE_EVENT


@dataclass(frozen=True)
class PersonalTable:
    """A table whose rows name a person: `where` finds one person's rows (one `?`: the name),
    `key` are the columns an erasure deletes them by, a batch at a time ("" for a small table:
    all at once); `clear` the column an erasure empties instead of deleting the row; `export`
    the columns a person's export gives (none: not exported)."""

    table: str
    where: str
    key: str = ""
    clear: str = ""
    export: tuple[str, ...] = ()


# In the order an erasure goes through them: rows that others point at last.
PERSONAL: tuple[PersonalTable, ...] = (
    PersonalTable("feedback", "user = ?", "id",
                  export=("id", "question_id", "rating", "comment", "created_at")),
    PersonalTable("questions", "user = ?", "id",
                  export=("id", "question", "answer", "mode", "chunk_ids", "created_at")),
    PersonalTable("conversation_turns",
                  "conversation_id IN (SELECT id FROM conversations WHERE owner = ?)",
                  "conversation_id, ordinal",
                  export=("conversation_id", "ordinal", "question", "answer", "citations",
                          "mode", "searched_for", "created_at")),
    PersonalTable("conversations", "owner = ?", "id",
                  export=("id", "title", "created_at", "updated_at")),
    PersonalTable("channel_messages", "asker = ?", "id",
                  export=("id", "platform", "chat", "thread", "question", "answer",
                          "created_at")),
    PersonalTable("gap_notes", "user = ?", "key", clear="user",
                  export=("key", "note", "updated_at")),
    PersonalTable("sessions", "name = ?", export=("opened_at", "expires_at")),
    PersonalTable("login_failures", "key = 'u:' || ?"),
    PersonalTable("users", "name = ?",
                  export=("name", "groups", "is_admin", "see_all", "disabled", "created_at")),
)
ACCOUNT = "users"  # the table an erasure with `keep_account` leaves alone


class People(Audit):
    """Legal holds, a person's data, and its erasure."""

    # --- legal holds ----------------------------------------------------------------------
    def hold_user(self, name: str, reason: str, by: str) -> bool:
        """Keep `name`'s records past retention (and from erasure) until released; False when
        a hold is on already (its reason is replaced)."""
        with self.transaction() as db:
            held = db.execute("SELECT 1 FROM holds WHERE name = ?", (name,)).fetchone()
            db.execute("INSERT INTO holds VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                       "reason = excluded.reason, held_by = excluded.held_by, "
                       "held_at = excluded.held_at", (name, reason, by, time.time()))
        return held is None

    def release_user(self, name: str) -> bool:
        """End `name`'s hold; False when there was none."""
        with self.transaction() as db:
            return bool(db.execute("DELETE FROM holds WHERE name = ?", (name,)).rowcount > 0)

    def holds(self) -> list[dict[str, Any]]:
        """Every hold: name, reason, held_by, held_at."""
        return [dict(r) for r in self.db.execute("SELECT * FROM holds ORDER BY name")]

    def hold(self, name: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM holds WHERE name = ?", (name,)).fetchone()
        return dict(row) if row else None

    # --- a person's data ------------------------------------------------------------------
    def person_data(self, name: str) -> dict[str, list[dict[str, Any]]]:
        """Every exported table's rows of `name` (columns as `PERSONAL` names them), and the
        audit records about them (actor or object) as "audit"."""
        found: dict[str, list[dict[str, Any]]] = {}
        for t in PERSONAL:
            if t.export:
                rows = self.db.execute(f"SELECT {', '.join(t.export)} FROM {t.table} "
                                       f"WHERE {t.where} ORDER BY {t.export[0]}", (name,))
                found[t.table] = [dict(r) for r in rows]
        found["audit"] = [r.as_dict() for r in self.audit_records(about=name)]
        return found

    def person_counts(self, name: str) -> dict[str, int]:
        """How many rows of each table name `name`."""
        return {t.table: int(self.db.execute(f"SELECT COUNT(*) FROM {t.table} WHERE {t.where}",
                                             (name,)).fetchone()[0]) for t in PERSONAL}

    def erase_person(self, name: str, actor: str, address: str = "",
                     keep_account: bool = False, batch: int = 500) -> dict[str, int]:
        """Remove `name`'s rows from every table of `PERSONAL` (the account too, unless
        `keep_account`), a batch per transaction, and redact the audit records about them. The
        erasure is recorded first (`user.erase`, with what it found), so the redactions name a
        record that exists; run again after an interruption to finish. KbError while `name` is
        on legal hold. Rows removed per table, with "audit_redacted" and "audit_kept" (records
        written before the digest form, which keep their details)."""
        held = self.hold(name)
        if held:
            raise KbError(f"{name} is on legal hold ({held['reason']}, by {held['held_by']}): "
                          f"release it first with `kb users release {name}`")
        found = self.person_counts(name)
        if keep_account:
            found.pop(ACCOUNT)
        by_seq = self.append_audit([AuditEntry(time.time(), actor, address, ERASE_EVENT, name,
                                               "ok", {"found": found})])
        done = {"audit_redacted": 0, "audit_kept": 0}
        done["audit_redacted"], done["audit_kept"] = self.redact_audit(name, by_seq, batch)
        for t in PERSONAL:
            if t.table in found:
                done[t.table] = self._erase_rows(t, name, batch)
        return done

    def _erase_rows(self, t: PersonalTable, name: str, batch: int) -> int:
        """Delete (or clear) `name`'s rows of `t`, a batch per transaction; how many."""
        change = f"UPDATE {t.table} SET {t.clear} = ''" if t.clear else f"DELETE FROM {t.table}"
        if not t.key:
            with self.transaction() as db:
                return int(db.execute(f"{change} WHERE {t.where}", (name,)).rowcount)
        done = 0
        while True:
            with self.transaction() as db:
                changed = int(db.execute(
                    f"{change} WHERE ({t.key}) IN (SELECT {t.key} FROM {t.table} "
                    f"WHERE {t.where} LIMIT ?)", (name, batch)).rowcount)
            done += changed
            if changed < batch:
                return done
