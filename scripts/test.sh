#!/usr/bin/env bash
# README command 2: set up, then run the whole test suite (unit, doctests, end to end, spark-sql).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
exec .venv/bin/python -m pytest "$@"
