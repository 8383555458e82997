"""What the ledger keeps about people, on SQLite and PostgreSQL: a retention pass removes what is
past its limit and nothing younger, a held person keeps theirs; an erased person's questions are
gone from every table and the audit chain still verifies, also on a ledger whose records the
code before 019_privacy wrote; a redaction not backed by an erasure is found; text is kept with
personal numbers masked, and text kept before is masked by the next pass."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import Settings
from core.errors import KbError
from core.privacy import mask_personal
from core.settings.privacy import RetentionSettings
from core.types import Answer
from store.ledger import MIGRATIONS, PERSONAL, AuditEntry, Ledger
from store.ledger.privacy.audit_chain import GENESIS, record_hash
from store.retention import prune_pass

DAY = 86400.0
PHONE = "13812345678"


@pytest.fixture
def where(ledger_url: str, tmp_path: Path) -> str:
    return ledger_url or str(tmp_path / "ledger.sqlite")


@pytest.fixture
def ledger(where: str) -> Iterator[Ledger]:
    opened = Ledger(where)
    yield opened
    opened.close()


def settings_for(tmp_path: Path, **days: float) -> Settings:
    limits = {"questions_days": 30.0, "gaps_days": 90.0, "feedback_days": 30.0,
              "conversations_days": 30.0, "uploads_days": 0.0, "logs_days": 0.0, **days}
    return dataclasses.replace(Settings().with_store(tmp_path / "store"),
                               retention=RetentionSettings(**limits))


def ask(ledger: Ledger, user: str, question: str, days_ago: float = 0.0,
        mode: str = "generated") -> int:
    qid = ledger.record_question(user, question, Answer(f"answer to {question}", mode=mode))
    ledger.db.execute("UPDATE questions SET created_at = ? WHERE id = ?",
                      (time.time() - days_ago * DAY, qid))
    return qid


def rate(ledger: Ledger, qid: int, user: str, rating: int, days_ago: float = 0.0) -> int:
    fid = ledger.replace_feedback(qid, user, rating, f"comment on {qid}")
    ledger.db.execute("UPDATE feedback SET created_at = ? WHERE id = ?",
                      (time.time() - days_ago * DAY, fid))
    return fid


def converse(ledger: Ledger, cid: str, owner: str, *turn_ages: float) -> None:
    """A conversation with a turn of each age (days); its last activity is its newest turn."""
    ledger.create_conversation(cid, owner, f"title {cid}")
    for i, days in enumerate(turn_ages):
        ledger.add_conversation_turn(cid, owner, f"{cid} turn {i}", Answer("a"))
        ledger.db.execute("UPDATE conversation_turns SET created_at = ? WHERE conversation_id = ? "
                          "AND ordinal = ?", (time.time() - days * DAY, cid, i))
    ledger.db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?",
                      (time.time() - min(turn_ages) * DAY, cid))


def chat(ledger: Ledger, asker: str, question: str, days_ago: float = 0.0) -> None:
    """An answer kb posted in a chat platform's thread for `asker`, `days_ago` days ago."""
    qid = ask(ledger, asker, question, days_ago)
    ledger.add_channel_message("slack", "C1", f"t-{qid}", f"m-{qid}", qid, asker, question,
                               f"answer to {question}")
    ledger.db.execute("UPDATE channel_messages SET created_at = ? WHERE question_id = ?",
                      (time.time() - days_ago * DAY, qid))


def chats(ledger: Ledger) -> set[str]:
    return {r[0] for r in ledger.db.execute("SELECT question FROM channel_messages")}


def questions(ledger: Ledger) -> set[str]:
    return {r[0] for r in ledger.db.execute("SELECT question FROM questions")}


