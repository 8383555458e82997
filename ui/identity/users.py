"""Users, their groups, passwords and API tokens; the questions they asked and their feedback.

All of it lives in the ledger's `users`, `questions` and `feedback` tables. Passwords are hashed
with scrypt and a per-user salt (`scrypt$n$r$p$salt$hash`) and compared in constant time; API
tokens are random, shown once, and only their SHA-256 is stored. Neither is ever logged.

    users = Users(store.ledger)
    users.add("alice", "s3cret-pass", groups=["all", "hr"])
    users.authenticate("alice", "s3cret-pass").groups -> ("all", "hr")
    token = users.new_token("alice"); users.by_token(token).name -> "alice"

A disabled user can neither log in nor use a token; a password change, `disable` or
`end_sessions` moves the user's `epoch` on, which ends every web session opened before it (the
app checks it on each request, so this works from another process, e.g. the `kb` CLI).

People who sign in through the directory, the OpenID provider or a trusted header have a record
without a password (`adopt`, ui/identity/signin.py): its password field holds `directory$<source>`,
which no password matches. The record stays that source's: another way in is refused (an admin lets
it go with `kb users delete`), an OpenID record is bound to the provider's subject at its first
sign-in, and the directory's changes (a record made, groups or the admin right changed, turned off
when the directory no longer finds them and on again when it does) are audited with the source as
actor. Turning off is not an admin's `disable`: only `kb users enable` lifts that. The `follow` hook
(ui/identity/signin.py) sees each session's and token's user first, with the record's source, to
read them again from the directory when due.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

from core.access import parse_groups
from core.errors import KbError
from core.types import Answer, QuestionRecord, User
from store.ledger import Ledger
from store.ledger.accounts import TURNED_OFF
from ui.audit import AuditTrail

logger = logging.getLogger(__name__)

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
TOKEN_PREFIX = "kb_"
MIN_PASSWORD = 8
NAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
DIRECTORY = "directory$"  # the password field of a record the directory or a header keeps

Follow = Callable[[User, str], "User | None"]  # the user and the record's source


class AccountRefused(KbError):
    """A directory, provider or header sign-in that may not have the record of its name:
    `reason` is "name" (fits no account), "local" (a local account's), "source" (another way
    in keeps it) or "subject" (bound to another subject of the provider)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason



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



@functools.cache
def _dummy_hash() -> str:
    """A fixed hash to verify against when the user does not exist, so both paths take as long
    (made on first use: a scrypt is ~0.2 s of every command's start otherwise)."""
    return hash_password("not-a-password", salt=b"kb-dummy-salt-00")


