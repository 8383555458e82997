#!/usr/bin/env bash
# Sets up .venv, ingests the sample handbook (data/samples/docs) and serves the app in demo mode
# at http://127.0.0.1:7860 (a sample user is printed on start). When no model server answers at
# the configured endpoint and `llm.model` is a local folder (or a model in the Hugging Face
# cache), the model server is started in the background (log in the store's logs/ folder) and
# stopped with the app: the app answers in retrieval-only mode (quoting
# the best passages) until the server is ready, then with generated answers, without a restart;
# each answer says which mode made it.
# With --admin: the app with its sign-in instead of demo mode, and a demo admin account
# ("admin", groups all and hr, a fresh password printed on start) that sees the Admin tab.
# Usage: scripts/demo.sh [--admin]
set -euo pipefail
cd "$(dirname "$0")/.."
admin=0
case "${1:-}" in
  --admin) admin=1 ;;
  "") ;;
  *) echo "usage: scripts/demo.sh [--admin]" >&2; exit 2 ;;
esac
offline=$(python3 -m core.offline)   # no model hub, no telemetry: core/offline.py
eval "$offline"
scripts/setup.sh --no-test
.venv/bin/kb ingest data/samples/docs --quiet
.venv/bin/kb status

# --start-model: vLLM for llm.model in the background when no server answers: the weights on
# this machine, or downloaded first from the model hub (assistant/serving/demo.py); the app says
# which on start.
if [ "$admin" = 1 ]; then
  password=$(python3 -c 'import secrets; print(secrets.token_urlsafe(12))')
  if .venv/bin/kb users list | grep -q '^admin\b'; then
    printf '%s\n' "$password" | .venv/bin/kb users passwd admin --password-stdin >/dev/null
  else
    printf '%s\n' "$password" | .venv/bin/kb users add admin --groups all,hr --admin \
      --password-stdin >/dev/null
  fi
  echo "demo admin: sign in as 'admin' with password '$password' for the Admin tab (uploads,"
  echo "re-index, approved answers, insights, the audit trail); add people with kb users add"
  exec .venv/bin/kb serve --start-model
fi
exec .venv/bin/kb serve --demo --start-model
