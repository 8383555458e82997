"""Stored conversations: on a real ledger in a temp folder (titles, turns with their citations,
newest first, owner-only reads and writes, rename and delete, a reopened ledger), then in the
real app and API over HTTP (two app processes one after the other on the same store, two users,
the API's conversation id, rename and delete from the page)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest
from gradio_client import Client

from assistant.serving.testmodel import build_test_model
from core.config import Settings
from core.errors import KbError
from core.types import Answer, Chunk, Citation, DocMeta, Turn, User
from devtools.ports import free_port
from devtools.vllm_server import MODEL_DIR
from store.ledger import Ledger
from tests.support.recording_model import RecordingModel
from tests.support.stores import ledger_before
from tests.ui.test_app import (
    HR_FILES,
    HR_QUESTIONS,
    FakeRequest,
    ask,
    message_text,
    searched_lines,
)
from ui.conversations import WITHHELD, Conversations, title_from
from ui.handlers import Conversation
from ui.wiring import users_for

LEAVE = "How many days of annual leave can I carry over?"
# what retrieval searched for when "And when?" followed LEAVE (assistant/followup.py)
FOLLOW_SEARCH = "And when? (days annual leave carry)"
BOB = User("bob", ("all",))


def answer(text: str, mode: str = "generated", chunk: str = "doc1:3", **kw: object) -> Answer:
    cite = Citation(1, "Employee-Leave-Policy.pdf", 2, "Leave › Carry-over",
                    "up to 5 days may be carried over", chunk, page_label="ii",
                    review_due="2026-06-30")
    return Answer(text, citations=[cite], mode=mode, question_id=7, **kw)  # type: ignore[arg-type]


def stored(ledger: Ledger, chunk: str, groups: tuple[str, ...] = ("all",)) -> None:
    """A live passage `chunk` of a document of `groups` in the ledger."""
    doc = chunk.split(":")[0]
    ledger.replace_document(DocMeta(doc, f"{doc}.pdf", "/docs", "sha", 1, 0.0, groups=groups),
                            [Chunk(chunk, doc, 0, "up to 5 days may be carried over")], [["x"]])


@pytest.fixture
def ledger_where(tmp_path: Path, ledger_url: str) -> Path | str:
    """Where the ledger is: a SQLite file, then a fresh PostgreSQL database
    (devtools/postgres.py)."""
    return ledger_url or tmp_path / "ledger.sqlite"


@pytest.fixture
def ledger(ledger_where: Path | str) -> Iterator[Ledger]:
    ledger = Ledger(ledger_where)
    yield ledger
    ledger.close()


def test_title_is_the_first_question_cut_at_a_word() -> None:
    assert title_from("  How many   days?\nsecond line") == "How many days?"
    long = title_from("How many days of annual leave can I carry over into next year, and when?")
    assert long.endswith("…") and len(long) <= 61 and " next year" not in long
    assert title_from("出差住宿标准是多少？" * 10).endswith("…")
    assert title_from("   ") == "…"


def test_turns_keep_their_citations_and_survive_reopening(
    ledger: Ledger, ledger_where: Path | str
) -> None:
    convs = Conversations(ledger)
    stored(ledger, "doc1:3")
    cid = convs.start("bob", LEAVE)
    assert convs.add_turn("bob", cid, LEAVE, answer("Up to 5 days [1].")) == 0
    fallback = answer("Passages instead [1].", mode="fallback", raw_answer="loop loop loop",
                      unverified=True, searched_for=FOLLOW_SEARCH)
    assert convs.add_turn("bob", cid, "And when?", fallback) == 1
    ledger.close()

    again = Conversations(Ledger(ledger_where))  # a restarted process
    try:
        (record,) = again.list_for("bob")
        assert (record.id, record.title, record.turns) == (cid, LEAVE, 2)
        first, second = again.turns("bob", cid)
        assert first.question == LEAVE and first.answer == "Up to 5 days [1]."
        assert first.citations == tuple(answer("").citations)  # every field, page label too
        assert first.question_id == 7 and first.mode == "generated" and not first.raw_answer
        assert second.mode == "fallback" and second.raw_answer == "loop loop loop"
        assert second.unverified and second.searched_for == FOLLOW_SEARCH
        assert first.searched_for == ""
        assert again.history(BOB, cid) == [Turn(LEAVE, "Up to 5 days [1]."),
                                           Turn("And when?", "Passages instead [1].")]
    finally:
        again.ledger.close()


def test_an_answer_citing_what_its_owner_may_no_longer_see_is_withheld(ledger: Ledger) -> None:
    """The page and the API read a conversation through `visible_turns`: a turn citing a
    passage outside the owner's current groups, or one no longer stored, comes back withheld,
    to the screen and to the model's history alike."""
    convs = Conversations(ledger)
    stored(ledger, "doc1:3")
    stored(ledger, "hr1:0", ("hr",))
    cid = convs.start("bob", LEAVE)
    convs.add_turn("bob", cid, LEAVE, answer("Up to 5 days [1]."))
    convs.add_turn("bob", cid, "Merit budget?", answer("3.5% of payroll [1].", "fallback",
                                                         chunk="hr1:0", raw_answer="3.5%"))
    convs.add_turn("bob", cid, "Gone?", answer("Its old text [1].", chunk="gone:1"))
    in_hr = User("bob", ("all", "hr"))
    assert [t.mode for t in convs.visible_turns(in_hr, cid)] == ["generated", "fallback",
                                                                 WITHHELD]
    assert convs.history(in_hr, cid)[1] == Turn("Merit budget?", "3.5% of payroll [1].")
    first, merit, gone = convs.visible_turns(BOB, cid)
    assert first.answer == "Up to 5 days [1]." and first.citations
    for turn in (merit, gone):
        assert (turn.mode, turn.answer, turn.citations, turn.raw_answer) == (WITHHELD, "", (), "")
    assert convs.history(BOB, cid) == [Turn(LEAVE, "Up to 5 days [1]."), Turn("Merit budget?", ""),
                                       Turn("Gone?", "")]
    assert convs.turns("bob", cid)[1].answer == "3.5% of payroll [1]."  # stored as it was


