#!/usr/bin/env bash
# Installs headless Chromium (for tests/ui/test_browser.py) and poppler-utils (`pdftoppm`, which
# the app uses to show a cited PDF page as an image). Safe to run again; needs root or sudo.
# Usage: scripts/install_chromium.sh
set -euo pipefail
if command -v chromium >/dev/null && command -v pdftoppm >/dev/null; then
  echo "install_chromium: chromium and pdftoppm already present"
  exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium poppler-utils fonts-noto-cjk >/dev/null
echo "install_chromium: $(chromium --version 2>/dev/null || echo 'chromium missing'), pdftoppm $(pdftoppm -v 2>&1 | head -1)"
