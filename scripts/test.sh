#!/usr/bin/env bash
# Set up (first run only) and run the tests. Extra arguments go to pytest.
#   scripts/test.sh            the whole suite (CI: .ci/run): the fast tier on every core, then
#                              the slow tier (Spark, Java, servers, processes) in one process,
#                              so Spark, Iceberg Java and PostgreSQL start once
#   scripts/test.sh fast       the fast tier before each commit: unit, property and stateful
#                              tests that start no JVM, server or process (tests/conftest.py)
#   scripts/test.sh tests/x    anything else: one pytest run of what the arguments name
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
workers=$(.venv/bin/python -c "import os; print(min(4, max(1, len(os.sched_getaffinity(0)))))")
if [ "${1:-}" = "fast" ]; then
  shift
  # The stateful models run 30 random programs each here and the property tests half their
  # examples (the whole suite runs them all: tests/examples.py), and idle workers take tests
  # queued for busy ones (worksteal): the tier stays within its 3 minutes on two cores.
  export MOR_STATEFUL_EXAMPLES="${MOR_STATEFUL_EXAMPLES:-30}"
  export MOR_EXAMPLES_SHARE="${MOR_EXAMPLES_SHARE:-0.5}"
  # Temporary files on tmpfs where there is one: the tests write thousands of small tables, and
  # the fsyncs of their catalogs cost the disk-backed /tmp about a third of this tier's time.
  # (Not for the whole suite yet: on tmpfs a failed Spark write can leave a data file its abort
  # did not see, tests/spark/test_write.py; see the session notes.)
  if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
    export TMPDIR=/dev/shm
  fi
  exec .venv/bin/python -m pytest -m fast -p no:cacheprovider -n "$workers" --dist worksteal tests/unit tests/property tests/stateful "$@"
fi
for arg in "$@"; do
  case "$arg" in
    -*) ;;
    *) exec .venv/bin/python -m pytest "$@" ;;  # a path or an option's value: run just that, as given
  esac
done
# The whole suite, in two runs; both always run, and the result fails if either does (exit 5,
# "no tests", only when neither tier had any).
echo "scripts/test.sh: the fast tier ($workers workers)" >&2
fast=0
.venv/bin/python -m pytest -m fast -n "$workers" --dist loadfile "$@" || fast=$?
echo "scripts/test.sh: the slow tier (one process)" >&2
slow=0
.venv/bin/python -m pytest -m "not fast" "$@" || slow=$?
if [ "$fast" = 5 ] && [ "$slow" = 5 ]; then exit 5; fi
[ "$fast" = 5 ] && fast=0
[ "$slow" = 5 ] && slow=0
if [ "$fast" != 0 ]; then exit "$fast"; fi
exit "$slow"
