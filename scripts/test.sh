#!/usr/bin/env bash
# Sets up .venv (scripts/setup.sh) and runs the checks and the whole test suite: ruff, mypy,
# pytest (real vLLM CPU server, real Chroma, real PDF/DOCX files), then, when no pytest args are
# given, every SIGKILL point of tests/ingest/test_crash.py and test_queue.py (`-m crash`, a
# minute or two). Each runs whether or not the one before it failed; the exit status is 1 when
# any failed. This is what CI runs (.ci/run). Extra args go to pytest.
#
# --fast: the loop to run while working, in a few minutes at most: ruff, then pytest on fakes and
# pure logic, leaving out what is marked `vllm` or `slow` (the vLLM server, the app servers,
# the browser, PostgreSQL, OCR, Chroma's server, `kb` processes and long ingests: tests/conftest.py
# marks a test by the fixtures it uses). No setup, no mypy, no crash points.
# Usage: scripts/test.sh [--fast] [-k EXPR] [-x]
set -euo pipefail
cd "$(dirname "$0")/.."
offline=$(python3 -m core.offline)   # no model hub, no telemetry: core/offline.py
eval "$offline"
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider)

if [ "${1:-}" = "--fast" ]; then
  shift
  [ -x .venv/bin/python ] || { echo "test: no .venv (run scripts/setup.sh)" >&2; exit 2; }
  .venv/bin/ruff check core store ingest assistant ui tests scripts bench devtools
  exec "${pytest[@]}" -m "not vllm and not slow and not crash and not load" "$@"
fi

scripts/setup.sh
# Every check runs, whichever failed before it, so one red check hides no other; the exit status
# is non-zero when any failed, and the last line names them.
failed=()
check() { local name=$1; shift; "$@" || failed+=("$name"); }
check ruff .venv/bin/ruff check core store ingest assistant ui tests scripts bench devtools
check mypy .venv/bin/mypy core store ingest assistant ui
check pytest "${pytest[@]}" "$@"
if [ $# -eq 0 ]; then
  check crash "${pytest[@]}" -m crash tests/ingest/test_crash.py tests/ingest/test_queue.py
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "test: failed: ${failed[*]}" >&2
  exit 1
fi
