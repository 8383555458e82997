"""A real Chroma server for the tests of `store.mode = "server"` and for
bench/serving/refresh_delay.py: `chroma run` (the CLI that ships with the chromadb package) on
127.0.0.1 at a free port, its data in a temporary folder. The tests' fixture starts one per session;
tests that use it share it, each naming its own collection prefix.

    def test_x(chroma_server): settings = make_settings(store=chroma_server.store_keys("t1"))
    with running_chroma(work / "chroma") as chroma: ...   # chroma.host, chroma.port
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devtools.ports import free_port
from devtools.processes import DidNotStart, stop_process, wait_answering

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


@contextmanager
def running_chroma(data: Path, timeout_s: float = READY_TIMEOUT_S) -> Iterator[RunningChroma]:
    """`chroma run` on 127.0.0.1 at a free port, its data in `data`/db and its log in
    `data`/chroma.log, until the block ends; DidNotStart, with the log's tail, when it
    does not answer within `timeout_s`."""
    data.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = (data / "chroma.log").open("wb")
    process = subprocess.Popen(
        [chroma_command(), "run", "--path", str(data / "db"), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_answering(process, f"http://127.0.0.1:{port}/api/v2/heartbeat",
                       data / "chroma.log", timeout_s, "chroma run")
        yield RunningChroma("127.0.0.1", port)
    finally:
        stop_process(process)
        log.close()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningChroma]:
    try:
        with running_chroma(tmp_path_factory.mktemp("chroma-server")) as server:
            yield server
    except DidNotStart as exc:  # raised only before the yield, while it starts
        pytest.fail(str(exc), pytrace=False)