def test_a_pass_removes_what_is_past_its_limit_and_nothing_younger(ledger: Ledger,
                                                                   tmp_path: Path) -> None:
    old_plain = ask(ledger, "alice", "old plain", 40)
    rate(ledger, old_plain, "alice", 1, 39)  # goes with its question
    young = ask(ledger, "alice", "young plain", 10)
    old_rating = rate(ledger, young, "alice", 1, 40)  # past feedback_days: goes alone
    ask(ledger, "alice", "old gap, abstained", 40, mode="abstained")
    rated_down = ask(ledger, "alice", "old gap, rated down", 40)
    rate(ledger, rated_down, "alice", -1, 5)
    ask(ledger, "alice", "very old gap", 100, mode="abstained")
    converse(ledger, "c-mixed", "alice", 40, 10)
    converse(ledger, "c-old", "alice", 45, 40)
    held = ask(ledger, "bob", "bob's old question", 400)
    rate(ledger, held, "bob", -1, 400)
    converse(ledger, "c-bob", "bob", 400)
    chat(ledger, "alice", "old in slack", 40)
    chat(ledger, "alice", "young in slack", 10)
    chat(ledger, "bob", "bob's old slack question", 400)
    ledger.hold_user("bob", "case 2026-14", "cli:legal")

    report = prune_pass(ledger, settings_for(tmp_path), "cli:ops", batch=2, pause_s=0)

    assert questions(ledger) == {"young plain", "old gap, abstained", "old gap, rated down",
                                 "bob's old question", "young in slack",
                                 "bob's old slack question"}
    assert chats(ledger) == {"young in slack", "bob's old slack question"}
    assert report.removed["questions"] == 3 and report.removed["channel_messages"] == 1
    assert report.removed["feedback"] == 2  # one with its question, one past its own limit
    feedback = {r[0] for r in ledger.db.execute("SELECT id FROM feedback")}
    assert old_rating not in feedback and len(feedback) == 2  # rated-down's and bob's
    turns = {(r[0], r[1]) for r in ledger.db.execute(
        "SELECT conversation_id, ordinal FROM conversation_turns")}
    assert turns == {("c-mixed", 1), ("c-bob", 0)}
    assert {r[0] for r in ledger.db.execute("SELECT id FROM conversations")} == {"c-mixed",
                                                                                 "c-bob"}
    assert (report.removed["conversation_turns"], report.removed["conversations"]) == (3, 1)
    record = next(ledger.audit_records(event="retention.pass"))
    assert record.actor == "cli:ops" and '"questions":3' in record.details
    assert ledger.verify_audit().ok

    ledger.release_user("bob")  # released: bob's records are past their limits like anyone's
    prune_pass(ledger, settings_for(tmp_path), "cli:ops", pause_s=0)
    assert "bob's old question" not in questions(ledger)
    assert ledger.person_counts("bob")["conversations"] == 0 and chats(ledger) == {
        "young in slack"}


def test_limits_of_zero_keep_everything(ledger: Ledger, tmp_path: Path) -> None:
    ask(ledger, "alice", "ten years old", 3650)
    converse(ledger, "c", "alice", 3650)
    forever = settings_for(tmp_path, questions_days=0, gaps_days=0, feedback_days=0,
                           conversations_days=0)
    report = prune_pass(ledger, forever, "cli:ops", pause_s=0)
    assert not any(report.removed.values()) and questions(ledger) == {"ten years old"}


def test_the_audit_prune_stops_before_a_held_persons_records(ledger: Ledger) -> None:
    old = time.time() - 400 * DAY
    ledger.append_audit([AuditEntry(old + i, "alice", "", "signin", "alice") for i in range(3)])
    ledger.append_audit([AuditEntry(old + 3, "bob", "", "signin", "bob")])
    ledger.append_audit([AuditEntry(old + 4, "alice", "", "signin", "alice")])
    ledger.hold_user("bob", "case", "cli:legal")
    assert ledger.prune_audit(time.time() - 365 * DAY, "cli:ops") == 3  # up to bob's record
    assert [r.actor for r in ledger.audit_records()][:2] == ["bob", "alice"]
    ledger.release_user("bob")
    assert ledger.prune_audit(time.time() - 365 * DAY, "cli:ops") == 2  # bob's, alice's
    assert ledger.verify_audit().ok


