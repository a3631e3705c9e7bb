#!/usr/bin/env bash
# README command 2: set up, then run the whole test suite (unit, doctests, end to end, spark-sql).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
# Two workers (pytest-xdist), a file's tests on one worker (tests/conftest.py): the suite's
# trials wait on JVM starts and leases as much as they compute. INCR_TEST_WORKERS=0 runs serially.
exec .venv/bin/python -m pytest -n "${INCR_TEST_WORKERS:-2}" --dist loadgroup "$@"
