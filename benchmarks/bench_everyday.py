"""Everyday looking around (issue 26): how soon `mor scan --limit 10` prints on a large table, and
what `count()` costs from metadata against counting the rows.

On one table (10M rows in 10 files by default):
  - `mor scan bench.events --limit 10`, run as a user runs it (a new process through this
    environment's `mor`: interpreter start and imports included), wall time to exit, median of
    `--repeat` after one untimed run (reported: it compiles what changed since the last); the
    same with `--format csv`; and, for scale, `table.scan().to_arrow()` in this process;
  - `table.scan().count()` with no deletes (answered from the files' record counts) against the
    same count after a 0.1% DELETE (the rows are read), and `len(table.scan().to_arrow())`.
Each result is checked (10 rows printed; counts equal to the generated rows minus the deleted).

    .venv/bin/python benchmarks/bench_everyday.py
    .venv/bin/python benchmarks/bench_everyday.py --rows 200000 --files 4 --repeat 1   # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    REPO_ROOT,
    TABLE_NAME,
    BenchmarkError,
    build_warehouse,
    file_slices,
    generate_events,
    log,
    remove_warehouse,
    start_result,
)

MOR = Path(sys.executable).parent / "mor"


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, list[float], Any]:
    samples, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), samples, result


def cli_scan(root: Path, *extra: str) -> str:
    # Python may cache compiled modules, as it does for an installed package (this environment
    # may forbid it with PYTHONDONTWRITEBYTECODE; the first, untimed run then compiles them).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run = subprocess.run(
        [str(MOR), "scan", TABLE_NAME, "--warehouse", str(root), "--limit", "10", *extra],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    if run.returncode != 0:
        raise BenchmarkError(f"mor scan failed: {run.stderr[-2000:]}")
    return run.stdout


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "everyday.json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    args = p.parse_args(argv)
    result = start_result("everyday", args)
    data = generate_events(args.rows, args.seed)
    root = args.data_dir / "wh-everyday"
    table, result["build"] = build_warehouse(root, file_slices(data, args.files))

    for label, extra in (("cli_scan_limit_10", ()), ("cli_scan_limit_10_csv", ("--format", "csv"))):
        first, _, _ = timed(lambda extra=extra: cli_scan(root, *extra), 1)
        result[f"{label}_first_run_seconds"] = first
        median, samples, out = timed(lambda extra=extra: cli_scan(root, *extra), args.repeat)
        lines = [line for line in out.splitlines() if line.strip()]
        if not any(str(i) in out for i in range(10)) or len(lines) < 10:
            raise BenchmarkError(f"{label}: expected 10 rows, got:\n{out[-1000:]}")
        result[label] = {"median_seconds": median, "samples_seconds": samples}
        log(f"{label}: {median:.3f} s")
    median, samples, full = timed(lambda: table.scan().to_arrow(), args.repeat)
    result["full_scan_to_arrow"] = {"median_seconds": median, "samples_seconds": samples}
    log(f"full scan to Arrow in this process: {median:.3f} s")

    def count_cases(expected: int, label: str) -> None:
        median, samples, counted = timed(lambda: table.scan().count(), args.repeat)
        if counted != expected:
            raise BenchmarkError(f"{label}: count() gave {counted}, expected {expected}")
        result[label] = {"median_seconds": median, "samples_seconds": samples}
        log(f"{label}: {median:.4f} s")

    count_cases(args.rows, "count_no_deletes_from_metadata")
    deleted = pc.sum(pc.less(data["value"], 0.001)).as_py()
    table.delete("value < 0.001")
    count_cases(args.rows - deleted, "count_with_deletes_reads_rows")
    median, samples, rows = timed(lambda: table.scan().to_arrow().num_rows, args.repeat)
    if rows != args.rows - deleted:
        raise BenchmarkError(f"to_arrow gave {rows} rows, expected {args.rows - deleted}")
    result["len_to_arrow_with_deletes"] = {"median_seconds": median, "samples_seconds": samples}
    log(f"len(to_arrow()) with deletes: {median:.3f} s")
    remove_warehouse(root)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps({k: v["median_seconds"] for k, v in result.items() if isinstance(v, dict) and "median_seconds" in v}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