class Users:
    """Accounts, questions and feedback, kept in the ledger; safe to share between threads.
    Each change to an account or token is recorded in the audit trail under `actor` (the CLI's
    "cli:<os user>"; "app" in the web app, whose sign-ins record their own)."""

    def __init__(self, ledger: Ledger, audit: AuditTrail | None = None, actor: str = "app",
                 follow: Follow | None = None) -> None:
        self.ledger = ledger
        self.audit = audit or AuditTrail(ledger)
        self.actor = actor
        self.follow = follow  # set by ui/wiring.py: a directory, a provider or passwords off

    def _audit(self, event: str, name: str, **details: Any) -> None:
        self.audit.record(event, self.actor, object=name, address="local", **details)

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
        self._audit("user.add", name, groups=list(clean), admin=is_admin)
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
        """A new password; the user's open web sessions end."""
        _check_password(password)
        self.require(name)
        self.ledger.set_password_hash(name, hash_password(password))
        logger.info("password of %s changed; sessions ended", name)
        self._audit("user.password", name)

    def disable(self, name: str, disabled: bool = True) -> None:
        """Refuse the user's logins, sessions and token (or, with False, allow them again)."""
        self.require(name)
        self.ledger.set_user_disabled(name, disabled)
        logger.warning("user %s %s", name, "disabled" if disabled else "enabled")
        self._audit("user.disable" if disabled else "user.enable", name)

    def delete(self, name: str) -> None:
        """Remove the account; its questions and feedback stay on record."""
        self.require(name)
        self.ledger.delete_user(name)
        logger.warning("user %s deleted", name)
        self._audit("user.delete", name)

    def end_sessions(self, name: str) -> None:
        self.require(name)
        self.ledger.bump_user_epoch(name)
        logger.info("sessions of %s ended", name)
        self._audit("session.revoke", name, sessions="all")

    def set_see_all(self, name: str, see_all: bool) -> None:
        """The explicit right of an admin to see every group's documents and feedback in the
        admin tab (without it, admin views show only the admin's own groups)."""
        self.require(name)
        self.ledger.set_user_see_all(name, see_all)
        self._audit("user.see_all", name, see_all=see_all)

    def set_groups(self, name: str, groups: Sequence[str], is_admin: bool | None = None) -> User:
        self.require(name)
        self.ledger.set_user_groups(name, parse_groups(groups) or ("all",), is_admin)
        user = self.require(name)
        self._audit("user.groups", name, groups=list(user.groups), admin=user.is_admin)
        return user

    def authenticate(self, name: str, password: str) -> User | None:
        """The user when the password matches, else None (same work either way)."""
        found = self.ledger.user(name)
        ok = verify_password(password, found[1] if found else _dummy_hash())
        if found and ok and not found[0].disabled:
            return found[0]
        return None

    def session_user(self, name: str, epoch: int) -> User | None:
        """The user of a web session opened at `epoch`, while it is still valid."""
        found = self.ledger.user(name)
        if found is None or found[0].disabled or found[0].epoch != epoch:
            return None
        return self.follow(found[0], _source(found[1])) if self.follow else found[0]

    def source(self, name: str) -> str | None:
        """Where the account's identity comes from: "local" (a password), "ldap", "oidc",
        "header", "ldap-off" (the directory no longer finds it), or None without an account."""
        found = self.ledger.user(name)
        return _source(found[1]) if found else None

    def adopt(self, name: str, groups: Sequence[str], is_admin: bool, source: str,
              subject: str = "") -> User:
        """Create or update the password-less record of someone `source` (ldap, oidc, header)
        vouches for, bound to the provider's `subject` when one is given; AccountRefused when
        the name may not be theirs."""
        if not NAME_RE.match(name):
            raise AccountRefused("name", f"{source} user {name[:64]!r}: the name does not fit "
                                         "a local account (1-64 letters, digits, '.', '_', '@' "
                                         "or '-')")
        holder = self.ledger.subject_holder(subject) if subject else None
        if holder not in (None, name):
            raise AccountRefused("subject", f"{source} subject {subject!r} signs in as "
                                            f"{holder!r}, not {name!r}: the provider renamed "
                                            f"them (an admin may `kb users delete {holder}`)")
        clean = parse_groups(groups) or ("all",)
        found = self.ledger.user(name)
        if found and _source(found[1]) == source and (not subject or holder == name) and (
                found[0].groups, found[0].is_admin) == (clean, is_admin):
            return found[0]  # already as the source vouches for it: nothing to write
        if self.ledger.add_user(name, DIRECTORY + source, clean, is_admin, subject):
            logger.info("user %s added from %s (groups %s, admin %s)", name, source,
                        ",".join(clean), is_admin)
            self._directory(source, "user.adopt", name, groups=list(clean), admin=is_admin,
                            **({"subject": subject} if subject else {}))
            return self.require(name)
        was = self._check_source(name, source)
        if subject:
            self._bind(name, source, subject)
        if was == source + TURNED_OFF:
            self.ledger.set_password_hash(name, DIRECTORY + source)
            logger.info("user %s back: %s finds them again", name, source)
            self._directory(source, "user.turn_on", name)
        user = self.require(name)
        if user.groups != clean or user.is_admin != is_admin:
            self.ledger.set_user_groups(name, clean, is_admin)
            logger.info("groups of %s from %s: %s (admin %s)", name, source, ",".join(clean),
                        is_admin)
            self._directory(source, "user.groups", name, groups=list(clean), admin=is_admin,
                            was_groups=list(user.groups), was_admin=user.is_admin)
            user = self.require(name)
        return user

    def _check_source(self, name: str, source: str) -> str:
        """The source of the record of `name`; AccountRefused unless it is `source`'s (or
        was, and is turned off)."""
        was = self.source(name)
        if was == "local":
            raise AccountRefused("local", f"user {name!r} is a local account with a password: "
                                          f"the {source} may not take it over (remove it with "
                                          "`kb users delete`)")
        if was not in (source, source + TURNED_OFF):
            raise AccountRefused("source", f"user {name!r} signs in through {was}, not the "
                                           f"{source} (an admin may let the {source} have it: "
                                           f"`kb users delete {name}`)")
        return str(was)

    def _bind(self, name: str, source: str, subject: str) -> None:
        """The record of `name` bound to `subject` (at its first sign-in since subjects are
        kept); AccountRefused when it is bound to another."""
        bound = self.ledger.subject(name)
        if bound == subject:
            return
        if bound or not self.ledger.bind_subject(name, subject):
            raise AccountRefused("subject", f"user {name!r} is bound to another {source} "
                                            f"subject than {subject!r}: someone else signs in "
                                            "under that name (an admin may `kb users delete "
                                            f"{name}`)")
        self._directory(source, "user.subject", name, subject=subject)

    def turn_off(self, name: str, source: str) -> None:
        """The directory no longer finds `name`: the record is off (its sessions and token
        end) until the directory vouches for it again. An admin's disable stays apart."""
        self.ledger.set_password_hash(name, DIRECTORY + source + TURNED_OFF)
        logger.warning("user %s turned off: %s no longer finds them", name, source)
        self._directory(source, "user.turn_off", name)

    def _directory(self, source: str, event: str, name: str, **details: Any) -> None:
        """An account change the directory (the provider, the header) made, `source` its actor."""
        self.audit.record(event, source, object=name, **details)

    def new_token(self, name: str, days: float = 90.0) -> str:
        """A fresh API bearer token for `name`, valid `days` (replacing any earlier one); only
        its hash stays."""
        self.require(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.ledger.set_token_hash(name, token_hash(token), time.time() + days * 86400)
        self._audit("token.create", name, days=days)
        return token

    def revoke_token(self, name: str) -> None:
        self.require(name)
        self.ledger.set_token_hash(name, "", 0.0)
        logger.warning("API token of %s revoked", name)
        self._audit("token.revoke", name)

    def by_token(self, token: str) -> User | None:
        """The user of a valid, unexpired token of an enabled account, else None."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        wanted = token_hash(token)
        found = None
        for user, stored in self.ledger.token_hashes():
            if hmac.compare_digest(stored, wanted):
                found = user
        if found is None or found.disabled or found.token_expires_at <= time.time():
            return None
        if self.follow is None:
            return found
        source = self.source(found.name)
        return self.follow(found, source) if source else None

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

    def feedback(self, limit: int = 200, viewer: User | None = None) -> list[dict[str, Any]]:
        """Newest first, joined with the question, its answer, cited chunks and timings.

        With a `viewer` (an admin without the see-all right), only the items the viewer may
        read: every cited chunk in one of the viewer's groups, and an asker whose groups are
        all the viewer's (an answer without citations may still name the asker's documents).
        """
        items = self.ledger.feedback(limit)
        if viewer is None or viewer.see_all:
            return items
        sees = self._sees(viewer)
        return [i for i in items if sees(i["user"], json.loads(i["chunk_ids"] or "[]"))]

    def question_records(self, viewer: User | None = None) -> list[QuestionRecord]:
        """Every question asked, oldest first, with its rating; with a `viewer` (an admin
        without the see-all right), only those the viewer may read, by `feedback`'s rule."""
        rows = self.ledger.question_records()
        if viewer is None or viewer.see_all:
            return rows
        sees = self._sees(viewer)
        return [r for r in rows if sees(r.user, r.chunk_ids)]

    def _sees(self, viewer: User) -> Callable[[str, Sequence[str]], bool]:
        """Whether `viewer` may read a question of `asker` citing `chunk_ids`: every cited
        chunk in one of the viewer's groups, and an asker whose groups are all the viewer's."""
        mine = set(viewer.groups)
        askers: dict[str, User | None] = {}

        def sees(asker: str, chunk_ids: Sequence[str]) -> bool:
            groups = self.ledger.chunk_groups(list(chunk_ids))
            if len(groups) != len(chunk_ids) or not all(mine & set(g) for g in groups.values()):
                return False
            if asker not in askers:
                askers[asker] = self.get(asker)
            found = askers[asker]
            return found is not None and set(found.groups) <= mine

        return sees

    def gap_notes(self) -> dict[str, str]:
        return self.ledger.gap_notes()

    def set_gap_note(self, key: str, note: str, by: str) -> None:
        """An admin's note on a knowledge gap: which document should answer it."""
        self.ledger.set_gap_note(key, note[:2000], by)


def _source(stored: str) -> str:
    """The source a record's password field names ("local" for a password hash)."""
    return stored[len(DIRECTORY):] if stored.startswith(DIRECTORY) else "local"


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise KbError(f"password too short: use at least {MIN_PASSWORD} characters")
