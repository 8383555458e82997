"""The audit trail in the ledger, on SQLite and PostgreSQL: it verifies after use; a record
edited, deleted, moved or cut from the end with SQL is named by `verify_audit`; writers in
several threads and processes keep one chain; a prune leaves a checkpoint the chain verifies
from, and a forged checkpoint is found."""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from store.ledger import AuditEntry, Ledger
from store.ledger.privacy.audit_chain import GENESIS, AuditRecord, hash_of, particulars_digest


@pytest.fixture
def ledger(ledger_url: str, tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger(ledger_url or tmp_path / "ledger.sqlite")
    yield opened
    opened.close()


def entry(i: int, at: float | None = None) -> AuditEntry:
    return AuditEntry(time.time() if at is None else at, f"user{i % 3}", "10.0.0.7", "signin",
                      f"user{i % 3}", "failed" if i % 2 else "ok",
                      {"method": "password", "n": i, "名": "年假 100%"})


def forged(row: AuditRecord, **changes: object) -> str:
    """The hash someone with the database would write for `row` edited with `changes`."""
    return hash_of(dataclasses.replace(row, **changes))  # type: ignore[arg-type]


def fill(ledger: Ledger, n: int = 8) -> None:
    for i in range(n):
        ledger.append_audit([entry(i)])


def test_the_chain_verifies_and_links(ledger: Ledger) -> None:
    fill(ledger, 5)
    ledger.append_audit([entry(5), entry(6)])  # a batch chains in order
    check = ledger.verify_audit()
    assert check.ok and check.records == 7 and check.head_seq == 7, check
    records = list(ledger.audit_records())
    assert [r.seq for r in records] == list(range(1, 8))
    assert records[0].prev == GENESIS and records[3].prev == records[2].hash
    first = records[0]
    assert (first.version, len(first.salt)) == (2, 32)
    assert first.digest == particulars_digest(first.salt, "10.0.0.7", first.details)
    assert first.hash == hash_of(first)
    assert check.head_hash == records[-1].hash
    assert [r.seq for r in ledger.audit_records(event="signin", actor="user1")] == [2, 5]
    assert [r.seq for r in ledger.audit_records(limit=2, newest_first=True)] == [7, 6]


# Each way to tamper with the table, as SQL, and the record and words verify must name.
TAMPERING: dict[str, tuple[list[str], int, str]] = {
    "edited": (["UPDATE audit SET actor = 'mallory' WHERE seq = 4"], 4, "record 4 edited"),
    "details edited": (["UPDATE audit SET details = '{}' WHERE seq = 6"], 6, "record 6 edited"),
    "outcome edited": (["UPDATE audit SET outcome = 'ok' WHERE seq = 2"], 2, "record 2 edited"),
    "deleted": (["DELETE FROM audit WHERE seq = 5"], 5, "record 5 deleted"),
    "two deleted": (["DELETE FROM audit WHERE seq IN (3, 4)"], 3, "record 3..4 deleted"),
    "reordered": (["UPDATE audit SET seq = -1 WHERE seq = 3",
                   "UPDATE audit SET seq = 3 WHERE seq = 4",
                   "UPDATE audit SET seq = 4 WHERE seq = -1"], 3, "record 3 moved"),
    "cut from the end": (["DELETE FROM audit WHERE seq >= 7"], 7, "deleted from the end"),
    "first deleted": (["DELETE FROM audit WHERE seq = 1"], 1, "record 1 deleted"),
}


@pytest.mark.parametrize("how", list(TAMPERING))
def test_tampering_is_named(ledger: Ledger, how: str) -> None:
    fill(ledger, 8)
    assert ledger.verify_audit().ok
    statements, bad, words = TAMPERING[how]
    for sql in statements:
        ledger.db.execute(sql)
    check = ledger.verify_audit()
    assert not check.ok and check.bad_seq == bad and words in check.problem, check


def test_an_edit_rehashed_is_found_at_the_next_link(ledger: Ledger) -> None:
    """Someone edits record 4 and writes a fresh hash for it: record 5 no longer follows."""
    fill(ledger, 6)
    row = next(r for r in ledger.audit_records() if r.seq == 4)
    ledger.db.execute("UPDATE audit SET actor = 'mallory', hash = ? WHERE seq = 4",
                      (forged(row, actor="mallory"),))
    check = ledger.verify_audit()
    assert not check.ok and check.bad_seq == 4 and "re-hashed" in check.problem, check


def _rehash_newest(ledger: Ledger, actor: str) -> None:
    """Edit the newest record and write a fresh hash for it, chained on the one before."""
    row = next(ledger.audit_records(newest_first=True, limit=1))
    ledger.db.execute("UPDATE audit SET actor = ?, object = 'forged', hash = ? WHERE seq = ?",
                      (actor, forged(row, actor=actor, object="forged"), row.seq))


def test_the_newest_record_edited_and_rehashed_is_found(ledger: Ledger) -> None:
    """No record follows the newest one: the head stored at the last append names its hash."""
    fill(ledger, 6)
    _rehash_newest(ledger, "someone-else")
    check = ledger.verify_audit()
    assert not check.ok and check.bad_seq == 6 and "stored head" in check.problem, check
    assert "re-hashed" in check.problem
    ledger.set_meta("audit_head", "the head")
    check = ledger.verify_audit()
    assert not check.ok and "meta.audit_head edited" in check.problem, check


def test_a_head_kept_outside_finds_the_tail_cut_with_the_stored_head(ledger: Ledger) -> None:
    """Records cut from the end together with `meta.audit_head`, or the newest one rewritten
    with it: nothing left in the ledger tells, a head kept outside does."""
    fill(ledger, 8)
    seq, digest = ledger.audit_head()
    assert (seq, len(digest)) == (8, 64)
    assert ledger.verify_audit((8, digest)).ok and ledger.verify_audit((8, digest[:12])).ok
    fill(ledger, 2)  # later records follow the head kept
    assert ledger.verify_audit((8, digest)).ok

    ledger.db.execute("DELETE FROM audit WHERE seq >= 7")
    ledger.db.execute("DELETE FROM meta WHERE key = 'audit_head'")
    assert ledger.verify_audit().ok  # the ledger alone cannot tell
    check = ledger.verify_audit((8, digest[:12]))
    assert not check.ok and check.bad_seq == 7, check
    assert "records 7..8 deleted from the end (the expected head is record 8)" in check.problem

    head = ledger.audit_head()
    _rehash_newest(ledger, "mallory")
    ledger.set_meta("audit_head", " ".join(map(str, ledger.audit_head())))
    assert ledger.verify_audit().ok
    check = ledger.verify_audit(head)
    assert not check.ok and check.bad_seq == 6 and "the expected head" in check.problem, check


def test_a_head_behind_the_checkpoint_cannot_be_checked(ledger: Ledger) -> None:
    old = time.time() - 400 * 86400
    ledger.append_audit([entry(i, old + i) for i in range(5)])
    earlier = ledger.audit_head()  # record 5
    ledger.append_audit([entry(5, old + 5)])
    assert ledger.prune_audit(time.time() - 365 * 86400, "cli:ops") == 6
    checkpoint = ledger.audit_checkpoint()
    assert checkpoint is not None
    assert ledger.verify_audit((6, checkpoint["hash"])).ok  # the checkpoint's own
    check = ledger.verify_audit((6, "0" * 12))
    assert not check.ok and "the checkpoint after record 6 is not the expected head" in \
        check.problem, check
    check = ledger.verify_audit(earlier)
    assert not check.ok and check.bad_seq == 5 and "was pruned" in check.problem, check


def _append_many(where: str, n: int, start: Callable[[], None] | None = None) -> None:
    ledger = Ledger(where)
    try:
        if start:
            start()
        for i in range(n):
            ledger.append_audit([entry(i)])
    finally:
        ledger.close()


def test_threads_of_two_ledgers_keep_one_chain(ledger: Ledger, ledger_url: str,
                                               tmp_path: Path) -> None:
    where = ledger_url or str(tmp_path / "ledger.sqlite")
    barrier = threading.Barrier(8)
    threads = [threading.Thread(target=_append_many, args=(where, 25, barrier.wait))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check = ledger.verify_audit()
    assert check.ok and check.records == 200 and check.head_seq == 200, check


def test_processes_keep_one_chain(ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    where = ledger_url or str(tmp_path / "ledger.sqlite")
    spawn = multiprocessing.get_context("spawn")
    workers = [spawn.Process(target=_append_many, args=(where, 60)) for _ in range(3)]
    for worker in workers:
        worker.start()
    fill(ledger, 20)  # and this process at the same time
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    check = ledger.verify_audit()
    assert check.ok and check.records == 200, check


def test_prune_leaves_a_checkpoint_the_chain_verifies_from(ledger: Ledger) -> None:
    old = time.time() - 400 * 86400
    ledger.append_audit([entry(i, old + i) for i in range(5)])
    fill(ledger, 4)
    assert ledger.prune_audit(time.time() - 365 * 86400, "cli:ops", "local") == 5
    records = list(ledger.audit_records())
    assert [r.seq for r in records] == [6, 7, 8, 9, 10]
    prune = records[-1]
    assert prune.event == "audit.prune" and prune.actor == "cli:ops" and '"pruned":5' in \
        prune.details
    checkpoint = ledger.audit_checkpoint()
    assert checkpoint and checkpoint["seq"] == 5 and checkpoint["pruned"] == 5
    check = ledger.verify_audit()
    assert check.ok and check.records == 5 and check.head_seq == 10, check
    ledger.append_audit([entry(20)])
    assert ledger.verify_audit().ok
    assert ledger.prune_audit(time.time() - 365 * 86400, "cli:ops") == 0  # nothing old left

    ledger.db.execute("DELETE FROM audit WHERE seq = 8")  # a deletion after the checkpoint
    check = ledger.verify_audit()
    assert not check.ok and check.bad_seq == 8 and "deleted" in check.problem, check


def test_a_forged_checkpoint_is_found(ledger: Ledger) -> None:
    """Rows cut from the start with a checkpoint made up to hide it: no prune record matches."""
    fill(ledger, 6)
    row = next(r for r in ledger.audit_records() if r.seq == 3)
    ledger.db.execute("DELETE FROM audit WHERE seq <= 3")
    ledger.db.execute("INSERT INTO audit_checkpoints VALUES (?, ?, ?, ?, ?)",
                      (3, row.hash, 3, "cli:ops", time.time()))
    check = ledger.verify_audit()
    assert not check.ok and "no matching audit.prune" in check.problem, check
