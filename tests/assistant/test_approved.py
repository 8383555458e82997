"""Approved answers through the real query pipeline (the sample store: real Chroma, real files,
the real question embedder; no model server, which the approved path never needs): served first
with who approved it, streamed, recorded; only to askers who may see it; never once a cited
document is gone; and admins' mistakes named."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from assistant.answer_json import answer_to_json
from assistant.approved.answers import Draft, Ref
from core.errors import KbError
from core.text import split_sentences
from core.types import Answer
from ingest.pipeline import delete_document
from ui.wiring import open_services

REPO = Path(__file__).resolve().parents[2]
CARRY = "Employees may carry over at most 5 days of unused annual leave"


def test_served_first_to_those_who_may_see_it_and_suspended_when_its_document_goes(
    sample_settings,  # type: ignore[no-untyped-def]
) -> None:
    services = open_services(dataclasses.replace(sample_settings, base_dir=REPO))
    assistant, ledger = services.assistant, services.store.ledger
    try:
        saved = assistant.save_approved(
            Draft("How many days of annual leave can be carried over?",
                  "At most 5 days, taken by 31 March [1].",
                  [Ref("Employee-Leave-Policy.pdf:2", CARRY)], ["all"],
                  ["年假可以结转几天？"], "log", "7"), "alice")
        assert saved.citations[0].page == 2 and saved.origin == "log"

        items = list(assistant.ask_stream("How many days of annual leave can I carry over?",
                                          ["all"], user="bob"))
        answer = items[-1]
        assert isinstance(answer, Answer) and answer.mode == "approved"
        assert items[:-1] == [answer.answer] and answer.answer.startswith("At most 5 days")
        assert answer.approved is not None and answer.approved.author == "alice"
        assert answer.approved.id == saved.id
        cited = answer.citations[0]
        assert (cited.file, cited.page, cited.quote) == ("Employee-Leave-Policy.pdf", 2, CARRY)
        assert answer.passages[0].chunk_id == cited.chunk_id and "approved" in answer.timings_ms
        row = ledger.db.execute("SELECT user, mode, chunk_ids FROM questions WHERE id = ?",
                                (answer.question_id,)).fetchone()
        assert tuple(row) == ("bob", "approved", f'["{cited.chunk_id}"]')
        assert answer_to_json(answer)["approved"]["by"] == "alice"

        # a typo (two cost MiniLM too much meaning), and the other language through the variant
        assert assistant.ask("How many days of annual leave can I cary over?", ["all"]).mode == (
            "approved")
        assert assistant.ask("年假可以结转几天？", ["all"]).mode == "approved"
        # another question, and an asker who shares none of its groups: retrieval as usual
        assert assistant.ask("How many sick days do I get per year?", ["all"]).mode != "approved"
        # all its words but the one that matters (lexical 0.86, dense 0.91): not the same question
        assert assistant.ask("How many days of annual leave do I get?", ["all"]).mode != "approved"
        assert assistant.ask("How many days of annual leave can I carry over?",
                             ["hr"]).approved is None

        # an answer citing an hr-only document reaches hr only, whatever its own groups
        hr = assistant.retrieve("compensation review salary adjustment", ["hr"])[0]
        assert hr.groups == ("hr",)
        said = split_sentences(hr.text.split("\n", 1)[-1])[0].strip()  # the passage's words
        assistant.save_approved(Draft("When is the compensation review held?", f"{said} [1]",
                                      [Ref(hr.chunk_id)], ["all"]), "alice")
        asked = "When is the compensation review held?"
        assert assistant.ask(asked, ["all"]).mode != "approved"
        assert assistant.ask(asked, ["all", "hr"]).mode == "approved"

        # the cited document deleted: suspended in the same transaction, never served stale
        delete_document(services.store, "Employee-Leave-Policy.pdf")
        gone = ledger.approved_answer(saved.id)
        assert gone is not None and gone.status == "suspended"
        assert gone.suspended_reason.startswith("Employee-Leave-Policy.pdf deleted on")
        assert assistant.ask("How many days of annual leave can I carry over?",
                             ["all"]).mode != "approved"
    finally:
        services.close()


def test_what_an_admin_gets_wrong_is_named(sample_settings) -> None:  # type: ignore[no-untyped-def]
    services = open_services(dataclasses.replace(sample_settings, base_dir=REPO))
    assistant = services.assistant
    good = [Ref("Employee-Leave-Policy.pdf:2", CARRY)]
    try:
        cases = [
            (Draft("", "x [1]", good), "no question"),
            (Draft("q?", "", good), "no answer text"),
            (Draft("q?", "x", []), "no citation"),
            (Draft("q?", "x [2]", good), r"\[2\] names no citation"),
            (Draft("q?", "x", [Ref("Employee-Leave-Policy.pdf:2", "not in the policy")]),
             "no passage of Employee-Leave-Policy.pdf page 2 contains"),
            (Draft("q?", "x", [Ref("Employee-Leave-Policy.pdf:9", CARRY)]), "page 9"),
            (Draft("q?", "x", [Ref("Employee-Leave-Policy.pdf")]), "needs --quote"),
            (Draft("q?", "x", [Ref("nowhere.pdf", "words")]), "no live passage"),
            (Draft("q?", "x", good, ["Not A Group"]), "group"),
        ]
        for draft, message in cases:
            with pytest.raises(KbError, match=message):
                assistant.save_approved(draft, "alice")
        # an author who may not see the passage may not cite it
        hr = assistant.retrieve("compensation review salary adjustment", ["hr"])[0]
        with pytest.raises(KbError, match="outside your groups"):
            assistant.save_approved(Draft("q?", "x", [Ref(hr.chunk_id)]), "bob", ["all"])
        # no [n] written: the citations are appended
        saved = assistant.save_approved(Draft("q?", "At most 5 days.", good), "alice")
        assert saved.answer == "At most 5 days. [1]"
        assert services.store.ledger.approved_answers() == [saved]
    finally:
        services.close()
