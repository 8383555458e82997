#!/usr/bin/env bash
# Installs Tesseract with its Chinese (simplified) and English data, for OCR of scanned PDF pages
# (ingest.ocr), and fonts-noto-cjk (the OCR tests draw Chinese pages with it). Safe to run
# again; needs root or sudo. Without it, scanned PDFs get status "no_text" with this hint.
# Usage: scripts/install_ocr.sh
set -euo pipefail
packages="tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng fonts-noto-cjk"
if command -v tesseract >/dev/null && fc-list :lang=zh 2>/dev/null | grep -q . \
   && tesseract --list-langs 2>/dev/null | grep -qx chi_sim \
   && tesseract --list-langs 2>/dev/null | grep -qx eng; then
  echo "install_ocr: $(tesseract --version 2>&1 | head -1) with chi_sim and eng already present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_ocr: needs root; install the Debian packages: $packages" >&2; exit 2; }
  sudo="sudo"
fi
command -v apt-get >/dev/null || { echo "install_ocr: no apt-get; install Tesseract with chi_sim and eng data ($packages on Debian)" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $packages >/dev/null
echo "install_ocr: $(tesseract --version 2>&1 | head -1), languages: $(tesseract --list-langs 2>/dev/null | tail -n +2 | tr '\n' ' ')"