def fill_person(ledger: Ledger, name: str) -> None:
    qid = ask(ledger, name, f"{name}: may I carry over leave? call {PHONE}")
    rate(ledger, qid, name, -1)
    converse(ledger, f"conv-{name}", name, 0)
    ledger.add_conversation_turn(f"conv-{name}", name, f"{name}'s follow-up", Answer("b"))
    chat(ledger, name, f"{name} in slack: may I work from home?")
    ledger.add_user(name, "scrypt$x", ["all"], True)
    ledger.set_gap_note(f"gap-{len(name)}", "the leave policy should answer this", name)
    ledger.open_session("t-" + name, name, 0, time.time(), time.time() + 3600)
    ledger.reserve_login({"u:" + name: 5}, "a-" + name, time.time(), time.time() - 300)
    ledger.append_audit([AuditEntry(time.time(), name, "10.0.0.7", "signin", name, "ok",
                                    {"method": "password"}),
                         AuditEntry(time.time(), "cli:root", "local", "user.groups", name, "ok",
                                    {"groups": ["all", "hr"]})])


def test_an_erased_persons_questions_are_gone_and_the_chain_verifies(ledger: Ledger) -> None:
    fill_person(ledger, "alice")
    fill_person(ledger, "bob")
    before = ledger.person_counts("bob")
    head = ledger.audit_head()

    done = ledger.erase_person("alice", "cli:hr", batch=1)

    assert not any(ledger.person_counts("alice").values()), ledger.person_counts("alice")
    assert done["questions"] == 2 and done["conversation_turns"] == 2 and done["users"] == 1
    assert done["channel_messages"] == 1
    for table in ("questions", "feedback", "conversation_turns", "conversations", "gap_notes",
                  "sessions", "login_failures", "users", "channel_messages"):
        text = " ".join(str(v) for row in ledger.db.execute(f"SELECT * FROM {table}")
                        for v in tuple(row))
        assert "alice" not in text, table  # bob's rows alone, and the note without its author
    assert ledger.gap_notes()["gap-5"] == "the leave policy should answer this"  # it stays
    assert ledger.person_counts("bob") == before
    about = list(ledger.audit_records(about="alice"))
    erase = about[-1]
    assert (erase.event, erase.object, erase.actor) == ("user.erase", "alice", "cli:hr")
    assert '"questions":2' in erase.details
    assert done["audit_redacted"] == 2 and done["audit_kept"] == 0
    for record in about[:-1]:
        assert record.details == f'{{"redacted_by":{erase.seq}}}' and record.address == ""
    check = ledger.verify_audit(head)  # the chain, and the head kept before the erasure
    assert check.ok, check

    ledger.hold_user("bob", "case 2026-14", "cli:legal")
    with pytest.raises(KbError, match="legal hold"):
        ledger.erase_person("bob", "cli:hr")
    assert ledger.person_counts("bob") == before


def test_an_erasure_keeps_the_account_when_asked(ledger: Ledger) -> None:
    fill_person(ledger, "alice")
    ledger.erase_person("alice", "cli:hr", keep_account=True)
    counts = ledger.person_counts("alice")
    assert counts.pop("users") == 1 and not any(counts.values())


def test_every_personal_table_exists_with_its_columns(ledger: Ledger) -> None:
    """`PERSONAL` is the one list an erasure and an export go by: each of its conditions and
    exported columns reads on this ledger."""
    fill_person(ledger, "alice")
    data = ledger.person_data("alice")
    assert {t.table for t in PERSONAL if t.export} | {"audit"} == set(data)
    assert data["questions"][0]["question"].startswith("alice: may I")
    assert [r["ordinal"] for r in data["conversation_turns"]] == [0, 1]
    assert [(r["platform"], r["question"]) for r in data["channel_messages"]] == [
        ("slack", "alice in slack: may I work from home?")]
    assert {r["event"] for r in data["audit"]} == {"signin", "user.groups"}
    assert "password_hash" not in data["users"][0]


REDACTION_FORGED = {
    "by a record that is no erasure": ("signin", "alice"),
    "by an erasure of someone else": ("user.erase", "bob"),
}


@pytest.mark.parametrize("how", list(REDACTION_FORGED))
def test_a_redaction_not_made_by_an_erasure_of_its_person_is_found(ledger: Ledger,
                                                                   how: str) -> None:
    event, obj = REDACTION_FORGED[how]
    ledger.append_audit([AuditEntry(time.time(), "alice", "10.0.0.7", "signin", "alice", "ok",
                                    {"method": "password"}),
                         AuditEntry(time.time(), "cli:hr", "local", event, obj)])
    ledger.db.execute("UPDATE audit SET details = '{\"redacted_by\":2}', address = '', salt = '' "
                      "WHERE seq = 1")
    check = ledger.verify_audit()
    assert not check.ok and check.bad_seq == 1 and "redacted by record 2" in check.problem, check


