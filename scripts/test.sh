#!/usr/bin/env bash
# Set up (first run only) and run the tests. Extra arguments go to pytest.
#   scripts/test.sh            the whole suite (CI: .ci/run): the fast tier on every core, then
#                              the slow tier (Spark, Java, servers, processes) in two processes
#                              side by side: tests/spark (one SparkSession) and the rest (one
#                              Iceberg Java, one PostgreSQL), their lines prefixed [spark] / [other]
#   scripts/test.sh fast       the fast tier before each commit: unit, property and stateful
#                              tests that start no JVM, server or process (tests/conftest.py)
#   scripts/test.sh tests/x    anything else: one pytest run of what the arguments name
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# Bytecode caches on: an environment with PYTHONDONTWRITEBYTECODE set (this machine's is) makes
# every pytest process rewrite the asserts of every test module again (about 11 s a process for
# the fast tier's collection) and every Python subprocess a test starts compile mor again.
unset PYTHONDONTWRITEBYTECODE
# The JVMs tests start (Spark sessions, Iceberg Java, the standalone cluster, Spark 3.5) live for
# seconds to minutes on test-sized data, and the slow tier keeps both cores busy: C2's compiles
# and the parallel collector's threads cost more CPU than they return. C1 only and the serial
# collector took a third to a half of the CPU off Iceberg Java's reads and a quarter off the
# Spark DML tests (docs/testing.md). Tests only: mor sets no JVM option of its own.
export JDK_JAVA_OPTIONS="${JDK_JAVA_OPTIONS:+$JDK_JAVA_OPTIONS }-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
workers=$(.venv/bin/python -c "import os; print(min(4, max(1, len(os.sched_getaffinity(0)))))")
# The fast tier's settings, for `fast` and the whole suite alike: the stateful models run 24
# random programs each and the property tests 40% of their examples (tests/examples.py; more
# with MOR_STATEFUL_EXAMPLES=2000 and MOR_EXAMPLES_SHARE=1 for a deeper run: each run draws new
# examples), idle workers take tests queued for busy ones (worksteal), and temporary files go to
# tmpfs where there is one (the tests write thousands of small tables, and the fsyncs of their
# catalogs cost the disk-backed /tmp about a third of this tier's time). Not for the slow tier
# yet: on tmpfs a failed Spark write can leave a data file its abort did not see
# (tests/spark/test_write.py; see the session notes).
# Its tests live in tests/conftest.py's FAST_FOLDERS alone: collecting only those spares each
# worker importing every other test module (pyspark, servers) to deselect it, 8 s a worker.
fast_tier() {
  local tmp="${TMPDIR:-}"
  if [ -z "$tmp" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then tmp=/dev/shm; fi
  MOR_STATEFUL_EXAMPLES="${MOR_STATEFUL_EXAMPLES:-24}" \
  MOR_STATEFUL_EXAMPLES_CHANGES="${MOR_STATEFUL_EXAMPLES_CHANGES:-20}" \
  MOR_EXAMPLES_SHARE="${MOR_EXAMPLES_SHARE:-0.4}" \
  TMPDIR="${tmp:-/tmp}" \
    .venv/bin/python -m pytest -m fast -n "$workers" --dist worksteal -p no:cacheprovider tests/unit tests/property tests/stateful "$@"
}
if [ "${1:-}" = "fast" ]; then
  shift
  fast_tier "$@"
  exit
fi
for arg in "$@"; do
  case "$arg" in
    -*) ;;
    *) exec .venv/bin/python -m pytest "$@" ;;  # a path or an option's value: run just that, as given
  esac
done
# The whole suite: the fast tier first, on every core, exactly as `fast` runs it, timed.
echo "scripts/test.sh: the fast tier ($workers workers)" >&2
fast=0
fast_start=$(date +%s)
fast_tier "$@" || fast=$?
echo "scripts/test.sh: the fast tier took $(( $(date +%s) - fast_start )) s" >&2
# Then the slow tier in two processes side by side: most of its time one waits on a JVM, a server
# or a subprocess, so two keep both cores busy. What both would fetch on first use is fetched
# here first (hadoop-aws for Spark's s3a: tests/servers/hadoop_aws.py), so they never race for it.
echo "scripts/test.sh: the slow tier (two processes: [spark] tests/spark, the concurrent writers and the crash tests; [other] the rest)" >&2
.venv/bin/python -c "from tests.servers.hadoop_aws import hadoop_aws_jars; hadoop_aws_jars()" || echo "scripts/test.sh: could not fetch hadoop-aws now; the Spark tests will say why" >&2
prefixed() {  # run "$@" with each line of its output prefixed by $1; its exit status
  local tag=$1
  shift
  set +e
  "$@" 2>&1 | sed -u "s/^/[$tag] /"
  local rc=${PIPESTATUS[0]}
  set -e
  return "$rc"
}
# Balanced by measured time (fresh-clone .ci/run, docs/testing.md): tests/spark alone took 20
# minutes and the rest 31, so the eight-writer concurrency tests (about 4) and the crash tests
# (1.5) run beside Spark; at 821df5e the two processes took 21:53 and 21:31.
beside_spark=(tests/concurrency/test_concurrent_writers.py tests/concurrency/test_crash.py)
# One run for the fixtures both copy to /tmp (tests/conftest.py: copied once, not once each).
export MOR_TEST_RUN_ID="slow-$$-$(date +%s)"
prefixed spark .venv/bin/python -m pytest -m "not fast" tests/spark "${beside_spark[@]}" "$@" &
spark_pid=$!
prefixed other .venv/bin/python -m pytest -m "not fast" --ignore=tests/spark "${beside_spark[@]/#/--ignore=}" "$@" &
other_pid=$!
spark=0
wait "$spark_pid" || spark=$?
other=0
wait "$other_pid" || other=$?
echo "scripts/test.sh: fast tier exit $fast, [spark] exit $spark, [other] exit $other (5: no tests)" >&2
# "no tests" (exit 5) fails only when no run had any.
if [ "$fast" = 5 ] && [ "$spark" = 5 ] && [ "$other" = 5 ]; then exit 5; fi
for rc in "$fast" "$spark" "$other"; do
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then exit "$rc"; fi
done
exit 0
