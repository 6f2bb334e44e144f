"""Spark reads of merged views: mor's read paths against Spark's native Parquet floor, and
Iceberg Java's own Spark reader (Iceberg-Spark) against its own floor, on the same tables.

Tables (10M rows in 10 files by default; one warehouse each, built from the same generated rows):
  - every_file_10pct: format v2, `value < 0.1` deleted merge-on-read (a position delete file
    per data file: every file has deletes);
  - one_file_10pct: format v2, 10% of ONE file's rows deleted (nine files delete-free);
  - dv_every_file_10pct: format v3, `value < 0.1` deleted (a deletion vector per data file);
  - equality_1pct: format v2, 1% of the ids (sampled, fixed seed) deleted by key with
    `delete_rows` (one equality delete file that applies to every data file).
Readers, each aggregated by the same sum over every column (spark_aggregate.py):
  - Spark 4 (this environment, local[N]): `spark.read.parquet` of the data files with deletes
    ignored (the floor), `mor.spark.read_table` (delete-free files native, the rest native
    filtered by mor's JVM delete functions), `read_table(..., path="python")` and
    `spark.read.format("mor")` (the Python source, the fallback);
  - Spark 3.5.9 with Iceberg 1.10.2's runtime jar (the oracle's jars) and mor in one session
    (the Spark 3.5 env, `.spark35-venv`): its own `spark.read.parquet` floor,
    `spark.read.format("iceberg")` and `mor.spark.read_table`, run by oracle_spark_read.py.
Each reader: one checked warm-up (row count and id sum against the generated data), then
`--repeat` interleaved rounds; wall time and CPU of the whole process tree (proc_cpu.py). The
ratios compare each reader with the floor of the same Spark, measured in the same run: speed =
floor time / reader time (1.0 = as fast as native Parquet), CPU = reader CPU / floor CPU.

    .venv/bin/python benchmarks/bench_spark_reads.py                          # 10M rows, 10 files
    .venv/bin/python benchmarks/bench_spark_reads.py --rows 200000 --files 4 --repeat 1   # smoke
    .venv/bin/python benchmarks/bench_spark_reads.py --rows 100000000 --files 100 --repeat 3 --no-fallback \
        --out benchmarks/results/spark_reads_100m.json                                      # the large scale
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_spark import start_spark  # the same session as the other Spark benchmark
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
)
from proc_cpu import tree_cpu_seconds
from spark_aggregate import sum_every_column

ORACLE_DIR = REPO_ROOT.parent / "shared" / "tools" / "iceberg-oracle"
ORACLE_VENV = Path(os.environ.get("MOR_ORACLE_VENV", REPO_ROOT / ".oracle-venv"))
SPARK35_ENV = REPO_ROOT / "tests" / "spark35" / "spark35_env.py"  # builds .spark35-venv, prints its python
CASES = ("every_file_10pct", "one_file_10pct", "dv_every_file_10pct", "equality_1pct")


def build_case(name: str, root: Path, data: pa.Table, slices: list[pa.Table], args: argparse.Namespace) -> tuple[Any, pa.Array]:
    """The case's table and the ids it deleted."""
    table, _ = build_warehouse(root, slices, format_version=3 if name.startswith("dv_") else None)
    fraction = args.delete_fraction
    if name == "equality_1pct":
        k = max(1, round(data.num_rows * args.equality_fraction))
        ids = pa.array(sorted(random.Random(args.seed).sample(range(data.num_rows), k)), pa.int64())
        table.delete_rows(pa.table({"id": ids}))
        return table, ids
    predicate = f"value < {fraction!r}"
    if name == "one_file_10pct":
        predicate = f"id <= {pc.max(slices[0]['id']).as_py()} and {predicate}"
    deleted = table.scan(filter=predicate, columns=["id"]).to_arrow()["id"].combine_chunks()
    table.delete(predicate)
    return table, deleted


def expected_sums(data: pa.Table, deleted: pa.Array) -> dict[str, int]:
    keep = data.filter(pc.invert(pc.is_in(data["id"], value_set=deleted)))
    return {"rows": keep.num_rows, "id": pc.sum(keep["id"]).as_py() or 0}


def time_readers(readers: dict[str, Callable[[], Any]], repeat: int, expected: dict[str, dict[str, int]]) -> dict[str, Any]:
    for name, build in readers.items():
        row = sum_every_column(build()).collect()[0]
        if row["rows"] != expected[name]["rows"] or row["id"] != expected[name]["id"]:
            raise BenchmarkError(f"{name}: {row['rows']} rows / id sum {row['id']}, expected {expected[name]}")
    wall: dict[str, list[float]] = {name: [] for name in readers}
    cpu: dict[str, list[float]] = {name: [] for name in readers}
    names = list(readers)
    for round_ in range(repeat):
        # Rotated each round, so that no reader always runs first or right after the same one.
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            c0, t0 = tree_cpu_seconds(), time.perf_counter()
            sum_every_column(readers[name]()).collect()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(tree_cpu_seconds() - c0)
    return {
        name: {
            "median_seconds": statistics.median(wall[name]),
            "median_cpu_seconds": statistics.median(cpu[name]),
            "samples_seconds": wall[name],
            "samples_cpu_seconds": cpu[name],
        }
        for name in readers
    }


