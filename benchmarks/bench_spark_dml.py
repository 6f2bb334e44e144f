"""Spark MERGE and UPSERT against the local verbs on the same table, in one run.

The table: benchmarks/common.py's generated events (rows x 5 columns, one data file per slice).
A source of N rows: N*0.9 existing ids (random, fixed seed) with a changed value and N*0.1 new
ids. For each source size and verb (`merge` with update "*" and insert "*", `upsert`), on a
freshly built warehouse each:
  - local:        `table.merge(arrow, ...)` / `table.upsert(arrow, ...)`,
  - spark_auto:   `mor.spark.merge/upsert(spark, table, df, ...)` (path="auto": a source Spark
                  estimates at most spark.mor.dml.driverSourceMaxBytes runs on the driver),
  - spark_distributed: the same with path="distributed";
  - local_from_df: `table.merge(df.toArrow(), ...)`: the local verb given the same DataFrame,
                  collected by Spark (what a user holding a DataFrame runs without mor.spark).
The DataFrame is made from the Arrow source before the clock starts (`createDataFrame`), so its
collection (driver path) or its shuffle (distributed path) is timed. Ratios are Spark time /
local time (target for spark_auto: <= 1.5; also shown against local_from_df), after one untimed
warm-up run of each Spark path. Every number printed is measured in this run.

    .venv/bin/python benchmarks/bench_spark_dml.py                                  # 2M rows, 4 files
    .venv/bin/python benchmarks/bench_spark_dml.py --rows 200000 --sources 1000     # smoke test
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py

from bench_spark import start_spark
from common import REPO_ROOT, BenchmarkError, build_warehouse, file_slices, generate_events, log, remove_warehouse

TARGET_SPARK_OVER_LOCAL = 1.5


def make_source(data: pa.Table, size: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    existing = np.sort(rng.choice(data.num_rows, size - size // 10, replace=False))
    rows = data.take(pa.array(existing))
    rows = rows.set_column(2, "value", pc.add(rows.column("value"), 1.0))
    new = data.slice(0, size // 10)
    new = new.set_column(0, "id", pc.add(new.column("id"), data.num_rows))
    return pa.concat_tables([rows, new])


def run_one(args: argparse.Namespace, slices: list[pa.Table], name: str, call: Callable[[Any], Any], expected_rows: int) -> float:
    root = args.data_dir / f"wh-spark-dml-{name}"
    table, _ = build_warehouse(root, slices)
    started = time.perf_counter()
    call(table)
    seconds = time.perf_counter() - started
    live = table.scan(columns=["id"]).count()
    if live != expected_rows:
        raise BenchmarkError(f"{name}: {live} live rows, expected {expected_rows}")
    remove_warehouse(root)
    return seconds


def dml_calls(spark: Any, source: pa.Table) -> dict[str, Callable[[Any], Any]]:
    """Each verb by each path, as a call on a table: `source` as Arrow, or as a Spark DataFrame."""
    import mor.spark

    df = spark.createDataFrame(source)
    return {
        "merge/local": lambda t: t.merge(source, on=["id"], when_matched_update="*", when_not_matched_insert="*"),
        "merge/spark_auto": lambda t: mor.spark.merge(spark, t, df, on=["id"], when_matched_update="*", when_not_matched_insert="*"),
        "merge/spark_distributed": lambda t: mor.spark.merge(
            spark, t, df, on=["id"], when_matched_update="*", when_not_matched_insert="*", path="distributed"
        ),
        "merge/local_from_df": lambda t: t.merge(df.toArrow(), on=["id"], when_matched_update="*", when_not_matched_insert="*"),
        "upsert/local": lambda t: t.upsert(source, on=["id"]),
        "upsert/local_from_df": lambda t: t.upsert(df.toArrow(), on=["id"]),
        "upsert/spark_auto": lambda t: mor.spark.upsert(spark, t, df, on=["id"]),
        "upsert/spark_distributed": lambda t: mor.spark.upsert(spark, t, df, on=["id"], path="distributed"),
    }


def warm_up(args: argparse.Namespace, spark: Any, data: pa.Table) -> None:
    """One untimed run of each Spark path on a small table: the session's first jobs (code
    generation, Python workers) are not what the comparison is about."""
    import mor.spark

    small = data.slice(0, 20_000)
    source = make_source(small, 100, args.seed)
    for path in ("auto", "distributed"):
        run_one(args, file_slices(small, 2), f"warm-up-{path}",
                lambda t, path=path: mor.spark.merge(spark, t, spark.createDataFrame(source), on=["id"], when_matched_update="*",
                                                     when_not_matched_insert="*", path=path), small.num_rows + 10)  # fmt: skip
    log("warmed up")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--sources", default="1000,10000,0.1", help="source sizes: rows, or a fraction of the table")
    p.add_argument("--verbs", default="merge,upsert")
    p.add_argument("--paths", default="local,local_from_df,spark_auto,spark_distributed")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cores", type=int, default=2, help="local[N]")
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "spark_dml.json")
    args = p.parse_args(argv)
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    spark = start_spark(args.cores)
    paths = [s.strip() for s in args.paths.split(",")]
    warm_up(args, spark, data)
    results: dict[str, Any] = {"rows": args.rows, "files": args.files, "cores": args.cores, "runs": {}}
    for spec in args.sources.split(","):
        size = int(float(spec) * args.rows) if "." in spec else int(spec)
        source = make_source(data, size, args.seed)
        expected = args.rows + size // 10
        calls = dml_calls(spark, source)
        for verb in [v.strip() for v in args.verbs.split(",")]:
            times = {}
            for path in paths:
                runs = [run_one(args, slices, f"{verb}-{path}", calls[f"{verb}/{path}"], expected) for _ in range(args.repeat)]
                times[path] = statistics.median(runs)
                log(f"source {size:,} rows, {verb} {path}: {times[path]:.3f} s")
            ratios = {p_: times[p_] / times["local"] for p_ in times if p_ != "local" and "local" in times}
            if "local_from_df" in times and "spark_auto" in times:
                ratios["spark_auto_over_local_from_df"] = times["spark_auto"] / times["local_from_df"]
            results["runs"][f"{size}/{verb}"] = {"seconds": times, "spark_over_local": ratios}
            shown = ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
            print(f"source {size:>9,} rows  {verb:6}  local {times.get('local', float('nan')):.3f} s  {shown}", flush=True)
    spark.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"target spark_auto/local <= {TARGET_SPARK_OVER_LOCAL}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
