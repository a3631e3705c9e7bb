#!/usr/bin/env bash
# README command 1: set up, then run the quickstart end to end on the embedded default
# (local Spark, persistent catalog and warehouse in ./.incr). Extra arguments go to `pyspark-incr`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/pyspark-incr "${@:-demo}"
