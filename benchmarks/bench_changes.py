"""The change feed's cost against a full scan: `table.changes()` of one commit should cost what
the commit changed, not what the table holds.

On one table (10M rows in 10 files by default), each commit below is followed by reading its
changes (`table.changes(from_snapshot_id=parent, to_snapshot_id=commit)`), timed against a full
scan of the same table (`table.scan().to_arrow()`), interleaved, median of `--repeat`:
  - delete_clustered_0.1pct: 0.1% of the rows, a contiguous id range inside one data file,
    deleted merge-on-read (the feed reads the delete file and the row group holding the rows);
  - delete_0.1pct: `value < 0.001` deleted merge-on-read (scattered: a position delete file per
    data file; the feed reads the delete files and the row groups holding their positions,
    which for scattered rows is every row group: mor reads no unit smaller than a row group);
  - upsert_1pct: 1% of the ids (sampled, fixed seed) upserted with new values (position
    strategy: position deletes plus a new data file; the feed pairs them into updates by `id`);
  - upsert_clustered_1pct: 1% of the ids, a contiguous range in one data file, upserted (the
    feed reads the row groups holding them and the new file);
  - upsert_equality_1pct: the same through the equality strategy (one equality delete file that
    reaches every older data file: the feed reads their key column to find the rows it hits).
Each feed is checked: as many DELETE / UPDATE pairs as the commit changed rows.
With `--spark` (local[N]) each commit is also read through Spark: the same sum over every column
(spark_aggregate.py) of `format("mor").option("changes", "true")` between the two snapshots and
of `format("mor")` (the full merged table), interleaved, median of `--repeat`.

    .venv/bin/python benchmarks/bench_changes.py                          # 10M rows, 10 files
    .venv/bin/python benchmarks/bench_changes.py --rows 200000 --files 4  # smoke
    .venv/bin/python benchmarks/bench_changes.py --spark                  # and through Spark
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    REPO_ROOT,
    TABLE_NAME,
    BenchmarkError,
    build_warehouse,
    file_slices,
    generate_events,
    log,
    median_timing,
    remove_warehouse,
    start_result,
)

TARGET_FRACTION_OF_SCAN = 0.05  # the feed of one commit: at most 5% of a full scan's time


def upsert_source(data: pa.Table, fraction: float, seed: int, shift: float) -> pa.Table:
    k = max(1, round(data.num_rows * fraction))
    ids = sorted(random.Random(seed).sample(range(data.num_rows), k))
    rows = data.take(pa.array(ids))
    return rows.set_column(rows.schema.get_field_index("value"), "value", pc.add(rows["value"], shift))


def spark_timings(spark: Any, root: Path, parent: int, current: int, repeat: int) -> dict[str, Any]:
    """The feed and the full table through Spark, as the same aggregate; each checked once."""
    from spark_aggregate import sum_every_column

    def reader(**options: Any) -> Any:
        r = spark.read.format("mor").option("warehouse", str(root))
        for key, value in options.items():
            r = r.option(key, str(value))
        return r.load(TABLE_NAME)

    feed = reader(changes="true", **{"start-snapshot-id": parent, "end-snapshot-id": current, "changes-on": "id"})
    full = reader()
    expected = {"changes": None, "full_scan": None}
    for name, df in (("changes", feed), ("full_scan", full)):
        expected[name] = sum_every_column(df).collect()[0]["rows"]  # warm-up; the row count checked below

    def aggregate(df: Any) -> pa.Table:  # median_timing takes Arrow results
        return pa.Table.from_pylist([sum_every_column(df).collect()[0].asDict()])

    timings = median_timing({"full_scan": lambda: aggregate(full), "changes": lambda: aggregate(feed)}, repeat)
    timings["rows"] = expected
    return timings


def measure(
    table: Any, name: str, commit: Any, expect: dict[str, int], repeat: int, spark: Any = None, root: Path | None = None
) -> dict[str, Any]:
    parent = table.current_snapshot().snapshot_id
    t0 = time.perf_counter()
    commit()
    commit_seconds = time.perf_counter() - t0
    current = table.current_snapshot().snapshot_id
    feed = table.changes(from_snapshot_id=parent, to_snapshot_id=current, on=["id"]).to_arrow()
    counts = {t: c for t, c in zip(*pc.value_counts(feed["_change_type"]).flatten())}
    counts = {t.as_py(): c.as_py() for t, c in counts.items()}
    if counts != expect:
        raise BenchmarkError(f"{name}: the feed holds {counts}, expected {expect}")
    timings = median_timing(
        {
            "full_scan": lambda: table.scan().to_arrow(),
            "changes": lambda: table.changes(from_snapshot_id=parent, to_snapshot_id=current, on=["id"]).to_arrow(),
        },
        repeat,
    )
    ratio = timings["changes"]["median_seconds"] / timings["full_scan"]["median_seconds"]
    log(
        f"({name}) changes {timings['changes']['median_seconds']:.3f} s, "
        f"full scan {timings['full_scan']['median_seconds']:.3f} s: {ratio:.1%}"
    )
    result = {
        "commit_seconds": commit_seconds,
        "feed": counts,
        "timings": timings,
        "changes_over_scan": ratio,
        "target_met": ratio <= TARGET_FRACTION_OF_SCAN,
    }
    if spark is not None:
        st = spark_timings(spark, root, parent, current, repeat)
        if st["rows"]["changes"] != feed.num_rows:
            raise BenchmarkError(f"{name}: Spark's feed holds {st['rows']['changes']} rows, the local one {feed.num_rows}")
        result["spark"] = st
        result["spark_changes_over_scan"] = st["changes"]["median_seconds"] / st["full_scan"]["median_seconds"]
        log(
            f"({name}) Spark: changes {st['changes']['median_seconds']:.3f} s, full table {st['full_scan']['median_seconds']:.3f} s: "
            f"{result['spark_changes_over_scan']:.1%}"
        )
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "changes.json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    p.add_argument("--spark", action="store_true", help="also read each feed through Spark")
    p.add_argument("--cores", type=int, default=2, help="local[N] for --spark")
    args = p.parse_args(argv)
    result = start_result("changes", args)
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    root = args.data_dir / "wh-changes"
    table, result["build"] = build_warehouse(root, slices)
    spark = None
    if args.spark:
        from bench_spark import start_spark

        spark = start_spark(args.cores)
    on_spark = {"spark": spark, "root": root}
    start = args.rows // (2 * args.files)  # inside the first file
    clustered = f"id >= {start} and id < {start + max(1, args.rows // 1000)}"
    result["delete_clustered_0.1pct"] = measure(
        table, "delete_clustered_0.1pct", lambda: table.delete(clustered), {"DELETE": max(1, args.rows // 1000)}, args.repeat, **on_spark
    )
    deleted = pc.sum(pc.less(data["value"], 0.001)).as_py()
    deleted -= pc.sum(
        pc.and_(
            pc.less(data["value"], 0.001),
            pc.and_(pc.greater_equal(data["id"], start), pc.less(data["id"], start + max(1, args.rows // 1000))),
        )
    ).as_py()
    result["delete_0.1pct"] = measure(
        table, "delete_0.1pct", lambda: table.delete("value < 0.001"), {"DELETE": deleted}, args.repeat, **on_spark
    )
    live_ids = table.scan(columns=["id"]).to_arrow()["id"]
    source = upsert_source(data.filter(pc.is_in(data["id"], value_set=live_ids)), 0.01, args.seed, 1.0)
    pairs = {"UPDATE_BEFORE": source.num_rows, "UPDATE_AFTER": source.num_rows}
    result["upsert_1pct"] = measure(table, "upsert_1pct", lambda: table.upsert(source, on=["id"]), pairs, args.repeat, **on_spark)
    low = args.rows // args.files + args.rows // (2 * args.files)  # inside the second file
    block = data.filter(pc.and_(pc.greater_equal(data["id"], low), pc.less(data["id"], low + max(1, args.rows // 100))))
    block = block.filter(pc.is_in(block["id"], value_set=live_ids))  # not the ids deleted above: those would be inserts
    block = block.set_column(block.schema.get_field_index("value"), "value", pc.add(block["value"], 3.0))
    result["upsert_clustered_1pct"] = measure(
        table, "upsert_clustered_1pct", lambda: table.upsert(block, on=["id"]),
        {"UPDATE_BEFORE": block.num_rows, "UPDATE_AFTER": block.num_rows}, args.repeat, **on_spark,
    )  # fmt: skip
    source2 = upsert_source(data.filter(pc.is_in(data["id"], value_set=live_ids)), 0.01, args.seed + 1, 2.0)  # new values for every id
    pairs2 = {"UPDATE_BEFORE": source2.num_rows, "UPDATE_AFTER": source2.num_rows}
    result["upsert_equality_1pct"] = measure(
        table, "upsert_equality_1pct", lambda: table.upsert(source2, on=["id"], strategy="equality"), pairs2, args.repeat, **on_spark
    )
    if spark is not None:
        spark.stop()
    remove_warehouse(root)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    for name in ("delete_clustered_0.1pct", "delete_0.1pct", "upsert_1pct", "upsert_clustered_1pct", "upsert_equality_1pct"):
        r = result[name]
        print(
            f"{name:>22}: changes {r['timings']['changes']['median_seconds']:.3f} s = {r['changes_over_scan']:.1%} of a full scan "
            f"({r['timings']['full_scan']['median_seconds']:.3f} s); "
            f"target <= {TARGET_FRACTION_OF_SCAN:.0%}: {'met' if r['target_met'] else 'MISSED'}"
            + (f"; Spark {r['spark_changes_over_scan']:.1%}" if "spark" in r else "")
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
