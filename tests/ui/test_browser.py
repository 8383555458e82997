"""Headless Chromium against the real app (demo mode, model unreachable: retrieval-only answers
carry [n] links deterministically): load the chat, ask, and check the rendered page shows the
answer and a citation link whose source card is on the page; save a screenshot.

Chromium comes from scripts/install_chromium.sh (Debian `chromium`); without it the test is
skipped. It is driven over the DevTools protocol with the `websockets` package Gradio already
depends on. KB_UPDATE_SCREENSHOT=1 also copies the screenshot to docs/screenshot.png.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,1250", "--remote-debugging-port=0"]


class Page:
    """The smallest DevTools client: send a command, wait for its reply, evaluate, screenshot."""

    def __init__(self, ws_url: str) -> None:
        from websockets.sync.client import connect

        self.ws = connect(ws_url, max_size=None, open_timeout=10)
        self.ids = itertools.count(1)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv(timeout=30))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def eval(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {expression}")

    def close(self) -> None:
        self.ws.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Page]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (run scripts/install_chromium.sh)")
    profile = tmp_path / "profile"
    proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail("chromium did not start its DevTools endpoint", pytrace=False)
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = Page(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
        try:
            yield page
        finally:
            page.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_chat_page_shows_answer_with_citation_link(demo_server: Any, browser: Page,
                                                   tmp_path: Path) -> None:
    browser.send("Page.enable")
    browser.send("Page.navigate", url=demo_server.url)
    browser.wait_for("!!document.querySelector('#kb-question textarea')")
    browser.wait_for("document.querySelector('#kb-who')?.innerText.includes('demo')")
    browser.eval("""(() => {
        const box = document.querySelector('#kb-question textarea');
        box.value = 'How many days of unused annual leave can I carry over?';
        box.dispatchEvent(new Event('input', {bubbles: true}));
        return true; })()""")
    time.sleep(0.3)
    browser.eval("document.querySelector('#kb-send').click()")
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
    if shutil.which("pdftoppm"):
        # served by /page/{chunk_id} after a group check, not by Gradio's file route
        browser.wait_for("document.querySelector('#kb-source img.kb-page')?.naturalWidth > 0")
    # the answer's first lines (not the end of its source cards) in the picture
    browser.eval("document.querySelector('#kb-chat .kb-answer').scrollIntoView({block: 'start'});"
                 "window.scrollTo(0, 0); true")
    time.sleep(1.0)
    shot = base64.b64decode(browser.send("Page.captureScreenshot", format="png")["data"])
    path = tmp_path / "chat.png"
    path.write_bytes(shot)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000
    if os.environ.get("KB_UPDATE_SCREENSHOT") == "1":
        (REPO / "docs").mkdir(exist_ok=True)
        shutil.copyfile(path, REPO / "docs" / "screenshot.png")
