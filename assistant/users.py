"""Users, their groups, passwords and API tokens; the questions they asked and their feedback.

All of it lives in the ledger's `users`, `questions` and `feedback` tables. Passwords are hashed
with scrypt and a per-user salt (`scrypt$n$r$p$salt$hash`) and compared in constant time; API
tokens are random, shown once, and only their SHA-256 is stored. Neither is ever logged.

    users = Users(settings.store_path() / "ledger.sqlite")
    users.add("alice", "s3cret-pass", groups=["all", "hr"])
    users.authenticate("alice", "s3cret-pass").groups -> ("all", "hr")
    token = users.new_token("alice"); users.by_token(token).name -> "alice"
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.errors import KbError
from assistant.types import Answer
from ingest.ledger import Ledger

logger = logging.getLogger(__name__)

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
TOKEN_PREFIX = "kb_"
MIN_PASSWORD = 8
NAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
GROUP_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...]
    is_admin: bool = False
    has_token: bool = False
    created_at: float = 0.0


def hash_password(password: str, salt: bytes | None = None) -> str:
    """scrypt with a random 16-byte salt.

    hash_password("pw") -> "scrypt$16384$8$1$<salt>$<hash>"
    """
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P,
                            dklen=32)
    b64 = base64.urlsafe_b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    """Constant-time check of `password` against a `hash_password` string."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.urlsafe_b64decode(digest)
        actual = hashlib.scrypt(password.encode(), salt=base64.urlsafe_b64decode(salt), n=int(n),
                                r=int(r), p=int(p), dklen=len(expected))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_groups(value: str | Sequence[str]) -> tuple[str, ...]:
    """`parse_groups("hr, all")` -> ("all", "hr"); a bad name is a KbError."""
    items = value.split(",") if isinstance(value, str) else list(value)
    groups = sorted({g.strip() for g in items if g.strip()})
    for group in groups:
        if not GROUP_RE.match(group):
            raise KbError(f"group {group!r}: use letters, digits, '.', '_' or '-' only")
    return tuple(groups)


# A fixed hash to verify against when the user does not exist, so both paths take as long.
_DUMMY_HASH = hash_password("not-a-password", salt=b"kb-dummy-salt-00")


