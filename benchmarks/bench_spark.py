"""Spark benchmark for mor: reads through format("mor") and the fast path against Spark's own
Parquet reader, and a distributed DELETE against the local DELETE and copy-on-write.

Reads (one SparkSession, local[N]): a sum over every column (numbers summed, strings by
length, timestamps by their microsecond part) of
  - `spark.read.parquet` of the table's data files, deletes ignored (the native floor),
  - `spark.read.format("mor")` (every file through the Python data source),
  - `mor.spark.read_table` (native reader for delete-free files, format "mor" for the rest),
  - a plain Python data source yielding pyarrow's batches of the same files, deletes ignored
    (benchmarks/plain_source.py: what Spark's Python source path costs by itself),
on (r1) the table with 10% of ONE file's rows position-deleted, and (r2) with 10% of EVERY
file's rows position-deleted. Speed ratios are native time / reader time (1.0 = as fast as
native; the target for format("mor") on r1 is >= 0.8).

DELETE (d): `value < 0.001` (0.1% of rows, scattered) with `mor.spark.delete`, the local
`table.delete` (merge-on-read) and the local copy-on-write delete, each on a fresh warehouse.

Every number printed or written is measured in this run. See benchmarks/README.md.

    .venv/bin/python benchmarks/bench_spark.py                          # 10M rows, 10 files
    .venv/bin/python benchmarks/bench_spark.py --rows 200000 --files 4  # smoke test
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
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py

from common import (
    REPO_ROOT,
    TABLE_NAME,
    BenchmarkError,
    build_warehouse,
    file_slices,
    generate_events,
    local_path,
    log,
    remove_warehouse,
    start_result,
    timed_dml,
)

TARGET_MOR_OVER_NATIVE_SPEED = 0.8  # native time / format("mor") time, at least (r1)


def start_spark(cores: int) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import mor.spark

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("mor-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "6g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    mor.spark.register(spark)
    # Spark's Python workers import the plain source from this folder (pickled by reference).
    spark.sparkContext.environment["PYTHONPATH"] = str(Path(__file__).resolve().parent)
    from plain_source import PlainParquetSource

    spark.dataSource.register(PlainParquetSource)
    return spark


def sum_every_column(df: Any) -> Any:
    from pyspark.sql import functions as F

    return df.agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum("id").alias("id"),
        F.sum(F.length("category")).alias("category"),
        F.sum("value").alias("value"),
        F.sum(F.unix_micros("ts") % 1_000_000).alias("ts"),  # the whole sum would overflow a long
        F.sum(F.length("payload")).alias("payload"),
    )


def expected_sums(data: pa.Table, deleted: pa.Array) -> dict[str, int]:
    keep = data.filter(pc.invert(pc.is_in(data["id"], value_set=deleted)))
    return {"rows": keep.num_rows, "id": pc.sum(keep["id"]).as_py() or 0}


def time_readers(readers: dict[str, Callable[[], Any]], repeat: int, expected: dict[str, dict[str, int]]) -> dict[str, Any]:
    """One warm-up (checked) per reader, then `repeat` rounds, readers interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in readers}
    for name, build in readers.items():
        row = sum_every_column(build()).collect()[0]
        want = expected[name]
        if row["rows"] != want["rows"] or row["id"] != want["id"]:
            raise BenchmarkError(f"{name}: {row['rows']} rows / id sum {row['id']}, expected {want}")
    for _ in range(repeat):
        for name, build in readers.items():
            t0 = time.perf_counter()
            sum_every_column(build()).collect()
            samples[name].append(time.perf_counter() - t0)
    return {name: {"median_seconds": statistics.median(s), "samples_seconds": s} for name, s in samples.items()}


def scenario_reads(args: argparse.Namespace, spark: Any, data: pa.Table, slices: list[pa.Table]) -> dict[str, Any]:
    import mor.spark

    root = args.data_dir / "wh-spark-read"
    table, build = build_warehouse(root, slices)
    first_file_ids = slices[0]["id"]
    paths = [t.data_file.file_path for t in table.scan().plan_files()]
    local_paths = [local_path(p) for p in paths]
    out: dict[str, Any] = {"build": build}
    native_expected = expected_sums(data, pa.array([], pa.int64()))
    steps = [
        ("r1_one_file", f"id <= {pc.max(first_file_ids).as_py()} and value < {args.read_delete_fraction}"),
        ("r2_every_file", f"value < {args.read_delete_fraction}"),
    ]
    prev_deleted = pa.array([], pa.int64())  # every id deleted so far (each step's parent lacks the earlier ones)
    for name, predicate in steps:
        table.delete(predicate)
        deleted = table.scan(snapshot_id=table.current_snapshot().parent_snapshot_id, filter=predicate, columns=["id"]).to_arrow()["id"]
        prev_deleted = pa.concat_arrays([prev_deleted, deleted.combine_chunks()])
        expected = expected_sums(data, prev_deleted)
        tasks = table.scan().plan_files()
        log(
            f"({name}) {predicate}: {len(prev_deleted):,} rows deleted; "
            f"{sum(1 for t in tasks if t.delete_files)} of {len(tasks)} files have deletes"
        )
        readers = {
            "native_parquet": lambda: spark.read.parquet(*paths),
            "plain_python_source": lambda: (
                spark.read.format("plain_parquet")
                .option("paths", "\n".join(local_paths))
                .option("partitions", str(spark.sparkContext.defaultParallelism))
                .load()
            ),
            "format_mor": lambda: spark.read.format("mor").option("warehouse", str(root)).load(TABLE_NAME),
            "fast_path": lambda: mor.spark.read_table(spark, table),
        }
        timings = time_readers(
            readers,
            args.repeat,
            {"native_parquet": native_expected, "plain_python_source": native_expected, "format_mor": expected, "fast_path": expected},
        )
        native = timings["native_parquet"]["median_seconds"]
        out[name] = {
            "predicate": predicate,
            "deleted_rows": len(prev_deleted),
            "files_with_deletes": sum(1 for t in tasks if t.delete_files),
            "timings": timings,
            "speed_vs_native": {k: native / v["median_seconds"] for k, v in timings.items() if k != "native_parquet"},
        }
        log(f"({name}) speed vs native: " + ", ".join(f"{k} {v:.2f}x" for k, v in out[name]["speed_vs_native"].items()))
    out["target"] = {
        "format_mor_r1_speed_at_least": TARGET_MOR_OVER_NATIVE_SPEED,
        "met": out["r1_one_file"]["speed_vs_native"]["format_mor"] >= TARGET_MOR_OVER_NATIVE_SPEED,
    }
    if not args.keep:
        remove_warehouse(root)
    return out


