"""Scan planning at scale (issue 9): mor's `table.scan().plan_files()` against pyiceberg 0.12's
on the same table, at 1k / 10k / 100k data files with as many position delete files, and how
mor's planning grows with the number of commits (manifests) holding the same files.

Planning never opens a data file, so the tables are built from synthetic content files
(real-looking paths, record counts, column sizes/counts, bounds of every column, partition
values), committed through mor's own snapshot producer (`Table._commit`) in `--commits` commits:
the first half append data files, the second half add one position delete file per data file
(each naming its data file, as mor's DELETE writes them). pyiceberg opens the same table through
its SqlCatalog over mor's catalog.db. Both planners must return the same data files with the
same delete files each, or the benchmark aborts.

Timed, interleaved per round, median of `--repeat` (after one warm-up call each):
  - mor: `table.scan(filter).plan_files()` on one table object (decoded manifests cached);
  - mor_cold: the same with mor's manifest cache emptied first (every manifest read and decoded);
  - pyiceberg: `pyiceberg_table.scan(row_filter=filter).plan_files()`.
Filters: a full scan, and `id < X` selecting 1% of the data files by their bounds (plus, for the
partitioned layout, one partition of 12).

    .venv/bin/python benchmarks/bench_planning.py --sizes 1000,10000,100000 \
        --growth-files 10000 --growth-commits 10,100,1000 \
        --out benchmarks/results/planning.json --data-dir benchmarks/data
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from common import CATEGORIES, TABLE_NAME, TS_BASE_US, BenchmarkError, log, profile_call, remove_warehouse, start_result
from pyiceberg.conversions import to_bytes
from pyiceberg.types import DoubleType, LongType, StringType, TimestamptzType

import mor
from mor.commit.snapshot_producer import Changes
from mor.dml.runner import commit
from mor.format.content_file import DataFile, DeleteFile
from mor.format.spec import DELETE_FILE_PATH_ID, DELETE_POS_ID, FileContent, Operation

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("category", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("payload", pa.string()),
    ]
)
ROWS_PER_FILE = 100_000
US_PER_FILE = 3_000_000 * ROWS_PER_FILE
LAYOUTS = {"unpartitioned": None, "category": ["category"]}


# --------------------------------------------------------------------------- synthetic files


def _long(v: int) -> bytes:
    return to_bytes(LongType(), v)


def data_file(location: str, i: int, partitioned: bool) -> DataFile:
    category = CATEGORIES[i % len(CATEGORIES)]
    folder = f"{location}/data/category={category}" if partitioned else f"{location}/data"
    low_id, high_id = i * ROWS_PER_FILE, (i + 1) * ROWS_PER_FILE - 1
    low_ts = TS_BASE_US + i * US_PER_FILE
    cats = (category, category) if partitioned else (CATEGORIES[0], CATEGORIES[-1])
    n = ROWS_PER_FILE
    return DataFile(
        content=FileContent.DATA,
        file_path=f"{folder}/{uuid.uuid4()}.parquet",
        file_format="PARQUET",
        spec_id=0,
        partition=(category,) if partitioned else (),
        record_count=n,
        file_size_in_bytes=4_200_000 + i % 997,
        column_sizes={1: 410_000, 2: 9_000, 3: 820_000, 4: 600_000, 5: 2_300_000},
        value_counts={c: n for c in range(1, 6)},
        null_value_counts={c: 0 for c in range(1, 6)},
        nan_value_counts={3: 0},
        lower_bounds={
            1: _long(low_id),
            2: to_bytes(StringType(), cats[0]),
            3: to_bytes(DoubleType(), 0.0000031),
            4: to_bytes(TimestamptzType(), low_ts),
            5: to_bytes(StringType(), f"{cats[0]}/{low_id}/1"),
        },
        upper_bounds={
            1: _long(high_id),
            2: to_bytes(StringType(), cats[1]),
            3: to_bytes(DoubleType(), 0.9999987),
            4: to_bytes(TimestamptzType(), low_ts + US_PER_FILE),
            5: to_bytes(StringType(), f"{cats[1]}/{high_id}/9"),
        },
        split_offsets=(4, 1_048_580, 2_097_156, 3_145_732),
        sort_order_id=0,
    )


def position_delete_file(data: DataFile, i: int) -> DeleteFile:
    path = data.file_path.encode()
    rows = 50 + i % 200
    return DeleteFile(
        content=FileContent.POSITION_DELETES,
        file_path=data.file_path.replace(".parquet", f"-{uuid.uuid4()}-deletes.parquet"),
        file_format="PARQUET",
        spec_id=data.spec_id,
        partition=data.partition,
        record_count=rows,
        file_size_in_bytes=1_500 + rows * 3,
        column_sizes={DELETE_POS_ID: 8 * rows, DELETE_FILE_PATH_ID: 340},
        value_counts={DELETE_POS_ID: rows, DELETE_FILE_PATH_ID: rows},
        null_value_counts={DELETE_POS_ID: 0, DELETE_FILE_PATH_ID: 0},
        nan_value_counts={},
        lower_bounds={DELETE_POS_ID: _long(i % 1000), DELETE_FILE_PATH_ID: path},
        upper_bounds={DELETE_POS_ID: _long(ROWS_PER_FILE - 1 - i % 1000), DELETE_FILE_PATH_ID: path},
        split_offsets=(4,),
        referenced_data_file=data.file_path,
    )


def build_table(root: Path, files: int, commits: int, layout: str, merge: bool = True) -> tuple[Any, dict[str, Any]]:
    """A fresh warehouse: `files` data files in commits//2 appends, then one position delete file
    per data file in the remaining commits (each covering one append's files)."""
    remove_warehouse(root)
    root.mkdir(parents=True)
    started = time.perf_counter()
    properties = merge_property(merge)
    table = mor.load_catalog(str(root)).create_table(TABLE_NAME, schema=SCHEMA, partition_by=LAYOUTS[layout], properties=properties)
    appends = max(1, commits // 2)
    batches = [range(files * b // appends, files * (b + 1) // appends) for b in range(appends)]
    location = table.location.rstrip("/")
    data: list[list[DataFile]] = []
    for batch in batches:
        added = [data_file(location, i, LAYOUTS[layout] is not None) for i in batch]
        commit(table, Changes(Operation.APPEND, added_data=added))
        data.append(added)
    for batch, added in zip(batches, data):
        deletes = [position_delete_file(d, i) for i, d in zip(batch, added)]
        commit(table, Changes(Operation.DELETE, added_deletes=deletes))
    seconds = time.perf_counter() - started
    load_started = time.perf_counter()
    mor.load_catalog(str(root)).load_table(TABLE_NAME)
    return table, {
        "seconds": seconds,
        "data_files": files,
        "delete_files": files,
        "commits": 2 * appends,
        "snapshots": len(table.snapshots()),
        "manifests": manifest_counts(table),
        "layout": layout,
        "properties": properties,
        "load_table_seconds": time.perf_counter() - load_started,
        "metadata_location": table.metadata_location,
    }


def open_with_pyiceberg(root: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("default", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
    return catalog.load_table(TABLE_NAME)


# --------------------------------------------------------------------------- planning and checks


def mor_plan(table: Any, row_filter: str | None) -> dict[str, frozenset[str]]:
    return mor_plan_of(table.scan(filter=row_filter).plan_files())


def pyiceberg_plan(table: Any, row_filter: str | None) -> dict[str, frozenset[str]]:
    scan = table.scan() if row_filter is None else table.scan(row_filter=row_filter)
    return pyiceberg_plan_of(scan.plan_files())


def mor_plan_of(tasks: Any) -> dict[str, frozenset[str]]:
    """data file -> its delete files, from mor's planned tasks (to compare with pyiceberg's)."""
    return {t.data_file.file_path: frozenset(f.file_path for f in t.delete_files) for t in tasks}


def pyiceberg_plan_of(tasks: Any) -> dict[str, frozenset[str]]:
    return {t.file.file_path: frozenset(f.file_path for f in t.delete_files) for t in tasks}


def clear_mor_cache() -> None:
    try:
        from mor.planning import manifest_cache
    except ImportError:  # mor before planning had a cache (`git worktree` of an older commit)
        return
    manifest_cache.clear()


def manifest_counts(table: Any) -> dict[str, int]:
    from mor.planning.planner import manifests_of

    manifests = manifests_of(table.io, table.current_snapshot())
    return {"data": sum(1 for m in manifests if m.content == 0), "deletes": sum(1 for m in manifests if m.content == 1)}


def merge_property(merge: bool) -> dict[str, str]:
    """Tables of the growth series keep one manifest per commit unless `merge`; a mor without
    manifest merging knows no such property (and never merges)."""
    from mor.format.properties import CHECKS

    key = "commit.manifest-merge.enabled"
    return {key: "true" if merge else "false"} if key in CHECKS else {}


def check_same_plan(
    label: str, ours: dict[str, frozenset[str]], theirs: dict[str, frozenset[str]], expected_files: int | None
) -> dict[str, Any]:
    same = ours == theirs
    with_deletes = sum(1 for v in ours.values() if v)
    check = {
        "filter": label,
        "data_files": len(ours),
        "data_files_with_deletes": with_deletes,
        "delete_file_references": sum(len(v) for v in ours.values()),
        "same_as_pyiceberg": same,
    }
    if not same or (expected_files is not None and len(ours) != expected_files):
        only_ours = sorted(set(ours) - set(theirs))[:3]
        only_theirs = sorted(set(theirs) - set(ours))[:3]
        differ = sorted(k for k in set(ours) & set(theirs) if ours[k] != theirs[k])[:3]
        raise BenchmarkError(
            f"{label}: plans differ: {check}, only mor {only_ours}, only pyiceberg {only_theirs}, "
            f"different deletes {differ}, expected {expected_files} data files"
        )
    return check


def time_calls(
    fns: dict[str, Callable[[], Any]], repeat: int, setups: dict[str, Callable[[], None]] | None = None
) -> dict[str, dict[str, Any]]:
    """One warm-up call each, then `repeat` rounds with the calls interleaved. `setups[name]` runs
    untimed before each call of `name` (emptying a cache). A call's result is freed after its
    timer stops: freeing a plan of 10,000 tasks is not planning."""
    setups = setups or {}
    for name, fn in fns.items():
        setups.get(name, lambda: None)()
        fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            setups.get(name, lambda: None)()
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            result = fn()
            samples[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            del result
    return {
        name: {
            "median_seconds": statistics.median(s),
            "min_seconds": min(s),
            "samples_seconds": s,
            "median_cpu_seconds": statistics.median(cpu[name]),
        }
        for name, s in samples.items()
    }


def filters_for(files: int, layout: str) -> dict[str, tuple[str | None, int]]:
    """name -> (filter text, number of data files it selects)."""
    selected = max(1, files // 100)
    out: dict[str, tuple[str | None, int]] = {"full": (None, files), "id_1pct": (f"id < {selected * ROWS_PER_FILE}", selected)}
    if layout != "unpartitioned":
        out["one_partition"] = ("category = 'cat-03'", len(range(3, files, len(CATEGORIES))))
    return out


def cache_settings() -> dict[str, Any] | None:
    try:
        from mor.planning import manifest_cache
    except ImportError:
        return None
    return {"max_bytes": manifest_cache.cache().max_bytes, "threads": manifest_cache.DEFAULT_THREADS}


def cold_one_thread(plan: Callable[[], Any]) -> Callable[[], Any]:
    """`plan` reading manifests one after another in this thread (the caller empties the cache)."""
    from mor.planning import manifest_cache

    def run() -> Any:
        manifest_cache.configure(threads=1)
        try:
            return plan()
        finally:
            manifest_cache.configure(threads=manifest_cache.DEFAULT_THREADS)

    return run


def measure(table: Any, root: Path, files: int, layout: str, repeat: int, with_pyiceberg: bool, threads_variant: bool) -> dict[str, Any]:
    theirs = open_with_pyiceberg(root) if with_pyiceberg else None
    has_cache = cache_settings() is not None
    out: dict[str, Any] = {}
    for name, (text, expected) in filters_for(files, layout).items():
        ours = mor_plan(table, text)
        check = (
            check_same_plan(name, ours, pyiceberg_plan(theirs, text), expected)
            if theirs is not None
            else {"filter": name, "data_files": len(ours), "same_as_pyiceberg": None}
        )
        if len(ours) != expected:
            raise BenchmarkError(f"{name}: mor planned {len(ours)} data files, expected {expected}")

        def plan(text: str | None = text) -> Any:
            return table.scan(filter=text).plan_files()

        fns: dict[str, Callable[[], Any]] = {"mor": plan}
        if has_cache:
            fns["mor_cold"] = plan
            if threads_variant and name == "full":
                fns["mor_cold_1thread"] = cold_one_thread(plan)
        if theirs is not None:
            fns["pyiceberg"] = lambda text=text: theirs.scan(**({} if text is None else {"row_filter": text})).plan_files()
        timings = time_calls(fns, repeat, setups={"mor_cold": clear_mor_cache, "mor_cold_1thread": clear_mor_cache})
        entry: dict[str, Any] = {"filter": text, "check": check, "timings": timings}
        if theirs is not None:
            py = timings["pyiceberg"]["median_seconds"]
            entry["pyiceberg_over_mor"] = py / timings["mor"]["median_seconds"]
            if "mor_cold" in timings:
                entry["pyiceberg_over_mor_cold"] = py / timings["mor_cold"]["median_seconds"]
        out[name] = entry
        shown = ", ".join(f"{k} {v['median_seconds']:.3f} s" for k, v in timings.items())
        log(f"  {layout} {files:>6} files, {name:<13}: {shown}")
    return out


def measure_cache_that_fits(table: Any, files: int, repeat: int) -> dict[str, Any] | None:
    """When the table has more entries than the default cache holds: warm plans with a cache
    sized to hold them all (the default is restored afterwards)."""
    settings = cache_settings()
    if settings is None or 2 * files * 3000 <= settings["max_bytes"]:
        return None
    from mor.planning import manifest_cache

    manifest_cache.configure(max_bytes=(2 * files + 1000) * 3000)
    try:
        timings = time_calls({"mor_cache_fits": lambda: table.scan().plan_files()}, repeat)
    finally:
        manifest_cache.configure(max_bytes=settings["max_bytes"])
    log(f"  full scan with a cache of {2 * files + 1000} entries: {timings['mor_cache_fits']['median_seconds']:.3f} s")
    return {"max_bytes": (2 * files + 1000) * 3000, "timings": timings}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000", help="data files (and as many delete files), unpartitioned")
    parser.add_argument("--partitioned-sizes", default="1000,10000", help="the same, partitioned by category (12 values)")
    parser.add_argument("--commits", type=int, default=100, help="commits per table in the size series")
    parser.add_argument("--growth-files", type=int, default=10_000)
    parser.add_argument("--growth-commits", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--repeat-large", type=int, default=3, help="rounds for tables of 50,000 files or more")
    parser.add_argument("--profile", action="store_true", help="cProfile one cold mor plan of each size table")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench"))
    args = parser.parse_args()
    result = start_result("planning", args)
    result["mor_manifest_cache"] = cache_settings()
    result["sizes"] = []
    series = [("unpartitioned", int(s)) for s in args.sizes.split(",") if s]
    series += [("category", int(s)) for s in args.partitioned_sizes.split(",") if s]
    for layout, files in series:
        repeat = args.repeat_large if files >= 50_000 else args.repeat
        root = args.data_dir / f"planning-{layout}-{files}"
        log(f"building {layout} table: {files} data + {files} delete files in {args.commits} commits")
        table, build = build_table(root, files, args.commits, layout)
        log(f"  built in {build['seconds']:.1f} s: {build['manifests']} manifests, {build['snapshots']} snapshots")
        row: dict[str, Any] = {
            "layout": layout,
            "files": files,
            "build": build,
            "plans": measure(table, root, files, layout, repeat, True, True),
            "cache_that_fits": measure_cache_that_fits(table, files, repeat),
        }
        if args.profile:
            clear_mor_cache()
            base = args.out.parent / f"{args.out.stem}-profile-{layout}-{files}"
            row["profile"] = profile_call(lambda table=table: table.scan().plan_files(), base)
        result["sizes"].append(row)
        if not args.keep:
            remove_warehouse(root)
    result["growth"] = []
    merges = [False, True] if merge_property(True) else [False]
    for merge in merges:
        for commits in (int(c) for c in args.growth_commits.split(",") if c):
            root = args.data_dir / f"planning-growth-{commits}-{'merge' if merge else 'nomerge'}"
            log(f"building growth table: {args.growth_files} data + delete files in {commits} commits, merge {merge}")
            table, build = build_table(root, args.growth_files, commits, "unpartitioned", merge)
            log(f"  built in {build['seconds']:.1f} s: {build['manifests']} manifests, {build['snapshots']} snapshots")
            plans = measure(table, root, args.growth_files, "unpartitioned", args.repeat, True, False)
            result["growth"].append(
                {
                    "commits": build["commits"],
                    "manifest_merge": merge,
                    "manifests": build["manifests"],
                    "files": args.growth_files,
                    "build": build,
                    "plans": plans,
                }
            )
            if not args.keep:
                remove_warehouse(root)
    result["summary"] = summarize(result)
    result["load_average_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    log(f"wrote {args.out}")


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers, all read from this run's samples above (medians, seconds)."""

    def medians(plans: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, entry in plans.items():
            out[name] = {k: round(v["median_seconds"], 4) for k, v in entry["timings"].items()}
            for ratio in ("pyiceberg_over_mor", "pyiceberg_over_mor_cold"):
                if ratio in entry:
                    out[name][ratio] = round(entry[ratio], 2)
        return out

    sizes = {f"{row['layout']}/{row['files']}": medians(row["plans"]) for row in result["sizes"]}
    growth = {
        f"{g['commits']} commits, merge {'on' if g['manifest_merge'] else 'off'} "
        f"({g['manifests']['data'] + g['manifests']['deletes']} manifests)": medians(g["plans"])
        for g in result["growth"]
    }
    return {"sizes": sizes, "growth": growth}


if __name__ == "__main__":
    main()
