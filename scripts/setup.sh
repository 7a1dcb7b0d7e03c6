#!/usr/bin/env bash
# Installs HarvestSuite and what it needs on a fresh Debian 12 machine with Python 3.11.
# Idempotent: a second run only checks. Root is needed for the Debian packages (apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v nginx >/dev/null 2>&1 || need_apt+=(nginx-light)
command -v wget >/dev/null 2>&1 || need_apt+=(wget)
command -v psql >/dev/null 2>&1 || need_apt+=(postgresql-client)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: please install the Debian packages: ${need_apt[*]}" >&2
  fi
fi

python3 -m pip install --disable-pip-version-check -q -e ".[test]"
