"""Conversations (tables `conversations`, `conversation_turns`): a user's threads of
questions, each turn kept with its answer and citations so a thread reads back as it was shown.
Every method takes the owner: a conversation id of another user reads as no conversation.
Their text is kept with personal numbers masked where the ledger masks (`LedgerBase.keep`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from core.types import Answer, Citation, ConversationRecord, StoredTurn
from store.ledger.base import LedgerBase


def _conversation_from_row(row: Any) -> ConversationRecord:
    return ConversationRecord(
        row["id"], row["owner"], row["title"], float(row["created_at"]),
        float(row["updated_at"]), int(row["turns"]),
    )


def _turn_from_row(row: Any) -> StoredTurn:
    citations = tuple(
        Citation(c["n"], c["file"], c["page"], c["section"], c["quote"], c.get("chunk_id", ""),
                 bool(c.get("supported", True)), c.get("page_label", ""),
                 c.get("review_due", ""))
        for c in json.loads(row["citations"] or "[]")
    )
    return StoredTurn(
        int(row["ordinal"]), row["question"], row["answer"], citations, row["mode"],
        bool(row["unverified"]), row["raw_answer"], int(row["question_id"]),
        float(row["created_at"]), row["searched_for"],
    )


class Conversations(LedgerBase):
    """A user's conversations and their turns."""

    def create_conversation(self, conversation_id: str, owner: str, title: str) -> None:
        now = time.time()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO conversations (id, owner, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (conversation_id, owner, self.keep(title), now, now),
            )

    def conversations(self, owner: str, limit: int = 100) -> list[ConversationRecord]:
        """The owner's conversations, the one with the newest turn first."""
        rows = self.db.execute(
            "SELECT c.id, c.owner, c.title, c.created_at, c.updated_at, "
            "(SELECT COUNT(*) FROM conversation_turns t WHERE t.conversation_id = c.id) AS turns "
            "FROM conversations c WHERE c.owner = ? ORDER BY c.updated_at DESC, c.id LIMIT ?",
            (owner, limit),
        )
        return [_conversation_from_row(r) for r in rows]

    def conversation(self, conversation_id: str, owner: str) -> ConversationRecord | None:
        row = self.db.execute(
            "SELECT c.id, c.owner, c.title, c.created_at, c.updated_at, "
            "(SELECT COUNT(*) FROM conversation_turns t WHERE t.conversation_id = c.id) AS turns "
            "FROM conversations c WHERE c.id = ? AND c.owner = ?",
            (conversation_id, owner),
        ).fetchone()
        return _conversation_from_row(row) if row else None

    def conversation_turns(self, conversation_id: str, owner: str) -> list[StoredTurn]:
        """The turns of the owner's conversation, oldest first (none for anyone else)."""
        rows = self.db.execute(
            "SELECT t.* FROM conversation_turns t JOIN conversations c "
            "ON c.id = t.conversation_id WHERE c.id = ? AND c.owner = ? ORDER BY t.ordinal",
            (conversation_id, owner),
        )
        return [_turn_from_row(r) for r in rows]

    def add_conversation_turn(
        self, conversation_id: str, owner: str, question: str, answer: Answer
    ) -> int:
        """Append a turn to the owner's conversation; returns its ordinal, or -1 when the
        conversation is not the owner's (or is gone)."""
        citations = [
            {"n": c.n, "file": c.file, "page": c.page, "section": c.section, "quote": c.quote,
             "chunk_id": c.chunk_id, "supported": c.supported, "page_label": c.page_label,
             "review_due": c.review_due}
            for c in answer.citations
        ]
        now = time.time()
        with self.transaction() as db:
            if not db.execute(
                "SELECT 1 FROM conversations WHERE id = ? AND owner = ?", (conversation_id, owner)
            ).fetchone():
                return -1
            ordinal = int(db.execute(
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM conversation_turns "
                "WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()[0])
            db.execute(
                "INSERT INTO conversation_turns (conversation_id, ordinal, question, answer, "
                "citations, mode, unverified, raw_answer, question_id, created_at, searched_for) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    ordinal,
                    self.keep(question),
                    self.keep(answer.answer),
                    json.dumps(citations, ensure_ascii=False),
                    "abstained" if answer.abstained else answer.mode,
                    int(answer.unverified),
                    self.keep(answer.raw_answer) if answer.mode == "fallback" else "",
                    answer.question_id,
                    now,
                    self.keep(answer.searched_for),
                ),
            )
            db.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
            )
        return ordinal

    def rename_conversation(self, conversation_id: str, owner: str, title: str) -> bool:
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE conversations SET title = ? WHERE id = ? AND owner = ?",
                (self.keep(title), conversation_id, owner),
            )
            return bool(cursor.rowcount > 0)

    def delete_conversation(self, conversation_id: str, owner: str) -> bool:
        """Remove the owner's conversation and its turns (the questions stay on record)."""
        with self.transaction() as db:
            if not db.execute(
                "SELECT 1 FROM conversations WHERE id = ? AND owner = ?", (conversation_id, owner)
            ).fetchone():
                return False
            db.execute(
                "DELETE FROM conversation_turns WHERE conversation_id = ?", (conversation_id,)
            )
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            return True
