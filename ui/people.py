"""What kb keeps about one person, as the CLI and the page ask for it: their data as JSON (`kb
users export`, the page's "My data" button), its erasure (`kb users erase`), and legal holds
(`kb users hold`, `kb users release`), each recorded in the audit trail. The tables that name
people, and the SQL, are the ledger's (store/ledger/privacy/people.py).

    people = PersonalData(ledger, trail, actor="cli:hr")
    people.export("alice")["questions"][0]["question"] -> "How many sick days do I get?"
    people.hold("bob", "case 2026-14");  people.erase("alice")["questions"] -> 12
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.errors import KbError
from store.ledger import Ledger
from store.retention import EXPORTS, remove_files
from ui.audit import AuditTrail

logger = logging.getLogger(__name__)

# Columns that hold JSON text, given as JSON values in an export.
JSON_COLUMNS = {"groups", "chunk_ids", "citations", "details"}
# Columns of free text people wrote, masked where the ledger masks (rows written before it did).
FREE_TEXT = {"question", "answer", "comment", "note", "title", "searched_for", "details"}
FORMAT = "kb-assistant personal data, version 1"


def iso(epoch: float) -> str:
    """iso(0.0) -> "1970-01-01T00:00:00+00:00" (UTC)"""
    return datetime.fromtimestamp(float(epoch), UTC).isoformat(timespec="seconds")


def _readable(row: dict[str, Any], keep: Callable[[Any], Any]) -> dict[str, Any]:
    """A row as an export gives it: times (columns `at`, `*_at`) also in UTC ISO 8601, JSON
    text as JSON values, free text through `keep` (the ledger's masking).

    _readable({"at": 1.0, "details": '{"a":1}'}, keep)
        -> {"at": 1.0, "at_utc": "1970-01-01T00:00:01+00:00", "details": {"a": 1}}
    """
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in JSON_COLUMNS and isinstance(value, str):
            try:
                value = json.loads(value or "null")
            except ValueError:
                pass
        out[key] = keep(value) if key in FREE_TEXT else value
        if (key == "at" or key.endswith("_at")) and isinstance(value, (int, float)) and value:
            out[f"{key}_utc"] = iso(value)
    return out


class PersonalData:
    """A person's data, its erasure and legal holds; each recorded in the audit trail under
    `actor` ("cli:<os user>" for the CLI, the person for the page's button)."""

    def __init__(self, ledger: Ledger, audit: AuditTrail, actor: str,
                 store: Path | None = None) -> None:
        self.ledger, self.audit, self.actor = ledger, audit, actor
        self.store = store  # the store folder, whose downloads an erasure removes

    def export(self, name: str, actor: str | None = None, address: str = "local"
               ) -> dict[str, Any]:
        """Everything kept about `name`: their account (no secrets), questions, feedback,
        conversations and their turns, chat platforms' answers, sessions, notes on knowledge
        gaps, and the audit records about them (as actor or object), personal numbers masked
        where the ledger masks."""
        data = self.ledger.person_data(name)
        if not any(data.values()):
            raise KbError(f"nothing is kept about {name!r} (see `kb users list`)")
        self.audit.record("user.export", actor or self.actor, object=name, address=address,
                          rows={table: len(rows) for table, rows in data.items()})
        exported: dict[str, Any] = {"format": FORMAT, "person": name,
                                    "exported_at": iso(datetime.now(UTC).timestamp())}
        for table, rows in data.items():
            exported[table] = [_readable(row, self.ledger.keep_values) for row in rows]
        return exported

    def erase(self, name: str, keep_account: bool = False) -> dict[str, int]:
        """Remove `name`'s questions, feedback, conversations, chat platforms' answers, sessions
        and account (unless `keep_account`) from the ledger, take their name off notes on
        knowledge gaps, and redact the audit records about them; the erasure is an audit
        record. KbError while they are on legal hold, or when nothing names them."""
        if not any(self.ledger.person_counts(name).values()) and not any(
                self.ledger.audit_records(about=name, limit=1)):
            raise KbError(f"nothing is kept about {name!r} (see `kb users list`)")
        self.audit.flush()  # records still waiting name them too
        done = self.ledger.erase_person(name, self.actor, "local", keep_account)
        if self.store is not None:  # the admin tab's downloads may hold their questions
            done["exports"] = remove_files(self.store / EXPORTS, float("inf"))
        logger.warning("erased what was kept about %s: %s", name, done)
        return done

    def hold(self, name: str, why: str) -> bool:
        """Keep `name`'s records past retention and from erasure until `release`; False when
        the hold was on already (its reason is replaced)."""
        if not why.strip():
            raise KbError("a legal hold needs its reason (--why 'case 2026-14')")
        new = self.ledger.hold_user(name, why.strip()[:500], self.actor)
        self.audit.record("user.hold", self.actor, object=name, address="local",
                          why=why.strip()[:500], new=new)
        return new

    def release(self, name: str) -> None:
        """End `name`'s legal hold; KbError when there is none."""
        if not self.ledger.release_user(name):
            raise KbError(f"{name!r} is not on legal hold (see `kb users holds`)")
        self.audit.record("user.release", self.actor, object=name, address="local")
