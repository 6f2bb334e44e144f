"""CPU of one Spark read task's Python work, without Spark: `mor.spark.scan.read_group` (what a
format("mor") task runs: the local reader, then each batch cast to Spark's Arrow schema) against
the local reader alone (`TaskReader.read`), on a table with 10% of EVERY file's rows
position-deleted (`--format-version 3`: by deletion vectors). The difference is what mor's Spark source adds per row on the Python side;
the rest of format("mor")'s cost over native Parquet is Spark's (Python worker IPC, Arrow to
rows in the JVM). Process CPU time (every thread), best of --repeat. `--profile` prints a
cProfile of read_group.

    .venv/bin/python benchmarks/profile_spark_read_task.py --rows 1000000 --files 4
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO_ROOT, TABLE_NAME, build_warehouse, file_slices, generate_events

from mor.read.position_deletes import DeleteFileCache
from mor.read.task_reader import TaskReader
from mor.spark.options import read_options, table_ref
from mor.spark.scan import plan_scan, read_group


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--format-version", type=int, default=2, help="3: deletion vectors instead of position delete files")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data" / "wh-read-task")
    args = p.parse_args(argv)
    table, _ = build_warehouse(args.data_dir, file_slices(generate_events(args.rows, 1), args.files), format_version=args.format_version)
    table.delete("value < 0.1")
    options = {"warehouse": str(args.data_dir), "path": TABLE_NAME}
    plan = plan_scan(table_ref(options), read_options(options), requested=None)
    tasks = plan.tasks()

    def spark_task() -> int:
        return sum(b.num_rows for b in read_group(plan, tasks))

    def local_reader() -> int:
        io = plan.ref.file_io()
        reader = TaskReader(io, plan.schema, plan.projection, plan.row_filter, DeleteFileCache(io, tasks), False)
        reader.cache.prefetch()
        rows = 0
        for task in tasks:
            rows += sum(b.num_rows for b in reader.read(task))
            reader.cache.done(task)
        return rows

    best: dict[str, float] = {}
    counts: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, fn in (("local reader", local_reader), ("read_group (Spark task)", spark_task)):
            fn_: Callable[[], int] = fn
            started = time.process_time()
            counts[name] = fn_()
            best[name] = min(best.get(name, float("inf")), time.process_time() - started)
    if len(set(counts.values())) != 1:
        raise RuntimeError(f"the readers disagree: {counts}")
    for name, seconds in best.items():
        print(f"{name:26} {seconds:.3f} s CPU for {counts[name]:,} live rows ({seconds / counts[name] * 1e9:.0f} ns/row)")
    print(f"read_group / local reader: {best['read_group (Spark task)'] / best['local reader']:.2f}x")
    if args.profile:
        cProfile.runctx("spark_task()", globals(), {"spark_task": spark_task}, "/tmp/read_group.prof")
        pstats.Stats("/tmp/read_group.prof").sort_stats("cumtime").print_stats(15)
    shutil.rmtree(args.data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
