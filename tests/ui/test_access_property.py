"""The access property of issue 11, tried with hypothesis against the real app: for random
users (random groups, admin or not), questions that quote other groups' sentences and any
chunk id, nothing outside the asker's groups reaches the API answer (its passages and
citations), the source view, the page image, the feedback or the admin views.

Short in CI (KB_PROPERTY_EXAMPLES, default 20); by hand: KB_PROPERTY_EXAMPLES=100."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import gradio as gr
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import AccessDenied
from tests.ui.test_app import FakeRequest
from ui.wiring import users_for

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("KB_PROPERTY_EXAMPLES", "20"))
GROUP_SETS = [("all",), ("hr",), ("all", "hr"), ("legal",)]


@pytest.fixture(scope="module")
def world(login_server: Any) -> Iterator[dict[str, Any]]:
    """Users of every group set (each also as an admin), their tokens, and the truth: every
    chunk's groups and text, and every document's groups, straight from the ledger."""
    made = []
    tokens = {}
    with users_for(login_server.settings) as users:
        for groups in GROUP_SETS:
            for admin in (False, True):
                name = f"prop-{'-'.join(groups)}{'-admin' if admin else ''}"
                users.add(name, "property-password", groups, is_admin=admin)
                tokens[name] = users.new_token(name, days=1)
                made.append((name, groups, admin))
        ids = users.ledger.chunk_ids()
        chunk_groups = users.ledger.chunk_groups(ids)
        texts = {c.id: c.text for doc in users.ledger.documents()
                 for c, _ in users.ledger.chunks_of(doc.meta.id)}
        doc_groups = {r.meta.path: r.meta.groups for r in users.ledger.documents()}
    try:
        yield {"users": made, "tokens": tokens, "chunks": chunk_groups, "texts": texts,
               "docs": doc_groups}
    finally:
        with users_for(login_server.settings) as users:
            for name, _, _ in made:
                users.delete(name)


def sees(mine: tuple[str, ...], groups: tuple[str, ...]) -> bool:
    return bool(set(mine) & set(groups))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_nothing_outside_the_askers_groups_reaches_any_surface(login_server: Any,
                                                                world: dict[str, Any],
                                                                data: Any) -> None:
    name, mine, is_admin = data.draw(st.sampled_from(world["users"]), label="user")
    chunk_ids = sorted(world["chunks"])
    # a question that quotes a sentence of some chunk, often one the user may not see
    quoted = data.draw(st.sampled_from(chunk_ids), label="quoted chunk")
    text = world["texts"][quoted]
    start = data.draw(st.integers(0, max(0, len(text) - 40)), label="at")
    question = text[start:start + 60].strip() or "leave"

    reply = httpx.post(login_server.url + "api/ask", json={"question": question}, timeout=120,
                       headers={"Authorization": f"Bearer {world['tokens'][name]}"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    files = [p["file"] for p in body["passages"]] + [c["file"] for c in body["citations"]]
    assert all(sees(mine, world["docs"][f]) for f in files), (mine, files)
    for path, groups in world["docs"].items():
        if not sees(mine, groups):
            assert path not in json.dumps(body, ensure_ascii=False), path

    # source view and page image, for any chunk id the browser might send
    app = login_server.app
    probe = data.draw(st.sampled_from(chunk_ids), label="probed chunk")
    user = app.users.get(name)
    if sees(mine, world["chunks"][probe]):
        assert "kb-card" in app.view_source(probe, "en", None, FakeRequest(name))
    else:
        with pytest.raises(gr.Error):
            app.view_source(probe, "en", None, FakeRequest(name))
        with pytest.raises(AccessDenied):
            app.page_image(probe, user)

    # the assistant itself (what the prompt is built from), then feedback on its answer
    answer = app.assistant.ask(question, mine, user=name)
    assert all(sees(mine, p.groups) for p in answer.passages), (mine, answer.passages)
    qid = answer.question_id or app.users.record_question(name, question, answer)
    app.users.record_feedback(qid, name, 1, f"fb-{name}")
    # every admin view, for every admin
    for admin_name, admin_groups, admin in world["users"]:
        if not admin:
            continue
        docs, _stats, feedback = app.admin_tables(FakeRequest(admin_name))
        for row in docs:
            assert sees(admin_groups, tuple(row[5].split(","))), (admin_name, row)
        for row in feedback:
            cited = [c for c in row[7].split(", ") if c]
            assert all(sees(admin_groups, world["chunks"].get(c, admin_groups)) for c in cited)
            asker = app.users.get(row[1])
            assert asker is not None and set(asker.groups) <= set(admin_groups), (admin_name, row)
