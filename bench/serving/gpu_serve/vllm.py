"""The vLLM server of `python -m bench.serving.gpu_serve run`: started with `kb llm serve`'s flags
plus a variant's, stopped with its whole process group; its /metrics counters, its prefix cache
emptied, and the GPU's utilisation and memory sampled meanwhile.

    proc, ready_s = start_server(args, ["--api-server-count", "4"], log, 8000)
    stop_server(proc)
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from assistant.serving.serve import vllm_command
from core.config import LlmSettings
from core.offline import OFFLINE_ENV

# vLLM's counters we report (summed over label sets)
COUNTERS = (
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:num_preemptions_total",
)


def kb_flags(model: str, served: str, port: int) -> list[str]:
    """`kb llm serve`'s flags for a GPU build (assistant/serving/serve.py, config.toml defaults)."""
    llm = LlmSettings(served_name=served, port=port)
    cmd = vllm_command(llm, Path(model), host="127.0.0.1", port=port, cpu=False)
    return cmd[cmd.index(model) + 1 :]  # drop "python -m vllm... [serve|--model] DIR"


def start_server(
    a: argparse.Namespace, extra: list[str], log: Path, port: int
) -> tuple[Any, float]:
    """vLLM's CLI entry (`vllm serve`): --api-server-count > 1 needs it; kb's
    `python -m vllm.entrypoints.openai.api_server` always runs one API server process."""
    env = {**os.environ, **OFFLINE_ENV, "VLLM_SERVER_DEV_MODE": "1"}
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.cli.main",
        "serve",
        a.model,
        *kb_flags(a.model, a.served, port),
        *extra,
    ]
    t0 = time.time()
    with log.open("a") as f:
        f.write("=== " + shlex.join(cmd) + "\n")
        f.flush()
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    if a.pid_file:  # so a later call can stop a server this one left behind
        with open(a.pid_file, "a") as f:
            f.write(f"{proc.pid}\n")
    return proc, wait_ready(proc, port, t0, a.start_timeout, log)


def wait_ready(proc: Any, port: int, t0: float, timeout_s: float, log: Path) -> float:
    """Seconds since `t0` when the server answers /v1/models; it is stopped if it is not ready
    within `timeout_s`."""
    while True:
        time.sleep(1.0)
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited ({proc.returncode}); see {log}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return time.time() - t0
        except OSError:
            pass
        if time.time() - t0 > timeout_s:
            stop_server(proc)
            raise RuntimeError(f"vLLM not ready in {timeout_s}s; see {log}")


def stop_server(proc: Any) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    time.sleep(2)


def metrics(base: str) -> dict[str, float]:
    """vLLM's counters we report (summed over label sets)."""
    out: dict[str, float] = {}
    try:
        text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    except OSError as exc:
        return {"error": 1.0} if exc else {}
    for line in text.splitlines():
        for w in COUNTERS:
            if line.startswith(w + "{") or line.startswith(w + " "):
                out[w] = out.get(w, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def metrics_of(bases: list[str]) -> dict[str, float]:
    """`metrics` summed over the replicas."""
    out: dict[str, float] = {}
    for base in bases:
        for key, value in metrics(base).items():
            out[key] = out.get(key, 0.0) + value
    return out


def reset_prefix_cache(base: str) -> bool:
    req = urllib.request.Request(base + "/reset_prefix_cache", data=b"", method="POST")
    try:
        urllib.request.urlopen(req, timeout=30).read()
        return True
    except OSError:
        return False


class GpuMonitor(threading.Thread):
    """nvidia-smi utilisation and memory, every 0.5 s."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float, float]] = []
        self.stopped = False

    def run(self) -> None:
        while not self.stopped:
            try:
                self.samples.append(self.sample())
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                pass
            time.sleep(0.5)

    @staticmethod
    def sample() -> tuple[float, float, float]:
        """(time, utilisation %, memory used MiB) of the first GPU now."""
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=5,
        )
        util, mem = (float(x) for x in done.stdout.strip().splitlines()[0].split(","))
        return time.time(), util, mem
