"""`kb serve --demo --start-model` when the weights are not on this machine: a hub name is
downloaded in a background subprocess (the only part allowed the network) before vLLM starts;
a hub that refuses, or never answers, leaves retrieval-only answers and a line naming the fix,
and stopping the app ends the download. The hub here is a closed or a silent local port
(`HF_ENDPOINT`), so nothing leaves the machine."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from assistant.serving.demo import DOWNLOAD, HubStart, is_hub_name, start_for_demo
from devtools.ports import free_port

pytest.importorskip("vllm", reason="the demo starts vLLM; install the serve-cpu extra")


@pytest.fixture
def hub_name_settings(make_settings: Any) -> Any:
    return make_settings(llm={"model": "nobody-here/no-such-model", "port": free_port()})


def test_a_hub_that_refuses_leaves_one_line_naming_the_fix(
    hub_name_settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")  # nothing listens
    caplog.set_level(logging.WARNING, logger="assistant.serving.demo")
    model, line = start_for_demo(hub_name_settings)
    assert isinstance(model, HubStart)
    assert "downloading it from the model hub" in line and "retrieval-only" in line
    model.join(120)
    assert model.server is None
    assert "could not be downloaded" in model.failed and "set llm.model" in model.failed
    assert any("could not be downloaded" in r.getMessage() for r in caplog.records)
    model.stop()


def test_a_failed_download_prints_one_line_not_a_traceback() -> None:
    env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}  # nothing listens
    env.pop("HF_HUB_OFFLINE", None)
    done = subprocess.run([sys.executable, "-c", DOWNLOAD, "nobody-here/no-such-model"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("model download: ") and done.stderr.count("\n") == 1, done.stderr


@pytest.fixture
def silent_hub() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_stopping_the_app_ends_a_download_in_progress(
    hub_name_settings: Any, monkeypatch: pytest.MonkeyPatch, silent_hub: str
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", silent_hub)
    model, _ = start_for_demo(hub_name_settings)
    assert isinstance(model, HubStart)
    deadline = time.monotonic() + 30
    while model._download is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert model._download is not None and model._download.poll() is None  # still waiting
    model.stop()
    model.join(30)
    assert model._download.poll() is not None and model.server is None


def test_a_missing_local_folder_is_not_sent_to_the_hub(make_settings: Any) -> None:
    settings = make_settings(llm={"model": "models/a/missing", "port": free_port()})
    assert not is_hub_name("models/a/missing") and is_hub_name("baidu/ERNIE-4.5-0.3B-PT")
    model, line = start_for_demo(settings)
    assert model is None
    assert "set llm.model to a local folder" in line and "retrieval-only" in line
