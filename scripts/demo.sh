#!/usr/bin/env bash
# Sets up .venv, ingests the sample handbook (data/samples/docs) and serves the app in demo mode
# at http://127.0.0.1:7860 (a sample user is printed on start). Answers are generated when a
# model server answers at the configured endpoint (`kb llm serve`, see README); otherwise the
# app runs in retrieval-only mode and quotes the best passages.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False GRADIO_ANALYTICS_ENABLED=False
scripts/setup.sh --no-test
.venv/bin/kb ingest data/samples/docs --quiet
.venv/bin/kb status
.venv/bin/kb llm status || echo "demo: no model server at the configured endpoint: retrieval-only answers"
exec .venv/bin/kb serve --demo
