#!/usr/bin/env bash
# Create .venv (once) and install pyspark-incr with its dev extras into it.
# Needs only Python >= 3.10 and a JDK 17 (javac builds the plugin's jar on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q -e ".[dev]"
  touch "$stamp"
fi
