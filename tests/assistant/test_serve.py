"""Starting and supervising vLLM: the command and environment, the process group, the CLI.

The supervision tests run a stand-in `vllm` package (put first on PYTHONPATH) whose
api_server answers /v1/models and spawns a child of its own, so they check start, readiness,
SIGTERM and the process group in a second, without the real server.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assistant.serving.serve import (
    CPU_ENTRY,
    IDLE_SPIN_ENV,
    VllmServer,
    resolve_model,
    vllm_command,
    vllm_environment,
)
from core.config import LlmSettings, Settings
from core.errors import ConfigError, GenerationUnavailable
from devtools.ports import free_port
from ui.cli import main

REPO = Path(__file__).resolve().parents[2]

FAKE_API_SERVER = '''
import json, os, subprocess, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
if os.environ.get("FAKE_VLLM_FAIL"):
    print("RuntimeError: fake engine failed to start", flush=True)
    sys.exit(3)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open(os.environ["FAKE_VLLM_RECORD"], "w") as f:
    json.dump({"argv": args, "child": child.pid, "pid": os.getpid(),
               "cache": os.environ.get("VLLM_CACHE_ROOT")}, f)
class Models(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": "fake", "max_model_len": 4096}]}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), Models).serve_forever()
'''


@pytest.fixture
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in vllm package first on PYTHONPATH; returns the file it records into."""
    package = tmp_path / "fake" / "vllm" / "entrypoints" / "openai"
    package.mkdir(parents=True)
    for folder in (package, package.parent, package.parent.parent):
        (folder / "__init__.py").write_text("")
    (package / "api_server.py").write_text(FAKE_API_SERVER)
    record = tmp_path / "record.json"
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path / 'fake'}{os.pathsep}{REPO}")
    monkeypatch.setenv("FAKE_VLLM_RECORD", str(record))
    return record


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def settings_for(model: Path | str, tmp_path: Path, **llm: Any) -> Settings:
    llm_settings = dataclasses.replace(LlmSettings(), model=str(model), **llm)
    return Settings(llm=llm_settings, base_dir=tmp_path).with_store(tmp_path / "store")


def empty_config(folder: Path) -> Path:
    """A config of defaults only, so tests never read the working tree's config.toml."""
    path = folder / "config.toml"
    path.write_text("")
    return path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[1].startswith("Z"))


def wait_gone(pid: int, timeout_s: float = 10) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


# --- command and environment --------------------------------------------------------------


def test_cpu_command_runs_the_api_server_module_eagerly(model_dir: Path) -> None:
    llm = LlmSettings(extra_args=("--max-num-seqs", "32"))
    command = vllm_command(llm, model_dir, host="127.0.0.1", port=8011, cpu=True)
    # our entry, which runs vllm.entrypoints.openai.api_server (the supervision tests below
    # start it on the stand-in package)
    assert command[:3] == [sys.executable, "-m", CPU_ENTRY]
    text = " ".join(command)
    for part in (f"--model {model_dir}", "--served-model-name ernie-4.5-0.3b", "--port 8011",
                 "--max-model-len 4096", "--enable-prefix-caching", "--enforce-eager"):
        assert part in text
    assert "--gpu-memory-utilization" not in text
    assert command[-2:] == ["--max-num-seqs", "32"]


def test_gpu_command_sets_the_memory_share(model_dir: Path) -> None:
    llm = LlmSettings(gpu_memory_utilization=0.9, enable_prefix_caching=False)
    text = " ".join(vllm_command(llm, model_dir, host="0.0.0.0", port=8000, cpu=False))
    assert "--gpu-memory-utilization 0.9" in text
    assert "--no-enable-prefix-caching" in text
    assert "--enforce-eager" not in text


def test_gpu_command_runs_the_cli_so_api_server_count_takes_effect(model_dir: Path) -> None:
    llm = LlmSettings(extra_args=("--api-server-count", "4"))
    command = vllm_command(llm, model_dir, host="127.0.0.1", port=8000, cpu=False)
    assert command[:5] == [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve",
                           str(model_dir)]
    assert "--model" not in command and command[-2:] == ["--api-server-count", "4"]


