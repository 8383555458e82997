"""The demo's model server (`kb serve --demo --start-model`, which scripts/demo.sh runs).

Started in the background, never waited for: the app answers retrieval-only at once and by the
model once the server is up, since its model client asks the endpoint at every question.

- the weights on this machine (a local folder, or a hub name in the Hugging Face cache):
  vLLM starts at once;
- a hub name that is not here: it is downloaded first (the download's progress bars on this
  console), in a subprocess that alone may use the network (the app stays offline), then vLLM
  starts; a hub that does not answer leaves one warning line naming the fix.

    model, line = start_for_demo(settings)   # model.stop() when the app stops
"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Protocol

from assistant.llm.endpoint import endpoint_url, probe
from assistant.llm.tokens import local_model_dir
from assistant.serving.serve import VllmServer
from core.config import Settings
from core.errors import ConfigError
from core.offline import HUB_OFFLINE_ENV

logger = logging.getLogger(__name__)

# Run in a subprocess without the offline switches: snapshot_download prints its progress bars;
# a failure prints one line (the hub's own error, first line), not the 85 of its traceback.
DOWNLOAD = """
import sys
from huggingface_hub import snapshot_download
try:
    snapshot_download(sys.argv[1])
except Exception as exc:
    first = (str(exc).splitlines() or [""])[0]
    sys.exit(f"model download: {type(exc).__name__}: {first}")
"""


class Stoppable(Protocol):
    def stop(self) -> None: ...


def is_hub_name(model: str) -> bool:
    """is_hub_name("baidu/ERNIE-4.5-0.3B-PT") -> True; is_hub_name("models/ernie") -> False
    when that folder exists."""
    return model.count("/") == 1 and not Path(model).expanduser().exists()


class HubStart:
    """Download `llm.model` from the model hub, then start vLLM for it, in a background thread;
    `stop()` ends whichever of the two is running."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.server: VllmServer | None = None
        self.failed = ""
        self._download: subprocess.Popen[bytes] | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="model-download", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    def _run(self) -> None:
        model = self.settings.llm.model
        env = {k: v for k, v in os.environ.items() if k not in HUB_OFFLINE_ENV}
        with self._lock:
            if self._stopped.is_set():
                return
            self._download = subprocess.Popen([sys.executable, "-c", DOWNLOAD, model], env=env,
                                              stdin=subprocess.DEVNULL)
        code = self._download.wait()
        if self._stopped.is_set():
            return
        if code != 0:
            self._fail(f"llm.model {model!r} could not be downloaded from the model hub (no "
                       "network, or no such model): answers stay retrieval-only; set llm.model "
                       "to a local folder with the weights in config.toml")
            return
        try:
            server = VllmServer.for_settings(self.settings)
        except ConfigError as exc:
            self._fail(f"{exc}; answers stay retrieval-only")
            return
        with self._lock:
            if self._stopped.is_set():
                return
            self.server = server
            server.start()
        logger.warning("model %s downloaded; the model server is starting (log %s)", model,
                       server.log_path)

    def _fail(self, line: str) -> None:
        self.failed = line
        logger.warning("%s", line)

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()
            if self._download is not None and self._download.poll() is None:
                self._download.terminate()
            if self.server is not None:
                self.server.stop()


def start_for_demo(settings: Settings) -> tuple[Stoppable | None, str]:
    """Start vLLM for `llm.model` in the background, without waiting for it, when no server
    answers at the configured endpoint; what to stop when the app stops (None when nothing was
    started) and a line for the console saying what the answers will be."""
    llm = settings.llm
    url = endpoint_url(llm)
    if probe(url, timeout_s=2.0).up:
        return None, f"a model server answers at {url}: generated answers"
    if llm.url or llm.endpoints:
        return None, (f"the model server at {url} does not answer: retrieval-only answers "
                      "until it does (`kb llm status`)")
    if (is_hub_name(llm.model) and local_model_dir(llm.model, settings.base_dir) is None
            and importlib.util.find_spec("vllm") is not None):
        hub = HubStart(settings)
        hub.start()
        return hub, (f"{llm.model} is not on this machine: downloading it from the model hub "
                     "in the background (progress below), then starting the model server; "
                     "answers are retrieval-only until it is ready")
    try:
        server = VllmServer.for_settings(settings)
    except ConfigError as exc:
        return None, f"{exc}; until then answers are retrieval-only"
    server.start()
    return server, (f"starting the model server for {llm.model} in the background (log "
                    f"{server.log_path}); answers are retrieval-only until it is ready, then "
                    "generated, without a restart")
