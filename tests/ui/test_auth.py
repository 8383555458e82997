"""The login throttle, the session table, accounts, group names and upload names, without a
server (a real ledger in a temp folder, a fake clock)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi import HTTPException

from core.access import parse_groups
from core.config import UiSettings
from core.errors import KbError
from core.settings.auth import AuthSettings
from core.types import User
from store.ledger import Ledger
from tests.support.stores import ledger_before
from ui.admin import uploads
from ui.identity.login import LoginGuard, SessionTable, login_check
from ui.identity.signin import SignIn
from ui.identity.users import Users


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def users(tmp_path: Path) -> Iterator[Users]:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    service = Users(ledger)
    service.add("bob", "bob-password", ["all"])
    yield service
    ledger.close()


def test_guard_locks_a_name_and_an_address_then_forgets(users: Users) -> None:
    clock = Clock()
    guard = LoginGuard(users.ledger, max_user=3, max_address=5, lockout_s=60, clock=clock)
    for _ in range(3):  # each turn counts as a failure until it succeeds
        assert guard.reserve("bob", "10.0.0.1").granted
    refused = guard.reserve("bob", "10.0.0.2")  # the name, from anywhere
    assert not refused.granted and refused.wait == pytest.approx(60)
    assert guard.reserve("carol", "10.0.0.1").granted
    assert guard.reserve("dave", "10.0.0.1").granted  # 5 from this address: locked for any name
    assert not guard.reserve("erin", "10.0.0.1").granted
    assert guard.reserve("erin", "10.0.0.3").granted
    clock.now += 61
    assert guard.reserve("erin", "10.0.0.1").granted
    turns = [guard.reserve("bob", "10.0.0.1") for _ in range(3)]
    assert all(turn.granted for turn in turns) and not guard.reserve("bob", "10.0.0.9").granted
    guard.succeeded(turns[-1], "bob")  # the right password: that turn and bob's failures go
    assert guard.reserve("bob", "10.0.0.9").granted
    clock.now += 1  # the address's failures stay: erin's, bob's first two, then frank's, gina's
    assert guard.reserve("frank", "10.0.0.1").granted and guard.reserve("gina", "10.0.0.1").granted
    refused = guard.reserve("hal", "10.0.0.1")
    assert not refused.granted and refused.wait == pytest.approx(59)


def count_password_checks(users: Users, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names whose password `users` checks from now on (the real check, counted)."""
    checked: list[str] = []
    lock = threading.Lock()
    real = users.authenticate

    def authenticate(name: str, password: str) -> User | None:
        with lock:
            checked.append(name)
        return real(name, password)

    monkeypatch.setattr(users, "authenticate", authenticate)
    return checked