def test_a_redaction_naming_no_record_is_found(ledger: Ledger) -> None:
    ledger.append_audit([AuditEntry(time.time(), "alice", "", "signin", "alice")] * 2)
    ledger.db.execute("UPDATE audit SET details = '{\"redacted_by\":9}', salt = '' WHERE seq = 1")
    check = ledger.verify_audit()
    assert not check.ok and check.bad_seq == 1 and "not in the trail" in check.problem, check


def old_record(ledger: Ledger, seq: int, prev: str, actor: str) -> str:
    """A record as the code before 019_privacy wrote it (the hash over its details); its hash."""
    at = round(time.time(), 6)
    details = '{"method":"password"}'
    digest = record_hash(seq, at, actor, "10.0.0.7", "signin", actor, "ok", details, prev)
    ledger.db.execute("INSERT INTO audit (seq, at, actor, address, event, object, outcome, "
                      "details, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (seq, at, actor, "10.0.0.7", "signin", actor, "ok", details, prev, digest))
    ledger.set_meta("audit_head", f"{seq} {digest}")
    return digest


def test_a_ledger_written_before_the_digest_form_migrates_and_still_verifies(
        where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The records the old code wrote keep their form and verify as before, through a head kept
    outside before the upgrade; records after it are redactable; an erasure redacts those and
    leaves the old ones whole."""
    upto = [name for name, _ in MIGRATIONS].index("019_privacy")
    monkeypatch.setattr("store.ledger.base.MIGRATIONS", MIGRATIONS[:upto])
    old = Ledger(where)
    prev = GENESIS
    for seq, actor in enumerate(["alice", "bob", "alice"], 1):
        prev = old_record(old, seq, prev, actor)
    ask(old, "alice", "asked before the upgrade")
    old.close()
    monkeypatch.undo()

    ledger = Ledger(where)
    try:
        kept_outside = (3, prev)
        assert ledger.verify_audit(kept_outside).ok
        ledger.append_audit([AuditEntry(time.time(), "alice", "10.0.0.8", "signin", "alice")])
        versions = [r.version for r in ledger.audit_records()]
        assert versions == [1, 1, 1, 2]
        done = ledger.erase_person("alice", "cli:hr")
        assert (done["audit_redacted"], done["audit_kept"], done["questions"]) == (1, 2, 1)
        assert ledger.verify_audit(kept_outside).ok
        records = list(ledger.audit_records())
        assert records[0].details == '{"method":"password"}'  # old form: kept whole
        assert records[3].details == '{"redacted_by":5}'
        ledger.db.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 2")
        check = ledger.verify_audit()
        assert not check.ok and check.bad_seq == 2 and "record 2 edited" in check.problem
    finally:
        ledger.close()


def test_text_is_kept_masked_and_older_text_masked_by_the_next_pass(where: str,
                                                                    tmp_path: Path) -> None:
    plain = Ledger(where)  # privacy.mask off
    try:
        ask(plain, "alice", f"before: my phone is {PHONE}")
        plain.add_channel_message("slack", "C0", "t0", "m0", 1, "alice", f"old slack {PHONE}",
                                  "")
    finally:
        plain.close()
    ledger = Ledger(where, mask=True)
    try:
        qid = ask(ledger, "alice", f"after: card 4111 1111 1111 1111, phone {PHONE}")
        rate(ledger, qid, "alice", -1)
        ledger.replace_feedback(qid, "alice", -1, f"call me on {PHONE}")
        converse(ledger, "c", "alice", 0)
        ledger.add_conversation_turn("c", "alice", "mail me: alice@corp.example.cn", Answer(
            f"Dial {PHONE}", mode="fallback", raw_answer=f"raw {PHONE}",
            searched_for=f"mail me: alice@corp.example.cn {PHONE}"))
        ledger.set_gap_note("g", f"ask {PHONE}", "admin")
        ledger.add_channel_message("slack", "C1", "t", "m", qid, "alice", f"slack {PHONE}",
                                   f"call {PHONE}")
        ledger.append_audit([AuditEntry(time.time(), "alice", "", "export", "alice", "ok",
                                        {"file": f"{PHONE}.csv", "n": 13812345678})])
        assert questions(ledger) == {f"before: my phone is {PHONE}",
                                     "after: card **** **** **** 1111, phone *******5678"}
        everything = " ".join(str(v) for table in ("feedback", "conversation_turns",
                                                   "conversations", "gap_notes",
                                                   "channel_messages")
                              for row in ledger.db.execute(f"SELECT * FROM {table}")
                              for v in tuple(row))
        assert "alice@corp" not in everything  # and no phone but the one kept before:
        assert PHONE not in everything.replace(f"old slack {PHONE}", "")
        details = next(ledger.audit_records(event="export")).details
        assert details == '{"file":"*******5678.csv","n":13812345678}'  # numbers stay numbers

        report = prune_pass(ledger, settings_for(tmp_path), "cli:ops", batch=1, pause_s=0)
        assert report.masked == 2
        assert questions(ledger) == {"before: my phone is *******5678",
                                     "after: card **** **** **** 1111, phone *******5678"}
        assert chats(ledger) == {"old slack *******5678", "slack *******5678"}
        assert ledger.verify_audit().ok
    finally:
        ledger.close()


def test_one_process_claims_a_due_pass(where: str) -> None:
    first, second = Ledger(where), Ledger(where)
    try:
        now = time.time()
        assert first.claim_due("retention_next", now, 3600)
        assert not second.claim_due("retention_next", now + 10, 3600)
        assert second.claim_due("retention_next", now + 3601, 3600)
    finally:
        first.close()
        second.close()


def test_the_masking_walk_stops_at_the_rows_there_when_it_began(ledger: Ledger) -> None:
    """Questions asked during a pass are masked as they come: the walk does not chase them
    (under a stream of questions it would never end)."""
    for i in range(5):
        ask(ledger, "alice", f"question {i}, call {PHONE}")
    upto = ledger.last_key("questions")
    ask(ledger, "alice", f"asked meanwhile, call {PHONE}")  # this ledger does not mask
    done, after = ledger.mask_batch("questions", mask_personal, None, 3, upto)
    assert done == {"masked": 3}
    done, after = ledger.mask_batch("questions", mask_personal, after, 3, upto)
    assert done == {"masked": 2}
    assert ledger.mask_batch("questions", mask_personal, after, 3, upto) == ({}, None)
    assert f"asked meanwhile, call {PHONE}" in questions(ledger)


def test_a_pass_finds_its_rows_by_index_never_by_scanning_a_table(tmp_path: Path) -> None:
    """Each delete a pass runs, and each look for rows past their limit, finds its rows by an
    index (SQLite's plan): a delete that scanned conversation_turns held the write turn for as
    long as the scan took, batch after batch, and a look that scanned conversations took a
    second a batch at a million rows."""
    ledger = Ledger(tmp_path / "ledger.sqlite", mask=True)
    try:
        for i in range(3):
            converse(ledger, f"c{i}", "alice", 40, 40)
            chat(ledger, "alice", f"old {i}", 40)
            rate(ledger, ask(ledger, "alice", f"q {i} {PHONE}", 40), "alice", -1, 40)
        statements: list[str] = []
        ledger.db.set_trace_callback(statements.append)
        prune_pass(ledger, settings_for(tmp_path), "cli:ops", batch=2, pause_s=0)
        ledger.db.set_trace_callback(None)
        aged = [s for s in statements if s.startswith("DELETE")
                or (s.startswith("SELECT t.") and " < " in s)]  # `prune_batch`'s statements
        assert len(aged) > 10
        scans = {(s, detail) for s in aged
                 for *_, detail in ledger.db.execute("EXPLAIN QUERY PLAN " + s)
                 if detail.startswith("SCAN") and "CONSTANT ROW" not in detail}
        assert scans == set()
        assert ledger.person_counts("alice")["conversation_turns"] == 0
    finally:
        ledger.close()
