#!/usr/bin/env bash
# The installed wheel on each declared pyspark, nightly-style: tests/test_wheel.py and tests/test_cluster.py
# with the fresh venv's pyspark (and the standalone cluster's Spark, which comes from it) pinned to each
# version given, default the lowest pyspark pyproject.toml declares and the newest it allows.
#
#   bash bench/versions.sh            # lowest and newest (about 15 minutes)
#   bash bench/versions.sh 4.1.4      # one version
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ $# -eq 0 ]; then
  lowest=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "tests"); from services.install import lowest_declared_pyspark as l; print(l())')
  set -- "$lowest" newest
fi
for version in "$@"; do
  echo "== pyspark $version"
  if [ "$version" = newest ]; then
    .venv/bin/python -m pytest -q tests/test_wheel.py tests/test_cluster.py
  else
    PYSPARK_INCR_TEST_PYSPARK="$version" .venv/bin/python -m pytest -q tests/test_wheel.py tests/test_cluster.py
  fi
done