class Users:
    """The users, questions and feedback tables of one ledger; safe to share between threads."""

    def __init__(self, ledger_path: Path) -> None:
        self.ledger = Ledger(ledger_path)
        self._lock = threading.Lock()

    @classmethod
    def for_store(cls, store_path: Path) -> Users:
        return cls(store_path / "ledger.sqlite")

    def close(self) -> None:
        self.ledger.close()

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        with self._lock, self.ledger.transaction() as db:
            yield db

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return list(self.ledger.db.execute(sql, tuple(args)).fetchall())

    # --- users --------------------------------------------------------------------------
    def add(self, name: str, password: str, groups: Sequence[str] = ("all",),
            is_admin: bool = False) -> User:
        if not NAME_RE.match(name):
            raise KbError(f"user name {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-'")
        _check_password(password)
        clean = parse_groups(groups) or ("all",)
        with self._tx() as db:
            if db.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise KbError(f"user {name!r} exists (use `kb users passwd {name}` to change "
                              "the password)")
            db.execute("INSERT INTO users (name, password_hash, groups, is_admin, created_at) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (name, hash_password(password), json.dumps(list(clean)), int(is_admin),
                        time.time()))
        logger.info("user %s added (groups %s, admin %s)", name, ",".join(clean), is_admin)
        return User(name, clean, is_admin, False, time.time())

    def get(self, name: str) -> User | None:
        rows = self._query("SELECT * FROM users WHERE name = ?", (name,))
        return _user(rows[0]) if rows else None

    def require(self, name: str) -> User:
        user = self.get(name)
        if user is None:
            raise KbError(f"no user {name!r} (see `kb users list`)")
        return user

    def list_users(self) -> list[User]:
        return [_user(r) for r in self._query("SELECT * FROM users ORDER BY name")]

    def set_password(self, name: str, password: str) -> None:
        _check_password(password)
        self.require(name)
        with self._tx() as db:
            db.execute("UPDATE users SET password_hash = ? WHERE name = ?",
                       (hash_password(password), name))

    def set_groups(self, name: str, groups: Sequence[str], is_admin: bool | None = None) -> User:
        self.require(name)
        clean = parse_groups(groups) or ("all",)
        with self._tx() as db:
            db.execute("UPDATE users SET groups = ? WHERE name = ?",
                       (json.dumps(list(clean)), name))
            if is_admin is not None:
                db.execute("UPDATE users SET is_admin = ? WHERE name = ?", (int(is_admin), name))
        return self.require(name)

    def authenticate(self, name: str, password: str) -> User | None:
        """The user when the password matches, else None (same work either way)."""
        rows = self._query("SELECT * FROM users WHERE name = ?", (name,))
        stored = rows[0]["password_hash"] if rows else _DUMMY_HASH
        ok = verify_password(password, stored)
        if rows and ok:
            return _user(rows[0])
        logger.info("login refused for %s", name if rows else "an unknown user")
        return None

    def new_token(self, name: str) -> str:
        """A fresh API bearer token for `name` (replacing any earlier one); only its hash stays."""
        self.require(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self._tx() as db:
            db.execute("UPDATE users SET api_token_hash = ? WHERE name = ?",
                       (token_hash(token), name))
        return token

    def by_token(self, token: str) -> User | None:
        if not token.startswith(TOKEN_PREFIX):
            return None
        wanted = token_hash(token)
        found = None
        for row in self._query("SELECT * FROM users WHERE api_token_hash != ''"):
            if hmac.compare_digest(row["api_token_hash"], wanted):
                found = _user(row)
        return found

    # --- questions and feedback ---------------------------------------------------------
    def record_question(self, user: str, question: str, answer: Answer) -> int:
        """Keep a question with its answer, mode, cited chunks and timings; returns its id."""
        cited = [c.chunk_id for c in answer.citations if c.chunk_id]
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO questions (user, question, answer, mode, chunk_ids, timings, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (user, question, answer.answer, answer.mode, json.dumps(cited),
                 json.dumps(answer.timings_ms), time.time()))
            return int(cur.lastrowid or 0)

    def question_owner(self, question_id: int) -> str | None:
        rows = self._query("SELECT user FROM questions WHERE id = ?", (question_id,))
        return str(rows[0]["user"]) if rows else None

    def record_feedback(self, question_id: int, user: str, rating: int, comment: str = "") -> int:
        """Thumbs up (+1) or down (-1) on one of the user's own questions; a second rating of
        the same question by the same user replaces the first."""
        if rating not in (1, -1):
            raise KbError("rating must be +1 or -1")
        if self.question_owner(question_id) != user:
            raise KbError(f"question {question_id}: not one of {user}'s questions")
        with self._tx() as db:
            db.execute("DELETE FROM feedback WHERE question_id = ? AND user = ?",
                       (question_id, user))
            cur = db.execute(
                "INSERT INTO feedback (question_id, user, rating, comment, created_at) "
                "VALUES (?, ?, ?, ?, ?)", (question_id, user, rating, comment[:2000], time.time()))
            return int(cur.lastrowid or 0)

    def feedback(self, limit: int = 200) -> list[dict[str, Any]]:
        """Newest first, joined with the question, its answer, cited chunks and timings."""
        rows = self._query(
            "SELECT f.id, f.created_at, f.user, f.rating, f.comment, q.id AS question_id, "
            "q.question, q.answer, q.mode, q.chunk_ids, q.timings FROM feedback f "
            "LEFT JOIN questions q ON q.id = f.question_id ORDER BY f.id DESC LIMIT ?", (limit,))
        return [dict(r) for r in rows]


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise KbError(f"password too short: use at least {MIN_PASSWORD} characters")


def _user(row: Any) -> User:
    return User(row["name"], tuple(json.loads(row["groups"])), bool(row["is_admin"]),
                bool(row["api_token_hash"]), float(row["created_at"]))
