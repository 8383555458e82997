#!/usr/bin/env bash
# Installs Debian's PostgreSQL server binaries (initdb, pg_ctl, postgres), which the tests of the
# PostgreSQL ledger (store.ledger_url) use to start a throwaway cluster on loopback
# (devtools/postgres.py); no cluster is created or started here. Safe to run again; needs root or
# sudo. Without it, those tests skip with this hint.
# Usage: scripts/install_postgres.sh
set -euo pipefail
found=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 || true)
if [ -n "$found" ] || command -v initdb >/dev/null; then
  echo "install_postgres: $("${found:-initdb}" --version) already present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_postgres: needs root; install the Debian package postgresql" >&2; exit 2; }
  sudo="sudo"
fi
command -v apt-get >/dev/null || { echo "install_postgres: no apt-get; install the PostgreSQL server (initdb, pg_ctl) another way" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
# The package starts a cluster of its own; the tests need only the binaries.
$sudo service postgresql stop >/dev/null 2>&1 || true
found=$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)
echo "install_postgres: $("$found" --version)"