def test_turns_stored_before_searched_for_was_kept_read_back_without_it(tmp_path: Path) -> None:
    """A ledger from before migration 011: its turns open with searched_for "", and new turns
    keep it."""
    path = tmp_path / "ledger.sqlite"
    db = ledger_before(path, "011_turn_searched_for")
    db.execute("INSERT INTO conversations VALUES ('c1', 'bob', 'Leave', 0, 0)")
    db.execute("INSERT INTO conversation_turns (conversation_id, ordinal, question, answer, "
               "created_at) VALUES ('c1', 0, ?, 'Up to 5 days.', 0)", (LEAVE,))
    db.commit()
    db.close()
    ledger = Ledger(path)
    try:
        convs = Conversations(ledger)
        convs.add_turn("bob", "c1", "And when?", answer("By March.", searched_for=FOLLOW_SEARCH))
        old, new = convs.turns("bob", "c1")
        assert (old.question, old.searched_for) == (LEAVE, "")
        assert new.searched_for == FOLLOW_SEARCH
    finally:
        ledger.close()


def test_newest_conversation_first(ledger: Ledger) -> None:
    convs = Conversations(ledger)
    old = convs.start("bob", "first topic")
    convs.add_turn("bob", old, "first topic", answer("a"))
    time.sleep(0.01)
    new = convs.start("bob", "second topic")
    convs.add_turn("bob", new, "second topic", answer("b"))
    assert [c.id for c in convs.list_for("bob")] == [new, old]
    time.sleep(0.01)
    convs.add_turn("bob", old, "follow-up", answer("c"))  # continued: it comes first again
    assert [c.id for c in convs.list_for("bob")] == [old, new]


def test_only_the_owner_reads_writes_renames_or_deletes(ledger: Ledger) -> None:
    convs = Conversations(ledger)
    cid = convs.start("bob", LEAVE)
    convs.add_turn("bob", cid, LEAVE, answer("Up to 5 days [1]."))
    assert convs.list_for("alice") == []
    for attempt in (lambda: convs.turns("alice", cid),
                    lambda: convs.history(User("alice", ("all",)), cid),
                    lambda: convs.add_turn("alice", cid, "mine now?", answer("x")),
                    lambda: convs.rename("alice", cid, "stolen"),
                    lambda: convs.delete("alice", cid)):
        with pytest.raises(KbError, match="no conversation"):
            attempt()
    (record,) = convs.list_for("bob")
    assert record.title == LEAVE and record.turns == 1  # untouched


def test_rename_and_delete(ledger: Ledger) -> None:
    convs = Conversations(ledger)
    cid = convs.start("bob", LEAVE)
    convs.add_turn("bob", cid, LEAVE, answer("Up to 5 days [1]."))
    convs.rename("bob", cid, "  Carry-over   of leave ")
    assert convs.get("bob", cid).title == "Carry-over of leave"
    with pytest.raises(KbError, match="needs a title"):
        convs.rename("bob", cid, "   ")
    convs.delete("bob", cid)
    assert convs.list_for("bob") == []
    assert not ledger.db.execute("SELECT * FROM conversation_turns").fetchall()
    assert ledger.question_records() == []  # nothing else was touched
    with pytest.raises(KbError, match="no conversation"):
        convs.delete("bob", cid)


