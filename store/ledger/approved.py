"""Approved answers (tables `approved_answers`, `approved_citations`): answers admins wrote or
approved, each with the passages it cites and every cited document's sha256 at approval.

An answer whose cited document changes is never served stale: `suspend_stale` runs inside the
transaction that makes a new version live, deletes a document or swaps in a full re-index
(store/ledger/documents.py), and suspends every active answer citing a document that is gone,
whose sha256 is no longer the one approved, or whose cited passage is no longer live, with the
reason ("leave.pdf changed on 2026-12-03"). An edit saved again re-approves it (`save_approved`).
Every change bumps the `approved_generation` meta counter, which the matcher reloads on.

    ledger.save_approved(ApprovedAnswer(0, "年假几天？", "5 天 [1]", "alice", citations=(...)))
    ledger.approved_answers(status="suspended")[0].suspended_reason -> "leave.pdf deleted on ..."
"""

from __future__ import annotations

import json
import time
from typing import Any

from core.types import ApprovedAnswer, ApprovedCitation
from store.ledger.base import LedgerBase
from store.ledger.sql import Connection

_STALE = (
    "SELECT DISTINCT c.answer_id, c.file, d.id AS live_doc, d.sha256 AS live_sha, c.sha256 "
    "FROM approved_citations c JOIN approved_answers a ON a.id = c.answer_id "
    "LEFT JOIN documents d ON d.id = c.doc_id LEFT JOIN chunks k ON k.id = c.chunk_id "
    "WHERE a.status = 'active' AND (d.id IS NULL OR d.sha256 != c.sha256 OR k.id IS NULL)"
)


def _today(now: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(now))


def suspend_stale(db: Connection, doc_id: str | None = None, now: float | None = None) -> int:
    """Within `db`'s transaction: suspend the active answers citing a document that is gone,
    changed (another sha256) or no longer holds the cited passage; `doc_id` limits the check to
    that document's citations. Returns how many were suspended."""
    now = time.time() if now is None else now
    sql = _STALE
    params: tuple[str, ...] = ()
    if doc_id is not None:
        sql, params = sql + " AND c.doc_id = ?", (doc_id,)
    reasons: dict[int, str] = {}
    for row in db.execute(sql, params).fetchall():
        if row["live_doc"] is None:
            why = f"{row['file']} deleted on {_today(now)}"
        elif row["live_sha"] != row["sha256"]:
            why = f"{row['file']} changed on {_today(now)}"
        else:
            why = f"{row['file']} re-indexed on {_today(now)}: the cited passage is gone"
        reasons.setdefault(int(row["answer_id"]), why)
    for answer_id, why in reasons.items():
        db.execute(
            "UPDATE approved_answers SET status = 'suspended', suspended_reason = ?, "
            "updated_at = ? WHERE id = ?",
            (why, now, answer_id),
        )
    if reasons:
        _bump(db)
    return len(reasons)


def _bump(db: Connection) -> None:
    db.execute(
        "INSERT INTO meta VALUES ('approved_generation', '1') ON CONFLICT(key) DO UPDATE "
        "SET value = CAST(meta.value AS INTEGER) + 1"
    )


def _citation(row: Any) -> ApprovedCitation:
    return ApprovedCitation(row["n"], row["chunk_id"], row["doc_id"], row["sha256"], row["file"],
                            row["page"], row["section"], row["quote"])


class Approved(LedgerBase):
    """Approved answers and their citations."""

    def approved_generation(self) -> int:
        """Bumped by every change to approved answers (suspensions included)."""
        return int(self.get_meta("approved_generation", "0"))

    def approved_answers(self, status: str | None = None) -> list[ApprovedAnswer]:
        """Every approved answer (or those of `status`), suspended ones first, then by id."""
        where, params = ("WHERE status = ?", (status,)) if status else ("", ())
        rows = self.db.execute(
            f"SELECT * FROM approved_answers {where} "
            "ORDER BY CASE status WHEN 'suspended' THEN 0 ELSE 1 END, id", params
        ).fetchall()
        cited: dict[int, list[ApprovedCitation]] = {}
        for row in self.db.execute("SELECT * FROM approved_citations ORDER BY answer_id, n"):
            cited.setdefault(int(row["answer_id"]), []).append(_citation(row))
        return [self._answer(r, cited.get(int(r["id"]), [])) for r in rows]

    def approved_answer(self, answer_id: int) -> ApprovedAnswer | None:
        row = self.db.execute(
            "SELECT * FROM approved_answers WHERE id = ?", (answer_id,)
        ).fetchone()
        if row is None:
            return None
        cited = self.db.execute(
            "SELECT * FROM approved_citations WHERE answer_id = ? ORDER BY n", (answer_id,)
        ).fetchall()
        return self._answer(row, [_citation(c) for c in cited])

    def save_approved(self, answer: ApprovedAnswer, now: float | None = None) -> int:
        """Add (`answer.id` 0) or replace an approved answer with its citations, active: saving
        an edit re-approves it (author and time are the editor's). Returns its id; 0 when the
        id to replace is unknown."""
        now = time.time() if now is None else now
        values = (answer.question, json.dumps(list(answer.variants), ensure_ascii=False),
                  answer.answer, answer.lang, json.dumps(list(answer.groups)), answer.author,
                  now, now, answer.origin, answer.origin_ref)
        with self.transaction() as db:
            if answer.id:
                found = db.execute(
                    "UPDATE approved_answers SET question = ?, variants = ?, answer = ?, "
                    "lang = ?, groups = ?, author = ?, approved_at = ?, updated_at = ?, "
                    "origin = ?, origin_ref = ?, status = 'active', suspended_reason = '' "
                    "WHERE id = ? RETURNING id",
                    (*values, answer.id),
                ).fetchall()
                if not found:
                    return 0
                answer_id = answer.id
                db.execute("DELETE FROM approved_citations WHERE answer_id = ?", (answer_id,))
            else:
                answer_id = int(db.execute(
                    "INSERT INTO approved_answers (question, variants, answer, lang, groups, "
                    "author, approved_at, updated_at, origin, origin_ref) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    values,
                ).fetchall()[0][0])
            db.executemany(
                "INSERT INTO approved_citations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(answer_id, c.n, c.chunk_id, c.doc_id, c.sha256, c.file, c.page, c.section,
                  c.quote) for c in answer.citations],
            )
            suspend_stale(db, None, now)  # a citation already stale when saved
            _bump(db)
        return answer_id

    def remove_approved(self, answer_id: int) -> bool:
        """Remove an approved answer; False when there is none of that id."""
        with self.transaction() as db:
            db.execute("DELETE FROM approved_citations WHERE answer_id = ?", (answer_id,))
            gone = db.execute(
                "DELETE FROM approved_answers WHERE id = ? RETURNING id", (answer_id,)
            ).fetchall()
            if gone:
                _bump(db)
        return bool(gone)

    @staticmethod
    def _answer(row: Any, citations: list[ApprovedCitation]) -> ApprovedAnswer:
        return ApprovedAnswer(
            id=int(row["id"]),
            question=row["question"],
            answer=row["answer"],
            author=row["author"],
            variants=tuple(json.loads(row["variants"])),
            lang=row["lang"],
            groups=tuple(json.loads(row["groups"])),
            approved_at=float(row["approved_at"]),
            updated_at=float(row["updated_at"]),
            status=row["status"],
            suspended_reason=row["suspended_reason"],
            origin=row["origin"],
            origin_ref=row["origin_ref"],
            citations=tuple(citations),
        )
