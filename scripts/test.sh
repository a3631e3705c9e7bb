#!/usr/bin/env bash
# README command 2: set up, then run the whole test suite (unit, doctests, end to end, spark-sql).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
bash scripts/browser.sh
# Two workers (pytest-xdist), each file's tests on one worker, so a module's fixtures (an applied
# project, a server) are built once; each worker has its own Spark session. The trials wait on JVM
# starts and leases as much as they compute. INCR_TEST_WORKERS=0 runs serially. The files using the
# installed wheel and the standalone cluster share one worker (tests/conftest.py's scheduler hook).
exec .venv/bin/python -m pytest -n "${INCR_TEST_WORKERS:-2}" --dist loadfile "$@"
