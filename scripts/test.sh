#!/usr/bin/env bash
# Set up (first run only) and run the tests. Extra arguments go to pytest.
#   scripts/test.sh            the whole suite (CI: .ci/run)
#   scripts/test.sh fast       the fast tier before each commit: unit, property and stateful
#                              tests that start no JVM, server or process (tests/conftest.py)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
if [ "${1:-}" = "fast" ]; then
  shift
  exec .venv/bin/python -m pytest -m fast -p no:cacheprovider tests/unit tests/property tests/stateful "$@"
fi
exec .venv/bin/python -m pytest "$@"
