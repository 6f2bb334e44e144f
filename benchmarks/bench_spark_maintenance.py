"""Distributed compaction (`mor.spark.compact`) against the local `table.compact()`.

The table: `--rows` rows in `--files` data files (one append each), then a merge-on-read
DELETE of `value < --delete-fraction` (about that share of every file, scattered), so every
file carries a position delete file. Each round builds a fresh warehouse per contender and
times one compaction into about `--bins` bins (the target file size is the table's bytes over
`--bins`: one Spark task per bin, one thread per bin locally) after an untimed warm-up
compaction of a small table by each (one bin per core: Spark starts its Python workers then). Wall and CPU of
this process are measured (the driver; Spark's executors run in
Python workers of their own, so the driver CPU of the Spark run is not its whole cost), then
checks that the live rows are the same and that both results have the same counts.

Every number printed or written is measured in this run. See benchmarks/README.md.

    .venv/bin/python benchmarks/bench_spark_maintenance.py                         # 2M rows, 20 files
    .venv/bin/python benchmarks/bench_spark_maintenance.py --rows 100000 --files 4 # smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py

from bench_spark import start_spark
from common import (
    REPO_ROOT,
    BenchmarkError,
    build_warehouse,
    file_slices,
    generate_events,
    log,
    remove_warehouse,
    start_result,
    timed_dml,
)

# Must agree between the two (the number of files written may not: a bin's files are read in
# path order, so the rows are written in another order and roll into files at other rows).
FIGURES = ("rewritten_data_files", "removed_position_delete_files", "rewritten_rows", "written_rows")


def scenario_compact(args: argparse.Namespace, spark: Any, data: pa.Table, slices: list[pa.Table]) -> dict[str, Any]:
    import mor.spark.maintenance

    predicate = f"value < {args.delete_fraction}"
    target: dict[str, int] = {}
    calls: dict[str, Callable[[Any], Any]] = {
        "spark": lambda t: mor.spark.maintenance.compact(spark, t, target_file_size=target["bytes"]),
        "local": lambda t: t.compact(target_file_size=target["bytes"]),
    }
    warm_root = args.data_dir / "wh-spark-compact-warm-up"
    for call in calls.values():  # one bin per core, so every Python worker of Spark starts
        table, _ = build_warehouse(warm_root, file_slices(data.slice(0, 1000 * args.cores), args.cores))
        table.delete(predicate)
        target["bytes"] = 1
        call(table)
    remove_warehouse(warm_root)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in calls}
    columns = set(data.column_names)
    for round_ in range(args.repeat):
        seen: dict[str, tuple[int, dict[str, Any]]] = {}
        for name, call in calls.items():
            root = args.data_dir / f"wh-spark-compact-{name}"
            table, built = build_warehouse(root, slices)
            table.delete(predicate)
            target["bytes"] = max(built["parquet_bytes"] // args.bins, 1)
            results: list[Any] = []
            run = timed_dml(
                table,
                root,
                lambda results=results, call=call, table=table: results.append(call(table)),
                columns,
                contender=name,
                round=round_,
            )
            result = results[0]
            live = table.scan(columns=["id"]).count()
            run["result"] = result.to_dict()
            runs[name].append(run)
            seen[name] = (live, {k: getattr(result, k) for k in FIGURES})
            log(f"{name}: {run['wall_seconds']:.3f} s wall, {run['cpu_seconds']:.3f} s driver CPU, "
                f"{result.rewritten_data_files} files -> {result.added_data_files}")  # fmt: skip
            if not args.keep:
                remove_warehouse(root)
        if seen["spark"] != seen["local"]:
            raise BenchmarkError(f"the distributed and local compactions differ: {seen}")
        if seen["local"][1]["rewritten_data_files"] != len(slices):
            raise BenchmarkError(f"expected every file rewritten: {seen['local']}")
    wall = {name: statistics.median(r["wall_seconds"] for r in rs) for name, rs in runs.items()}
    cpu = {name: statistics.median(r["cpu_seconds"] for r in rs) for name, rs in runs.items()}
    return {
        "predicate": predicate,
        "target_file_size": target["bytes"],
        "runs": runs,
        "median_wall_seconds": wall,
        "median_driver_cpu_seconds": cpu,
        "ratios": {
            "local_over_spark_time": wall["local"] / wall["spark"],
            "spark_driver_cpu_over_local_cpu": cpu["spark"] / max(cpu["local"], 1e-9),
        },
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="local[N]")
    p.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    p.add_argument("--bins", type=int, default=4, help="target file size = the table's Parquet bytes / bins")
    p.add_argument("--delete-fraction", type=float, default=0.1)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "spark_maintenance.json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    p.add_argument("--keep", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result = start_result("spark_maintenance", args)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    log(f"generated {args.rows:,} rows in {args.files} files; starting Spark local[{args.cores}]")
    spark = start_spark(args.cores)
    result["spark_version"] = spark.version
    result["compact"] = scenario_compact(args, spark, data, slices)
    spark.stop()
    result["duration_seconds"] = time.perf_counter() - started
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    summary = {
        k: result["compact"][k] for k in ("predicate", "target_file_size", "median_wall_seconds", "median_driver_cpu_seconds", "ratios")
    }
    print(json.dumps(summary, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
