#!/usr/bin/env bash
# The whole test suite: set-up, lint, then pytest (broker-restart tests last, slowest tests listed).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
python3 -m ruff check .
python3 -m pytest -q -p no:cacheprovider --durations=15 --timeout=600 "$@"
