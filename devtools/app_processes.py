"""Several real `kb serve` processes on loopback sharing one store, as behind a load balancer
(issue 13): one ledger (the SQLite file in the store folder, or `store.ledger_url`), one Chroma
server, the model unreachable (retrieval-only answers: nothing here needs vLLM). Used by
tests/ui/test_processes.py and bench/serving/refresh_delay.py.

    env = shared_env(chroma_host, chroma_port, "twoapps", embed_cache, refresh_s=1.0)
    with running_apps(store, env, count=2) as (a, b):
        httpx.post(a.url + "login", data=...); httpx.get(b.url + "config", cookies=...)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from devtools.ports import free_port
from devtools.processes import stop_process

REPO = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 120.0


@dataclass
class AppProcess:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


def shared_env(chroma_host: str, chroma_port: int, collection: str, embed_cache: Path,
               refresh_s: float, ledger_url: str = "") -> dict[str, str]:
    """The KB_* overrides that point every process at the same Chroma server, ledger and
    embedding cache, with the model unreachable (connection refused at once, no retries)."""
    return {
        "KB_STORE_MODE": "server", "KB_STORE_HOST": chroma_host,
        "KB_STORE_PORT": str(chroma_port), "KB_STORE_COLLECTION": collection,
        "KB_STORE_LEDGER_URL": f'"{ledger_url}"', "KB_EMBED_CACHE": str(embed_cache),
        "KB_LLM_URL": f"http://127.0.0.1:{free_port()}/v1", "KB_LLM_RETRIES": "0",
        "KB_LLM_CONNECT_TIMEOUT_S": "1.0", "KB_RETRIEVE_REFRESH_S": str(refresh_s),
    }


def start_app(store: Path, env: dict[str, str], logs: Path, port: int = 0) -> AppProcess:
    """`kb serve` over `store` on 127.0.0.1:`port` (a free one by default)."""
    port = port or free_port()
    log = logs / f"app-{port}.log"
    process = subprocess.Popen(
        [sys.executable, "-c", "from ui.cli import main; main()", "serve", "--config",
         str(REPO / "config.toml"), "--store", str(store), "--port", str(port)],
        cwd=REPO, env={**os.environ, **env}, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    return AppProcess(f"http://127.0.0.1:{port}/", process, log)


def wait_ready(app: AppProcess, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Until the app answers (its login check says 401), or RuntimeError with its log."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(app.url + "gradio_api/login_check", timeout=5).status_code == 401:
                return
        except httpx.HTTPError:
            pass
        if app.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"kb serve at {app.url} did not start:\n{app.tail()}")
        time.sleep(0.3)


def stop(app: AppProcess) -> None:
    stop_process(app.process, wait_s=20)


@contextmanager
def running_apps(store: Path, env: dict[str, str], count: int, logs: Path,
                 ) -> Iterator[list[AppProcess]]:
    """`count` app processes over the same store, started together, stopped at the end."""
    apps = [start_app(store, env, logs) for _ in range(count)]
    try:
        for app in apps:
            wait_ready(app)
        yield apps
    finally:
        for app in apps:
            stop(app)


def passages(app: AppProcess, token: str, question: str) -> list[str]:
    """The files of the passages `POST /api/ask` returns for `question`."""
    reply = httpx.post(app.url + "api/ask", timeout=60, json={"question": question},
                       headers={"Authorization": f"Bearer {token}"})
    reply.raise_for_status()
    return [str(p["file"]) for p in reply.json()["passages"]]


def wait_for_file(app: AppProcess, token: str, question: str, name: str, timeout_s: float,
                  poll_s: float = 0.05) -> float:
    """Seconds until `app` answers `question` with a passage of `name` (asking every
    `poll_s`); TimeoutError after `timeout_s`."""
    started = time.perf_counter()
    while True:
        if any(f.endswith(name) for f in passages(app, token, question)):
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout_s:
            raise TimeoutError(f"{app.url} did not answer with {name} within {timeout_s:g}s")
        time.sleep(poll_s)
