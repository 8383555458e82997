"""What was asked and what users made of it (tables `questions`, `feedback`, `gap_notes`): each
question with its answer, mode, cited chunks and timings; each user's rating of an answer; and
the admins' notes on knowledge gaps (the admin view, ui/admin/insights.py).
"""

from __future__ import annotations

import json
import time
from typing import Any

from core.types import Answer, QuestionRecord
from store.ledger.base import LedgerBase


class Questions(LedgerBase):
    """Questions with their answers, feedback, and notes on knowledge gaps."""

    # --- questions and feedback -----------------------------------------------------------
    def record_question(self, user: str, question: str, answer: Answer) -> int:
        """Keep a question with its answer, mode, cited chunks and timings; returns its id."""
        cited = [c.chunk_id for c in answer.citations if c.chunk_id]
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO questions (user, question, answer, mode, chunk_ids, timings, "
                "created_at, unsure) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    user,
                    question,
                    answer.answer,
                    answer.mode,
                    json.dumps(cited),
                    json.dumps(answer.timings_ms),
                    time.time(),
                    int(answer.unsure),
                ),
            )
            return int(cursor.fetchall()[0][0])

    def question_owner(self, question_id: int) -> str | None:
        row = self.db.execute("SELECT user FROM questions WHERE id = ?", (question_id,)).fetchone()
        return str(row["user"]) if row else None

    def replace_feedback(self, question_id: int, user: str, rating: int, comment: str) -> int:
        """The user's rating of the question, replacing an earlier one; returns its id."""
        with self.transaction() as db:
            db.execute(
                "DELETE FROM feedback WHERE question_id = ? AND user = ?", (question_id, user)
            )
            cursor = db.execute(
                "INSERT INTO feedback (question_id, user, rating, comment, created_at) "
                "VALUES (?, ?, ?, ?, ?) RETURNING id",
                (question_id, user, rating, comment, time.time()),
            )
            return int(cursor.fetchall()[0][0])

    def feedback(self, limit: int) -> list[dict[str, Any]]:
        """Newest first, joined with the question, its answer, cited chunks and timings."""
        rows = self.db.execute(
            "SELECT f.id, f.created_at, f.user, f.rating, f.comment, q.id AS question_id, "
            "q.question, q.answer, q.mode, q.chunk_ids, q.timings FROM feedback f "
            "LEFT JOIN questions q ON q.id = f.question_id ORDER BY f.id DESC LIMIT ?",
            (limit,),
        )
        return [dict(r) for r in rows]

    # --- what was asked (the admin view) ---------------------------------------------------
    def question_records(self, since: float = 0.0) -> list[QuestionRecord]:
        """Questions asked since `since` (epoch seconds), oldest first, with their rating."""
        rows = self.db.execute(
            "SELECT q.id, q.user, q.question, q.mode, q.chunk_ids, q.timings, q.created_at, "
            "q.unsure, (SELECT f.rating FROM feedback f WHERE f.question_id = q.id "
            "ORDER BY f.id DESC LIMIT 1) AS rating FROM questions q "
            "WHERE q.created_at >= ? ORDER BY q.id",
            (since,),
        )
        return [
            QuestionRecord(
                r["id"],
                r["user"],
                r["question"],
                r["mode"],
                tuple(json.loads(r["chunk_ids"] or "[]")),
                r["timings"],
                r["created_at"],
                r["rating"],
                bool(r["unsure"]),
            )
            for r in rows
        ]

    def gap_notes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, note FROM gap_notes").fetchall())

    def set_gap_note(self, key: str, note: str, user: str) -> None:
        """An admin's note on a knowledge gap ("which document should answer this?")."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO gap_notes VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "note = excluded.note, user = excluded.user, updated_at = excluded.updated_at",
                (key, note, user, time.time()),
            )
