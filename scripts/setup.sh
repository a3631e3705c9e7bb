#!/usr/bin/env bash
# Create .venv (once) and install pyspark-incr with its dev extras into it.
# Needs only Python >= 3.11 and a JDK 17 (a checkout compiles the plugin's jar on first use).
# No build isolation: the wheel's build hook would fetch the pyspark it compiles the jar against,
# which an editable install (no jar in it) does not need.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  # pyspark is an sdist with a setup.py: built without isolation, it needs setuptools' own
  # bdist_wheel (>= 70.1), which the venv's bundled setuptools lacks once pip no longer falls
  # back to `setup.py install` (pip >= 25.3).
  .venv/bin/pip install -q hatchling editables "setuptools>=70.1"
  .venv/bin/pip install -q --no-build-isolation -e ".[dev]"
  touch "$stamp"
fi
