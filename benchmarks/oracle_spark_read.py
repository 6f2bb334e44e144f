"""Iceberg Java's own Spark reader on mor's benchmark tables: run by bench_spark_reads.py with
the oracle's Python (`.oracle-venv`: Spark 3.5.9 + iceberg-spark-runtime 1.10.2), never imported.

    <oracle python> benchmarks/oracle_spark_read.py <oracle dir> <request.json> <result.json>

The request lists cases (a table's metadata file, its data files, the expected row count and id
sum) and a repeat count. For each case, in one Spark 3.5 session (local[N], as the oracle builds
it): `spark.read.parquet` of the data files without deletes (this Spark's native floor) and
`spark.read.format("iceberg").load(metadata)`, each aggregated by the same sum over every column
(spark_aggregate.py); one checked warm-up each, then `repeat` interleaved rounds of wall time and
CPU of the whole process tree (driver, JVM, workers: proc_cpu.py).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proc_cpu import tree_cpu_seconds  # noqa: E402
from spark_aggregate import sum_every_column  # noqa: E402


def main(oracle_dir: str, request_file: str, result_file: str) -> int:
    sys.path.insert(0, oracle_dir)
    import oracle  # the oracle's session builder: jars, UTC, local[2]

    request = json.loads(Path(request_file).read_text())
    spark = oracle.spark_session(app="mor-bench-iceberg-spark", extra_conf={"spark.driver.memory": "6g"})
    spark.sparkContext.setLogLevel("ERROR")
    results: dict[str, object] = {"spark_version": spark.version, "cases": {}}
    for case in request["cases"]:
        readers = {
            "native_parquet": lambda c=case: spark.read.parquet(*c["data_paths"]),
            "iceberg_spark": lambda c=case: spark.read.format("iceberg").load(c["metadata"]),
        }
        expected = {"native_parquet": case["expected_native"], "iceberg_spark": case["expected"]}
        for name, build in readers.items():
            row = sum_every_column(build()).collect()[0]
            if row["rows"] != expected[name]["rows"] or row["id"] != expected[name]["id"]:
                raise SystemExit(f"{case['name']} {name}: {row['rows']} rows / id sum {row['id']}, expected {expected[name]}")
        wall: dict[str, list[float]] = {name: [] for name in readers}
        cpu: dict[str, list[float]] = {name: [] for name in readers}
        for _ in range(request["repeat"]):
            for name, build in readers.items():
                c0, t0 = tree_cpu_seconds(), time.perf_counter()
                sum_every_column(build()).collect()
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(tree_cpu_seconds() - c0)
        results["cases"][case["name"]] = {  # type: ignore[index]
            name: {"median_seconds": statistics.median(wall[name]), "median_cpu_seconds": statistics.median(cpu[name]),
                   "samples_seconds": wall[name], "samples_cpu_seconds": cpu[name]}
            for name in readers
        }
        print(f"iceberg-spark {case['name']}: " + ", ".join(f"{n} {statistics.median(wall[n]):.2f} s" for n in readers), flush=True)
    spark.stop()
    Path(result_file).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
