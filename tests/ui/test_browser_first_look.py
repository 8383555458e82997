"""What a newcomer, an employee and an admin see, in headless Chromium against the real app
(the model unreachable: retrieval-only answers, real Chroma, the sample documents):

- the empty chat names what the library holds and offers example questions; one clicked is
  asked;
- a retrieval-only answer leads with the sentence that answers, cited, and shows its passages
  once, as cards that mark only what answers;
- weak evidence says so ("I found nothing that answers this");
- the feedback control is one, in words; deleting a conversation asks first; the sidebar starts
  closed on a phone's width; a Chinese browser gets a Chinese sign-in page;
- every admin screen opened shows no JSON dump and no null; opening the insights records no
  export; the approved-answer editor starts with nothing ticked and refuses an [n] whose
  passage does not say its sentence.

Chromium comes from scripts/install_chromium.sh; without it the tests are skipped (failed under
KB_REQUIRE_SYSTEM_DEPS=1, as in CI).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.chromium import CHROMIUM, Page, chromium_page, send_question
from devtools.system_deps import skip_or_fail
from tests.ui.conftest import PASSWORDS

pytestmark = pytest.mark.slow

ANSWERS = "document.querySelectorAll('#kb-chat .kb-answer')"


def click_text(selector: str, text: str) -> str:
    """JS: click the first `selector` element whose text contains `text`."""
    return (f"(() => {{ const el = [...document.querySelectorAll({json.dumps(selector)})]"
            f".find(e => e.innerText.includes({json.dumps(text)})); "
            "if (el) el.click(); return !!el; })()")


def open_page(page: Page, url: str, who: str) -> None:
    page.send("Page.enable")
    page.send("Page.navigate", url=url)
    page.wait_for("!!document.querySelector('#kb-question textarea')")
    page.wait_for(f"document.querySelector('#kb-who')?.innerText.includes({json.dumps(who)})")


def sign_in(page: Page, url: str, user: str) -> None:
    """Sign in through Gradio's /login (the cookie stays in the browser), then open the page."""
    page.send("Page.enable")
    page.send("Page.navigate", url=url + "login_check")
    time.sleep(0.5)
    body = json.dumps({"username": user, "password": PASSWORDS[user]})
    assert page.eval(f"""fetch('/login', {{method: 'POST', credentials: 'same-origin',
        body: new URLSearchParams({body})}}).then(r => r.ok)""")
    open_page(page, url, user)


def test_a_newcomer_sees_the_library_a_short_answer_and_honest_wording(
        demo_server: Any, browser: Page) -> None:
    open_page(browser, demo_server.url, "demo")
    chat = "(document.querySelector('#kb-chat')?.innerText || '')"
    browser.wait_for(f"{chat}.includes('The library holds')")
    examples = browser.eval("[...document.querySelectorAll('#kb-chat button')]"
                            ".map(b => b.innerText).filter(t => t.startsWith('What does'))")
    assert examples, browser.eval(chat)
    browser.eval(click_text("#kb-chat button", examples[0]))
    browser.wait_for(f"{ANSWERS}.length === 1", timeout=90)

    send_question(browser, "How many days of unused annual leave can I carry over?")
    browser.wait_for(f"{ANSWERS}.length === 2", timeout=90)
    answer = f"{ANSWERS}[1]"
    text = browser.eval(f"{answer}.querySelector('.kb-text').innerText")
    assert text == ("Employees may carry over at most 5 days of unused annual leave into the "
                    "next year. [1]")
    cards = browser.eval(f"[...{answer}.querySelectorAll('.kb-card')].map(c => c.innerText)")
    assert len(cards) == 3 and "most relevant passages" not in browser.eval(f"{answer}.innerText")
    marks = browser.eval(f"[...{answer}.querySelectorAll('.kb-card mark')]"
                         ".map(m => m.innerText)")
    assert marks[0] == ("Employees may carry over at most 5 days of unused annual leave into "
                        "the next year.")
    assert browser.eval(f"{answer}.querySelector('.kb-card .kb-head')?.innerText") == (
        "2.4 Carry-over of unused leave")
    assert "compensation.Managers" not in cards[0]

    send_question(browser, "公司有宿舍吗？")
    browser.wait_for(f"{ANSWERS}.length === 3", timeout=90)
    assert browser.eval(f"{ANSWERS}[2].querySelector('.kb-text').innerText").startswith(
        "没有找到能回答这个问题的内容；最接近的原文是：")
    assert browser.eval(f"{ANSWERS}[2].querySelector('.kb-badge').innerText") == (
        "仅检索：语言模型暂不可用")  # the labels in the language it was asked in

    # one feedback control, in words; deleting asks first
    browser.wait_for(click_text(".label-wrap", "Feedback on the last answer"))
    browser.wait_for("[...document.querySelectorAll('button')]"
                     ".some(b => b.innerText === 'Not helpful')")
    buttons = browser.eval("[...document.querySelectorAll('button')]"
                           ".map(b => b.textContent.trim())")
    assert "Helpful" in buttons and "Not helpful" in buttons
    assert not any("👍" in b or "👎" in b for b in buttons)
    assert browser.eval("document.querySelectorAll('#kb-chat .like, #kb-chat "
                        "[aria-label=\"Like\"]').length") == 0
    browser.eval("document.querySelector('#kb-forget').click()")
    browser.wait_for("document.body.innerText.includes('Delete this conversation for good?')")
    assert browser.eval(f"{ANSWERS}.length") == 3  # nothing deleted yet
    browser.eval("document.querySelector('#kb-forget-keep').click()")
    browser.wait_for("!document.body.innerText.includes('Delete this conversation for good?')")
    assert browser.eval(f"{ANSWERS}.length") == 3


