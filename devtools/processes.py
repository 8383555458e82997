"""Stopping a server process the tests, benchmarks and scripts started.

    stop_process(process, wait_s=10)   # SIGTERM; SIGKILL if it has not ended in 10 s
"""

from __future__ import annotations

import subprocess
from typing import Any


def stop_process(process: subprocess.Popen[Any], wait_s: float = 10.0) -> None:
    """Ask `process` to end, and kill it when it has not within `wait_s` seconds."""
    process.terminate()
    try:
        process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
