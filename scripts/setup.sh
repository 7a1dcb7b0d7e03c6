#!/usr/bin/env bash
# Installs HarvestSuite on a fresh Debian 12 machine with Python 3.11: the Debian packages it uses, then a
# virtual environment in .venv with HarvestSuite and its test tools. Idempotent: a second run only checks.
# Root (or sudo) is needed only when Debian packages are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
need_apt=()
"$PYTHON" -c "import venv, ensurepip" >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v psql >/dev/null 2>&1 || need_apt+=(postgresql-client)
command -v wget >/dev/null 2>&1 || need_apt+=(wget)
# nginx serves the generated site of the crawl benchmark (bench/crawl.py).
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx-light)
# Debian's chromium is the browser of the web UI's browser tests (tests/webui/test_browser.py), driven by the
# Python package playwright from the test extra; never `playwright install`, which downloads a browser of its own.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# iptables drops a share of a simulated host's packets (harvestdef/cluster/network.py: the lossy links of the
# cluster tests), which works on kernels built without tc's netem.
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || need_apt+=(iptables)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing Debian packages: ${need_apt[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# setuptools as pyproject.toml's build-system asks: tests/harvestdef/test_wheel_install.py builds the wheel with
# this environment's setuptools (no build isolation, so no download).
.venv/bin/python -m pip install --disable-pip-version-check -q --upgrade pip "setuptools>=77" >/dev/null
.venv/bin/python -m pip install --disable-pip-version-check -q -e ".[test,bench]"
# pywb, the replay service (`harvestsuite replay run`), in an environment of its own: it pins Werkzeug 2.2,
# which Flask 3 cannot share. Built by the same code the tests use; a failure (no network) leaves replay off.
if ! .venv/bin/harvestsuite --set harvestsuite.replay.pywbVenv=.venv-pywb replay install >/dev/null; then
  echo "setup: pywb could not be installed into .venv-pywb; replay stays off until" \
       "'.venv/bin/harvestsuite replay install' succeeds" >&2
fi
echo "setup: done; the command is .venv/bin/harvestsuite (or: source .venv/bin/activate)"
