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
  # The stateful models run 100 random programs each here (the whole suite runs 150-250).
  export MOR_STATEFUL_EXAMPLES="${MOR_STATEFUL_EXAMPLES:-100}"
  workers=$(.venv/bin/python -c "import os; print(min(4, max(1, len(os.sched_getaffinity(0)))))")
  exec .venv/bin/python -m pytest -m fast -p no:cacheprovider -n "$workers" --dist loadfile tests/unit tests/property tests/stateful "$@"
fi
exec .venv/bin/python -m pytest "$@"
