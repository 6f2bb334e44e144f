"""Spark reads at lake scale (issue 53, item 3): a table of N small data files, each with its
own position delete file, read by `mor.spark.read_table` against `spark.read.parquet` of the
same files (deletes ignored).

The table: N data files of `--rows-per-file` rows (bench columns: id, category, value, ts,
payload), then one position delete file per data file removing one row (10% at 10 rows a file),
written with mor's own writers and committed in two commits (an append, a row delta). It is
cached under `--data-dir` by size: a second run reads the same table without building it.

Readers, each timed as the DataFrame's build (Spark checks and lists the files there) and the
first `count()` on it:
  - native_parquet: `spark.read.parquet(*paths)` as written: Spark lists more than 32 paths in a
    job of one task per path, up to 10,000 tasks (measured once, in the first session);
  - native_parquet_listed: the same with the listing mor's reads use (one task per core,
    `spark.sql.sources.parallelPartitionDiscovery.parallelism`): the floor;
  - read_table: `mor.spark.read_table(spark, table)`: planned by mor, files filtered by the JVM
    delete functions.
Each of `--sessions` Spark sessions (local[--cores]) runs in a process of its own: an untimed
native_parquet_listed read first (Spark's reading compiled by the JIT, the files in the page
cache; the first session then times native_parquet); read_table of another table of the same
shape (built with another seed; at most 10,000 files), the first delete files this JVM reads
("first in the JVM": mor's reading not yet compiled); read_table of the measured table with the
executor's delete cache empty ("cold": every delete file read, mor's plan of it not cached);
then `--repeat` rounds of native_parquet_listed and read_table, who goes first alternating
("warm": the executors keep the deletes they read, spark.mor.deletes.cacheBytes). Counts are checked against
the generated rows. Wall and CPU seconds (the process tree: the driver and its JVM) are kept;
ratios are mor's median over the floor's warm median, from this one run (1.0 = as fast as
native Parquet; lower is faster). On a machine shared with other work, the CPU ratios are the
steadier ones.

    .venv/bin/python benchmarks/bench_spark_scale.py                        # 10,000 files
    .venv/bin/python benchmarks/bench_spark_scale.py --large                # 100,000 files
    .venv/bin/python benchmarks/bench_spark_scale.py --files 500 --sessions 1 --repeat 1 --out /tmp/s.json   # smoke
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_spark import start_spark
from common import REPO_ROOT, TABLE_NAME, BenchmarkError, file_slices, generate_events, log, remove_warehouse, start_result
from proc_cpu import tree_cpu_seconds

BUILDER_VERSION = 1  # raise when the table changes: cached tables of another version are rebuilt
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
RESULT_MARK = "SPARK-SCALE-RESULT "
OTHER_FILES_MAX = 10_000  # the other table mor reads first: as large as the measured one, up to this


def build_table(root: Path, files: int, rows_per_file: int, seed: int) -> dict[str, Any]:
    """A fresh warehouse: `files` data files, then one position delete file per data file
    (position i % rows_per_file of file i), each set in one commit."""
    import mor
    from mor.commit.snapshot_producer import Changes
    from mor.dml.runner import commit
    from mor.format.spec import Operation
    from mor.write.options import WriteOptions
    from mor.write.parquet_files import write_data_files, write_position_delete_file

    remove_warehouse(root)
    root.mkdir(parents=True)
    started = time.perf_counter()
    data = generate_events(files * rows_per_file, seed)
    table = mor.load_catalog(str(root)).create_table(TABLE_NAME, schema=data.schema)
    io, location, schema, spec = table.io, table.location, table.schema(), table.spec()
    options = WriteOptions(table.properties)
    with ThreadPoolExecutor(8) as pool:
        written = pool.map(lambda piece: write_data_files(io, location, schema, spec, piece, options), file_slices(data, files))
        added = [f for group in written for f in group]
        commit(table, Changes(Operation.APPEND, added_data=added))
        deletes = list(pool.map(
            lambda at: write_position_delete_file(io, location, schema, spec, at[1], np.array([at[0] % rows_per_file]), options),
            enumerate(added),
        ))  # fmt: skip
    commit(table, Changes(Operation.DELETE, added_deletes=deletes))
    return {"builder": BUILDER_VERSION, "files": files, "rows_per_file": rows_per_file, "seconds": time.perf_counter() - started}


def ensure_table(data_dir: Path, files: int, rows_per_file: int, seed: int) -> dict[str, Any]:
    """The cached table of this size, built when missing; `build.json` is written last."""
    root = data_dir / f"spark-scale-{files}-{rows_per_file}-{seed}"
    marker = root / "build.json"
    if marker.exists() and json.loads(marker.read_text()).get("builder") == BUILDER_VERSION:
        return {**json.loads(marker.read_text()), "warehouse": str(root), "cached": True}
    log(f"building {files:,} data files + {files:,} position delete files in {root}")
    build = build_table(root, files, rows_per_file, seed)
    marker.write_text(json.dumps(build))
    return {**build, "warehouse": str(root), "cached": False}


def readers(spark: Any, table: Any, paths: list[str]) -> dict[str, Callable[[], Any]]:
    import mor.spark

    def listed() -> Any:
        spark.conf.set(LISTING_PARALLELISM, str(spark.sparkContext.defaultParallelism))
        try:
            return spark.read.parquet(*paths)
        finally:
            spark.conf.unset(LISTING_PARALLELISM)

    return {
        "native_parquet": lambda: spark.read.parquet(*paths),
        "native_parquet_listed": listed,
        "read_table": lambda: mor.spark.read_table(spark, table),
    }


def timed_read(build: Callable[[], Any], expected: int, name: str) -> dict[str, float]:
    """Wall and CPU seconds (this process tree: the driver, its JVM) of the build and the count."""
    c0, t0 = tree_cpu_seconds(), time.perf_counter()
    df = build()
    c1, t1 = tree_cpu_seconds(), time.perf_counter()
    rows = df.count()
    c2, t2 = tree_cpu_seconds(), time.perf_counter()
    if rows != expected:
        raise BenchmarkError(f"{name}: {rows} rows, expected {expected}")
    log(f"  {name}: build {t1 - t0:.2f} s ({c1 - c0:.2f} s CPU), count {t2 - t1:.2f} s ({c2 - c1:.2f} s CPU)")
    return {"build_seconds": t1 - t0, "count_seconds": t2 - t1, "build_cpu_seconds": c1 - c0, "count_cpu_seconds": c2 - c1}


def run_session(spec: dict[str, Any]) -> dict[str, Any]:
    """One Spark session (this process): the warm-up, read_table cold, then the warm rounds."""
    import mor
    import mor.spark

    table = mor.load_catalog(spec["warehouse"]).load_table(TABLE_NAME)
    paths = [t.data_file.file_path for t in table.scan().plan_files()]
    total = spec["files"] * spec["rows_per_file"]
    expected = {"native_parquet": total, "native_parquet_listed": total, "read_table": total - spec["files"]}
    spark = start_spark(spec["cores"])
    build = readers(spark, table, paths)
    out: dict[str, Any] = {"spark_version": spark.version, "files": spec["files"], "other_files": spec["other_files"]}
    timed_read(build["native_parquet_listed"], expected["native_parquet_listed"], "warm-up")
    if spec["default_listing"]:
        out["native_parquet"] = timed_read(build["native_parquet"], expected["native_parquet"], "native_parquet")
    other = mor.load_catalog(spec["other_warehouse"]).load_table(TABLE_NAME)
    other_rows = spec["other_files"] * (spec["rows_per_file"] - 1)
    out["first"] = timed_read(lambda: mor.spark.read_table(spark, other), other_rows, "read_table of another table (first in the JVM)")
    out["cold"] = timed_read(build["read_table"], expected["read_table"], "read_table (cold cache)")
    pair = ["native_parquet_listed", "read_table"]
    out["warm"] = []
    for round_ in range(spec["repeat"]):
        order = pair if round_ % 2 == 0 else pair[::-1]
        out["warm"].append({name: timed_read(build[name], expected[name], name) for name in order})
    spark.stop()
    return out


def session_in_child(spec: dict[str, Any]) -> dict[str, Any]:
    """run_session in a fresh process: an executor's delete cache and mor's planning start empty."""
    done = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], stdout=subprocess.PIPE, text=True)
    print("\n".join(line for line in done.stdout.splitlines() if line.startswith("[")), flush=True)  # its log
    found = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if done.returncode != 0 or not found:
        raise BenchmarkError(f"a session failed (exit {done.returncode})")
    return dict(json.loads(found[-1][len(RESULT_MARK) :]))


MEASURES = ("build_seconds", "count_seconds", "build_cpu_seconds", "count_cpu_seconds")


def median_of(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(s[key] for s in samples) for key in MEASURES}


def summarize(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    floor = median_of([r["native_parquet_listed"] for s in sessions for r in s["warm"]])
    mor_warm = median_of([r["read_table"] for s in sessions for r in s["warm"]])
    mor_cold = median_of([s["cold"] for s in sessions])
    summary = {"native_parquet_listed": floor, "read_table_cold": mor_cold, "read_table_warm": mor_warm}
    if sessions[0]["other_files"] == sessions[0]["files"]:  # the same shape: its first read is this table's, in a new JVM
        summary["read_table_first_in_jvm"] = median_of([s["first"] for s in sessions])
    if "native_parquet" in sessions[0]:
        summary["native_parquet"] = sessions[0]["native_parquet"]
    ratios = {f"{key}_vs_native_listed": {m: n[m] / floor[m] for m in floor} for key, n in summary.items() if key.startswith("read_table")}
    if "native_parquet" in summary:
        ratios.update({f"{key}_vs_native": {m: n[m] / summary["native_parquet"][m] for m in floor} for key, n in summary.items()
                       if key.startswith("read_table")})  # fmt: skip
    return {"medians": summary, "ratios": ratios}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--large", action="store_true", help="100,000 files (overrides --files)")
    p.add_argument("--rows-per-file", type=int, default=10)
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="local[N]")
    p.add_argument("--sessions", type=int, default=3, help="Spark sessions, each in a process of its own")
    p.add_argument("--repeat", type=int, default=2, help="warm rounds in each session")
    p.add_argument("--out", type=Path, default=None, help="default benchmarks/results/spark_scale[_100k].json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data" / "scale")
    args = p.parse_args(argv)
    if args.large:
        args.files = 100_000
    if args.out is None:
        suffix = "" if args.files == 10_000 else f"_{args.files // 1000}k" if args.files % 1000 == 0 else f"_{args.files}"
        args.out = REPO_ROOT / "benchmarks" / "results" / f"spark_scale{suffix}.json"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result = start_result("spark_scale", args)
    result["table"] = ensure_table(args.data_dir, args.files, args.rows_per_file, args.seed)
    other_files = min(args.files, OTHER_FILES_MAX)
    result["other_table"] = ensure_table(args.data_dir, other_files, args.rows_per_file, args.seed + 1)
    spec = {"warehouse": result["table"]["warehouse"], "other_warehouse": result["other_table"]["warehouse"],
            "other_files": other_files, "files": args.files, "rows_per_file": args.rows_per_file, "cores": args.cores,
            "repeat": args.repeat}  # fmt: skip
    sessions = []
    for number in range(args.sessions):
        log(f"session {number + 1} of {args.sessions}: {args.files:,} files")
        sessions.append(session_in_child({**spec, "default_listing": number == 0}))
    result["spark_version"] = sessions[0]["spark_version"]
    result["sessions"] = sessions
    result.update(summarize(sessions))
    result["duration_seconds"] = time.perf_counter() - started
    result["load_average_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(markdown(result))
    print(f"\nwrote {args.out}")
    return 0


def markdown(result: dict[str, Any]) -> str:
    lines = [f"{result['params']['files']:,} files, Spark {result['spark_version']}, medians of {result['params']['sessions']} sessions",
             "| reader | build s (CPU s) | count s (CPU s) |", "|---|---|---|"]  # fmt: skip
    for name, n in result["medians"].items():
        lines.append(
            f"| {name} | {n['build_seconds']:.2f} ({n['build_cpu_seconds']:.2f}) "
            f"| {n['count_seconds']:.2f} ({n['count_cpu_seconds']:.2f}) |"
        )
    for name, r in result["ratios"].items():
        lines.append(f"{name}: build {r['build_seconds']:.2f}x ({r['build_cpu_seconds']:.2f}x CPU), "
                     f"count {r['count_seconds']:.2f}x ({r['count_cpu_seconds']:.2f}x CPU)")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(RESULT_MARK + json.dumps(run_session(json.loads(sys.argv[2]))), flush=True)
        sys.exit(0)
    sys.exit(main())
