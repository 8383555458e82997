"""Users, passwords, API tokens, questions and feedback on a real ledger in a temp folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.access import parse_groups
from core.errors import KbError
from core.types import Answer, Citation
from store.ledger import Ledger
from ui.identity.login import SessionTable
from ui.identity.users import AccountRefused, Users, hash_password, verify_password


@pytest.fixture
def users(tmp_path: Path, ledger_url: str) -> Iterator[Users]:
    """On both ledgers: SQLite in tmp_path, and a fresh PostgreSQL database."""
    ledger = Ledger(ledger_url or tmp_path / "ledger.sqlite")
    yield Users(ledger)
    ledger.close()


def test_password_hash_is_salted_scrypt_and_verifies() -> None:
    first, second = hash_password("correct horse"), hash_password("correct horse")
    assert first.startswith("scrypt$") and first != second  # per-user salt
    assert "correct horse" not in first
    assert verify_password("correct horse", first)
    assert not verify_password("wrong horse", first)
    assert not verify_password("x", "garbage") and not verify_password("x", "md5$1$2$3$4$5")


def test_add_authenticate_and_change_password(users: Users) -> None:
    alice = users.add("alice", "password-1", ["hr", "all"], is_admin=True)
    assert alice.groups == ("all", "hr") and alice.is_admin
    assert users.authenticate("alice", "password-1") == users.get("alice")
    assert users.authenticate("alice", "password-2") is None
    assert users.authenticate("nobody", "password-1") is None
    users.set_password("alice", "password-2")
    assert users.authenticate("alice", "password-2") is not None
    assert users.authenticate("alice", "password-1") is None
    stored = users.ledger.db.execute("SELECT password_hash FROM users").fetchone()[0]
    assert "password-2" not in stored


def test_bad_input_is_refused_with_a_reason(users: Users) -> None:
    with pytest.raises(KbError, match="too short"):
        users.add("bob", "short")
    with pytest.raises(KbError, match="user name"):
        users.add("bob smith", "long-enough")
    with pytest.raises(KbError, match="group"):
        users.add("bob", "long-enough", ["../etc"])
    users.add("bob", "long-enough")
    with pytest.raises(KbError, match="exists"):
        users.add("bob", "long-enough")
    assert parse_groups(" hr, all,hr ") == ("all", "hr")


def test_tokens_are_shown_once_and_stored_hashed(users: Users) -> None:
    users.add("bob", "long-enough", ["all"])
    token = users.new_token("bob")
    assert token.startswith("kb_") and len(token) > 40
    found = users.by_token(token)
    assert found is not None and found.name == "bob" and found.has_token
    stored = users.ledger.db.execute("SELECT api_token_hash FROM users").fetchone()[0]
    assert token not in stored
    assert users.by_token(token + "x") is None and users.by_token("") is None
    newer = users.new_token("bob")
    assert users.by_token(token) is None and users.by_token(newer) is not None


def test_feedback_only_on_own_questions_and_listed_with_the_question(users: Users) -> None:
    answer = Answer("Five days [1].", citations=[Citation(1, "leave.pdf", 2, "", "5 days", "c1")],
                    timings_ms={"retrieve": 12.0, "total": 80.0})
    qid = users.record_question("bob", "How many days?", answer)
    with pytest.raises(KbError, match="not one of"):
        users.record_feedback(qid, "mallory", -1)
    with pytest.raises(KbError, match="rating"):
        users.record_feedback(qid, "bob", 5)
    users.record_feedback(qid, "bob", 1)
    users.record_feedback(qid, "bob", -1, "too vague")  # replaces the first rating
    items = users.feedback()
    assert len(items) == 1
    item = items[0]
    assert (item["rating"], item["comment"]) == (-1, "too vague")
    assert item["question"] == "How many days?"
    assert '"c1"' in item["chunk_ids"] and '"retrieve"' in item["timings"]


def test_questions_recorded_from_many_threads(users: Users) -> None:
    """Issue 11, finding 8: threads shared one SQLite connection; 1 of 80 records failed."""
    from concurrent.futures import ThreadPoolExecutor

    answer = Answer("Five days [1].", citations=[Citation(1, "leave.pdf", 2, "", "5 days", "c1")])
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda i: users.record_question("bob", f"q{i}", answer), range(80)))
    assert len(set(ids)) == 80 and all(ids)
    count = users.ledger.db.execute("SELECT COUNT(*) FROM questions").fetchone()[0]
    assert count == 80


def test_directory_records_have_no_password_and_follow_their_source(users: Users) -> None:
    """`adopt` makes a password-less record, updates its groups, never takes a local account,
    and `turn_off` disables it until the directory vouches for it again; a record an admin
    disabled stays disabled."""
    carol = users.adopt("carol", ["all", "hr"], False, "ldap")
    assert carol.groups == ("all", "hr") and users.source("carol") == "ldap"
    assert users.authenticate("carol", "directory$ldap") is None
    assert users.authenticate("carol", "") is None
    assert users.adopt("carol", ["all", "finance"], True, "ldap").groups == ("all", "finance")
    assert users.require("carol").is_admin
    users.add("bob", "bob-password", ["all"])
    with pytest.raises(KbError, match="local account"):
        users.adopt("bob", ["all", "hr"], True, "ldap")
    assert users.require("bob").groups == ("all",) and users.source("bob") == "local"
    epoch = users.require("carol").epoch
    users.turn_off("carol", "ldap")
    assert users.require("carol").disabled and users.require("carol").epoch > epoch
    assert users.source("carol") == "ldap-off"
    assert not users.adopt("carol", ["all"], False, "ldap").disabled  # back in the directory
    users.disable("carol")  # an admin's choice: the directory does not lift it
    assert users.adopt("carol", ["all"], False, "ldap").disabled
    with pytest.raises(KbError, match="does not fit"):
        users.adopt("o'brien", ["all"], False, "ldap")


def test_an_admins_disable_outlasts_the_directory_and_other_ways_in(users: Users) -> None:
    """`kb users disable` stays until `kb users enable`: the directory turning the record off
    and finding it again does not lift it, nor does a sign-in another way (the OpenID provider,
    the trusted header), which may not take the record at all; the old token stays refused."""
    users.adopt("ravi", ["all"], False, "ldap")
    token = users.new_token("ravi")
    users.disable("ravi")
    assert users.by_token(token) is None
    users.turn_off("ravi", "ldap")
    assert users.adopt("ravi", ["all"], False, "ldap").disabled  # found again: still disabled
    for source in ("oidc", "header"):
        with pytest.raises(AccountRefused) as refused:
            users.adopt("ravi", ["all"], False, source)
        assert refused.value.reason == "source"
    assert users.source("ravi") == "ldap" and users.by_token(token) is None
    users.disable("ravi", False)
    assert users.by_token(token) is not None


def test_an_oidc_record_is_bound_to_the_providers_subject(users: Users) -> None:
    """The first sign-in binds (issuer, subject); another subject under that name is refused,
    and so is the subject under another name. A record made before subjects were kept is bound
    at its next sign-in."""
    users.adopt("hanna.o", ["all", "hr"], False, "oidc", subject="https://idp#hanna-sub")
    with pytest.raises(AccountRefused) as other:
        users.adopt("hanna.o", ["all"], False, "oidc", subject="https://idp#mallory-sub")
    assert other.value.reason == "subject"
    assert users.require("hanna.o").groups == ("all", "hr")
    with pytest.raises(AccountRefused) as renamed:
        users.adopt("hanna.new", ["all"], False, "oidc", subject="https://idp#hanna-sub")
    assert renamed.value.reason == "subject" and users.get("hanna.new") is None
    assert users.ledger.add_user("old.o", "directory$oidc", ["all"], False)
    users.adopt("old.o", ["all"], False, "oidc", subject="https://idp#old-sub")
    assert users.ledger.subject("old.o") == "https://idp#old-sub"
    with pytest.raises(AccountRefused):
        users.adopt("old.o", ["all"], False, "oidc", subject="https://idp#someone-else")


def test_directory_changes_are_audited_with_the_source_as_actor(users: Users) -> None:
    users.adopt("otto", ["all"], True, "ldap")
    users.adopt("otto", ["all"], True, "ldap")  # nothing changed: nothing recorded
    users.adopt("otto", ["all", "hr"], False, "ldap")
    users.turn_off("otto", "ldap")
    users.adopt("otto", ["all", "hr"], False, "ldap")
    users.ledger.add_user("ivy", "directory$oidc", ["all"], False)
    users.adopt("ivy", ["all"], False, "oidc", subject="https://idp#ivy-sub")
    found = [(r.event, r.actor, r.object, json.loads(r.details))
             for r in users.ledger.audit_records()]
    assert found == [
        ("user.adopt", "ldap", "otto", {"groups": ["all"], "admin": True}),
        ("user.groups", "ldap", "otto", {"groups": ["all", "hr"], "admin": False,
                                         "was_groups": ["all"], "was_admin": True}),
        ("user.turn_off", "ldap", "otto", {}),
        ("user.turn_on", "ldap", "otto", {}),
        ("user.subject", "oidc", "ivy", {"subject": "https://idp#ivy-sub"}),
    ]


def test_a_deleted_account_takes_its_sessions_and_conversations(users: Users) -> None:
    """`kb users delete carol` then `kb users add carol`: the old carol's browser session and
    conversations are not the new carol's."""
    users.add("carol", "carol-password", ["all", "hr"])
    sessions = SessionTable(users, 3600)
    sessions["old-browser"] = "carol"
    users.ledger.create_conversation("c1", "carol", "merit increase budget?")
    assert sessions.get("old-browser") == "carol"
    users.delete("carol")
    users.add("carol", "carol-password", ["all"])
    assert sessions.get("old-browser") is None
    assert users.ledger.conversations("carol") == []
    assert users.ledger.sessions() == []
