"""The CPU server's entry: vLLM's worker polls for its next step only `llm.cpu_idle_spin_s`."""

from __future__ import annotations

import importlib.util
import inspect
import os
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from assistant.serving import cpu_entry, serve
from assistant.serving.cpu_entry import shorten_idle_spin


def fake_shm_broadcast() -> ModuleType:
    """A module with vLLM's SpinCondition shape: readers poll `busy_loop_s` after a read."""

    class SpinCondition:
        def __init__(self, is_reader: bool, context: Any, notify_address: str,
                     busy_loop_s: float = 1) -> None:
            self.is_reader = is_reader
            self.busy_loop_s = busy_loop_s if is_reader else 0

    module = ModuleType("shm_broadcast")
    module.SpinCondition = SpinCondition  # type: ignore[attr-defined]
    return module


def test_readers_poll_for_the_given_seconds_writers_are_left_alone() -> None:
    module = fake_shm_broadcast()
    assert shorten_idle_spin(module, 0.2)
    assert module.SpinCondition(True, None, "ipc://x").busy_loop_s == 0.2
    assert module.SpinCondition(True, None, "ipc://x", busy_loop_s=3).busy_loop_s == 0.2
    assert module.SpinCondition(False, None, "ipc://x").busy_loop_s == 0


def test_applied_twice_it_wraps_once() -> None:
    module = fake_shm_broadcast()
    assert shorten_idle_spin(module, 0.2)
    wrapped = module.SpinCondition.__init__
    assert shorten_idle_spin(module, 0.5)
    assert module.SpinCondition.__init__ is wrapped
    assert module.SpinCondition(True, None, "ipc://x").busy_loop_s == 0.2


def test_a_vllm_without_the_class_is_left_unchanged() -> None:
    assert not shorten_idle_spin(ModuleType("shm_broadcast"), 0.2)


def test_the_server_and_the_entry_agree_on_the_variable() -> None:
    assert cpu_entry.SPIN_ENV == serve.IDLE_SPIN_ENV
    assert serve.CPU_ENTRY == cpu_entry.__name__


def test_installed_vllm_still_has_the_spin_this_entry_shortens() -> None:
    """A vLLM upgrade that renames or drops it fails here, not silently in the bench."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM not installed")
    from vllm.distributed.device_communicators import shm_broadcast

    parameters = inspect.signature(shm_broadcast.SpinCondition.__init__).parameters
    assert "busy_loop_s" in parameters


def _server_cpu_s(session: int) -> float:
    """CPU seconds used so far by the processes of one session (the server's group)."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getsid(int(proc.name)) != session:
                continue
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


@pytest.mark.vllm
def test_the_worker_rests_soon_after_an_answer(vllm_server: Any) -> None:
    """vLLM's own spin keeps a core busy for a second after each answer; ours stops at 0.2 s."""
    process = vllm_server.server.process
    if process is None or os.environ.get(serve.IDLE_SPIN_ENV) not in (None, "0.2"):
        pytest.skip("not a server this test started with the default spin")
    body = {"model": vllm_server.served_name, "max_tokens": 8,
            "messages": [{"role": "user", "content": "How many days of annual leave?"}]}
    httpx.post(f"{vllm_server.url}/chat/completions", json=body, timeout=60).raise_for_status()
    time.sleep(0.4)  # past our 0.2 s, well within vLLM's 1 s
    before = _server_cpu_s(process.pid)
    time.sleep(0.5)
    assert _server_cpu_s(process.pid) - before < 0.2  # vLLM's own spin: ~0.5 s of CPU here