def test_parallel_wrong_logins_check_at_most_the_limit(
    tmp_path: Path, ledger_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28, finding 2: "is bob locked?" and "count bob's failure" were two steps, so 100
    wrong logins at once all passed the first before any reached the second (70 of 100 were
    checked with a limit of 5). Here two app processes (two ledgers on one database) take 100
    wrong passwords for bob at once, through the login check Gradio awaits."""
    where = ledger_url or tmp_path / "ledger.sqlite"
    processes = [Users(Ledger(where)), Users(Ledger(where))]
    try:
        processes[0].add("bob", "bob-password", ["all"])
        checked = [count_password_checks(users, monkeypatch) for users in processes]
        settings = UiSettings(login_concurrency=2)
        checks = [login_check(SignIn(users, AuthSettings(), None), settings,
                              LoginGuard(users.ledger, max_user=5, max_address=20, lockout_s=300))
                  for users in processes]
        codes: list[Any] = []

        async def guess(i: int) -> None:
            try:
                codes.append(400 if not await checks[i % 2]("bob", f"guess-{i}") else 200)
            except HTTPException as exc:
                codes.append(exc.status_code)

        async def flood() -> None:
            async with anyio.create_task_group() as tasks:
                for i in range(100):
                    tasks.start_soon(guess, i)

        anyio.run(flood)
        total = sum(len(names) for names in checked)
        print(f"100 parallel wrong logins, limit 5: {total} password checks, "
              f"{codes.count(400)} x 400, {codes.count(429)} x 429")
        assert total == 5 and codes.count(400) == 5 and codes.count(429) == 95, codes
        # the right password is refused too, and costs no check
        with pytest.raises(HTTPException, match="429"):
            anyio.run(checks[1], "bob", "bob-password")
        assert sum(len(names) for names in checked) == total
    finally:
        for users in processes:
            users.ledger.close()


def test_two_processes_share_sessions_and_lockouts(tmp_path: Path, ledger_url: str) -> None:
    """What one app process records (a login, failed logins) the next one sees: both read the
    same ledger (issue 13), SQLite or PostgreSQL."""
    where = ledger_url or tmp_path / "ledger.sqlite"
    first, second = Users(Ledger(where)), Users(Ledger(where))
    try:
        first.add("bob", "bob-password", ["all"])
        clock = Clock()
        one = SessionTable(first, max_age_s=3600, clock=clock)
        two = SessionTable(second, max_age_s=3600, clock=clock)
        one["secret-token"] = "bob"
        assert two.get("secret-token") == "bob" and two["secret-token"] == "bob"
        assert "secret-token" in two and "other-token" not in two
        assert "secret-token" not in str(second.ledger.sessions())  # only hashes are kept
        del two["secret-token"]
        assert one.get("secret-token") is None
        one["t2"] = "bob"
        one["t3"] = "bob"
        for key in list(two.keys()):  # Gradio's logout of every session of a user
            if two[key] == "bob":
                del two[key]
        assert one.get("t2") is None and one.get("t3") is None and len(one) == 0
        guards = [LoginGuard(u.ledger, max_user=2, max_address=9, lockout_s=60, clock=clock)
                  for u in (first, second)]
        assert guards[0].reserve("bob", "10.0.0.1").granted
        turn = guards[1].reserve("bob", "10.0.0.2")
        assert guards[0].reserve("bob", "10.0.0.3").wait == pytest.approx(60)
        guards[1].succeeded(turn, "bob")
        assert guards[0].reserve("bob", "10.0.0.3").granted
    finally:
        first.ledger.close()
        second.ledger.close()


def test_sessions_expire_and_follow_the_account(users: Users) -> None:
    clock = Clock()
    table = SessionTable(users, max_age_s=3600, clock=clock)
    table["t1"] = "bob"
    assert table.get("t1") == "bob" and table.get("nope") is None
    clock.now += 3601
    assert table.get("t1") is None and "t1" not in table  # expired and dropped
    table["t2"] = "bob"
    users.set_password("bob", "bob-password-2")
    assert table.get("t2") is None
    table["t3"] = "bob"
    users.end_sessions("bob")
    assert table.get("t3") is None
    table["t4"] = "bob"
    users.disable("bob")
    assert table.get("t4") is None
    users.disable("bob", False)
    table["t5"] = "bob"
    assert table.get("t5") == "bob"
    users.delete("bob")
    assert table.get("t5") is None


def test_disabled_users_and_tokens(users: Users) -> None:
    token = users.new_token("bob", days=1)
    assert users.by_token(token) is not None
    users.disable("bob")
    assert users.authenticate("bob", "bob-password") is None and users.by_token(token) is None
    users.disable("bob", False)
    assert users.authenticate("bob", "bob-password") is not None
    users.revoke_token("bob")
    assert users.by_token(token) is None and not users.require("bob").has_token
    expired = users.new_token("bob", days=-1)
    assert users.by_token(expired) is None


@pytest.mark.parametrize("bad", ["..", ".", "HR", "a/b", "a.b", "", "x" * 65, "hr*"])
def test_group_names_follow_one_rule(bad: str) -> None:
    with pytest.raises(KbError, match="lower-case"):
        parse_groups([bad] if bad else ["ok", " "] + [bad + "!"])
    assert parse_groups("hr_team, all,legal-eu") == ("all", "hr_team", "legal-eu")


def test_long_and_colliding_upload_names(tmp_path: Path) -> None:
    long = "差" * 90 + ".pdf"  # 270 bytes of UTF-8: over the 255 a file name may have
    name = uploads.safe_name(long, "pdf")
    assert len(name.encode()) <= 255 and name.endswith(".pdf") and name.startswith("差")
    taken: set[str] = set()
    first = uploads.unique_target(tmp_path, uploads.safe_name("a b.pdf", "pdf"), taken)
    second = uploads.unique_target(tmp_path, uploads.safe_name("a_b.pdf", "pdf"), taken)
    assert (first.name, second.name) == ("a_b.pdf", "a_b-2.pdf")


def test_kb_users_commands(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ui.cli import main

    store = ["--store", str(tmp_path / "store")]
    run = CliRunner().invoke

    def kb(*args: str, stdin: str | None = None) -> str:
        result = run(main, ["users", *args, *store], input=stdin)
        assert result.exit_code == 0, result.output
        return result.output

    kb("add", "bob", "--groups", "all", "--password-stdin", stdin="bob-password\n")
    token = kb("token", "bob", "--days", "2").split()[0]
    ledger = Ledger(tmp_path / "store" / "ledger.sqlite")
    users = Users(ledger)
    try:
        assert users.by_token(token) is not None
        kb("revoke-token", "bob")
        assert users.by_token(token) is None
        kb("disable", "bob")
        assert "disabled" in kb("list") and users.authenticate("bob", "bob-password") is None
        kb("disable", "bob", "--enable")
        users.adopt("carol", ["all", "hr"], False, "ldap")
        listed = {line.split()[0]: line for line in kb("list").splitlines()}
        assert "from-ldap" in listed["carol"] and "from-" not in listed["bob"]
        epoch = users.require("bob").epoch
        kb("logout", "bob")
        assert users.require("bob").epoch == epoch + 1
        kb("delete", "bob", "--yes")
        assert users.get("bob") is None
        bad = run(main, ["users", "add", "eve", "--groups", "..", "--password-stdin", *store],
                  input="eve-password\n")
        assert bad.exit_code != 0 and "lower-case" in bad.output
    finally:
        ledger.close()


def test_model_errors_stay_in_the_log() -> None:
    from core.types import Answer, Citation
    from ui.page import render

    why = "vLLM at http://10.1.2.3:8000/v1 did not answer /tokenize (connection refused)"
    only = Answer("Passages [1]", citations=[Citation(1, "leave.pdf", 3, "", "5 days", "c1")],
                  mode="retrieval_only", notice=why, timings_ms={"total": 5.0})
    page = render.answer_html(only, "q1", "en")
    assert "10.1.2.3" not in page and "tokenize" not in page and "did not answer" in page
    fallback = Answer("Passages [1]", mode="fallback", notice="No citation supports it.",
                      timings_ms={"total": 5.0})
    assert "No citation supports it." in render.answer_html(fallback, "q2", "en")


def test_tokens_from_before_the_migration_get_90_days(tmp_path: Path) -> None:
    import time

    path = tmp_path / "ledger.sqlite"
    db = ledger_before(path, "005_auth_accounts")
    db.execute("INSERT INTO users (name, password_hash, api_token_hash, created_at) "
               "VALUES ('old', 'x', 'abc', 0)")
    db.commit()
    db.close()
    ledger = Ledger(path)
    try:
        user = Users(ledger).require("old")
        assert abs(user.token_expires_at - (time.time() + 90 * 86400)) < 60
        assert not user.disabled and user.epoch == 0
    finally:
        ledger.close()
