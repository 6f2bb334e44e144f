#!/usr/bin/env bash
# The benchmark report (benchmarks/report.py): sets up what it needs, then runs every section.
#   bash scripts/bench.sh                  default scale (2M rows): under 15 minutes on 2 cores
#   bash scripts/bench.sh --scale large    100M rows, for bigger machines
# Writes benchmarks/results/report/{report.md, headline.md, *.png, samples.json}. Extra
# arguments go to benchmarks/report.py (--only dml,reads,... --out-dir ...).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
if ! .venv/bin/python -c "import matplotlib" 2>/dev/null; then
  echo "Installing the report's plotting library (mor[bench]: matplotlib) into .venv" >&2
  .venv/bin/python -m pip install --disable-pip-version-check -q -e ".[dev,bench]" 2>&1 | grep -v "^WARNING: Location" || true
fi
# Java 17 for Spark (the oracle's Spark 3.5 and this environment's Spark 4 both run on it).
if [ -z "${JAVA_HOME:-}" ]; then
  for candidate in /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/temurin-17* /usr/lib/jvm/jdk-17*; do
    if [ -x "$candidate/bin/java" ]; then export JAVA_HOME="$candidate"; break; fi
  done
fi
exec .venv/bin/python benchmarks/report.py "$@"
