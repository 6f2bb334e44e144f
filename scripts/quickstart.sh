#!/usr/bin/env bash
# The main job: set up (first run only) and run the quickstart against ./warehouse.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m mor quickstart --warehouse "${1:-warehouse}"
