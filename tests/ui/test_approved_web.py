"""Approved answers through the real app (the sample store, the model server unreachable: the
approved path needs none): written in the admin tab's editor, then served first on the page,
by POST /api/ask and by the OpenAI endpoint (through the variant in the other language), marked
"approved by NAME on DATE", with their citations as links; removed again, recorded each time."""

from __future__ import annotations

from typing import Any

import gradio as gr
import httpx
import pytest
from gradio_client import Client

from assistant.prompt import OTHER_LANGUAGE
from tests.ui.test_app import HR_QUESTIONS, FakeRequest, ask, message_text
from ui.wiring import users_for

pytestmark = pytest.mark.slow

QUESTION = "How many days of annual leave can be carried over?"
ASKED = "How many days of annual leave can I carry over?"


def test_approved_answers_through_the_editor_the_page_and_both_apis(login_server: Any) -> None:
    app, url = login_server.app, login_server.url
    alice = FakeRequest("alice")
    with pytest.raises(gr.Error):  # admins only
        app.approved_table(FakeRequest("bob"))
    # the editor as the page drives it: the passages found become the choices ticked
    editor = login_server.client("alice")
    found = editor.predict(QUESTION, [], api_name="/approved_find")
    carry = next(c for label, c in found["choices"] if "carry over" in label)
    saved = editor.predict("", QUESTION, "At most 5 days [1].", [carry], "年假可以结转几天？",
                           "scratch:", ["all"], api_name="/approved_save")
    answer_id = saved[0]
    try:
        rows = saved[2]["data"]
        assert [r[0] for r in rows] == [int(answer_id)] and rows[0][1] == "active"

        chat = ask(login_server.client("bob"), ASKED)[-1][0]
        shown = message_text(chat[-1])
        assert "Approved by alice on" in shown and 'data-mode="approved"' in shown
        assert 'class="kb-cite"' in shown and "At most 5 days" in shown

        bearer = {"Authorization": f"Bearer {login_server.tokens['bob']}"}
        body = httpx.post(url + "api/ask", json={"question": ASKED}, headers=bearer,
                          timeout=120).json()
        assert body["mode"] == "approved" and body["approved"]["by"] == "alice"
        assert body["citations"][0]["file"] == "Employee-Leave-Policy.pdf"

        reply = httpx.post(url + "v1/chat/completions", headers=bearer, timeout=120,
                           json={"model": "kb-assistant",
                                 "messages": [{"role": "user", "content": "年假可以结转几天？"}]})
        kb = reply.json()["kb"]
        assert kb["mode"] == "approved" and kb["approved"]["id"] == int(answer_id)
        # that question, from the log, starts a new form with the passages it cited offered,
        # labelled by file, page and words, none ticked: the admin ticks what the answer cites
        start = app.approved_start(f"log:{kb['question_id']}", alice)
        assert start[1] == "年假可以结转几天？" and start[3]["value"] == []
        assert [c for _, c in start[3]["choices"]] == [carry]
        assert start[3]["choices"][0][0].startswith("Employee-Leave-Policy.pdf p.2: ")
        # a thumbs-down on it starts one holding its answer too
        rating = app.store.ledger.replace_feedback(kb["question_id"], "bob", -1, "too short")
        start = app.approved_start(f"feedback:{rating}", alice)
        assert start[2] == kb["answer"] and start[3]["value"] == []
        assert kb["citations"][0]["link"].startswith(url + "page/")
        # a Chinese asker is told the approved answer is written in English
        assert reply.json()["choices"][0]["message"]["content"].startswith(
            OTHER_LANGUAGE["zh"] + "\nAt most 5 days")
    finally:
        app.approved_remove(answer_id, alice)
    assert app.approved_table(alice)[0] == []
    events = [r.event for r in app.store.ledger.audit_records(0, None, "answer.", "")]
    assert "answer.add" in events and "answer.remove" in events


def test_an_admin_of_other_groups_neither_sees_nor_changes_an_answer_citing_hr(
        login_server: Any) -> None:
    """An admin of `all, finance` saw an approved answer that cites an HR passage (its file name
    and quote) in the editor and could load, edit and remove it: the editor asked only that
    the answer's groups and the admin's share one. Now every cited document must be theirs too,
    as serving asks of an asker; a see-all admin sees it."""
    app, settings = login_server.app, login_server.settings
    alice = FakeRequest("alice")
    hr, hr_label = next((c, label) for label, c in app.approved_find(
        HR_QUESTIONS[0], [], alice)["choices"] if "Compensation-Review" in label)
    hr_words = hr_label.split(": ", 1)[1].split("\n")[-1][:60]  # the passage's own words
    leave = next(c for label, c in app.approved_find(QUESTION, [], alice)["choices"]
                 if "carry over" in label)
    with users_for(settings) as users:
        users.add("fin", "fin-password", ["all", "finance"], is_admin=True)
    hr_id = app.approved_save("", "What is the merit increase budget?", f"{hr_words} [1].",
                              [hr], "", "scratch:", ["all"], alice)[0]
    leave_id = app.approved_save("", QUESTION, "At most 5 days [1].", [leave], "", "scratch:",
                                 ["all"], alice)[0]
    try:
        fin = FakeRequest("fin")
        rows, choices, _starts = app.approved_table(fin)
        assert [r[0] for r in rows] == [int(leave_id)]  # the answer citing all-group text only
        assert "Compensation-Review" not in repr(rows) + repr(choices)
        over_http = Client(login_server.url, auth=("fin", "fin-password"), verbose=False,
                           download_files=False).predict(api_name="/approved_answers")
        assert "Compensation-Review" not in repr(over_http) and hr_words not in repr(over_http)
        for attempt in (lambda: app.approved_load(hr_id, fin),
                        lambda: app.approved_save(hr_id, "merit?", "None [1].", [leave], "",
                                                  "scratch:", ["all"], fin),
                        lambda: app.approved_remove(hr_id, fin)):
            with pytest.raises(gr.Error, match="in your groups"):
                attempt()
        assert app.store.ledger.approved_answer(int(hr_id)).answer == f"{hr_words} [1]."
        assert app.approved_load(leave_id, fin)[2] == "At most 5 days [1]."
        assert hr_words in app.approved_load(hr_id, alice)[2]
        with users_for(settings) as users:
            users.set_see_all("fin", True)
        assert {r[0] for r in app.approved_table(fin)[0]} == {int(hr_id), int(leave_id)}
    finally:
        for answer_id in (hr_id, leave_id):
            app.approved_remove(answer_id, alice)
        with users_for(settings) as users:
            users.delete("fin")
