"""A real Chroma server for the tests of `store.mode = "server"`: `chroma run` (the CLI that
ships with the chromadb package) on 127.0.0.1 at a free port, one per session, its data in a
temporary folder. Tests that use it share it: each names its own collection prefix.

    def test_x(chroma_server): settings = make_settings(store=chroma_server.store_keys("t1"))
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.vllm_server import free_port

READY_TIMEOUT_S = 60.0


@dataclass
class RunningChroma:
    host: str
    port: int

    def store_keys(self, collection: str) -> dict[str, Any]:
        """The [store] keys that point a store at this server, under its own collections."""
        return {"mode": "server", "host": self.host, "port": self.port,
                "collection": collection}


def chroma_command() -> str:
    found = Path(sys.executable).parent / "chroma"
    return str(found) if found.exists() else shutil.which("chroma") or "chroma"


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningChroma]:
    data = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    log = (data / "chroma.log").open("wb")
    process = subprocess.Popen(
        [chroma_command(), "run", "--path", str(data / "db"), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2).is_success:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (data / "chroma.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"chroma run did not start:\n{tail}", pytrace=False)
            time.sleep(0.2)
        yield RunningChroma("127.0.0.1", port)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