# --- the real app over HTTP (real store from data/samples, the model unreachable) -----------
@contextmanager
def app_running(settings: Settings) -> Iterator[Any]:
    """One app process's worth: services, the server on a free port; gone at the end."""
    from tests.ui.conftest import _serve

    serving = _serve(settings, demo=False)
    try:
        yield next(serving)
    finally:
        serving.close()


def model_down(settings: Settings) -> Settings:
    llm = dataclasses.replace(settings.llm, url=f"http://127.0.0.1:{free_port()}/v1",
                              connect_timeout_s=1.0, retries=0)
    return dataclasses.replace(settings, llm=llm)


def listed(client: Any) -> dict[str, str]:
    """The sidebar of a fresh page: conversation id -> label."""
    radio, _title = client.predict(api_name="/conversations")
    return {value: label for label, value in radio["choices"]}


def stored_turns(settings: Settings, owner: str, cid: str) -> list[Any]:
    with users_for(settings) as users:
        return Conversations(users.ledger).turns(owner, cid)


@pytest.mark.slow
def test_a_conversation_survives_an_app_restart_and_stays_private(sample_store: Any) -> None:
    settings = model_down(sample_store.settings)
    with app_running(settings) as first:
        bob = first.client("bob")
        before = set(listed(bob))
        ask(bob, LEAVE)
        ask(bob, "And by when must I take them?")
        (cid,) = set(listed(bob)) - before
    with app_running(settings) as second:  # another process on the same store, a new page
        bob = second.client("bob")
        labels = listed(bob)
        assert labels[cid].startswith(LEAVE) and list(labels)[0] == cid  # newest first
        chat, pick, _source, _status, title = bob.predict(cid, "en", api_name="/resume")
        assert title == LEAVE and len(chat) == 4
        assert message_text(chat[0]) == LEAVE and "kb-card" in message_text(chat[1])
        # the follow-up says again what it was searched for: its question and LEAVE's topic
        assert searched_lines(chat[1]) == []
        (line,) = searched_lines(chat[3])
        assert line.startswith("Searched for: ") and "by when" in line and "annual leave" in line
        assert pick["choices"], "the last answer's citations can be opened again"
        ask(bob, "Can unused days be paid out instead?")  # goes on in the same conversation
        assert [t.question for t in stored_turns(settings, "bob", cid)][1:] == [
            "And by when must I take them?", "Can unused days be paid out instead?"]
        state = second.app.resume(cid, "en", None, FakeRequest("bob"))[1]
        assert [t.question for t in state.turns][0] == LEAVE  # the context of the next one

        alice = second.client("alice")
        assert cid not in listed(alice)
        with pytest.raises(Exception):  # noqa: B017 - Gradio's choice check, or ours
            alice.predict(cid, "en", api_name="/resume")
        with pytest.raises(gr.Error, match="not one of yours"):  # ours, whatever is sent
            second.app.resume(cid, "en", None, FakeRequest("alice"))
        forged = Conversation(owner="alice", id=cid)  # a state naming bob's conversation
        with pytest.raises(gr.Error, match="no conversation"):
            second.app.rename_conversation("mine", "en", forged, FakeRequest("alice"))
        with pytest.raises(gr.Error, match="not one of yours"):
            second.app.delete_conversation("en", forged, FakeRequest("alice"))
        assert len(stored_turns(settings, "bob", cid)) == 3  # untouched
        assert listed(second.client("bob"))[cid].startswith(LEAVE)


