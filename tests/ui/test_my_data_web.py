"""What the real app keeps about the person asking (uvicorn on loopback, the sample store, the
model unreachable): a question with a phone number in it is searched for as asked but kept
masked in the question log, the conversation and the log line; the page's "My data" button
downloads the signed-in person's own data as JSON (theirs only, recorded in the audit trail);
nobody signed in gets none."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from tests.ui.conftest import PASSWORDS
from tests.ui.test_audit_web import login

pytestmark = pytest.mark.slow

PHONE = "13812345678"
QUESTION = f"How many days of annual leave do I get? Call me on {PHONE}"


def test_the_question_is_searched_as_asked_and_kept_masked(login_server: Any,
                                                           caplog: pytest.LogCaptureFixture
                                                           ) -> None:
    with caplog.at_level(logging.INFO, logger="kb.events"):
        reply = httpx.post(login_server.url + "api/ask", json={"question": QUESTION},
                           timeout=120, headers={
                               "Authorization": f"Bearer {login_server.tokens['bob']}"})
    assert reply.status_code == 200, reply.text
    assert PHONE in reply.json()["searched_for"]  # retrieval saw the question as asked
    ledger = login_server.app.store.ledger
    masked = QUESTION.replace(PHONE, "*******5678")
    kept = {r[0] for r in ledger.db.execute("SELECT question FROM questions WHERE user = 'bob'")}
    assert masked in kept and QUESTION not in kept
    turns = ledger.conversation_turns(reply.json()["conversation_id"], "bob")
    assert [(t.question, PHONE in t.searched_for) for t in turns] == [(masked, False)]
    lines = [r.getMessage() for r in caplog.records if r.name == "kb.events"]
    assert any('"user": "bob"' in line for line in lines) and not any(PHONE in line
                                                                      for line in lines)


def test_my_data_downloads_the_signed_in_persons_own_data(login_server: Any,
                                                          fresh_guard: Any) -> None:
    httpx.post(login_server.url + "api/ask", json={"question": QUESTION}, timeout=120,
               headers={"Authorization": f"Bearer {login_server.tokens['bob']}"})
    bob = login(login_server.url, "bob", PASSWORDS["bob"])
    try:
        assert "/my-data" in bob.get("config").text  # the page's button
        got = bob.get("my-data")
    finally:
        bob.close()
    assert got.status_code == 200, got.text
    assert got.headers["content-disposition"].startswith('attachment; filename="my-data-')
    data = json.loads(got.text)
    assert data["person"] == "bob" and data["users"][0]["name"] == "bob"
    assert QUESTION.replace(PHONE, "*******5678") in [q["question"] for q in data["questions"]]
    assert "alice" not in json.dumps([data["questions"], data["conversations"]])
    exports = [r for r in login_server.app.store.ledger.audit_records(event="user.export")
               if r.object == "bob"]
    assert exports and exports[-1].actor == "bob" and exports[-1].address == "127.0.0.1"

    nobody = httpx.get(login_server.url + "my-data", timeout=30)
    assert nobody.status_code == 401
