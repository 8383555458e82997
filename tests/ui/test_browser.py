"""Headless Chromium against the real app (demo mode, model unreachable: retrieval-only answers
carry [n] links deterministically): load the chat, ask, and check the rendered page shows the
answer and a citation link whose source card is on the page; save a screenshot.

Chromium comes from scripts/install_chromium.sh (Debian `chromium`); without it the test is
skipped (failed under KB_REQUIRE_SYSTEM_DEPS=1, as in CI). It is driven over the DevTools
protocol with the `websockets` package Gradio already depends on. KB_UPDATE_SCREENSHOT=1 also
copies the screenshot to docs/screenshot.png.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.chromium import Page, send_question
from devtools.system_deps import tool

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_chat_page_shows_answer_with_citation_link(demo_server: Any, browser: Page,
                                                   tmp_path: Path) -> None:
    browser.send("Page.enable")
    browser.send("Page.navigate", url=demo_server.url)
    browser.wait_for("!!document.querySelector('#kb-question textarea')")
    browser.wait_for("document.querySelector('#kb-who')?.innerText.includes('demo')")
    send_question(browser, "How many days of unused annual leave can I carry over?")
    href = browser.wait_for(
        "document.querySelector('#kb-chat a.kb-cite')?.getAttribute('href')", timeout=90)
    assert href.startswith("#kb-q")
    card = browser.eval(f"document.getElementById({json.dumps(href[1:])})?.innerText")
    assert card and "Employee-Leave-Policy.pdf" in card
    chat = browser.eval("document.querySelector('#kb-chat').innerText")
    assert "carry over" in chat and "[1]" in chat
    assert browser.eval("!!document.querySelector('#kb-chat mark')"), "quote highlighted"
    # the view-source panel: the first citation, with its PDF page when poppler is installed
    browser.eval("document.querySelector('#kb-view').click()")
    browser.wait_for("document.querySelector('#kb-source')?.innerText.includes('page')")
    if tool("pdftoppm", "poppler-utils (run scripts/install_chromium.sh)"):
        # served by /page/{chunk_id} after a group check, not by Gradio's file route
        browser.wait_for("document.querySelector('#kb-source img.kb-page')?.naturalWidth > 0")
    # the answer's first lines (not the end of its source cards) in the picture
    browser.eval("document.querySelector('#kb-chat .kb-answer').scrollIntoView({block: 'start'});"
                 "window.scrollTo(0, 0); true")
    time.sleep(1.0)
    shot = browser.png()
    path = tmp_path / "chat.png"
    path.write_bytes(shot)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
    if os.environ.get("KB_UPDATE_SCREENSHOT") == "1":
        (REPO / "docs").mkdir(exist_ok=True)
        shutil.copyfile(path, REPO / "docs" / "screenshot.png")


def test_a_follow_up_shows_what_it_was_searched_for(demo_server: Any, browser: Page) -> None:
    """The second question of a conversation, read with the first (issue 25): the line under
    its answer is on the page, shown; the first answer has none."""
    browser.send("Page.enable")
    browser.send("Page.navigate", url=demo_server.url)
    browser.wait_for("!!document.querySelector('#kb-question textarea')")
    browser.wait_for("document.querySelector('#kb-who')?.innerText.includes('demo')")
    answers = "document.querySelectorAll('#kb-chat .kb-answer')"
    send_question(browser, "How many days of annual leave can I carry over?")
    browser.wait_for(f"{answers}.length === 1", timeout=90)
    send_question(browser, "And for part-time staff?")
    browser.wait_for(f"{answers}.length === 2", timeout=90)
    lines = browser.eval(f"""Array.from({answers}).map(a => {{
        const line = a.querySelector('.kb-searched');
        return line && line.offsetHeight > 0 ? line.innerText : ''; }})""")
    assert lines[0] == ""
    assert lines[1].startswith("Searched for: ") and "part-time staff" in lines[1]
    assert "annual leave" in lines[1]  # the first question's topic
