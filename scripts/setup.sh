#!/usr/bin/env bash
# Creates .venv with the app, the vLLM CPU build and the test tools. Safe to run again.
# Usage: scripts/setup.sh [--no-test]   (--no-test: no test tools, no LlamaIndex baseline)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="serve-cpu,eval,test"
[ "${1:-}" = "--no-test" ] && extras="serve-cpu"

python=${PYTHON:-python3.11}
command -v "$python" >/dev/null || { echo "setup: needs Python 3.11 ($python not found; set PYTHON=...)" >&2; exit 2; }
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check uv

# The CPU build of torch: from a local wheel folder when the machine has one, else PyTorch's CPU index.
torch_source=(--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match)
if [ -d /opt/wheels ] && ls /opt/wheels/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then
  torch_source=(--find-links /opt/wheels)
fi
# Byte-compiling matters: without .pyc files every vLLM start takes over a minute. Copies, not
# hard links from uv's cache: NLTK (inside llama-index) refuses multiply-linked data files.
# --quiet: not a line per package (200 of them); what fails is still said.
echo "setup: installing the packages into .venv (minutes on a first run)"
.venv/bin/python -m uv pip install --quiet --python .venv/bin/python --compile-bytecode --link-mode copy \
  --overrides scripts/overrides.txt "${torch_source[@]}" -e ".[$extras]"
echo "setup: .venv ready"
