"""Headless Chromium driven over the DevTools protocol: the browser test and the screenshot
scripts (scripts/screenshots*.py) share it.

    with chromium_page(tmp / "profile", ["--window-size=1280,1250"]) as page:
        page.send("Page.navigate", url=url); page.wait_for("document.title")
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from devtools.processes import stop_process

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0"]


# what Runtime.evaluate answers when the page navigates while it evaluates
NAVIGATING = ("Inspected target navigated or closed", "Execution context was destroyed",
              "Cannot find default execution context")


class BrowserError(RuntimeError):
    """Chromium did not start, a DevTools command failed, or a wait timed out."""


class Page:
    """The smallest DevTools client: send a command, wait for its reply, evaluate, screenshot."""

    def __init__(self, ws_url: str, reply_timeout_s: float = 60.0,
                 wait_timeout_s: float = 60.0) -> None:
        from websockets.sync.client import connect

        self.ws = connect(ws_url, max_size=None, open_timeout=10)
        self.ids = itertools.count(1)
        self.reply_timeout_s = reply_timeout_s
        self.wait_timeout_s = wait_timeout_s

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv(timeout=self.reply_timeout_s))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def eval(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float | None = None) -> Any:
        """The first truthy value of `expression`; BrowserError with the page's last text when
        none comes within `timeout` seconds (the page's `wait_timeout_s` when None). An evaluation
        that a navigation cut short counts as not yet."""
        deadline = time.monotonic() + (self.wait_timeout_s if timeout is None else timeout)
        while time.monotonic() < deadline:
            try:
                value = self.eval(expression)
            except BrowserError as exc:
                if not any(mark in str(exc) for mark in NAVIGATING):
                    raise
                value = None  # the page moved on mid-evaluation: ask the next one
            if value:
                return value
            time.sleep(0.25)
        seen = self.eval("document.body ? document.body.innerText.slice(-3000) : ''")
        raise BrowserError(f"timed out waiting for {expression}; the page shows:\n{seen}")

    def png(self) -> bytes:
        return base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        self.ws.close()


@contextmanager
def chromium_page(profile: Path, flags: Sequence[str] = (), reply_timeout_s: float = 60.0,
                  wait_timeout_s: float = 60.0) -> Iterator[Page]:
    """Chromium with a fresh `profile` folder and its first tab as a Page; stopped after."""
    if CHROMIUM is None:
        raise BrowserError("chromium is not installed (run scripts/install_chromium.sh)")
    proc = subprocess.Popen([CHROMIUM, *FLAGS, *flags, f"--user-data-dir={profile}",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise BrowserError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = Page(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"],
                    reply_timeout_s, wait_timeout_s)
        try:
            yield page
        finally:
            page.close()
    finally:
        stop_process(proc)


def send_question(page: Page, question: str) -> None:
    """Type `question` into the kb page's question box and click Send (not waiting for the
    answer)."""
    page.eval(f"""(() => {{
        const box = document.querySelector('#kb-question textarea');
        box.value = {json.dumps(question)};
        box.dispatchEvent(new Event('input', {{bubbles: true}}));
        return true; }})()""")
    time.sleep(0.3)
    page.eval("document.querySelector('#kb-send').click()")
