#!/usr/bin/env bash
# Installs Debian's OpenLDAP server and tools (slapd, ldap-utils) and openssl, which the tests of
# the directory sign-in (auth.ldap_*) use to start a throwaway directory on loopback, with a
# throwaway CA for TLS (devtools/ldap_server.py); the system service is neither configured nor
# started here. Safe to run again; needs root or sudo. Without it, those tests skip with this hint.
# Usage: scripts/install_ldap.sh
set -euo pipefail
slapd=$(command -v slapd || ls /usr/sbin/slapd 2>/dev/null || true)
if [ -n "$slapd" ] && command -v ldapmodify >/dev/null && command -v openssl >/dev/null; then
  echo "install_ldap: $slapd, ldap-utils and openssl already present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_ldap: needs root; install the Debian packages slapd and ldap-utils" >&2; exit 2; }
  sudo="sudo"
fi
command -v apt-get >/dev/null || { echo "install_ldap: no apt-get; install OpenLDAP's slapd and ldap-utils another way" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
# No debconf questions, and no service started by the package (policy-rc.d answers "not now").
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  made_policy=1
fi
trap 'if [ -n "$made_policy" ]; then $sudo rm -f "$policy"; fi' EXIT
$sudo apt-get update -qq
# openssl makes the throwaway CA of the TLS tests
$sudo apt-get install -y -qq --no-install-recommends slapd ldap-utils openssl >/dev/null
$sudo service slapd stop >/dev/null 2>&1 || true
echo "install_ldap: $(/usr/sbin/slapd -VVV 2>&1 | head -1)"
