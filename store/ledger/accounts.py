"""Who may ask, and how they are let in (tables `users`, `sessions`, `login_failures`): accounts
with their password hash, groups and API token hash; the web sessions every app process of a
deployment shares (kept as the SHA-256 of their tokens); and the login throttle's counts.

A user's `epoch` moves on when their password changes, when they are disabled or enabled, and when
their sessions are ended (`kb users logout`): a session opened under an older epoch no longer counts
(ui/identity/users.py checks it). `disabled` is an admin's choice; a record the directory turned off
(its password field `directory$<source>-off`) reads as disabled too, without it. A deleted account
takes its sessions and conversations with it, so a new account of the same name starts with none of
them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from core.types import User
from store.ledger.base import LedgerBase
from store.ledger.sql import LOCK_SPACE, LOGIN_KEY

TURNED_OFF = "-off"  # the end of the password field of a record the directory turned off


def _user_from_row(row: Any) -> User:
    return User(
        row["name"],
        tuple(json.loads(row["groups"])),
        bool(row["is_admin"]),
        bool(row["api_token_hash"]),
        float(row["created_at"]),
        bool(row["disabled"]) or str(row["password_hash"]).endswith(TURNED_OFF),
        bool(row["see_all"]),
        int(row["epoch"]),
        float(row["token_expires_at"]),
    )


class Accounts(LedgerBase):
    """Users and their API tokens, web sessions, and the login throttle."""

    # --- users ----------------------------------------------------------------------------
    def add_user(
        self, name: str, password_hash: str, groups: Sequence[str], is_admin: bool,
        subject: str = "",
    ) -> bool:
        """A new user (with the sign-in provider's `subject`, when one vouches for them); False
        when the name is taken."""
        with self.transaction() as db:
            added = db.execute(
                "INSERT INTO users (name, password_hash, groups, is_admin, created_at, subject) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO NOTHING",
                (name, password_hash, json.dumps(list(groups)), int(is_admin), time.time(),
                 subject),
            ).rowcount
        return bool(added)

    def subject(self, name: str) -> str:
        """The provider's subject bound to the account ("" when none is)."""
        row = self.db.execute("SELECT subject FROM users WHERE name = ?", (name,)).fetchone()
        return str(row[0]) if row else ""

    def subject_holder(self, subject: str) -> str | None:
        """The account `subject` is bound to, if any."""
        row = self.db.execute("SELECT name FROM users WHERE subject = ?", (subject,)).fetchone()
        return str(row[0]) if row else None

    def bind_subject(self, name: str, subject: str) -> bool:
        """Bind `subject` to an account that has none; False when it has one or `subject` is
        another account's."""
        with self.transaction() as db:
            bound = db.execute(
                "UPDATE users SET subject = ? WHERE name = ? AND subject = '' "
                "AND NOT EXISTS (SELECT 1 FROM users WHERE subject = ?)",
                (subject, name, subject),
            ).rowcount
        return bool(bound)

    def user(self, name: str) -> tuple[User, str] | None:
        """The user and their password hash."""
        row = self.db.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
        return (_user_from_row(row), str(row["password_hash"])) if row else None

    def users(self) -> list[User]:
        return [_user_from_row(r) for r in self.db.execute("SELECT * FROM users ORDER BY name")]

    def set_password_hash(self, name: str, password_hash: str) -> None:
        """The new hash; the user's epoch moves on, so their open sessions end."""
        with self.transaction() as db:
            db.execute(
                "UPDATE users SET password_hash = ?, epoch = epoch + 1 WHERE name = ?",
                (password_hash, name),
            )

    def set_user_disabled(self, name: str, disabled: bool) -> None:
        """Disable (ending sessions and the token) or enable a user."""
        with self.transaction() as db:
            db.execute(
                "UPDATE users SET disabled = ?, epoch = epoch + 1 WHERE name = ?",
                (int(disabled), name),
            )

    def bump_user_epoch(self, name: str) -> None:
        """End every open session of the user."""
        with self.transaction() as db:
            db.execute("UPDATE users SET epoch = epoch + 1 WHERE name = ?", (name,))

    def set_user_see_all(self, name: str, see_all: bool) -> None:
        with self.transaction() as db:
            db.execute("UPDATE users SET see_all = ? WHERE name = ?", (int(see_all), name))

    def delete_user(self, name: str) -> bool:
        """Remove the account with its token, web sessions and conversations, in one
        transaction (its questions and feedback stay on record, under its name)."""
        with self.transaction() as db:
            db.execute("DELETE FROM sessions WHERE name = ?", (name,))
            db.execute(
                "DELETE FROM conversation_turns WHERE conversation_id IN "
                "(SELECT id FROM conversations WHERE owner = ?)", (name,),
            )
            db.execute("DELETE FROM conversations WHERE owner = ?", (name,))
            return bool(db.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount > 0)

    def set_user_groups(self, name: str, groups: Sequence[str], is_admin: bool | None) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE users SET groups = ? WHERE name = ?", (json.dumps(list(groups)), name)
            )
            if is_admin is not None:
                db.execute("UPDATE users SET is_admin = ? WHERE name = ?", (int(is_admin), name))

    def set_token_hash(self, name: str, token_hash: str, expires_at: float) -> None:
        """The API token's hash and expiry; an empty hash revokes the token."""
        with self.transaction() as db:
            db.execute(
                "UPDATE users SET api_token_hash = ?, token_expires_at = ? WHERE name = ?",
                (token_hash, expires_at if token_hash else 0.0, name),
            )

    def token_hashes(self) -> list[tuple[User, str]]:
        """Every user holding an API token, with the token's hash."""
        rows = self.db.execute("SELECT * FROM users WHERE api_token_hash != ''")
        return [(_user_from_row(r), str(r["api_token_hash"])) for r in rows]

    # --- web sessions and the login throttle (008_sessions, 010_login_attempts) ------------
    def open_session(self, token_hash: str, name: str, epoch: int, opened_at: float,
                     expires_at: float) -> None:
        """A web login; sessions that expired by `opened_at` go."""
        with self.transaction() as db:
            db.execute("DELETE FROM sessions WHERE expires_at <= ?", (opened_at,))
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?) ON CONFLICT(token_hash) DO UPDATE "
                "SET name = excluded.name, epoch = excluded.epoch, "
                "opened_at = excluded.opened_at, expires_at = excluded.expires_at",
                (token_hash, name, epoch, opened_at, expires_at),
            )

    def session(self, token_hash: str) -> tuple[str, int, float] | None:
        """(user name, the user's epoch at login, expiry) of a session."""
        row = self.db.execute(
            "SELECT name, epoch, expires_at FROM sessions WHERE token_hash = ?", (token_hash,)
        ).fetchone()
        return (str(row[0]), int(row[1]), float(row[2])) if row else None

    def sessions(self) -> list[tuple[str, str]]:
        """(token hash, user name) of every session on record."""
        return [(r[0], r[1]) for r in self.db.execute("SELECT token_hash, name FROM sessions")]

    def end_session(self, token_hash: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash,))

    def login_failures(self, keys: Sequence[str], since: float) -> dict[str, tuple[int, float]]:
        """key -> (failures after `since`, the oldest of them), for the keys that have some."""
        out: dict[str, tuple[int, float]] = {}
        for key in keys:
            row = self.db.execute(
                "SELECT COUNT(*), MIN(failed_at) FROM login_failures "
                "WHERE key = ? AND failed_at > ?",
                (key, since),
            ).fetchone()
            if row and row[0]:
                out[key] = (int(row[0]), float(row[1]))
        return out

    def reserve_login(self, limits: dict[str, int], attempt: str, at: float,
                      since: float) -> dict[str, float]:
        """One step for the login throttle: when every key of `limits` has fewer rows after
        `since` (failures, and attempts still being checked) than its limit, count `attempt`
        under each key at `at` and answer {}; else count nothing and answer each key at its
        limit with its oldest row's time. Rows from before `since` go. The attempt counts as a
        failure until `forget_login` takes it back.

        The check and the count are one transaction, and these transactions take turns across
        threads and processes (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock), so no
        two attempts see the same count.

            reserve_login({"u:bob": 5, "a:10.0.0.7": 20}, "a1", 1000.0, 700.0) -> {}
            ... the sixth attempt for bob by 1300.0 -> {"u:bob": 1000.0}
        """
        with self.transaction() as db:
            if self.dialect == "postgres":
                db.execute("SELECT pg_advisory_xact_lock(?, ?)", (LOCK_SPACE, LOGIN_KEY))
            db.execute("DELETE FROM login_failures WHERE failed_at <= ?", (since,))
            full: dict[str, float] = {}
            for key, limit in limits.items():
                count, oldest = db.execute(
                    "SELECT COUNT(*), MIN(failed_at) FROM login_failures "
                    "WHERE key = ? AND failed_at > ?",
                    (key, since),
                ).fetchone()
                if count >= limit:
                    full[key] = float(oldest if oldest is not None else at)
            if not full:
                db.executemany(
                    "INSERT INTO login_failures (key, failed_at, attempt) VALUES (?, ?, ?)",
                    [(key, at, attempt) for key in limits],
                )
        return full

    def forget_login(self, attempt: str, key: str) -> None:
        """A login that succeeded: `attempt` no longer counts, nor the failures under `key`."""
        with self.transaction() as db:
            db.execute("DELETE FROM login_failures WHERE attempt = ? OR key = ?", (attempt, key))

    def clear_login_failures(self, key: str | None = None) -> None:
        """Forget the failures of `key` (all of them when None)."""
        with self.transaction() as db:
            if key is None:
                db.execute("DELETE FROM login_failures")
            else:
                db.execute("DELETE FROM login_failures WHERE key = ?", (key,))
