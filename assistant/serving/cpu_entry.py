"""vLLM's OpenAI server for the CPU build, its worker's idle spin cut short.

vLLM's worker reads each step from its scheduler through shared memory and, for a second after each
read (`SpinCondition.busy_loop_s`, 1 s in vLLM 0.32), waits by polling with sched_yield rather than
sleeping: after every answer, and every answer a reader stopped, it keeps one core busy for a
second. On a CPU machine shared with the app (2 cores here) a question asked in that second waits
for a core (retrieve p50 10 -> 22 ms in bench/query/overhead.py; docs/benchmarks-history.md,
"overhead and 1M, third pass"). `llm.cpu_idle_spin_s` (0.2 s) sets how long it polls before it
sleeps on vLLM's wake-up socket, as it does after its second; the server's environment carries it as
KB_VLLM_IDLE_SPIN_S to every vLLM process. Not 0: between steps the worker then sleeps on that
socket every time, and with the tiny test model it missed wake-ups (first tokens after 3-5 s, 5 s
being vLLM's recheck interval).

    python -m assistant.serving.cpu_entry --model .cache/test-model --port 8000 ...

This module is the server's main module, so vLLM's processes, started by multiprocessing's
spawn, import it again (as `__mp_main__`) and cut the spin in the worker too. Where vLLM has no
such class the server runs unchanged.
"""

from __future__ import annotations

import logging
import os
import runpy
from types import ModuleType
from typing import Any

logger = logging.getLogger(__name__)

SPIN_ENV = "KB_VLLM_IDLE_SPIN_S"
API_SERVER = "vllm.entrypoints.openai.api_server"


def shorten_idle_spin(shm_broadcast: ModuleType, seconds: float) -> bool:
    """Make `shm_broadcast.SpinCondition` readers poll for `seconds` after a read, not vLLM's
    default; False (nothing changed) where the module has no such class.

    shorten_idle_spin(vllm_shm_broadcast, 0.0) -> True
    """
    spin = getattr(shm_broadcast, "SpinCondition", None)
    if spin is None or getattr(spin, "_kb_idle_spin", None) is not None:
        return spin is not None
    original = spin.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if getattr(self, "is_reader", False):
            self.busy_loop_s = seconds

    spin.__init__ = init
    spin._kb_idle_spin = seconds
    return True


def _from_environment() -> None:
    value = os.environ.get(SPIN_ENV)
    if value is None:
        return
    try:
        from vllm.distributed.device_communicators import shm_broadcast
    except ImportError:
        return
    if not shorten_idle_spin(shm_broadcast, float(value)):
        logger.warning("vLLM has no SpinCondition: its worker's idle spin is left as it is")


_from_environment()  # in every vLLM process: each imports this module first

if __name__ == "__main__":
    # run vLLM's server module as the main program; this module stays __main__ for spawn
    runpy.run_module(API_SERVER, run_name="__main__")
