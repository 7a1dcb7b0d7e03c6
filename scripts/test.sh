#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: set-up, lint, then pytest with the slowest tests listed.
# The independent tests run in four pytest-xdist workers (each with its own PostgreSQL database, queues and
# ports): many tests spend their time waiting on the processes they start (engines, controllers, the demo,
# Chromium), so on two cores four workers finish sooner than two. The tests on simulated machines
# (tests/cluster: networks of their own, their own PostgreSQL and RabbitMQ, timings of a lost controller)
# run after them, a test file per worker in three workers (each builds the cluster its files share), and
# beside them the tests that restart or reconfigure the machine's own broker, which no cluster test uses;
# their output follows the cluster tests'.
# With arguments, pytest runs just those, in one process: ./scripts/test.sh tests/webui -k live
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# shellcheck disable=SC1091
source .venv/bin/activate
# Bytecode is written (into the ignored __pycache__ directories): every process the tests start (engines,
# controllers, schedulers, the web UI, hundreds in a run) would otherwise compile the project's modules again,
# and each pytest worker rewrite every test module's assertions again. Measured on two cores: a quarter of the
# CPU time of tests that start engines.
unset PYTHONDONTWRITEBYTECODE
ruff check .
if [ "$#" -gt 0 ]; then
    exec python -m pytest -q -p no:cacheprovider --durations=15 --timeout=600 "$@"
fi
python -m pytest -q -p no:cacheprovider --durations=15 --timeout=600 -n "${HARVESTSUITE_TEST_WORKERS:-4}" \
    -m "not broker_restart and not cluster"
broker_log="$(mktemp)"
trap 'rm -f "$broker_log"' EXIT
python -m pytest -q -p no:cacheprovider --durations=5 --timeout=600 -m broker_restart >"$broker_log" 2>&1 &
broker_tests=$!
cluster_status=0
# --no-loadscope-reorder: the files in collection order, the longest (marked slow) first, each worker
# starting on one of them, rather than the files with the most tests first
python -m pytest -q -p no:cacheprovider --durations=5 --timeout=600 -n 3 --dist loadfile --no-loadscope-reorder \
    -m cluster || cluster_status=$?
broker_status=0
wait "$broker_tests" || broker_status=$?
echo "--- the tests that restart the broker (run beside the cluster tests) ---"
cat "$broker_log"
if [ "$cluster_status" -ne 0 ] || [ "$broker_status" -ne 0 ]; then
    echo "the cluster tests ended with $cluster_status, the broker-restart tests with $broker_status" >&2
    exit 1
fi
