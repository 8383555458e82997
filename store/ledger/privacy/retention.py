"""Records past their retention, a batch at a time (store/retention.py runs the pass): each
batch is found by a read outside any transaction, then deleted in one short transaction, so a
question recorded meanwhile waits for one batch at most. A person on legal hold (`holds`) keeps
their rows. Also the masking of personal numbers in rows written before the ledger masked
(`mask_batch`), from where the last pass left off.

    ledger.prune_batch("questions", before=..., gaps_before=...)
        -> ({"feedback": 12, "questions": 500}, marker)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from store.ledger.base import LedgerBase

_NOT_HELD = "NOT IN (SELECT name FROM holds)"
_GAP = ("(t.mode = 'abstained' OR EXISTS (SELECT 1 FROM feedback f WHERE f.question_id = t.id "
        "AND f.rating = -1))")


@dataclass(frozen=True)
class AgedTable:
    """A table pruned by age: its time column, its key (a marker of where a pass is), the rows
    it may never prune (those of held people, conversations still holding turns), and the
    rows of other tables that go with each (`children`: table, column naming the key)."""

    table: str
    time: str
    key: tuple[str, ...]
    keep: str
    children: tuple[tuple[str, str], ...] = ()


AGED = {
    "questions": AgedTable("questions", "created_at", ("id",), f"t.user {_NOT_HELD}",
                           (("feedback", "question_id"),)),
    "feedback": AgedTable("feedback", "created_at", ("id",), f"t.user {_NOT_HELD}"),
    "conversation_turns": AgedTable(
        "conversation_turns", "created_at", ("conversation_id", "ordinal"),
        "NOT EXISTS (SELECT 1 FROM conversations c JOIN holds h ON h.name = c.owner "
        "WHERE c.id = t.conversation_id)"),  # per row, by key: no scan of conversations
    "conversations": AgedTable(
        "conversations", "updated_at", ("id",),
        f"t.owner {_NOT_HELD} AND NOT EXISTS (SELECT 1 FROM conversation_turns u "
        "WHERE u.conversation_id = t.id)"),
    "channel_messages": AgedTable("channel_messages", "created_at", ("id",),
                                  f"t.asker {_NOT_HELD}"),
}
# Free text kept about people, by table (key columns, text columns), for `mask_batch`.
TEXTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "questions": (("id",), ("question", "answer")),
    "feedback": (("id",), ("comment",)),
    "gap_notes": (("key",), ("note",)),
    "conversations": (("id",), ("title",)),
    "conversation_turns": (("conversation_id", "ordinal"),
                           ("question", "answer", "raw_answer", "searched_for")),
    "channel_messages": (("id",), ("question", "answer")),
}
Marker = list[Any] | None  # where a pass is: the time and key of the last row it looked at


def _compare(key: tuple[str, ...], op: str) -> str:
    """The key as a row value compared with a marker's (its primary key serves it).

    _compare(("a", "b"), ">") -> "(a, b) > (?, ?)"
    """
    return f"({', '.join(key)}) {op} ({', '.join('?' * len(key))})"


def _after(key: tuple[str, ...], first: str) -> str:
    """The condition "this row's (first, *key) comes after the marker's": a range of `first`
    (so its index serves it, in its order) less the rows of the marker's time already seen.

    _after(("id",), "created_at") -> "created_at >= ? AND NOT (created_at = ? AND (id) <= (?))"
    """
    return f"{first} >= ? AND NOT ({first} = ? AND {_compare(key, '<=')})"


def _in_keys(key: tuple[str, ...], keys: list[tuple[Any, ...]]) -> tuple[str, list[Any]]:
    """The condition "this row's key is one of `keys`", and its arguments. A key of several
    columns also names its first column's values apart: SQLite finds the rows of a row-value
    IN by scanning the table, of a column's IN by the primary key's index.

    _in_keys(("a", "b"), [(1, 2), (1, 3)])
        -> ("a IN (?) AND (a, b) IN (VALUES (?, ?), (?, ?))", [1, 1, 2, 1, 3])
    """
    one = f"({', '.join('?' * len(key))})"
    rows = f"({', '.join(key)}) IN (VALUES {', '.join([one] * len(keys))})"
    args = [v for k in keys for v in k]
    if len(key) == 1:
        return rows, args
    first = list(dict.fromkeys(k[0] for k in keys))
    return f"{key[0]} IN ({', '.join('?' * len(first))}) AND {rows}", [*first, *args]


def _after_args(marker: list[Any]) -> list[Any]:
    """The arguments of `_after` for `marker` (its time, then its key)."""
    return [marker[0], *marker]


class Retention(LedgerBase):
    """Rows past their retention deleted a batch at a time; old rows masked."""

    def prune_batch(self, name: str, before: float, after: Marker = None, batch: int = 500,
                    gaps_before: float | None = None) -> tuple[dict[str, int], Marker]:
        """Delete up to `batch` rows of table `name` (of `AGED`) older than `before`, from the
        marker `after` on (None: the oldest), with their `children`; (rows deleted by table,
        the marker of the last row looked at, or None when no row is left to look at). For
        questions, `gaps_before` is the limit of those that are knowledge gaps."""
        t = AGED[name]
        newest = before if gaps_before is None else max(before, gaps_before)
        where = [f"t.{t.time} < ?", t.keep]
        args: list[Any] = [newest]
        if gaps_before is not None:
            where.append(f"((NOT {_GAP} AND t.{t.time} < ?) OR ({_GAP} AND t.{t.time} < ?))")
            args += [before, gaps_before]
        if after is not None:
            where.append(_after(tuple(f"t.{k}" for k in t.key), f"t.{t.time}"))
            args += _after_args(after)
        order = ", ".join([f"t.{t.time}", *(f"t.{k}" for k in t.key)])
        rows = self.db.execute(
            f"SELECT {order} FROM {t.table} t WHERE {' AND '.join(where)} ORDER BY {order} "
            "LIMIT ?", (*args, batch)).fetchall()
        if not rows:
            return {}, None
        keys = [tuple(r)[1:] for r in rows]
        gone: dict[str, int] = {}
        with self.transaction() as db:
            for child, column in t.children:
                match, args = _in_keys((column,), [k[:1] for k in keys])
                gone[child] = int(db.execute(f"DELETE FROM {child} WHERE {match}",
                                             args).rowcount)
            match, args = _in_keys(tuple(f"t.{k}" for k in t.key), keys)
            gone[name] = int(db.execute(
                f"DELETE FROM {t.table} AS t WHERE {t.keep} AND {match}", args).rowcount)
        return gone, list(rows[-1])

    def mask_batch(self, name: str, mask: Callable[[str], str], after: Marker = None,
                   batch: int = 500, upto: Marker = None) -> tuple[dict[str, int], Marker]:
        """Mask the free text of up to `batch` rows of table `name` (of `TEXTS`) from the
        marker `after` on, up to the row `upto` (None: to the end); ({"masked": rows changed},
        the marker of the last row read, None at the end)."""
        key, texts = TEXTS[name]
        where, args = ["1 = 1"], []
        for op, marker in ((">", after), ("<=", upto)):
            if marker is not None:
                where.append(_compare(key, op))
                args += marker
        rows = self.db.execute(
            f"SELECT {', '.join(key + texts)} FROM {name} WHERE {' AND '.join(where)} "
            f"ORDER BY {', '.join(key)} LIMIT ?", (*args, batch)).fetchall()
        if not rows:
            return {}, None
        changed = []
        for row in rows:
            masked = [mask(row[c]) for c in texts]
            if masked != [row[c] for c in texts]:
                changed.append((*masked, *(row[k] for k in key)))
        if changed:
            with self.transaction() as db:
                db.executemany(f"UPDATE {name} SET {', '.join(f'{c} = ?' for c in texts)} "
                               f"WHERE {' AND '.join(f'{k} = ?' for k in key)}", changed)
        return {"masked": len(changed)}, [rows[-1][k] for k in key]

    def last_key(self, name: str) -> Marker:
        """The key of the last row of table `name` (of `TEXTS`) now; None when it is empty."""
        key, _ = TEXTS[name]
        row = self.db.execute(f"SELECT {', '.join(key)} FROM {name} ORDER BY "
                              f"{', '.join(f'{k} DESC' for k in key)} LIMIT 1").fetchone()
        return list(row) if row else None

    def checkpoint(self) -> None:
        """SQLite: copy what the write-ahead log holds into the database file now, from this
        connection, without waiting for anyone (PASSIVE). A pass does it after each batch, so
        the log stays short and a question's commit is not the one that crosses SQLite's
        threshold and copies the pass's pages. PostgreSQL: nothing."""
        if self.dialect == "sqlite":
            self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def claim_due(self, key: str, now: float, every_s: float) -> bool:
        """Whether this process takes the turn `key` names (a scheduled pass) that is due by
        `now`; the next is then due `every_s` later. One process of those asking wins."""
        with self.transaction() as db:
            db.execute("INSERT INTO meta VALUES (?, '0') ON CONFLICT(key) DO NOTHING", (key,))
            return bool(db.execute(
                "UPDATE meta SET value = ? WHERE key = ? AND CAST(value AS BIGINT) <= ?",
                (str(int(now + every_s)), key, int(now))).rowcount)

    def marker(self, name: str) -> Marker:
        """Where the masking of table `name` left off (None: at the start)."""
        text = self.get_meta(f"masked.{name}")
        return json.loads(text) if text else None

    def set_marker(self, name: str, marker: Marker) -> None:
        with self.transaction() as db:
            self.set_meta(f"masked.{name}", json.dumps(marker) if marker else "", db)
