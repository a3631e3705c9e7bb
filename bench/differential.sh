#!/usr/bin/env bash
# The differential suite against SQLMesh, from nothing: sets up .venv and SQLMesh's venv
# (bench/out/venvs/sqlmesh, from bench/peers/requirements-sqlmesh.txt), then runs every project of
# bench/differential/projects through both tools (see docs/differential.md). Extra arguments go to
# bench/differential/run.py (e.g. --project kinds).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
venv=bench/out/venvs/sqlmesh
stamp=$venv/.installed-$(sha256sum bench/peers/requirements-sqlmesh.txt | cut -c1-16)
if [ ! -f "$stamp" ]; then
  python3 -m venv "$venv"
  nice -n 10 "$venv/bin/pip" install -q -r bench/peers/requirements-sqlmesh.txt
  touch "$stamp"
fi
exec nice -n 10 .venv/bin/python bench/differential/run.py "$@"
