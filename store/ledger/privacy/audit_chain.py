"""How a record of the audit trail is hashed and checked (store/ledger/audit.py keeps the table).

Two forms, told apart by each record's `version`:

- version 1 (records written before migration 019_privacy): the hash covers the record's
  fields themselves, details and address included (`record_hash`). They verify as they always
  did; their details cannot be redacted.
- version 2: the hash covers the record's fields but, in place of its address and details, their
  digest: the SHA-256 of a random salt, the address and the details (`particulars_digest`),
  stored beside them. Verify checks the digest against the address and details, and the hash
  against the digest, so an edit of either is found; an erasure (`kb users erase`) may replace
  a person's address and details with a redaction marker and drop the salt, leaving the digest
  (which, salted, tells nothing of what was there) to keep the chain whole.

A redacted record names the erasure that redacted it, `{"redacted_by": SEQ}`; verify requires
record SEQ to come later and be a `user.erase` of the record's actor or object.

    record_hash_v2(1, 0.0, "alice", "signin", "alice", "ok", "9f2c…", GENESIS) -> 64 hex
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

GENESIS = "0" * 64  # the "previous hash" of the first record
VERSION = 2  # the form new records are written in
ERASE_EVENT = "user.erase"
UNREDACTED = ("user.erase", "audit.prune")  # events whose details an erasure leaves alone
# How far from its place verify looks for the number a moved record was written under.
_MOVED_WINDOW = 1000


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
    version: int = 1
    salt: str = ""
    digest: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in AUDIT_COLUMNS}


AUDIT_COLUMNS = ("seq", "at", "actor", "address", "event", "object", "outcome", "details",
                 "prev", "hash", "version", "salt", "digest")


def canonical_details(details: dict[str, Any]) -> str:
    """canonical_details({"b": 1, "a": "x"}) -> '{"a":"x","b":1}'"""
    return json.dumps(details, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha256(form: list[Any]) -> str:
    text = json.dumps(form, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def record_hash(seq: int, at: float, actor: str, address: str, event: str, obj: str,
                outcome: str, details: str, prev: str) -> str:
    """A version 1 record's hash: the SHA-256 (hex) of a JSON array of its fields in order, the
    time in microseconds.

    record_hash(1, 0.0, "a", "", "signin", "a", "ok", "{}", GENESIS) -> "5b1f..." (64 hex)
    """
    return _sha256([seq, round(at * 1e6), actor, address, event, obj, outcome, details, prev])


def particulars_digest(salt: str, address: str, details: str) -> str:
    """What a version 2 record's hash covers in place of its address and details."""
    return _sha256([salt, address, details])


def record_hash_v2(seq: int, at: float, actor: str, event: str, obj: str, outcome: str,
                   digest: str, prev: str) -> str:
    """A version 2 record's hash: its fields with the digest of its address and details."""
    return _sha256([VERSION, seq, round(at * 1e6), actor, event, obj, outcome, digest, prev])


def new_row(seq: int, at: float, actor: str, address: str, event: str, obj: str, outcome: str,
            details: str, prev: str) -> tuple[Any, ...]:
    """The row of a new (version 2) record, in AUDIT_COLUMNS' order."""
    salt = secrets.token_hex(16)
    digest = particulars_digest(salt, address, details)
    digest_hash = record_hash_v2(seq, at, actor, event, obj, outcome, digest, prev)
    return (seq, at, actor, address, event, obj, outcome, details, prev, digest_hash, VERSION,
            salt, digest)


def redaction(by_seq: int) -> str:
    """The details of a record redacted by erasure record `by_seq`."""
    return canonical_details({"redacted_by": by_seq})


def redacted_by(row: AuditRecord) -> int | None:
    """The erasure record that redacted `row`, or None when it holds its particulars."""
    if row.version < 2 or row.salt or row.address or not row.details.startswith('{"redacted_by'):
        return None
    by = json.loads(row.details).get("redacted_by")
    return by if isinstance(by, int) and row.details == redaction(by) else None