def mor_readers(spark: Any, root: Path, table: Any, paths: list[str], fallback: bool = True) -> dict[str, Callable[[], Any]]:
    """The floor and mor's readers; `fallback`: the Python source's two forms too."""
    import mor.spark

    readers: dict[str, Callable[[], Any]] = {
        "native_parquet": lambda: spark.read.parquet(*paths),
        "read_table": lambda: mor.spark.read_table(spark, table),
    }
    if fallback:
        readers["format_mor"] = lambda: spark.read.format("mor").option("warehouse", str(root)).load(TABLE_NAME)
        if "path" in inspect.signature(mor.spark.read_table).parameters:
            readers["read_table_python"] = lambda: mor.spark.read_table(spark, table, path="python")
    return readers


def run_oracle(cases: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """Iceberg-Spark's and mor's numbers for the same tables on Spark 3.5, in one session of the
    Spark 3.5 env with the oracle's Iceberg jars."""
    env = {**os.environ, "ORACLE_VENV": str(ORACLE_VENV)}
    subprocess.run(["bash", str(ORACLE_DIR / "setup.sh")], check=True, env=env, capture_output=True)
    spark35 = subprocess.run([sys.executable, str(SPARK35_ENV)], check=True, capture_output=True, text=True).stdout.strip()
    request = args.data_dir / "oracle-request.json"
    result = args.data_dir / "oracle-result.json"
    request.write_text(json.dumps({"repeat": args.repeat, "cores": args.cores, "cases": cases}))
    script = Path(__file__).with_name("oracle_spark_read.py")
    jars = ORACLE_VENV / "iceberg-oracle" / "jars.txt"
    done = subprocess.run([spark35, str(script), str(jars), str(request), str(result)], env=env)
    if done.returncode != 0:
        raise BenchmarkError(f"the Iceberg-Spark run failed (exit {done.returncode})")
    return json.loads(result.read_text())


def ratios(timings: dict[str, Any]) -> dict[str, dict[str, float]]:
    floor = timings["native_parquet"]
    return {
        name: {
            "speed_vs_native": floor["median_seconds"] / t["median_seconds"],
            "cpu_vs_native": t["median_cpu_seconds"] / floor["median_cpu_seconds"],
        }
        for name, t in timings.items()
        if name != "native_parquet"
    }


def markdown(result: dict[str, Any]) -> str:
    lines = ["| table state | reader | speed vs its native floor | CPU vs its floor |", "|---|---|---|---|"]
    for case, r in result["cases"].items():
        for name, q in r["mor_ratios"].items():
            lines.append(
                f"| {case} | mor {name} (Spark {result['spark_version']}) | {q['speed_vs_native']:.2f}x | {q['cpu_vs_native']:.2f}x |"
            )
        for name, q in r.get("iceberg_ratios", {}).items():
            reader = "Iceberg-Spark" if name == "iceberg_spark" else f"mor {name}"
            lines.append(
                f"| {case} | {reader} (Spark {result['oracle_spark_version']}) | {q['speed_vs_native']:.2f}x | {q['cpu_vs_native']:.2f}x |"
            )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="local[N]")
    p.add_argument("--repeat", type=int, default=5, help="timed rounds after one checked warm-up")
    p.add_argument("--delete-fraction", type=float, default=0.1)
    p.add_argument("--equality-fraction", type=float, default=0.01)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--no-oracle", action="store_true", help="skip Spark 3.5 (Iceberg-Spark and mor there)")
    p.add_argument("--no-fallback", action="store_true", help="skip the Python source's readers (format mor, path=python)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "spark_reads.json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    p.add_argument("--keep", action="store_true")
    args = p.parse_args(argv)
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    if not set(args.cases) <= set(CASES):
        p.error(f"--cases takes {', '.join(CASES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result = start_result("spark_reads", args)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    spark = start_spark(args.cores)
    result["spark_version"] = spark.version
    result["cases"] = {}
    native_expected = expected_sums(data, pa.array([], pa.int64()))
    oracle_cases = []
    roots = []
    for name in args.cases:
        root = args.data_dir / f"wh-spark-reads-{name}"
        roots.append(root)
        table, deleted = build_case(name, root, data, slices, args)
        tasks = table.scan().plan_files()
        paths = [t.data_file.file_path for t in tasks]
        expected = expected_sums(data, deleted)
        log(f"({name}) {len(deleted):,} rows deleted; {sum(1 for t in tasks if t.delete_files)} of {len(tasks)} files have deletes")
        readers = mor_readers(spark, root, table, paths, fallback=not args.no_fallback)
        timings = time_readers(readers, args.repeat, {n: native_expected if n == "native_parquet" else expected for n in readers})
        result["cases"][name] = {"deleted_rows": len(deleted), "mor_timings": timings, "mor_ratios": ratios(timings)}
        log(
            f"({name}) "
            + ", ".join(
                f"{k} {v['speed_vs_native']:.2f}x speed, {v['cpu_vs_native']:.2f}x CPU"
                for k, v in result["cases"][name]["mor_ratios"].items()
            )
        )
        oracle_cases.append(
            {
                "name": name,
                "metadata": table.metadata_location,
                "data_paths": [local_path(p) for p in paths],
                "expected": expected,
                "expected_native": native_expected,
            }
        )
    spark.stop()
    if not args.no_oracle:
        oracle = run_oracle(oracle_cases, args)
        result["oracle_spark_version"] = oracle["spark_version"]
        for name, timings in oracle["cases"].items():
            result["cases"][name]["iceberg_timings"] = timings
            result["cases"][name]["iceberg_ratios"] = ratios(timings)
    if not args.keep:
        for root in roots:
            remove_warehouse(root)
    result["duration_seconds"] = time.perf_counter() - started
    result["load_average_end"] = os.getloadavg()
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(markdown(result))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
