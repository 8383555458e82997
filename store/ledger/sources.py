"""The folders kept in sync (table `sync_sources`, migration 015_sources): each source's last
pass (when, files seen, changed, failed, deleted, renamed), its state and why, when it is due
next; and the two document operations a pass needs beyond ingestion: a source's documents read
by their root, and a renamed file's document moved to its new path (ingest/sync/folder.py).

    ledger.source_documents("/mnt/hr")["leave.pdf"].status -> "ok"
    ledger.save_sync_state(SyncState("hr", "/mnt/hr", state="braked", reason="12 of 40 ..."))
    ledger.move_document("ba39e76144b587a7", new_meta) -> ["c1", "c2"]  # its chunks, kept
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from core.types import DocMeta, DocRecord
from store.ledger.base import LedgerBase
from store.ledger.documents import _doc_from_row

# What a source's state may be: its last pass went through (ok), held its deletes back (braked),
# stopped on an error (failed), or is under way (running).
SYNC_STATES = ("ok", "braked", "failed", "running")


@dataclass(frozen=True)
class SyncState:
    """One source's last pass, as the admin view and /metrics show it (times: epoch s)."""

    name: str
    root: str
    state: str = "ok"
    reason: str = ""
    last_run: float = 0.0
    next_run: float = 0.0
    seen: int = 0
    changed: int = 0
    failed: int = 0
    deleted: int = 0
    renamed: int = 0
    pending_deletes: int = 0  # vanished files the brake kept
    fingerprint: str = ""  # the source's groups and sidecars as last synced


_COLUMNS = [f.name for f in dataclasses.fields(SyncState)]


class SyncSources(LedgerBase):
    """The state of the folders kept in sync, and their documents."""

    def sync_state(self, name: str) -> SyncState | None:
        row = self.db.execute("SELECT * FROM sync_sources WHERE name = ?", (name,)).fetchone()
        return SyncState(**{c: row[c] for c in _COLUMNS}) if row else None

    def sync_states(self) -> list[SyncState]:
        rows = self.db.execute("SELECT * FROM sync_sources ORDER BY name").fetchall()
        return [SyncState(**{c: r[c] for c in _COLUMNS}) for r in rows]

    def save_sync_state(self, state: SyncState) -> None:
        values = dataclasses.astuple(state)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:])
        with self.transaction() as db:
            db.execute(
                f"INSERT INTO sync_sources ({', '.join(_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_COLUMNS))}) "
                f"ON CONFLICT(name) DO UPDATE SET {updates}",
                values,
            )

    def source_documents(self, root: str) -> dict[str, DocRecord]:
        """The documents whose root is `root` (a source's own), by their path under it."""
        rows = self.db.execute("SELECT * FROM documents WHERE root = ?", (root,)).fetchall()
        return {row["path"]: _doc_from_row(row) for row in rows}

    def move_document(self, old_id: str, meta: DocMeta) -> list[str]:
        """A renamed file: the document `old_id` becomes `meta.id` at `meta.path` (size, mtime)
        in one transaction, with every other column (status, groups, title, what later
        migrations add) and its live chunks, whose ids stay, so citations already given still
        open, approved answers' among them. Returns those chunk ids (their vectors' metadata
        names the new id next)."""
        with self.transaction() as db:
            row = db.execute("SELECT * FROM documents WHERE id = ?", (old_id,)).fetchone()
            if row is None:
                return []
            values = {k: row[k] for k in row.keys()}
            values.update(id=meta.id, path=meta.path, size=meta.size, mtime=meta.mtime,
                          updated_at=time.time())
            columns = list(values)
            db.execute(
                f"INSERT INTO documents ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})",
                [values[c] for c in columns],
            )
            db.execute("UPDATE chunks SET doc_id = ? WHERE doc_id = ?", (meta.id, old_id))
            # approved answers cite the same passages, now of the moved document
            db.execute("UPDATE approved_citations SET doc_id = ?, file = ? WHERE doc_id = ?",
                       (meta.id, meta.path, old_id))
            db.execute("DELETE FROM documents WHERE id = ?", (old_id,))
            ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE doc_id = ?",
                                            (meta.id,))]
            self._bump_generation(db)
        return ids
