#!/usr/bin/env bash
# Sets up .venv (scripts/setup.sh) and runs the checks and the whole test suite: ruff, mypy,
# pytest (real vLLM CPU server, real Chroma, real PDF/DOCX files). Extra args go to pytest.
# Usage: scripts/test.sh [-k EXPR] [-x]
set -euo pipefail
cd "$(dirname "$0")/.."
offline=$(python3 -m core.offline)   # no model hub, no telemetry: core/offline.py
eval "$offline"
scripts/setup.sh
.venv/bin/ruff check core store ingest assistant ui tests scripts bench devtools
.venv/bin/mypy core store ingest assistant ui
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