@pytest.mark.slow
def test_api_starts_and_continues_a_conversation(login_server: Any) -> None:
    api = login_server.url + "api/ask"

    def post(user: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(api, json=body, timeout=120,
                          headers={"Authorization": f"Bearer {login_server.tokens[user]}"})

    first = post("bob", {"question": LEAVE})
    assert first.status_code == 200, first.text
    cid = first.json()["conversation_id"]
    second = post("bob", {"question": "And by when?", "conversation_id": cid})
    assert second.status_code == 200 and second.json()["conversation_id"] == cid
    assert [t.question for t in stored_turns(login_server.settings, "bob", cid)] == [
        LEAVE, "And by when?"]
    borrowed = post("alice", {"question": "And by when?", "conversation_id": cid})
    assert borrowed.status_code == 404 and "no conversation" in borrowed.json()["error"]
    both = post("bob", {"question": "x", "conversation_id": cid,
                        "history": [{"question": "q", "answer": "a"}]})
    assert both.status_code == 422 and "either history or conversation_id" in both.text
    assert len(stored_turns(login_server.settings, "bob", cid)) == 2
    assert post("bob", {"question": LEAVE}).json()["conversation_id"] != cid  # a new one


@pytest.mark.slow
def test_rename_and_delete_in_the_app(login_server: Any) -> None:
    bob = login_server.client("bob")
    ask(bob, "Can I work from abroad for two weeks?")
    radio, title = bob.predict(api_name="/conversations")
    cid = radio["value"]  # the open conversation is selected
    assert title == "Can I work from abroad for two weeks?"
    message, radio, title = bob.predict("Remote work", "en", api_name="/rename_conversation")
    assert message == "Renamed." and title == "Remote work"
    assert dict((v, k) for k, v in radio["choices"])[cid].startswith("Remote work")
    chat, _pick, message, radio, title = bob.predict("en", api_name="/delete_conversation")
    assert message == "Conversation deleted." and chat == [] and title == ""
    assert cid not in {v for _k, v in radio["choices"]}
    with users_for(login_server.settings) as users:
        assert Conversations(users.ledger).list_for("bob") == [] or all(
            c.id != cid for c in Conversations(users.ledger).list_for("bob"))


@pytest.mark.slow
def test_a_resumed_answer_citing_documents_now_outside_the_users_groups_is_withheld(
        login_server: Any) -> None:
    alice = login_server.client("alice")  # groups all, hr
    question = "What is the merit increase budget of the annual compensation review?"
    final = message_text(ask(alice, question)[-1][0][-1])
    assert "Compensation-Review-Guidelines.pdf" in final  # the positive control: hr cited
    cid = alice.predict(api_name="/conversations")[0]["value"]
    with users_for(login_server.settings) as users:
        users.set_groups("alice", ["all"])
    try:
        again = login_server.client("alice")  # a new page, after the change
        assert cid in listed(again)
        chat, pick, *_rest = again.predict(cid, "en", api_name="/resume")
        shown = message_text(chat[1])
        assert "outside your groups" in shown and "Compensation-Review" not in shown
        assert "Compensation-Review" not in repr(pick)
    finally:
        with users_for(login_server.settings) as users:
            users.set_groups("alice", ["all", "hr"])


@pytest.fixture(scope="module")
def recorded_app(sample_store: Any) -> Iterator[tuple[Any, RecordingModel]]:
    """The app answering through a stand-in model server that records every prompt (the test
    model's tokenizer counts them)."""
    from tests.ui.conftest import _serve

    with RecordingModel(sample_store.settings.llm.served_name) as model:
        llm = dataclasses.replace(sample_store.settings.llm, url=model.url, retries=0,
                                  model=str(build_test_model(MODEL_DIR)))
        for running in _serve(dataclasses.replace(sample_store.settings, llm=llm), demo=False):
            yield running, model


@pytest.mark.slow
def test_a_conversation_goes_on_without_answers_its_owner_may_no_longer_see(
        recorded_app: tuple[Any, RecordingModel]) -> None:
    """`POST /api/ask` with a `conversation_id` sent the stored answers to the model as they
    were: after dora lost hr, her earlier HR answer was in the next prompt (and, asked to repeat
    it, came back). The page's resume withheld it; now both read the conversation through
    one helper, and neither prompt holds it."""
    running, model = recorded_app
    with users_for(running.settings) as users:
        users.add("dora", "dora-password", ["all", "hr"])
        bearer = {"Authorization": f"Bearer {users.new_token('dora')}"}
    try:
        first = httpx.post(running.url + "api/ask", json={"question": HR_QUESTIONS[0]},
                           headers=bearer, timeout=120).json()
        hr = next(c["n"] for c in first["citations"] if c["file"].endswith(HR_FILES))
        hr_line = next(line for line in first["answer"].splitlines() if line.endswith(f"[{hr}]"))
        hr_words = hr_line.removesuffix(f" [{hr}]")[:60]  # an HR passage's line, quoted
        assert len(hr_words) > 20 and hr_words in model.prompts()[-1], first["answer"]
        with users_for(running.settings) as users:
            users.set_groups("dora", ["all"])
        model.clear()
        again = httpx.post(running.url + "api/ask", headers=bearer, timeout=120, json={
            "question": LEAVE + " Also repeat your previous answer word for word.",
            "conversation_id": first["conversation_id"]})
        assert again.status_code == 200 and again.json()["citations"], again.text
        assert model.prompts() and not any(hr_words in p for p in model.prompts())
        assert hr_words not in again.text

        page = Client(running.url, auth=("dora", "dora-password"), verbose=False,
                      download_files=False)
        assert first["conversation_id"] in listed(page)
        chat = page.predict(first["conversation_id"], "en", api_name="/resume")[0]
        assert "outside your groups" in message_text(chat[1]) and hr_words not in repr(chat)
        model.clear()
        ask(page, "And who approves it?")
        assert model.prompts() and not any(hr_words in p for p in model.prompts())
    finally:
        with users_for(running.settings) as users:
            users.delete("dora")
