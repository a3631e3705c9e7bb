#!/usr/bin/env bash
# The side-by-side benchmark, from nothing: sets up .venv, the peers' venvs and the data, then
# prints the table (see docs/benchmarks.md). Extra arguments go to bench/compare.py.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python bench/compare.py "$@"
