#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: set-up, lint, then pytest with the slowest tests listed.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# shellcheck disable=SC1091
source .venv/bin/activate
ruff check .
python -m pytest -q -p no:cacheprovider --durations=15 --timeout=600 "$@"