def test_environment_is_offline_with_caches_in_the_given_folder(tmp_path: Path) -> None:
    env = vllm_environment(LlmSettings(cpu_kvcache_gib=2), tmp_path, cpu=True, base={})
    assert env["HF_HUB_OFFLINE"] == "1" and env["VLLM_NO_USAGE_STATS"] == "1"
    assert env["VLLM_CACHE_ROOT"] == str(tmp_path)
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert env[IDLE_SPIN_ENV] == "0.2"
    gpu = vllm_environment(LlmSettings(), tmp_path, cpu=False, base={})
    assert "VLLM_CPU_KVCACHE_SPACE" not in gpu and IDLE_SPIN_ENV not in gpu


def test_missing_weights_are_one_line_naming_the_fix(tmp_path: Path) -> None:
    llm = LlmSettings(model="baidu/ERNIE-4.5-0.3B-PT-not-cached-kb-test")
    with pytest.raises(ConfigError) as caught:
        resolve_model(llm, tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert "set llm.model to a local folder with the weights in config.toml" in message


def test_serve_without_weights_exits_non_zero_without_starting_vllm(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[llm]\nmodel = "baidu/ERNIE-4.5-0.3B-PT-not-cached-kb-test"\n')
    result = CliRunner().invoke(main, ["llm", "serve", "--config", str(config),
                                       "--store", str(tmp_path / "store")])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "set llm.model to a local folder" in lines[0]
    assert not (tmp_path / "store" / "logs").exists()


def test_status_of_a_closed_port_is_down(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = CliRunner().invoke(main, ["llm", "status", "--url", url, "--json",
                                       "--config", str(empty_config(tmp_path))])
    assert result.exit_code == 1
    assert json.loads(result.output)["up"] is False


# --- supervision, with the stand-in server -----------------------------------------------------


def test_stop_takes_the_whole_process_group(fake_vllm: Path, model_dir: Path,
                                            tmp_path: Path) -> None:
    port = free_port()
    server = VllmServer.for_settings(settings_for(model_dir, tmp_path, port=port))
    server.start()
    try:
        server.wait_ready(20)
        record = json.loads(fake_vllm.read_text())
        assert record["cache"] == str(tmp_path / "store" / "vllm-cache")
        assert alive(record["child"])
    finally:
        server.stop()
    assert wait_gone(record["pid"]) and wait_gone(record["child"])


def test_death_during_startup_shows_the_log_tail(fake_vllm: Path, model_dir: Path,
                                                 tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_FAIL", "1")
    server = VllmServer.for_settings(settings_for(model_dir, tmp_path, port=free_port()))
    server.start()
    with pytest.raises(GenerationUnavailable, match="(?s)exited with code 3.*fake engine failed"):
        server.wait_ready(20)


def test_kb_llm_serve_stops_on_sigterm_with_its_child(fake_vllm: Path, model_dir: Path,
                                                      tmp_path: Path) -> None:
    port = free_port()
    cli = subprocess.Popen(
        [sys.executable, "-c", "from ui.cli import main; main()", "llm", "serve",
         "--model", str(model_dir), "--port", str(port), "--store", str(tmp_path / "store")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )
    assert cli.stdout is not None
    lines = []
    for line in cli.stdout:
        lines.append(line)
        if "vLLM is serving" in line:
            break
    assert f"http://127.0.0.1:{port}/v1" in lines[-1], "".join(lines)
    record = json.loads(fake_vllm.read_text())
    cli.send_signal(signal.SIGTERM)
    assert cli.wait(timeout=30) == 0
    assert wait_gone(record["pid"]) and wait_gone(record["child"])


# --- the real server ---------------------------------------------------------------------


@pytest.mark.vllm
def test_status_reports_the_served_model_and_its_length(vllm_server: Any, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["llm", "status", "--url", vllm_server.url,
                                       "--config", str(empty_config(tmp_path))])
    assert result.exit_code == 0, result.output
    assert f"serves {vllm_server.served_name} (max_model_len 4096)" in result.output
