"""What the console of `kb serve` shows people: a person's mistake is one line, not a traceback;
Ctrl+C with a browser tab open stops within 5 s and prints no traceback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import gradio as gr
import httpx
import pytest

from devtools.chromium import CHROMIUM, chromium_page
from devtools.ports import free_port
from devtools.system_deps import skip_or_fail
from ui.handlers import UserError

REPO = Path(__file__).resolve().parents[2]


def test_a_users_mistake_prints_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="ui.handlers"):
        error = UserError("write the question first")
    assert isinstance(error, gr.Error) and error.print_exception is False
    assert [r.getMessage() for r in caplog.records] == ["told the user: write the question first"]
    # every refusal of the page and the admin tab goes through it
    raised = [str(p.relative_to(REPO)) for p in (REPO / "ui").rglob("*.py")
              if re.search(r"raise gr\.Error\(", p.read_text(encoding="utf-8"))]
    assert raised == []


@pytest.mark.slow
def test_ctrl_c_with_a_tab_open_stops_within_5_s_without_a_traceback(
        sample_store: Any, tmp_path: Path) -> None:
    if CHROMIUM is None:
        skip_or_fail("chromium is not installed (run scripts/install_chromium.sh)")
    port = free_port()
    env = {**os.environ, "KB_LLM_URL": f"http://127.0.0.1:{free_port()}/v1"}
    store = str(sample_store.settings.store_path())
    proc = subprocess.Popen([str(REPO / ".venv" / "bin" / "kb"), "serve", "--demo", "--store",
                             store, "--port", str(port)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "kb serve did not start"
            time.sleep(0.5)
        with chromium_page(tmp_path / "profile") as page:
            page.send("Page.enable")
            page.send("Page.navigate", url=f"http://127.0.0.1:{port}/")
            page.wait_for("!!document.querySelector('#kb-question textarea')")
            time.sleep(1.0)  # the tab's event stream open
            started = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=20)
            took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out = proc.stdout.read().decode() if proc.stdout else ""
    assert took < 5.0, f"stopped after {took:.1f} s"
    assert "Traceback" not in out and "CancelledError" not in out, out
    assert proc.returncode == 0, out