def test_the_sidebar_starts_closed_on_a_phone_and_open_on_a_desktop(
        demo_server: Any, browser: Page) -> None:
    open_page(browser, demo_server.url, "demo")
    time.sleep(1.0)
    assert browser.eval("document.querySelector('#kb-sidebar').classList.contains('open')")
    browser.send("Emulation.setDeviceMetricsOverride", width=390, height=844,
                 deviceScaleFactor=1, mobile=True)
    open_page(browser, demo_server.url, "demo")
    browser.wait_for("!document.querySelector('#kb-sidebar').classList.contains('open')")


def test_a_chinese_browser_gets_a_chinese_sign_in_page(login_server: Any,
                                                        tmp_path: Path) -> None:
    if CHROMIUM is None:
        skip_or_fail("chromium is not installed (run scripts/install_chromium.sh)")
    with chromium_page(tmp_path / "zh", ["--lang=zh-CN", "--window-size=1280,900"],
                       reply_timeout_s=30) as page:
        page.send("Page.enable")
        page.send("Emulation.setLocaleOverride", locale="zh-CN")
        page.send("Network.enable")
        page.send("Network.setUserAgentOverride", userAgent="Mozilla/5.0 Chrome",
                  acceptLanguage="zh-CN,zh")
        page.send("Page.navigate", url=login_server.url)
        page.wait_for("document.body?.innerText.includes('用户名')")
        assert "密码" in page.eval("document.body.innerText")


def no_dump(page: Page, where: str) -> str:
    """The admin tab's text, checked for what a JSON dump leaves: none of its brackets, nulls or
    epoch seconds."""
    text = page.eval("document.body.innerText")
    for raw in ("null", '": {', '"started_at"', "1796", "store_bytes"):
        assert raw not in text, (where, raw)
    assert page.eval("document.querySelectorAll('.json-holder, [data-testid=\"json\"]')"
                     ".length") == 0, where
    return str(text)


def test_the_admin_sees_figures_not_json_and_an_editor_that_checks(
        login_server: Any, browser: Page) -> None:
    sign_in(browser, login_server.url, "alice")
    browser.wait_for(click_text("button[role=tab]", "Admin"))
    browser.wait_for("(document.querySelector('#kb-store-status')?.innerText || '')"
                     ".includes('documents')")
    status = no_dump(browser, "status")
    assert "passages" in status and " MB on disk" in status and "Last run: " in status

    ledger = login_server.app.store.ledger
    since = time.time()
    browser.wait_for(click_text(".label-wrap", "Questions and knowledge gaps"))
    browser.wait_for("(document.querySelector('#kb-figures')?.innerText || '').length > 10")
    no_dump(browser, "insights")
    assert not [r for r in ledger.audit_records(since=since) if r.event == "export"]

    browser.wait_for(click_text(".label-wrap", "Audit trail"))
    browser.wait_for("document.body.innerText.includes('signin')")
    trail = no_dump(browser, "audit trail")
    assert "/tmp/" not in trail  # uploads named by their file, not their path

    browser.wait_for(click_text("#kb-approved .label-wrap, #kb-approved button",
                                "Approved answers"))
    question = "When do I need a doctor's note for sick leave?"
    browser.eval(f"""(() => {{ const box = document.querySelector(
        '#kb-approved-question textarea'); box.value = {json.dumps(question)};
        box.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()""")
    browser.wait_for(click_text("#kb-approved button", "Find passages"))
    browser.wait_for("document.querySelectorAll('#kb-approved-cite input').length >= 2")
    assert browser.eval("[...document.querySelectorAll('#kb-approved-cite input')]"
                        ".filter(i => i.checked).length") == 0  # nothing pre-ticked
    # tick a passage that does not say it, and cite it
    browser.eval("(() => { const l = [...document.querySelectorAll('#kb-approved-cite label')]"
                 ".find(l => !/medical certificate/i.test(l.innerText));"
                 " l.querySelector('input').click(); return true; })()")
    answer = "A medical certificate is needed after 2 consecutive days of sick leave [1]."
    browser.eval(f"""(() => {{ const box = document.querySelector(
        '#kb-approved-text textarea'); box.value = {json.dumps(answer)};
        box.dispatchEvent(new Event('input', {{bubbles: true}})); return true; }})()""")
    browser.wait_for(click_text("#kb-approved button", "Save and approve"))
    browser.wait_for("(document.body.innerText || '').includes('does not hold what its "
                     "sentence says')", timeout=60)
    assert not [a for a in ledger.approved_answers() if a.question == question]
