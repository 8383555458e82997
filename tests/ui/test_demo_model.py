"""The demo's first run, end to end: `kb serve --demo --start-model` (what scripts/demo.sh runs)
with `llm.model` set to the tiny test model's folder. The app answers at once, retrieval-only,
while it starts vLLM in the background; once vLLM is up the same app process, never restarted,
answers through the model, and each answer on the page says which mode made it. Stopping the
app stops the model server. One vLLM start (~1 min on the CPU build)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from assistant.llm.endpoint import probe
from assistant.serving.testmodel import build_test_model
from core.config import load_settings
from devtools.ports import free_port
from devtools.vllm_server import MODEL_DIR, READY_TIMEOUT_S
from tests.support.stores import ingest_paths
from tests.ui.conftest import REPO, SAMPLES
from tests.ui.test_app import message_text

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

QUESTION = "How many days of unused annual leave can I carry over?"
APP_START_S = 180.0


def tail(path: Path, lines: int = 30) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def final_answer(url: str) -> str:
    """Ask on the page (the Gradio /ask endpoint the Send button calls); the answer's HTML."""
    from gradio_client import Client

    client = Client(url, verbose=False, download_files=False)
    job = client.submit(QUESTION, "en", api_name="/ask")
    outputs = list(job)
    job.result()
    return message_text(outputs[-1][0][-1])


def test_demo_answers_retrieval_only_then_with_the_model_without_a_restart(
    tmp_path: Path,
) -> None:
    if importlib_missing("vllm"):
        pytest.fail("vLLM is not installed (pip install -e '.[serve-cpu]')", pytrace=False)
    model_dir = build_test_model(MODEL_DIR)
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy2(SAMPLES / "Employee-Leave-Policy.pdf", docs)
    store = tmp_path / "store"
    settings = load_settings(REPO / "config.toml", environ={}).with_store(store)
    assert ingest_paths(settings, [docs]).counts["ingested"] == 1

    llm_port, app_port = free_port(), free_port()
    env = {**os.environ, "KB_STORE_PATH": str(store), "KB_LLM_MODEL": str(model_dir),
           "KB_LLM_URL": "", "KB_LLM_ENDPOINTS": "[]", "KB_LLM_PORT": str(llm_port),
           "KB_LLM_CONNECT_TIMEOUT_S": "1.0", "KB_LLM_RETRIES": "0",
           "KB_LLM_FIRST_TOKEN_TIMEOUT_S": "30.0", "KB_LLM_TOTAL_TIMEOUT_S": "90.0",
           "KB_UI_HOST": "127.0.0.1"}
    log = tmp_path / "kb-serve.log"
    command = [sys.executable, "-c", "from ui.cli import main; main()", "-v",
               "serve", "--demo", "--start-model", "--port", str(app_port)]
    url, llm_url = f"http://127.0.0.1:{app_port}/", f"http://127.0.0.1:{llm_port}/v1"
    with log.open("wb") as out:
        app = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True)
    vllm_pid = 0
    try:
        deadline = time.monotonic() + APP_START_S
        while not _answers(url):
            if app.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the app did not start; its log:\n{tail(log)}", pytrace=False)
            time.sleep(1.0)
        found = re.search(r"started vLLM \(pid (\d+)\)", log.read_text(errors="replace"))
        assert found, f"the app started no model server; its log:\n{tail(log)}"
        vllm_pid = int(found.group(1))
        assert "answers are retrieval-only until it is ready" in log.read_text()

        # vLLM is still starting: the page answers from the passages, and says so
        assert not probe(llm_url, timeout_s=1.0).up, "vLLM was up before the first answer"
        first = final_answer(url)
        assert 'data-mode="retrieval_only"' in first, first
        assert "Retrieval only" in first and "carry over" in first
        assert "first token – ms" in first  # no model token

        deadline = time.monotonic() + READY_TIMEOUT_S
        while not probe(llm_url, timeout_s=2.0).up:
            if app.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"vLLM did not come up; the app's log:\n{tail(log)}\nvLLM's log:\n"
                            f"{tail(store / 'logs' / f'vllm-{llm_port}.log')}", pytrace=False)
            time.sleep(1.0)

        # the same app process, now answering through the model (the tiny random model's
        # text is nonsense, so its citations may not check out, or it loops: then the
        # passages lead, mode "fallback"; either way the page says which mode answered)
        assert app.poll() is None
        second = final_answer(url)
        mode = re.search(r'data-mode="([a-z_]+)"', second)
        assert mode and mode.group(1) in ("generated", "fallback"), second
        if mode.group(1) == "generated":
            assert "Written by the language model" in second
        else:
            assert "the model&#x27;s answer, which could not be checked" in second
        assert re.search(r"first token \d+ ms", second), second  # the model's tokens came
        assert "Retrieval only" not in second

        app.send_signal(signal.SIGTERM)  # as Ctrl-C/kill would end the demo
        assert app.wait(timeout=60) == 0, tail(log)
        assert "stopping the model server" in log.read_text()
        assert _gone(vllm_pid, within_s=15), "the model server outlived the app"
    finally:
        for pid in (app.pid, vllm_pid):
            if pid and _alive(pid):
                os.killpg(pid, signal.SIGKILL)
        app.wait(timeout=30)


def importlib_missing(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is None


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _running_in_group(pgid: int) -> list[int]:
    """The processes of group `pgid` that still run: killed ones the system has not reaped yet
    (zombies, state Z) count as gone."""
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            running.append(int(stat.parent.name))
    return running


def _gone(pgid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while _running_in_group(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
