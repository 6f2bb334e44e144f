"""Eight writer processes, 50 operations each, on one table: how many commits land and how
many conflict, per workload and isolation level (the writers of tests/concurrency).

    .venv/bin/python benchmarks/bench_concurrency.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "concurrency"))
import test_concurrent_writers as writers

SNAPSHOT = {f"write.{k}.isolation-level": "snapshot" for k in ("delete", "update", "merge")}
NO_REPLAN = {"mor.dml.replan.num-retries": "0"}
RUNS = [
    ("disjoint rows, re-planning off", "disjoint", NO_REPLAN),
    ("shared keys, serializable, re-planning off", "contended", NO_REPLAN),
    ("shared keys, snapshot, re-planning off", "contended", {**SNAPSHOT, **NO_REPLAN}),
    ("shared keys, re-planning on (default)", "contended", {}),
]

if __name__ == "__main__":
    for label, mode, properties in RUNS:
        started = time.time()
        _, ops = writers.run_writers(Path(tempfile.mkdtemp()), 50, mode, properties)
        results = Counter(op.result for op in ops)
        print(f"{label}: ok {results['ok']}, none {results['none']}, conflict {results['conflict']}, {time.time() - started:.0f} s")
