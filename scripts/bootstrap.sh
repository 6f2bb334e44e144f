#!/usr/bin/env bash
# Create the project's virtual environment (.venv, inside the checkout) and install mor into it.
#   scripts/bootstrap.sh          runtime + test dependencies (mor[dev])
# Idempotent: re-running only installs what changed in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.mor-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "Installing mor with its runtime and test dependencies into .venv (pyproject.toml, extra [dev]):" >&2
  echo "  pyarrow, pyiceberg, SQLAlchemy, fastavro, pyspark (built from source: about a minute), pytest, hypothesis, ..." >&2
  if [ -t 1 ]; then  # a terminal: pip's own progress
    .venv/bin/python -m pip install --disable-pip-version-check --progress-bar on -e ".[dev]"
  else
    .venv/bin/python -m pip install --disable-pip-version-check -q -e ".[dev]" 2>&1 | grep -v "^WARNING: Location" || true
  fi
  .venv/bin/python -c "import mor, pyiceberg, pytest, hypothesis" 
  touch "$stamp"
fi