def hash_of(row: AuditRecord, seq: int | None = None) -> str:
    """The hash `row` should carry (written as record `seq`, default its own)."""
    seq = row.seq if seq is None else seq
    if row.version >= 2:
        return record_hash_v2(seq, row.at, row.actor, row.event, row.object, row.outcome,
                              row.digest, row.prev)
    return record_hash(seq, row.at, row.actor, row.address, row.event, row.object, row.outcome,
                       row.details, row.prev)


def link_problem(row: AuditRecord, seq: int, prev: str) -> tuple[int, str] | None:
    """The first bad record and what is wrong, when `row` does not follow (`seq`, `prev`) or
    does not match its own hash and digest; None when it does."""
    if hash_of(row) != row.hash:
        for other in range(max(1, row.seq - _MOVED_WINDOW), row.seq + _MOVED_WINDOW):
            if other != row.seq and hash_of(row, other) == row.hash:
                return row.seq, (f"record {row.seq} moved: it holds the record written as "
                                 f"{other} (records reordered)")
        return row.seq, f"record {row.seq} edited: its hash does not match its content"
    if (row.version >= 2 and redacted_by(row) is None
            and particulars_digest(row.salt, row.address, row.details) != row.digest):
        return row.seq, (f"record {row.seq} edited: its address or details do not match "
                         "their digest")
    if row.seq != seq + 1:
        gone = f"{seq + 1}" if row.seq == seq + 2 else f"{seq + 1}..{row.seq - 1}"
        return seq + 1, f"record {gone} deleted: the chain jumps from {seq} to {row.seq}"
    if row.prev != prev:
        return seq, (f"record {seq} edited and re-hashed, or replaced: record {row.seq} does "
                     "not follow it")
    return None


class Redactions:
    """The redacted records met on a walk, each waiting for the erasure it names."""

    def __init__(self) -> None:
        self.waiting: dict[int, list[AuditRecord]] = {}

    def meet(self, row: AuditRecord) -> tuple[int, str] | None:
        """Check `row` as an erasure that earlier records wait for, then note it if it is
        redacted itself; (the bad record, what is wrong) or None."""
        for redacted in self.waiting.pop(row.seq, []):
            if row.event != ERASE_EVENT or row.object not in (redacted.actor, redacted.object):
                return redacted.seq, (f"record {redacted.seq} redacted by record {row.seq}, "
                                      f"which is no erasure of {redacted.actor} or "
                                      f"{redacted.object}")
        by = redacted_by(row)
        if by is not None:
            if by <= row.seq:
                return row.seq, (f"record {row.seq} redacted by record {by}, which does not "
                                 "come after it")
            self.waiting.setdefault(by, []).append(row)
        return None

    def unmet(self) -> tuple[int, str] | None:
        """A redacted record whose erasure the walk never met."""
        for by, rows in sorted(self.waiting.items()):
            return rows[0].seq, (f"record {rows[0].seq} redacted by record {by}, which is "
                                 "not in the trail")
        return None


def anchor_problem(row: AuditRecord, anchors: dict[int, list[tuple[str, str]]]
                   ) -> tuple[int, str] | None:
    """(row.seq, what is wrong) when `row` is not the record a head names; None when it is
    (or no head names its number)."""
    for name, digest in anchors.get(row.seq, ()):
        if not row.hash.startswith(digest):
            return row.seq, (f"record {row.seq} edited and re-hashed, or replaced: its hash "
                             f"{row.hash[:16]}… is not {name}'s {digest[:16]}…")
    return None


def unwalked_problem(anchors: dict[int, list[tuple[str, str]]], seq: int,
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


def matches_checkpoint(row: AuditRecord, checkpoint: dict[str, Any]) -> bool:
    details = json.loads(row.details)
    return bool(details.get("through_seq") == int(checkpoint["seq"])
                and details.get("through_hash") == checkpoint["hash"]
                and details.get("pruned") == int(checkpoint["pruned"]))
