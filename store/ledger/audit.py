"""The audit trail (tables `audit`, `audit_checkpoints`): who did what, from where, to what, with
what outcome; append-only, each record chained to the one before by its hash, so a record edited,
deleted or moved in the database is found by `verify`.

A record's hash is the SHA-256 of its canonical form: its sequence number, time, actor, event,
object, outcome, the previous record's hash and the salted digest of its address and details
(store/ledger/privacy/audit_chain.py, which also keeps the older form of records written before
019_privacy). Appends take turns across threads and processes (SQLite: BEGIN IMMEDIATE;
PostgreSQL: an advisory lock), read the head and write the next sequence number, which is the
primary key: the chain cannot fork.

Deleting the newest records leaves no gap to find: every append also stores the new head
(number and hash) in `meta.audit_head`, and `verify` requires the chain to pass through it and
through a head kept outside the ledger when one is given (`kb audit verify --expect SEQ:HASH`,
with a head printed by `kb audit export`, `prune` or `verify`, or read from `/metrics`): the
stored head is in the same database as the records, so only the outside one holds against
someone who rewrites both.

Pruning (`prune_audit`) deletes the records up to a time and leaves a checkpoint (the last pruned
record's number and hash, how many went, who pruned and when); `verify` starts from the newest
checkpoint, and the prune is itself a record of the chain, whose details must match it. Records
from the first one about a person on legal hold on are not pruned. An erasure (`redact_audit`)
replaces a person's addresses and details with a marker naming the erasure record; their
digests keep the chain verifiable.

    ledger.append_audit([AuditEntry(time.time(), "alice", "10.0.0.7", "signin", "alice", "ok",
                                    {"method": "password"})])
    ledger.verify_audit() -> AuditCheck(ok=True, records=1, head_seq=1, ...)
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from store.ledger.base import LedgerBase
from store.ledger.privacy.audit_chain import (
    AUDIT_COLUMNS,
    GENESIS,
    UNREDACTED,
    AuditRecord,
    Redactions,
    anchor_problem,
    canonical_details,
    link_problem,
    matches_checkpoint,
    new_row,
    redaction,
    unwalked_problem,
)
from store.ledger.sql import AUDIT_KEY, LOCK_SPACE, Connection

__all__ = ["GENESIS", "Audit", "AuditCheck", "AuditEntry", "AuditRecord"]
_INSERT = (f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in AUDIT_COLUMNS)})")


@dataclass(frozen=True)
class AuditEntry:
    """An event to record: when, who (a user name, or "cli:<os user>"), from which address,
    what happened, to what, how it ended, and its details (a JSON object, never a secret)."""

    at: float
    actor: str
    address: str
    event: str
    object: str = ""
    outcome: str = "ok"
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditCheck:
    """What `verify_audit` found: `ok`, how many records it checked, the chain's head, and the
    first bad record with what is wrong with it."""

    ok: bool
    records: int
    head_seq: int
    head_hash: str
    bad_seq: int = 0
    problem: str = ""


def _record(row: Any) -> AuditRecord:
    return AuditRecord(int(row["seq"]), float(row["at"]), row["actor"], row["address"],
                       row["event"], row["object"], row["outcome"], row["details"], row["prev"],
                       row["hash"], int(row["version"]), row["salt"], row["digest"])


class Audit(LedgerBase):
    """The audit trail: append, read, verify, prune, redact."""

    def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        """Chain `entries` onto the trail, in order, in one transaction; the last one's number.
        Their details are masked first where the ledger masks (`LedgerBase.keep_values`)."""
        if not entries:
            return 0
        with self.transaction() as db:
            seq, prev = self._audit_head(db)
            rows = []
            for e in entries:
                seq += 1
                row = new_row(seq, round(e.at, 6), e.actor, e.address, e.event, e.object,
                              e.outcome, canonical_details(self.keep_values(e.details)), prev)
                rows.append(row)
                prev = row[AUDIT_COLUMNS.index("hash")]
            db.executemany(_INSERT, rows)
            self.set_meta("audit_head", f"{seq} {prev}", db)
        return seq

    def _audit_head(self, db: Connection) -> tuple[int, str]:
        """Within a transaction, after taking the trail's turn: the last (seq, hash); the newest
        checkpoint's when every record was pruned; (0, GENESIS) on a new trail."""
        if self.dialect == "postgres":
            db.execute("SELECT pg_advisory_xact_lock(?, ?)", (LOCK_SPACE, AUDIT_KEY))
        return _head_row(db)

    def audit_records(self, since: float | None = None, until: float | None = None,
                      event: str = "", actor: str = "", limit: int | None = None,
                      newest_first: bool = False, about: str = "") -> Iterator[AuditRecord]:
        """The records in [since, until), of an event (or its prefix, "user." for every user
        change), an actor, and a person (`about`: the record's actor or object) when given;
        oldest first unless `newest_first`."""
        where: list[str] = ["1 = 1"]
        args: list[Any] = []
        for clause, value in (("at >= ?", since), ("at < ?", until)):
            if value is not None:
                where.append(clause)
                args.append(value)
        if event:
            where.append("(event = ? OR event LIKE ?)")
            args += [event, event.rstrip(".") + ".%"]
        if actor:
            where.append("actor = ?")
            args.append(actor)
        if about:
            where.append("seq IN (SELECT seq FROM audit WHERE actor = ? UNION "
                         "SELECT seq FROM audit WHERE object = ?)")
            args += [about, about]
        order = "DESC" if newest_first else ""
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        cursor = self.db.execute(f"SELECT * FROM audit WHERE {' AND '.join(where)} "
                                 f"ORDER BY seq {order}{tail}", args)
        for row in cursor.fetchall():
            yield _record(row)

    def audit_checkpoint(self) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT * FROM audit_checkpoints ORDER BY seq DESC LIMIT 1").fetchone()
        return dict(row) if row else None

    def audit_head(self) -> tuple[int, str]:
        """The chain's head now: the last record's (number, hash); the newest checkpoint's when
        every record was pruned; (0, GENESIS) on a new trail."""
        return _head_row(self.db)

    def verify_audit(self, expect: tuple[int, str] | None = None) -> AuditCheck:
        """Walk the chain from the newest checkpoint (or the start) and stop at the first record
        that was edited, deleted or moved, or redacted other than by an erasure of its person
        (store/ledger/privacy/audit_chain.py); a prune record must match its checkpoint. The chain
        must pass through the head stored at the last append (`meta.audit_head`, read before
        the walk, so records appended meanwhile follow it), number and hash, and through
        `expect`: a head kept outside the ledger, (number, its hash or the hash's first hex
        digits), as `kb audit verify --expect` gives it."""
        anchors: dict[int, list[tuple[str, str]]] = {}
        stored = (self.get_meta("audit_head") or "").split()
        if stored and not (len(stored) == 2 and stored[0].isdigit()):
            return AuditCheck(False, 0, 0, GENESIS, 0, f"the stored head {' '.join(stored)!r:.60}"
                              " is not a number and a hash (meta.audit_head edited)")
        if stored:
            anchors.setdefault(int(stored[0]), []).append(("the stored head", stored[1]))
        if expect is not None:
            anchors.setdefault(expect[0], []).append(("the expected head", expect[1]))
        checkpoint = self.audit_checkpoint()
        seq, prev = (int(checkpoint["seq"]), str(checkpoint["hash"])) if checkpoint \
            else (0, GENESIS)
        count, pruned_seen, redactions = 0, checkpoint is None, Redactions()
        for row in self._audit_pages():
            found = (link_problem(row, seq, prev) or anchor_problem(row, anchors)
                     or redactions.meet(row))
            if found:
                return AuditCheck(False, count, seq, prev, *found)
            if checkpoint and row.event == "audit.prune" and matches_checkpoint(row, checkpoint):
                pruned_seen = True
            seq, prev, count = row.seq, row.hash, count + 1
        if not pruned_seen:
            return AuditCheck(False, count, seq, prev, int(checkpoint["seq"]) if checkpoint
                              else 0, "the checkpoint has no matching audit.prune record "
                              "(checkpoint edited, or its prune record deleted)")
        found = redactions.unmet() or unwalked_problem(anchors, seq, checkpoint)
        if found:
            return AuditCheck(False, count, seq, prev, *found)
        return AuditCheck(True, count, seq, prev)

    def _audit_pages(self, size: int = 5000) -> Iterator[AuditRecord]:
        after = -1
        while True:
            rows = self.db.execute("SELECT * FROM audit WHERE seq > ? ORDER BY seq LIMIT ?",
                                   (after, size)).fetchall()
            if not rows:
                return
            for row in rows:
                yield _record(row)
            after = int(rows[-1]["seq"])

    def prune_audit(self, before: float, actor: str, address: str = "") -> int:
        """Delete the records older than `before` and leave a checkpoint (the last pruned
        record's number and hash, the count, who, when) that verify starts from; the prune is
        recorded in the chain too. Records from the first one about a person on legal hold
        (`hold_user`) on are kept. How many records went."""
        with self.transaction() as db:
            last_seq, last_hash = self._audit_head(db)
            row = db.execute(
                "SELECT seq, hash FROM audit WHERE at < ? AND seq < COALESCE((SELECT MIN(a.seq) "
                "FROM audit a JOIN holds h ON h.name = a.actor OR h.name = a.object), "
                "?) ORDER BY seq DESC LIMIT 1", (before, last_seq + 1)).fetchone()
            if row is None:
                return 0
            upto, upto_hash = int(row[0]), str(row[1])
            pruned = int(db.execute("SELECT COUNT(*) FROM audit WHERE seq <= ?",
                                    (upto,)).fetchone()[0])
            now = time.time()
            db.execute("DELETE FROM audit WHERE seq <= ?", (upto,))
            db.execute("INSERT INTO audit_checkpoints VALUES (?, ?, ?, ?, ?)",
                       (upto, upto_hash, pruned, actor, now))
            details = {"through_seq": upto, "through_hash": upto_hash, "pruned": pruned,
                       "before": before}
            prune_row = new_row(last_seq + 1, round(now, 6), actor, address, "audit.prune",
                                f"records ..{upto}", "ok", canonical_details(details), last_hash)
            db.execute(_INSERT, prune_row)
            self.set_meta("audit_head", f"{last_seq + 1} {prune_row[AUDIT_COLUMNS.index('hash')]}",
                          db)
        return pruned

    def redact_audit(self, name: str, by_seq: int, batch: int = 500) -> tuple[int, int]:
        """Replace the address and details of the records about `name` (its actor or object)
        before erasure record `by_seq` with a marker naming it, a batch per transaction; the
        chain still verifies (store/ledger/privacy/audit_chain.py). (records redacted, records left
        whole: written before the digest form, version 1)."""
        about = ("(actor = ? OR object = ?) AND seq < ? AND event NOT IN (?, ?)")
        args = (name, name, by_seq, *UNREDACTED)
        done = 0
        while True:
            with self.transaction() as db:
                cursor = db.execute(
                    "UPDATE audit SET address = '', salt = '', details = ? WHERE seq IN "
                    f"(SELECT seq FROM audit WHERE {about} AND version >= 2 AND salt != '' "
                    "ORDER BY seq LIMIT ?)", (redaction(by_seq), *args, batch))
                changed = int(cursor.rowcount)
            done += changed
            if changed < batch:
                break
        left = int(self.db.execute(f"SELECT COUNT(*) FROM audit WHERE {about} AND version < 2",
                                   args).fetchone()[0])
        return done, left


def _head_row(db: Connection) -> tuple[int, str]:
    row = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    if row is None:
        row = db.execute(
            "SELECT seq, hash FROM audit_checkpoints ORDER BY seq DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1])) if row else (0, GENESIS)