def scenario_delete(args: argparse.Namespace, spark: Any, data: pa.Table, slices: list[pa.Table]) -> dict[str, Any]:
    from pyiceberg.expressions import LessThan

    import mor.spark

    predicate = f"value < {args.delete_fraction}"
    expected = pc.sum(pc.less(data["value"], args.delete_fraction)).as_py()
    runs: dict[str, list[dict[str, Any]]] = {"spark_mor": [], "local_mor": [], "local_cow": []}
    calls: dict[str, Callable[[Any], Any]] = {
        # A pyiceberg filter: mor's matcher on the executors (SQL text would be evaluated by Spark).
        "spark_mor": lambda t: mor.spark.delete(spark, t, LessThan("value", args.delete_fraction)),
        "local_mor": lambda t: t.delete(predicate),
        "local_cow": lambda t: t.delete(predicate, mode="copy-on-write"),
    }
    columns = set(data.column_names)
    for round_ in range(args.dml_repeat):
        for name, call in calls.items():
            root = args.data_dir / f"wh-spark-delete-{name}"
            table, _ = build_warehouse(root, slices)
            run = timed_dml(table, root, lambda call=call, table=table: call(table), columns, reader=name, round=round_)
            deleted = int(table.current_snapshot().summary.get("total-records", "0"))
            live = table.scan(columns=["id"]).count()
            if live != data.num_rows - expected:
                raise BenchmarkError(f"{name}: {live} live rows after the delete, expected {data.num_rows - expected}")
            run["live_rows_after"] = live
            run["summary_total_records"] = deleted
            runs[name].append(run)
            log(f"(d) {name}: {run['wall_seconds']:.3f} s, {run['bytes_written']:,} bytes")
            remove_warehouse(root)
    medians = {name: statistics.median(r["wall_seconds"] for r in rs) for name, rs in runs.items()}
    bytes_ = {name: statistics.median(r["bytes_written"] for r in rs) for name, rs in runs.items()}
    return {
        "predicate": predicate,
        "deleted_rows": expected,
        "runs": runs,
        "median_wall_seconds": medians,
        "median_bytes_written": bytes_,
        "ratios": {
            "local_mor_over_spark_mor_time": medians["local_mor"] / medians["spark_mor"],
            "local_cow_over_spark_mor_time": medians["local_cow"] / medians["spark_mor"],
            "local_cow_over_spark_mor_bytes": bytes_["local_cow"] / max(bytes_["spark_mor"], 1),
        },
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="local[N]")
    p.add_argument("--repeat", type=int, default=3, help="timed read rounds after one checked warm-up")
    p.add_argument("--dml-repeat", type=int, default=1)
    p.add_argument("--read-delete-fraction", type=float, default=0.1)
    p.add_argument("--delete-fraction", type=float, default=0.001)
    p.add_argument("--scenarios", default="reads,delete")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "spark.json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    p.add_argument("--keep", action="store_true")
    args = p.parse_args(argv)
    args.scenarios = {s.strip() for s in args.scenarios.split(",") if s.strip()}
    if not args.scenarios <= {"reads", "delete"}:
        p.error("--scenarios takes reads, delete or both")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result = start_result("spark", args)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    log(f"generated {args.rows:,} rows; starting Spark local[{args.cores}]")
    spark = start_spark(args.cores)
    result["spark_version"] = spark.version
    if "reads" in args.scenarios:
        result["reads"] = scenario_reads(args, spark, data, slices)
    if "delete" in args.scenarios:
        result["delete"] = scenario_delete(args, spark, data, slices)
    spark.stop()
    result["duration_seconds"] = time.perf_counter() - started
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps({k: result[k] for k in ("reads", "delete") if k in result}, indent=1, default=str)[:6000])
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
