"""Users, their groups, passwords and API tokens; the questions they asked and their feedback.

All of it lives in the ledger's `users`, `questions` and `feedback` tables. Passwords are hashed
with scrypt and a per-user salt (`scrypt$n$r$p$salt$hash`) and compared in constant time; API
tokens are random, shown once, and only their SHA-256 is stored. Neither is ever logged.

    users = Users(store.ledger)
    users.add("alice", "s3cret-pass", groups=["all", "hr"])
    users.authenticate("alice", "s3cret-pass").groups -> ("all", "hr")
    token = users.new_token("alice"); users.by_token(token).name -> "alice"
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Sequence
from typing import Any

from core.access import parse_groups
from core.errors import KbError
from core.types import Answer, User
from ingest.ledger import Ledger

logger = logging.getLogger(__name__)

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
TOKEN_PREFIX = "kb_"
MIN_PASSWORD = 8
NAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")



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



# A fixed hash to verify against when the user does not exist, so both paths take as long.
_DUMMY_HASH = hash_password("not-a-password", salt=b"kb-dummy-salt-00")


class Users:
    """Accounts, questions and feedback, kept in the ledger; safe to share between threads."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    # --- users --------------------------------------------------------------------------
    def add(self, name: str, password: str, groups: Sequence[str] = ("all",),
            is_admin: bool = False) -> User:
        if not NAME_RE.match(name):
            raise KbError(f"user name {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-'")
        _check_password(password)
        clean = parse_groups(groups) or ("all",)
        if not self.ledger.add_user(name, hash_password(password), clean, is_admin):
            raise KbError(f"user {name!r} exists (use `kb users passwd {name}` to change "
                          "the password)")
        logger.info("user %s added (groups %s, admin %s)", name, ",".join(clean), is_admin)
        return self.require(name)

    def get(self, name: str) -> User | None:
        found = self.ledger.user(name)
        return found[0] if found else None

    def require(self, name: str) -> User:
        user = self.get(name)
        if user is None:
            raise KbError(f"no user {name!r} (see `kb users list`)")
        return user

    def list_users(self) -> list[User]:
        return self.ledger.users()

    def set_password(self, name: str, password: str) -> None:
        _check_password(password)
        self.require(name)
        self.ledger.set_password_hash(name, hash_password(password))

    def set_groups(self, name: str, groups: Sequence[str], is_admin: bool | None = None) -> User:
        self.require(name)
        self.ledger.set_user_groups(name, parse_groups(groups) or ("all",), is_admin)
        return self.require(name)

    def authenticate(self, name: str, password: str) -> User | None:
        """The user when the password matches, else None (same work either way)."""
        found = self.ledger.user(name)
        ok = verify_password(password, found[1] if found else _DUMMY_HASH)
        if found and ok:
            return found[0]
        logger.info("login refused for %s", name if found else "an unknown user")
        return None

    def new_token(self, name: str) -> str:
        """A fresh API bearer token for `name` (replacing any earlier one); only its hash stays."""
        self.require(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.ledger.set_token_hash(name, token_hash(token))
        return token

    def by_token(self, token: str) -> User | None:
        if not token.startswith(TOKEN_PREFIX):
            return None
        wanted = token_hash(token)
        found = None
        for user, stored in self.ledger.token_hashes():
            if hmac.compare_digest(stored, wanted):
                found = user
        return found

    # --- questions and feedback ---------------------------------------------------------
    def record_question(self, user: str, question: str, answer: Answer) -> int:
        """Keep a question with its answer, mode, cited chunks and timings; returns its id."""
        return self.ledger.record_question(user, question, answer)

    def record_feedback(self, question_id: int, user: str, rating: int, comment: str = "") -> int:
        """Thumbs up (+1) or down (-1) on one of the user's own questions; a second rating of
        the same question by the same user replaces the first."""
        if rating not in (1, -1):
            raise KbError("rating must be +1 or -1")
        if self.ledger.question_owner(question_id) != user:
            raise KbError(f"question {question_id}: not one of {user}'s questions")
        return self.ledger.replace_feedback(question_id, user, rating, comment[:2000])

    def feedback(self, limit: int = 200) -> list[dict[str, Any]]:
        """Newest first, joined with the question, its answer, cited chunks and timings."""
        return self.ledger.feedback(limit)


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise KbError(f"password too short: use at least {MIN_PASSWORD} characters")
