#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: set-up, lint, then pytest with the slowest tests listed.
# The tests on simulated machines (tests/cluster: networks of their own, their own PostgreSQL and RabbitMQ,
# timings of a lost controller) start first, in the background, a test file per worker in three workers
# (each builds the cluster its files share); they mostly wait, on the timings they prove. Beside them run
# the independent tests in four pytest-xdist workers (each with its own PostgreSQL database, queues and ports):
# many of them spend their time waiting on the processes they start (engines, controllers, the demo,
# Chromium), so on two cores four workers finish sooner than two. The independent tests run at nice 10:
# they are CPU-bound, and at the same priority they would stretch the timings the cluster tests measure.
# Then the tests that restart or reconfigure the machine's own broker, which the independent tests use and
# no cluster test does. The cluster tests' output follows the others'.
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
# HARVESTSUITE_TEST_REPORTS=DIR: each stage also writes its JUnit XML report there (cluster.xml, main.xml,
# broker.xml), every test's outcome and seconds, for a CI system's test view and for finding the slow ones
report() {
    if [ -n "${HARVESTSUITE_TEST_REPORTS:-}" ]; then
        mkdir -p "$HARVESTSUITE_TEST_REPORTS"
        echo "--junitxml=$HARVESTSUITE_TEST_REPORTS/$1.xml"
    fi
}
cluster_log="$(mktemp)"
trap 'rm -f "$cluster_log"' EXIT
# --no-loadscope-reorder: the files in collection order, the longest (marked slow) first, each worker
# starting on one of them, rather than the files with the most tests first
python -m pytest -q -p no:cacheprovider --durations=5 --timeout=600 -n 3 --dist loadfile --no-loadscope-reorder \
    -m cluster $(report cluster) >"$cluster_log" 2>&1 &
cluster_tests=$!
main_status=0
nice -n 10 python -m pytest -q -p no:cacheprovider --durations=15 --timeout=600 -n "${HARVESTSUITE_TEST_WORKERS:-4}" \
    -m "not broker_restart and not cluster" $(report main) || main_status=$?
broker_status=0
python -m pytest -q -p no:cacheprovider --durations=5 --timeout=600 -m broker_restart $(report broker) || broker_status=$?
cluster_status=0
wait "$cluster_tests" || cluster_status=$?
echo "--- the tests on simulated machines (run beside the others) ---"
cat "$cluster_log"
if [ "$broker_status" -ne 0 ] || [ "$main_status" -ne 0 ] || [ "$cluster_status" -ne 0 ]; then
    echo "the broker-restart tests ended with $broker_status, the independent tests with $main_status," \
        "the cluster tests with $cluster_status" >&2
    exit 1
fi
