"""Iceberg Java's own Spark reader and mor's, on Spark 3.5 in one session: run by
bench_spark_reads.py with the Spark 3.5 env's Python (`.spark35-venv`: pyspark 3.5 and mor, see
tests/spark35/spark35_env.py) and the oracle's Iceberg jars (iceberg-spark-runtime 1.10.2 and
its relocated Jackson, listed by the oracle's setup.sh), never imported.

    <spark35 python> benchmarks/oracle_spark_read.py <jars.txt> <request.json> <result.json>

The request lists cases (a table's metadata file, its data files, the expected row count and id
sum), a repeat count and the cores. For each case, in one Spark 3.5 session (local[N], the
oracle's settings): `spark.read.parquet` of the data files without deletes (this Spark's native
floor), `spark.read.format("iceberg").load(metadata)` and `mor.spark.read_table` (the same jar
as on Spark 4), each aggregated by the same sum over every column (spark_aggregate.py); one
checked warm-up each, then `repeat` interleaved rounds of wall time and CPU of the whole process
tree (driver, JVM, workers: proc_cpu.py).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proc_cpu import tree_cpu_seconds
from spark_aggregate import sum_every_column


def spark_session(jars: list[str], cores: int):  # type: ignore[no-untyped-def]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{cores}]").appName("mor-bench-spark35")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.driver.memory", "6g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(jars_file: str, request_file: str, result_file: str) -> int:
    import mor
    import mor.spark

    request = json.loads(Path(request_file).read_text())
    jars = [line.strip() for line in Path(jars_file).read_text().splitlines() if line.strip()]
    spark = spark_session(jars, request["cores"])
    results: dict[str, object] = {"spark_version": spark.version, "cases": {}}
    for case in request["cases"]:
        table = mor.StaticTable.from_metadata(case["metadata"])
        readers = {
            "native_parquet": lambda c=case: spark.read.parquet(*c["data_paths"]),
            "iceberg_spark": lambda c=case: spark.read.format("iceberg").load(c["metadata"]),
            "read_table": lambda t=table: mor.spark.read_table(spark, t),
        }
        expected = {"native_parquet": case["expected_native"], "iceberg_spark": case["expected"], "read_table": case["expected"]}
        for name, build in readers.items():
            row = sum_every_column(build()).collect()[0]
            if row["rows"] != expected[name]["rows"] or row["id"] != expected[name]["id"]:
                raise SystemExit(f"{case['name']} {name}: {row['rows']} rows / id sum {row['id']}, expected {expected[name]}")
        wall: dict[str, list[float]] = {name: [] for name in readers}
        cpu: dict[str, list[float]] = {name: [] for name in readers}
        names = list(readers)
        for round_ in range(request["repeat"]):
            shift = round_ % len(names)  # rotated, as bench_spark_reads.py does
            for name in names[shift:] + names[:shift]:
                c0, t0 = tree_cpu_seconds(), time.perf_counter()
                sum_every_column(readers[name]()).collect()
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(tree_cpu_seconds() - c0)
        results["cases"][case["name"]] = {  # type: ignore[index]
            name: {"median_seconds": statistics.median(wall[name]), "median_cpu_seconds": statistics.median(cpu[name]),
                   "samples_seconds": wall[name], "samples_cpu_seconds": cpu[name]}
            for name in readers
        }  # fmt: skip
        print(f"spark 3.5 {case['name']}: " + ", ".join(f"{n} {statistics.median(wall[n]):.2f} s" for n in readers), flush=True)
    spark.stop()
    Path(result_file).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
