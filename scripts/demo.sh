#!/usr/bin/env bash
# Sets up .venv, ingests the sample handbook (data/samples/docs) and serves the app in demo mode
# at http://127.0.0.1:7860 (a sample user is printed on start). When no model server answers at
# the configured endpoint and `llm.model` is a local folder (or a model in the Hugging Face
# cache), the model server is started in the background (`kb llm serve`, log in
# .cache/demo-llm.log) and stopped with the app: the app answers in retrieval-only mode (quoting
# the best passages) until the server is ready, then with generated answers, without a restart;
# each answer says which mode made it.
# Usage: scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False GRADIO_ANALYTICS_ENABLED=False
scripts/setup.sh --no-test
.venv/bin/kb ingest data/samples/docs --quiet
.venv/bin/kb status

server_pid=""
stop_server() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true; }
if .venv/bin/kb llm status >/dev/null 2>&1; then
  echo "demo: a model server answers at the configured endpoint: generated answers"
else
  model_dir=$(.venv/bin/python - <<'PY'
from pathlib import Path
from assistant.tokens import local_model_dir
from core.config import load_settings
settings = load_settings(Path("config.toml"))
found = None if settings.llm.url else local_model_dir(settings.llm.model, settings.base_dir)
print(found or "")
PY
)
  if [ -n "$model_dir" ]; then
    mkdir -p .cache
    .venv/bin/kb llm serve > .cache/demo-llm.log 2>&1 &
    server_pid=$!
    trap stop_server EXIT INT TERM
    echo "demo: starting the model server for $model_dir in the background (log: .cache/demo-llm.log);"
    echo "demo: answers are retrieval-only until it is ready, then generated (no restart needed)"
  else
    echo "demo: no model server, and llm.model is neither a local folder nor in the model cache:"
    echo "demo: retrieval-only answers (README: Serving the model; or set llm.model to a folder)"
  fi
fi
.venv/bin/kb serve --demo
