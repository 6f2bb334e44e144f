"""The first answer of a new Spark session: a mor read against a plain `spark.read.parquet` of
the same files, as a ratio measured in one run.

Each trial is a fresh Python process with a fresh SparkSession (a session's first query pays for
the JVM's warm-up and the Python workers' start, which a second query in the same session would
not), so the readers take turns, each in a process of its own. In each process the session is
started first and not timed; then one query is timed to its answer:

- `parquet`: `spark.read.parquet(<the table's data files>)`, deletes ignored: the floor;
- `read_table`: `mor.spark.read_table(spark, "bench.events", warehouse=...)`, the fast path
  (Spark's native scan, deletes applied by mor's JVM functions);
- `sql_view`: `mor.spark.register_tables(spark, warehouse=...)` and the query in SQL on the
  table's view, both timed;
- `format_mor`: `spark.read.format("mor").option("warehouse", ...).load("bench.events")`, mor's
  Python data source.

The mor sessions are built with `mor.spark.session(...)` (registration included in the untimed
start); the parquet session with `SparkSession.builder` and the same settings. The query is
`count(*)` and `sum(value)` over the table (10% of every file's rows position-deleted), checked
against the local reader. Reported: each reader's median over `--trials` processes, and the
ratio of each mor reader's median to parquet's (the issue's target: within 1.5x).

    .venv/bin/python benchmarks/bench_spark_first_answer.py [--trials 3] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO_ROOT, TABLE_NAME, build_warehouse, file_slices, generate_events, local_path, remove_warehouse, start_result

READERS = ("parquet", "read_table", "sql_view", "format_mor")
TARGET = 1.5


def child(reader: str, warehouse: str, paths: list[str], cores: int) -> dict[str, Any]:
    """One trial in this (fresh) process: start the session untimed, then time the first answer."""
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": str(cores)}
    started = time.perf_counter()
    if reader == "parquet":
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.master(f"local[{cores}]").appName("first-answer").config("spark.sql.session.timeZone", "UTC")
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    else:
        import mor.spark

        spark = mor.spark.session("first-answer", master=f"local[{cores}]", conf=settings)
    spark.sparkContext.setLogLevel("ERROR")
    session_seconds = time.perf_counter() - started

    from pyspark.sql import functions as F

    started = time.perf_counter()
    if reader == "parquet":
        df = spark.read.parquet(*paths)
    elif reader == "read_table":
        import mor.spark

        df = mor.spark.read_table(spark, TABLE_NAME, warehouse=warehouse)
    elif reader == "sql_view":  # the views made and queried in SQL, both timed
        import mor.spark

        views = mor.spark.register_tables(spark, warehouse=warehouse)
        df = spark.sql(f"SELECT * FROM {views[TABLE_NAME]}")
    else:
        df = spark.read.format("mor").option("warehouse", warehouse).load(TABLE_NAME)
    row = df.agg(F.count(F.lit(1)).alias("rows"), F.sum("value").alias("total")).collect()[0]
    answer_seconds = time.perf_counter() - started
    spark.stop()
    return {"reader": reader, "session_seconds": round(session_seconds, 3), "first_answer_seconds": round(answer_seconds, 3),
            "rows": row["rows"], "total": row["total"]}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data" / "wh-spark-first-answer")
    p.add_argument("--child", nargs=2, metavar=("READER", "SPEC"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        spec = json.loads(args.child[1])
        print(json.dumps(child(args.child[0], spec["warehouse"], spec["paths"], spec["cores"])))
        return 0

    result = start_result("spark_first_answer", args)
    data = generate_events(args.rows, 1)
    table, _ = build_warehouse(args.data_dir, file_slices(data, args.files))
    table.delete("value < 0.1")
    live = table.scan(columns=["value"]).to_arrow()
    expected_rows = live.num_rows
    all_rows = data.num_rows
    paths = [local_path(t.data_file.file_path) for t in table.scan().plan_files()]
    spec = json.dumps({"warehouse": str(args.data_dir), "paths": paths, "cores": args.cores})

    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    trials: dict[str, list[dict[str, Any]]] = {r: [] for r in READERS}
    for trial in range(args.trials):
        for reader in READERS:  # in turns, so a change in the machine's load falls on every reader
            done = subprocess.run([sys.executable, __file__, "--child", reader, spec], capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{reader} trial failed:\n{done.stderr[-4000:]}")
            measured = json.loads(done.stdout.strip().splitlines()[-1])
            want = all_rows if reader == "parquet" else expected_rows
            if measured["rows"] != want:
                raise RuntimeError(f"{reader}: {measured['rows']} rows, expected {want}")
            trials[reader].append(measured)
            print(f"trial {trial + 1} {reader:10} session {measured['session_seconds']:6.2f} s (not counted)   "
                  f"first answer {measured['first_answer_seconds']:6.2f} s", flush=True)  # fmt: skip

    medians = {r: statistics.median(t["first_answer_seconds"] for t in trials[r]) for r in READERS}
    ratios = {r: round(medians[r] / medians["parquet"], 2) for r in READERS if r != "parquet"}
    result.update(trials=trials, median_first_answer_seconds=medians, ratio_to_parquet=ratios, target=TARGET,
                  load_average_end=os.getloadavg())  # fmt: skip
    for reader, ratio in ratios.items():
        print(f"{reader:10} first answer {medians[reader]:6.2f} s = {ratio:.2f}x parquet's {medians['parquet']:.2f} s "
              f"({'met' if ratio <= TARGET else 'MISSED'}: target {TARGET}x)")  # fmt: skip
    out = REPO_ROOT / "benchmarks" / "results" / "spark_first_answer.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"wrote {out.relative_to(REPO_ROOT)}")
    remove_warehouse(args.data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
