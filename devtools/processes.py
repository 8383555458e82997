"""Server processes the tests, benchmarks and scripts start: waiting until one answers, and
stopping it.

    wait_answering(process, "http://127.0.0.1:8000/api/v2/heartbeat", log, 60, "chroma run")
    stop_process(process, wait_s=10)   # SIGTERM; SIGKILL if it has not ended in 10 s
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import httpx


class DidNotStart(RuntimeError):
    """A server process ended, or did not answer in time; the message holds its log's tail."""


def wait_answering(process: subprocess.Popen[Any], url: str, log: Path, timeout_s: float,
                   what: str) -> None:
    """Return once `url` answers 2xx; DidNotStart, with the tail of `log`, when `process`
    ends first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url, timeout=2).is_success:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise DidNotStart(f"{what} did not start:\n{tail}")
        time.sleep(0.2)


def stop_process(process: subprocess.Popen[Any], wait_s: float = 10.0) -> None:
    """Ask `process` to end, and kill it when it has not within `wait_s` seconds."""
    process.terminate()
    try:
        process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
