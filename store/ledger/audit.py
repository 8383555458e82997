"""The audit trail (tables `audit`, `audit_checkpoints`): who did what, from where, to what, with
what outcome; append-only, each record chained to the one before by its hash, so a record edited,
deleted or moved in the database is found by `verify`.

A record's hash is the SHA-256 of its canonical form (`canonical`): its sequence number, time,
actor, address, event, object, outcome, details and the previous record's hash. Appends take
turns across threads and processes (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock), read
the head and write the next sequence number, which is the primary key: the chain cannot fork.

Deleting the newest records leaves no gap to find: every append also stores the new head
(number and hash) in `meta.audit_head`, and `verify` requires the chain to pass through it and
through a head kept outside the ledger when one is given (`kb audit verify --expect SEQ:HASH`,
with a head printed by `kb audit export`, `prune` or `verify`, or read from `/metrics`): the
stored head is in the same database as the records, so only the outside one holds against
someone who rewrites both.

Pruning (`prune_audit`) deletes the records up to a time and leaves a checkpoint (the last pruned
record's number and hash, how many went, who pruned and when); `verify` starts from the newest
checkpoint, and the prune is itself a record of the chain, whose details must match it.

    ledger.append_audit([AuditEntry(time.time(), "alice", "10.0.0.7", "signin", "alice", "ok",
                                    {"method": "password"})])
    ledger.verify_audit() -> AuditCheck(ok=True, records=1, head_seq=1, ...)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from store.ledger.base import LedgerBase
from store.ledger.sql import AUDIT_KEY, LOCK_SPACE, Connection

GENESIS = "0" * 64  # the "previous hash" of the first record
AUDIT_COLUMNS = ("seq", "at", "actor", "address", "event", "object", "outcome", "details",
                 "prev", "hash")
# How far from its place verify looks for the number a moved record was written under.
_MOVED_WINDOW = 1000


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
class AuditRecord:
    """A stored record of the chain."""

    seq: int
    at: float
    actor: str
    address: str
    event: str
    object: str
    outcome: str
    details: str  # canonical JSON
    prev: str
    hash: str

    def as_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in AUDIT_COLUMNS}


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


def canonical_details(details: dict[str, Any]) -> str:
    """canonical_details({"b": 1, "a": "x"}) -> '{"a":"x","b":1}'"""
    return json.dumps(details, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record_hash(seq: int, at: float, actor: str, address: str, event: str, obj: str,
                outcome: str, details: str, prev: str) -> str:
    """The SHA-256 (hex) of a record's canonical form: a JSON array of its fields in order, the
    time in microseconds.

    record_hash(1, 0.0, "a", "", "signin", "a", "ok", "{}", GENESIS) -> "5b1f..." (64 hex)
    """
    form = [seq, round(at * 1e6), actor, address, event, obj, outcome, details, prev]
    text = json.dumps(form, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _hash_of(row: AuditRecord, seq: int | None = None) -> str:
    return record_hash(row.seq if seq is None else seq, row.at, row.actor, row.address,
                       row.event, row.object, row.outcome, row.details, row.prev)


def _record(row: Any) -> AuditRecord:
    return AuditRecord(int(row["seq"]), float(row["at"]), row["actor"], row["address"],
                       row["event"], row["object"], row["outcome"], row["details"], row["prev"],
                       row["hash"])


class Audit(LedgerBase):
    """The audit trail: append, read, verify, prune."""

    def append_audit(self, entries: Sequence[AuditEntry]) -> int:
        """Chain `entries` onto the trail, in order, in one transaction; the last one's number."""
        if not entries:
            return 0
        with self.transaction() as db:
            seq, prev = self._audit_head(db)
            rows = []
            for e in entries:
                seq += 1
                at = round(e.at, 6)
                details = canonical_details(e.details)
                digest = record_hash(seq, at, e.actor, e.address, e.event, e.object, e.outcome,
                                     details, prev)
                rows.append((seq, at, e.actor, e.address, e.event, e.object, e.outcome, details,
                             prev, digest))
                prev = digest
            db.executemany(f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
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
                      newest_first: bool = False) -> Iterator[AuditRecord]:
        """The records in [since, until), of an event (or its prefix, "user." for every user
        change) and an actor when given; oldest first unless `newest_first`."""
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
        that was edited, deleted or moved; a prune record must match its checkpoint. The chain
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
        count, pruned_seen = 0, checkpoint is None
        for row in self._audit_pages():
            found = _link_problem(row, seq, prev) or _anchor_problem(row, anchors)
            if found:
                return AuditCheck(False, count, seq, prev, *found)
            if checkpoint and row.event == "audit.prune" and _matches(row, checkpoint):
                pruned_seen = True
            seq, prev, count = row.seq, row.hash, count + 1
        if not pruned_seen:
            return AuditCheck(False, count, seq, prev, int(checkpoint["seq"]) if checkpoint
                              else 0, "the checkpoint has no matching audit.prune record "
                              "(checkpoint edited, or its prune record deleted)")
        found = _unwalked_problem(anchors, seq, checkpoint)
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
        recorded in the chain too. How many records went."""
        with self.transaction() as db:
            last_seq, last_hash = self._audit_head(db)
            row = db.execute("SELECT seq, hash FROM audit WHERE at < ? ORDER BY seq DESC "
                             "LIMIT 1", (before,)).fetchone()
            if row is None:
                return 0
            upto, upto_hash = int(row[0]), str(row[1])
            pruned = int(db.execute("SELECT COUNT(*) FROM audit WHERE seq <= ?",
                                    (upto,)).fetchone()[0])
            now = time.time()
            db.execute("DELETE FROM audit WHERE seq <= ?", (upto,))
            db.execute("INSERT INTO audit_checkpoints VALUES (?, ?, ?, ?, ?)",
                       (upto, upto_hash, pruned, actor, now))
            entry = AuditEntry(now, actor, address, "audit.prune", f"records ..{upto}", "ok",
                               {"through_seq": upto, "through_hash": upto_hash,
                                "pruned": pruned, "before": before})
            seq, at, details = last_seq + 1, round(now, 6), canonical_details(entry.details)
            digest = record_hash(seq, at, actor, address, entry.event, entry.object, "ok",
                                 details, last_hash)
            db.execute(f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (seq, at, actor, address, entry.event, entry.object, "ok", details,
                        last_hash, digest))
            self.set_meta("audit_head", f"{seq} {digest}", db)
        return pruned


def _head_row(db: Connection) -> tuple[int, str]:
    row = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    if row is None:
        row = db.execute(
            "SELECT seq, hash FROM audit_checkpoints ORDER BY seq DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1])) if row else (0, GENESIS)


def _link_problem(row: AuditRecord, seq: int, prev: str) -> tuple[int, str] | None:
    """The first bad record and what is wrong, when `row` does not follow (`seq`, `prev`);
    None when it does."""
    if _hash_of(row) != row.hash:
        for other in range(max(1, row.seq - _MOVED_WINDOW), row.seq + _MOVED_WINDOW):
            if other != row.seq and _hash_of(row, other) == row.hash:
                return row.seq, (f"record {row.seq} moved: it holds the record written as "
                                 f"{other} (records reordered)")
        return row.seq, f"record {row.seq} edited: its hash does not match its content"
    if row.seq != seq + 1:
        gone = f"{seq + 1}" if row.seq == seq + 2 else f"{seq + 1}..{row.seq - 1}"
        return seq + 1, f"record {gone} deleted: the chain jumps from {seq} to {row.seq}"
    if row.prev != prev:
        return seq, (f"record {seq} edited and re-hashed, or replaced: record {row.seq} does "
                     "not follow it")
    return None


def _anchor_problem(row: AuditRecord, anchors: dict[int, list[tuple[str, str]]]
                    ) -> tuple[int, str] | None:
    """(row.seq, what is wrong) when `row` is not the record a head names; None when it is
    (or no head names its number)."""
    for name, digest in anchors.get(row.seq, ()):
        if not row.hash.startswith(digest):
            return row.seq, (f"record {row.seq} edited and re-hashed, or replaced: its hash "
                             f"{row.hash[:16]}… is not {name}'s {digest[:16]}…")
    return None


def _unwalked_problem(anchors: dict[int, list[tuple[str, str]]], seq: int,
                      checkpoint: dict[str, Any] | None) -> tuple[int, str] | None:
    """(the first bad record, what is wrong) for a head the walk, which ended at `seq`, did
    not reach: records deleted from the end, or a head pruned behind the checkpoint, which
    cannot be checked; None when every head was met."""
    start = int(checkpoint["seq"]) if checkpoint else 0
    for number, heads in sorted(anchors.items()):
        for name, digest in heads:
            if number > seq:
                return seq + 1, (f"records {seq + 1}..{number} deleted from the end ({name} "
                                 f"is record {number})")
            if checkpoint and number == start and not str(checkpoint["hash"]).startswith(
                    digest):
                return start, f"the checkpoint after record {start} is not {name}"
            if number < start:
                return number, (f"{name}, record {number}, was pruned (the checkpoint is after "
                                f"record {start}): check against a head kept since")
    return None


def _matches(row: AuditRecord, checkpoint: dict[str, Any]) -> bool:
    details = json.loads(row.details)
    return bool(details.get("through_seq") == int(checkpoint["seq"])
                and details.get("through_hash") == checkpoint["hash"]
                and details.get("pruned") == int(checkpoint["pruned"]))
