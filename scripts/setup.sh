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
  .venv/bin/pip install -q hatchling editables
  .venv/bin/pip install -q --no-build-isolation -e ".[dev]"
  touch "$stamp"
fi
