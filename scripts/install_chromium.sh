#!/usr/bin/env bash
# Installs headless Chromium (for tests/ui/test_browser.py and scripts/screenshots.py) and
# poppler-utils (`pdftoppm`, which the app uses to show a cited PDF page as an image) with
# poppler-data (without it, Chinese PDFs whose fonts are not embedded render without their text:
# "Missing language pack for 'Adobe-GB1' mapping"). Safe to run again; needs root or sudo.
# Usage: scripts/install_chromium.sh
set -euo pipefail
if command -v chromium >/dev/null && command -v pdftoppm >/dev/null \
   && [ -d /usr/share/poppler/cMap/Adobe-GB1 ]; then
  echo "install_chromium: chromium and pdftoppm already present"
  exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium poppler-utils poppler-data fonts-noto-cjk >/dev/null
echo "install_chromium: $(chromium --version 2>/dev/null || echo 'chromium missing'), pdftoppm $(pdftoppm -v 2>&1 | head -1)"
