"""Start-up of mor on Spark in a fresh process: `import mor.spark`, `mor.spark.register(spark)`,
and the first and second `spark.read.format("mor").load(...).count()` of a new session (after
the first and second count through a plain Python source of the same files: Spark's own share), each
as wall time and CPU of the whole process tree (driver, JVM, Python workers: proc_cpu.py).

The table is small (--rows, --files, 10% of every file's rows position-deleted), so what is
measured is fixed cost: Python worker start, imports, planning. Every number printed is
measured in this run.

    .venv/bin/python benchmarks/bench_spark_startup.py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO_ROOT, TABLE_NAME, build_warehouse, file_slices, generate_events, local_path
from proc_cpu import tree_cpu_seconds


def measured(label: str, fn: Callable[[], Any], out: dict[str, Any]) -> Any:
    cpu, wall = tree_cpu_seconds(), time.perf_counter()
    value = fn()
    out[label] = {"wall_seconds": round(time.perf_counter() - wall, 3), "cpu_seconds": round(tree_cpu_seconds() - cpu, 3)}
    print(f"{label:28} wall {out[label]['wall_seconds']:7.3f} s   cpu (process tree) {out[label]['cpu_seconds']:7.3f} s", flush=True)
    return value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data" / "wh-spark-startup")
    args = p.parse_args(argv)
    data = generate_events(args.rows, 1)
    table, _ = build_warehouse(args.data_dir, file_slices(data, args.files))
    table.delete("value < 0.1")
    live = table.scan(columns=["id"]).count()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    out: dict[str, Any] = {}
    from pyspark.sql import SparkSession

    spark = measured(
        "SparkSession (not mor)",
        lambda: (
            SparkSession.builder.master(f"local[{args.cores}]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        ),
        out,
    )
    spark.sparkContext.setLogLevel("ERROR")
    # What any Python data source's first query costs (Python workers start, the JVM warms up):
    # a source that only yields pyarrow batches of the same files, before mor is imported.
    spark.sparkContext.environment["PYTHONPATH"] = str(Path(__file__).resolve().parent)
    from plain_source import PlainParquetSource

    spark.dataSource.register(PlainParquetSource)
    paths = "\n".join(local_path(t.data_file.file_path) for t in table.scan().plan_files())
    plain = spark.read.format("plain_parquet").option("paths", paths)
    for label in ("first plain-source count() (not mor)", "second plain-source count() (not mor)"):
        measured(label, lambda: plain.load().count(), out)
    mor_spark = measured("import mor.spark", lambda: __import__("mor.spark").spark, out)
    measured("register", lambda: mor_spark.register(spark), out)
    reader = spark.read.format("mor").option("warehouse", str(args.data_dir))
    for label in ("first load().count()", "second load().count()"):
        counted = measured(label, lambda: reader.load(TABLE_NAME).count(), out)
        if counted != live:
            raise RuntimeError(f"{label}: {counted} rows, expected {live}")
    spark.stop()
    shutil.rmtree(args.data_dir, ignore_errors=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
