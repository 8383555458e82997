"""What kb said in the chat platforms (tables `channel_events`, `channel_messages`): each
platform event seen once (a platform retries a callback it thinks went unanswered: the second
delivery finds its id here and is dropped, in this process or another sharing the ledger), and
each answer posted, with the thread it went to and the message it became, so a follow-up in the
thread reads the earlier turns and a reaction on the message finds its question.
"""

from __future__ import annotations

import time
from typing import Any

from store.ledger.base import LedgerBase

EVENTS_KEPT_S = 2 * 86400.0  # platforms retry for hours at most (Feishu: up to 6 h)


class ChannelLog(LedgerBase):
    """Events seen and answers posted, by platform."""

    def channel_event_first(self, platform: str, event_id: str, now: float | None = None) -> bool:
        """Whether this is the first time `event_id` of `platform` is seen (it is remembered
        now); events older than EVENTS_KEPT_S are forgotten on the way."""
        now = time.time() if now is None else now
        with self.transaction() as db:
            db.execute("DELETE FROM channel_events WHERE seen_at < ?", (now - EVENTS_KEPT_S,))
            rows = db.execute(
                "INSERT INTO channel_events (platform, event_id, seen_at) VALUES (?, ?, ?) "
                "ON CONFLICT (platform, event_id) DO NOTHING RETURNING event_id",
                (platform, event_id, now),
            ).fetchall()
        return bool(rows)

    def add_channel_message(self, platform: str, chat: str, thread: str, message: str,
                            question_id: int, asker: str, question: str, answer: str) -> None:
        """An answer kb posted: where, as which message, to whom, for which question."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO channel_messages (platform, chat, thread, message, question_id, "
                "asker, question, answer, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (platform, chat, thread, message, question_id, asker, question, answer,
                 time.time()),
            )

    def channel_turns(self, platform: str, chat: str, thread: str, since: float,
                      limit: int) -> list[tuple[str, str]]:
        """The last `limit` (question, answer) pairs of a thread since `since`, oldest first."""
        rows = self.db.execute(
            "SELECT question, answer FROM channel_messages WHERE platform = ? AND chat = ? AND "
            "thread = ? AND created_at >= ? ORDER BY created_at DESC, id DESC LIMIT ?",
            (platform, chat, thread, since, limit),
        ).fetchall()
        return [(r["question"], r["answer"]) for r in reversed(rows)]

    def channel_question(self, platform: str, message: str) -> tuple[int, str] | None:
        """The question id and asker of the answer posted as `message`, else None."""
        row = self.db.execute(
            "SELECT question_id, asker FROM channel_messages WHERE platform = ? AND message = ? "
            "ORDER BY id DESC LIMIT 1", (platform, message),
        ).fetchone()
        return (int(row["question_id"]), str(row["asker"])) if row else None

    def channel_counts(self, since: float) -> dict[str, dict[str, Any]]:
        """Per platform since `since`: events seen, answers posted, the last answer's time."""
        out: dict[str, dict[str, Any]] = {}
        for row in self.db.execute(
                "SELECT platform, COUNT(*) AS n FROM channel_events WHERE seen_at >= ? "
                "GROUP BY platform", (since,)):
            out.setdefault(row["platform"], {})["events"] = int(row["n"])
        for row in self.db.execute(
                "SELECT platform, COUNT(*) AS n, MAX(created_at) AS last FROM channel_messages "
                "WHERE created_at >= ? GROUP BY platform", (since,)):
            out.setdefault(row["platform"], {}).update(answers=int(row["n"]),
                                                       last=float(row["last"]))
        return out
