"""The environment that keeps every library off the model hub and sends no telemetry: set for
each process kb runs or starts (the `kb` commands, the app, vLLM, the tests, the benchmarks).

Shell scripts take it from here too, from the repository root, with the system Python (they
run before .venv exists, so this module needs the standard library only):

    offline_environment()                 # os.environ gains each variable it does not hold
    eval "$(python3 -m core.offline)"     # export HF_HUB_OFFLINE=1 ... (each one set)
"""

from __future__ import annotations

import os
import shlex

# Hugging Face's libraries look for nothing on the hub; a model download lifts these two
# (assistant/serving/demo.py).
HUB_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
OFFLINE_ENV = {
    **HUB_OFFLINE_ENV,
    "ANONYMIZED_TELEMETRY": "False",  # Chroma
    "GRADIO_ANALYTICS_ENABLED": "False",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",  # and no warning when a process forks after tokenizing
}


def offline_environment() -> None:
    """Nothing may reach for a model hub or send telemetry at run time; a variable the caller
    already set keeps its value."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def export_lines() -> str:
    """OFFLINE_ENV as shell exports, one a line.

    export_lines().splitlines()[0] -> "export HF_HUB_OFFLINE=1"
    """
    return "\n".join(f"export {key}={shlex.quote(value)}" for key, value in OFFLINE_ENV.items())


if __name__ == "__main__":
    print(export_lines())
