#!/usr/bin/env bash
# Sets up .venv, ingests the sample handbook (data/samples/docs) and serves the app in demo mode
# at http://127.0.0.1:7860 (a sample user is printed on start). When no model server answers at
# the configured endpoint and `llm.model` is a local folder (or a model in the Hugging Face
# cache), the model server is started in the background (log in the store's logs/ folder) and
# stopped with the app: the app answers in retrieval-only mode (quoting
# the best passages) until the server is ready, then with generated answers, without a restart;
# each answer says which mode made it.
# Usage: scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
offline=$(python3 -m core.offline)   # no model hub, no telemetry: core/offline.py
eval "$offline"
scripts/setup.sh --no-test
.venv/bin/kb ingest data/samples/docs --quiet
.venv/bin/kb status

# --start-model: vLLM for llm.model in the background when no server answers: the weights on
# this machine, or downloaded first from the model hub (assistant/serving/demo.py); the app says
# which on start.
.venv/bin/kb serve --demo --start-model
