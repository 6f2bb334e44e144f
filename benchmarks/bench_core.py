"""Core benchmark for mor: merge-on-read DELETE cost and read-with-deletes cost.

Scenario (a): DELETE of a small fraction (default 0.1%) of rows scattered across every data file,
merge-on-read vs copy-on-write, on two warehouses built from the same generated Arrow data.
Measured: wall time of ``table.delete(...)`` and the bytes of every file that appeared in the
warehouse directory during the call (data + delete + manifests + manifest list + metadata JSON).

Scenario (b): full read of a table with a larger fraction (default 10%) of rows position-deleted
(by a merge-on-read DELETE), mor ``table.scan().to_arrow()`` vs a plain pyarrow read of the same
Parquet data files that ignores the deletes (the floor), and vs pyiceberg reading the same table.

Every number printed or written to JSON is measured in this run. See benchmarks/README.md.

    .venv/bin/python benchmarks/bench_core.py                        # 10M rows, 10 files
    .venv/bin/python benchmarks/bench_core.py --rows 200000 --files 4  # smoke test
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import importlib.metadata
import io
import json
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import mor

REPO_ROOT = Path(__file__).resolve().parent.parent
TABLE_NAME = "bench.events"
CATEGORIES = [f"cat-{i:02d}" for i in range(12)]
TS_BASE_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z in microseconds
TS_STEP_US = 3_000_000  # ids are 3 s apart, plus up to 1 s of random jitter

TARGET_DELETE_TIME_RATIO = 10.0  # copy-on-write time / merge-on-read time, at least
TARGET_DELETE_BYTES_RATIO = 100.0  # copy-on-write bytes / merge-on-read bytes, at least
TARGET_READ_FLOOR_RATIO = 1.3  # mor read time / plain pyarrow read time, at most
TARGET_PYICEBERG_RATIO = 5.0  # pyiceberg read time / mor read time, at least


class BenchmarkError(RuntimeError):
    """A correctness check failed: the benchmark's numbers would be meaningless."""


def log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", flush=True)


# --------------------------------------------------------------------------- data generation


def generate_events(rows: int, seed: int) -> pa.Table:
    """rows x 5 columns, vectorized (pyarrow compute only), deterministic for a given seed."""
    ids = pa.arange(0, rows)
    u_category = pc.random(rows, initializer=seed)
    u_value = pc.random(rows, initializer=seed + 1)
    u_ts = pc.random(rows, initializer=seed + 2)
    u_payload = pc.random(rows, initializer=seed + 3)

    category_index = pc.cast(pc.floor(pc.multiply(u_category, len(CATEGORIES))), pa.int32())
    category = pc.take(pa.array(CATEGORIES, pa.string()), category_index)
    jitter_us = pc.cast(pc.floor(pc.multiply(u_ts, 1_000_000)), pa.int64())
    ts_us = pc.add(pc.add(pc.multiply(ids, TS_STEP_US), TS_BASE_US), jitter_us)
    ts = pc.cast(ts_us, pa.timestamp("us", tz="UTC"))
    payload_number = pc.cast(pc.floor(pc.multiply(u_payload, 1e12)), pa.int64())
    payload = pc.binary_join_element_wise(
        category, pc.cast(ids, pa.string()), pc.cast(payload_number, pa.string()), "/"
    )
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("category", pa.string()),
            pa.field("value", pa.float64()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("payload", pa.string()),
        ]
    )
    return pa.Table.from_arrays([ids, category, u_value, ts, payload], schema=schema)


def file_slices(data: pa.Table, files: int) -> list[pa.Table]:
    """Split into `files` contiguous slices of near-equal size (ids are contiguous per file)."""
    base, extra = divmod(data.num_rows, files)
    slices, offset = [], 0
    for i in range(files):
        length = base + (1 if i < extra else 0)
        slices.append(data.slice(offset, length))
        offset += length
    return slices


# --------------------------------------------------------------------------- predicates


class DeleteSpec:
    """A delete predicate (text) and exactly which ids it selects in the generated data."""

    def __init__(self, text: str, deleted_ids: pa.Array, kind: str, description: str) -> None:
        self.text = text
        self.deleted_ids = deleted_ids
        self.kind = kind
        self.description = description

    @property
    def count(self) -> int:
        return len(self.deleted_ids)

    def as_json(self) -> dict[str, Any]:
        shown = self.text if len(self.text) <= 200 else self.text[:200] + f"... ({len(self.text)} chars)"
        return {"kind": self.kind, "text": shown, "description": self.description,
                "selected_rows": self.count}


def value_predicate(data: pa.Table, fraction: float) -> DeleteSpec:
    """`value < fraction`: value is uniform in [0, 1), so this selects ~fraction of the rows, at
    random positions in every file. The exact selected ids are computed from the data."""
    text = f"value < {fraction!r}"
    deleted = pc.filter(data["id"], pc.less(data["value"], fraction)).combine_chunks()
    return DeleteSpec(text, deleted, "value-range",
                      f"rows whose uniform-random value is below {fraction!r}")


def in_list_predicate(data: pa.Table, fraction: float, seed: int) -> DeleteSpec:
    """`id in (...)` with round(rows * fraction) distinct ids sampled uniformly (fixed seed)."""
    rows = data.num_rows
    k = max(1, round(rows * fraction))
    chosen = sorted(random.Random(seed).sample(range(rows), k))
    text = "id in (" + ", ".join(map(str, chosen)) + ")"
    return DeleteSpec(text, pa.array(chosen, pa.int64()), "id-in-list",
                      f"{k} distinct ids sampled uniformly from 0..{rows - 1} (seed {seed})")


def time_predicate_parse(text: str) -> float:
    """Seconds for pyiceberg's filter parser (the filter language mor accepts) to parse `text`."""
    from pyiceberg.expressions import parser

    start = time.perf_counter()
    parser.parse(text)
    return time.perf_counter() - start


# --------------------------------------------------------------------------- warehouse helpers


def build_warehouse(root: Path, slices: list[pa.Table]) -> tuple[Any, dict[str, Any]]:
    """Fresh warehouse with one append (one data file) per slice; returns (table, build info)."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    start = time.perf_counter()
    catalog = mor.load_catalog(str(root))
    table = catalog.create_table(TABLE_NAME, schema=slices[0].schema)
    for piece in slices:
        table.append(piece)
    seconds = time.perf_counter() - start
    files = list_files(root)
    parquet_bytes = sum(size for rel, (size, _) in files.items() if rel.endswith(".parquet"))
    return table, {"seconds": seconds, "data_files": len(slices),
                   "parquet_bytes": parquet_bytes,
                   "warehouse_bytes": sum(size for size, _ in files.values())}


def list_files(root: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (size, mtime_ns) for every regular file under root."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(full)
            except FileNotFoundError:  # a transient file (e.g. a SQLite journal) vanished
                continue
            out[os.path.relpath(full, root)] = (st.st_size, st.st_mtime_ns)
    return out


def classify(path: Path, data_columns: set[str]) -> str:
    """What kind of Iceberg file this is, by reading its header (not by trusting its name)."""
    name = path.name
    if name.endswith(".parquet"):
        columns = pq.read_schema(path).names
        if columns[:2] == ["file_path", "pos"]:
            return "position_delete_parquet"
        if set(columns) == data_columns:
            return "data_parquet"
        return "other_parquet"
    if name.endswith(".avro"):
        with open(path, "rb") as f:
            reader = fastavro.reader(f)
            schema_name = str(reader.writer_schema.get("name", ""))  # type: ignore[union-attr]
            content = reader.metadata.get("content", "")
        if schema_name == "manifest_file":
            return "manifest_list_avro"
        if schema_name == "manifest_entry":
            return f"manifest_avro_{content or 'unknown'}"
        return "other_avro"
    if name.endswith(".json"):
        return "metadata_json"
    if name.startswith("catalog.db"):
        return "catalog_db"
    return "other"


def diff_files(root: Path, before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]],
               data_columns: set[str]) -> dict[str, Any]:
    new = sorted(set(after) - set(before))
    changed = sorted(p for p in set(after) & set(before) if after[p] != before[p])
    removed = sorted(set(before) - set(after))
    by_kind: dict[str, dict[str, int]] = {}
    for rel in new:
        kind = classify(root / rel, data_columns)
        entry = by_kind.setdefault(kind, {"files": 0, "bytes": 0})
        entry["files"] += 1
        entry["bytes"] += after[rel][0]
    return {
        "new_files": len(new),
        "new_bytes": sum(after[p][0] for p in new),
        "new_by_kind": by_kind,
        "changed_existing": {p: {"size_before": before[p][0], "size_after": after[p][0]}
                             for p in changed},
        "removed_files": len(removed),
    }


def local_path(file_path: str) -> str:
    if file_path.startswith("file:"):
        return urllib.parse.unquote(urllib.parse.urlparse(file_path).path)
    return file_path


def snapshot_summary(table: Any) -> dict[str, str]:
    summary = table.current_snapshot().summary
    try:
        return {str(k): str(v) for k, v in dict(summary).items()}
    except (TypeError, ValueError) as exc:
        raise BenchmarkError(
            f"contract: current_snapshot().summary should be a dict of str, got {type(summary)!r}"
        ) from exc


# --------------------------------------------------------------------------- checks


def check_rows(label: str, result: pa.Table, rows: int, spec: DeleteSpec | None) -> dict[str, Any]:
    """Abort loudly unless `result` holds exactly ids 0..rows-1 minus the deleted ones."""
    deleted = spec.deleted_ids if spec is not None else pa.array([], pa.int64())
    expected_count = rows - len(deleted)
    expected_sum = rows * (rows - 1) // 2 - (pc.sum(deleted).as_py() or 0)
    ids = result["id"]
    got_count = result.num_rows
    got_sum = pc.sum(ids).as_py() or 0
    leaked = 0
    if len(deleted):
        leaked = pc.sum(pc.cast(pc.is_in(ids, value_set=deleted), pa.int64())).as_py() or 0
    distinct = pc.count_distinct(ids).as_py()
    ok = got_count == expected_count and got_sum == expected_sum and leaked == 0 \
        and distinct == got_count
    check = {"reader": label, "rows": got_count, "expected_rows": expected_count,
             "id_sum_ok": got_sum == expected_sum, "deleted_ids_present": leaked,
             "distinct_ids": distinct, "ok": ok}
    if not ok:
        print(f"\n!!! CORRECTNESS FAILURE in {label}: {check}\n", file=sys.stderr, flush=True)
        raise BenchmarkError(f"{label}: wrong rows: {check}")
    return check


# --------------------------------------------------------------------------- timing


def median_timing(fns: dict[str, Callable[[], pa.Table]], repeat: int) -> dict[str, dict[str, Any]]:
    """One warm-up call of each reader, then `repeat` timed rounds, readers interleaved per round
    so that background load drifts affect all readers alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    rows: dict[str, int] = {}
    for name, fn in fns.items():
        result = fn()
        rows[name] = result.num_rows
        del result
    gc.collect()
    for _ in range(repeat):
        for name, fn in fns.items():
            c0, t0 = time.process_time(), time.perf_counter()
            result = fn()
            samples[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            if result.num_rows != rows[name]:
                raise BenchmarkError(f"{name}: row count changed between runs")
            del result
            gc.collect()
    return {name: {"median_seconds": statistics.median(samples[name]),
                   "min_seconds": min(samples[name]),
                   "samples_seconds": samples[name],
                   "median_cpu_seconds": statistics.median(cpu[name]),
                   "rows": rows[name]} for name in fns}


def timed_delete(table: Any, root: Path, spec: DeleteSpec, mode: str,
                 data_columns: set[str]) -> dict[str, Any]:
    before = list_files(root)
    gc.collect()
    load_before = os.getloadavg()
    c0, t0 = time.process_time(), time.perf_counter()
    table.delete(spec.text, mode=mode)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    after = list_files(root)
    summary = snapshot_summary(table)
    written = diff_files(root, before, after, data_columns)
    added = summary.get("added-files-size")
    return {"mode": mode, "wall_seconds": wall, "cpu_seconds": cpu,
            "bytes_written": written["new_bytes"], "files": written,
            "summary_added_files_size": int(added) if added is not None else None,
            "summary": summary, "load_average_before": load_before,
            "load_average_after": os.getloadavg()}


def profile_call(fn: Callable[[], Any], out_base: Path) -> dict[str, Any]:
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    fn()
    profiler.disable()
    wall = time.perf_counter() - start
    profiler.dump_stats(str(out_base) + ".prof")
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
    Path(str(out_base) + ".txt").write_text(text.getvalue())
    tottime = io.StringIO()
    pstats.Stats(profiler, stream=tottime).sort_stats("tottime").print_stats(15)
    with open(str(out_base) + ".txt", "a") as f:
        f.write("\n\n==== sorted by tottime ====\n")
        f.write(tottime.getvalue())
    return {"wall_seconds_under_profiler": wall, "prof": str(out_base) + ".prof",
            "text": str(out_base) + ".txt"}


# --------------------------------------------------------------------------- scenarios


def warm_up(data: pa.Table, data_dir: Path, spec_kind: str, seed: int) -> None:
    """Untimed: one delete in each mode and one scan on a tiny table, so that lazy imports and
    first-call costs are not charged to whichever timed call comes first."""
    tiny = data.slice(0, min(2_000, data.num_rows))
    for mode in ("merge-on-read", "copy-on-write"):
        root = data_dir / f"wh-warmup-{mode}"
        table, _ = build_warehouse(root, file_slices(tiny, 2))
        spec = (in_list_predicate(tiny, 0.01, seed) if spec_kind == "id-in-list"
                else value_predicate(tiny, 0.01))
        table.delete(spec.text, mode=mode)
        table.scan().to_arrow()
        shutil.rmtree(root, ignore_errors=True)


def scenario_delete(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table],
                    data_dir: Path) -> dict[str, Any]:
    rows = data.num_rows
    data_columns = set(data.column_names)
    in_list = in_list_predicate(data, args.delete_fraction, args.seed)
    parse_seconds = time_predicate_parse(in_list.text)
    log(f"(a) pyiceberg parser on the {in_list.count}-id IN list: {parse_seconds:.3f} s")
    spec = in_list if args.predicate == "in-list" else value_predicate(data, args.delete_fraction)
    log(f"(a) predicate: {spec.as_json()['text']} -> selects {spec.count} rows")

    runs: dict[str, list[dict[str, Any]]] = {"copy-on-write": [], "merge-on-read": []}
    builds: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    for rep in range(args.dml_repeat):
        for mode in ("copy-on-write", "merge-on-read"):
            root = data_dir / f"wh-a-{mode}"
            log(f"(a) rep {rep + 1}/{args.dml_repeat}: building {mode} warehouse")
            table, build = build_warehouse(root, slices)
            build["mode"] = mode
            builds.append(build)
            log(f"(a)   built in {build['seconds']:.2f} s ({build['parquet_bytes']:,} Parquet bytes);"
                f" timing DELETE {mode}")
            result = timed_delete(table, root, spec, mode, data_columns)
            runs[mode].append(result)
            log(f"(a)   {mode}: {result['wall_seconds']:.3f} s, {result['bytes_written']:,} bytes")
            if rep == 0:
                checks.append(check_rows(f"mor scan after {mode} delete", table.scan().to_arrow(),
                                         rows, spec))
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)

    def pick(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[mode])

    cow_t, mor_t = pick("copy-on-write", "wall_seconds"), pick("merge-on-read", "wall_seconds")
    cow_b, mor_b = pick("copy-on-write", "bytes_written"), pick("merge-on-read", "bytes_written")
    cow_s = runs["copy-on-write"][0]["summary_added_files_size"]
    mor_s = runs["merge-on-read"][0]["summary_added_files_size"]
    ratios = {
        "time_cow_over_mor": cow_t / mor_t,
        "bytes_cow_over_mor": cow_b / mor_b if mor_b else None,
        "summary_added_files_size_cow_over_mor": (cow_s / mor_s) if cow_s and mor_s else None,
    }
    return {
        "rows": rows, "deleted_rows": spec.count, "deleted_fraction": spec.count / rows,
        "predicate": spec.as_json(),
        "in_list_parse_seconds": parse_seconds, "in_list_ids": in_list.count,
        "dml_repeat": args.dml_repeat, "builds": builds, "runs": runs,
        "median": {"copy_on_write_seconds": cow_t, "merge_on_read_seconds": mor_t,
                   "copy_on_write_bytes": cow_b, "merge_on_read_bytes": mor_b},
        "ratios": ratios,
        "targets": {
            "time_cow_over_mor_at_least": TARGET_DELETE_TIME_RATIO,
            "bytes_cow_over_mor_at_least": TARGET_DELETE_BYTES_RATIO,
            "time_met": ratios["time_cow_over_mor"] >= TARGET_DELETE_TIME_RATIO,
            "bytes_met": ratios["bytes_cow_over_mor"] is not None
            and ratios["bytes_cow_over_mor"] >= TARGET_DELETE_BYTES_RATIO,
        },
        "checks": checks,
    }


def scenario_read(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table],
                  data_dir: Path) -> dict[str, Any]:
    from pyiceberg.table import StaticTable

    rows = data.num_rows
    data_columns = set(data.column_names)
    root = data_dir / "wh-b"
    log("(b) building merge-on-read warehouse")
    table, build = build_warehouse(root, slices)
    spec = value_predicate(data, args.read_delete_fraction)
    log(f"(b) built in {build['seconds']:.2f} s; DELETE {spec.text} (merge-on-read) -> {spec.count} rows")
    before_delete = table.current_snapshot().snapshot_id
    setup_delete = timed_delete(table, root, spec, "merge-on-read", data_columns)
    log(f"(b) setup delete: {setup_delete['wall_seconds']:.3f} s, "
        f"{setup_delete['bytes_written']:,} bytes")

    tasks = list(table.scan().plan_files())
    paths = [local_path(t.data_file.file_path) for t in tasks]
    task_deletes = [len(getattr(t, "delete_files", None) or ()) for t in tasks]
    metadata_location = table.metadata_location
    static = StaticTable.from_metadata(metadata_location)

    # Correctness first (untimed): readers that honour deletes must drop exactly the deleted rows.
    checks = [
        check_rows("mor table.scan().to_arrow()", table.scan().to_arrow(), rows, spec),
        check_rows("pyiceberg StaticTable scan().to_arrow()", static.scan().to_arrow(), rows, spec),
        check_rows("pyarrow.dataset on data files (no deletes)",
                   ds.dataset(paths, format="parquet").to_table(), rows, None),
    ]
    sql_check = check_sqlcatalog(root, rows, spec)

    readers: dict[str, Callable[[], pa.Table]] = {
        "mor": lambda: table.scan().to_arrow(),
        "pyarrow_dataset": lambda: ds.dataset(paths, format="parquet").to_table(),
        "pyarrow_read_table_per_file": lambda: pa.concat_tables([pq.read_table(p) for p in paths]),
        "pyiceberg": lambda: static.scan().to_arrow(),
    }
    # Context, not targets: the same two readers on the snapshot before the delete (no deletes),
    # to show what applying the deletes costs each of them.
    context_readers: dict[str, Callable[[], pa.Table]] = {
        "mor_no_deletes": lambda: table.scan(snapshot_id=before_delete).to_arrow(),
        "pyiceberg_no_deletes": lambda: static.scan(snapshot_id=before_delete).to_arrow(),
    }
    log(f"(b) timing reads: warm-up + {args.repeat} interleaved rounds of {list(readers) + list(context_readers)}")
    timings = median_timing({**readers, **context_readers}, args.repeat)
    floor_name = min(("pyarrow_dataset", "pyarrow_read_table_per_file"),
                     key=lambda n: timings[n]["median_seconds"])
    mor_s = timings["mor"]["median_seconds"]
    floor_s = timings[floor_name]["median_seconds"]
    ratios = {
        "mor_over_floor": mor_s / floor_s,
        "floor_reader": floor_name,
        "mor_over_pyarrow_dataset": mor_s / timings["pyarrow_dataset"]["median_seconds"],
        "mor_over_pyarrow_read_table_per_file":
            mor_s / timings["pyarrow_read_table_per_file"]["median_seconds"],
        "pyiceberg_over_mor": timings["pyiceberg"]["median_seconds"] / mor_s,
        "mor_deletes_over_mor_no_deletes": mor_s / timings["mor_no_deletes"]["median_seconds"],
        "pyiceberg_deletes_over_pyiceberg_no_deletes": timings["pyiceberg"]["median_seconds"]
        / timings["pyiceberg_no_deletes"]["median_seconds"],
        "pyiceberg_no_deletes_over_floor": timings["pyiceberg_no_deletes"]["median_seconds"] / floor_s,
    }
    profiles: dict[str, Any] = {}
    if args.profile:
        base = args.out.parent / f"{args.out.stem}-profile-read-mor"
        profiles["read_mor"] = profile_call(lambda: table.scan().to_arrow(), base)
        base = args.out.parent / f"{args.out.stem}-profile-read-pyiceberg"
        profiles["read_pyiceberg"] = profile_call(lambda: static.scan().to_arrow(), base)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "rows": rows, "deleted_rows": spec.count, "deleted_fraction": spec.count / rows,
        "predicate": spec.as_json(), "build": build, "setup_delete": setup_delete,
        "tasks": len(tasks), "delete_files_per_task": task_deletes,
        "metadata_location": metadata_location,
        "timings": timings, "ratios": ratios,
        "targets": {
            "mor_over_floor_at_most": TARGET_READ_FLOOR_RATIO,
            "pyiceberg_over_mor_at_least": TARGET_PYICEBERG_RATIO,
            "floor_met": ratios["mor_over_floor"] <= TARGET_READ_FLOOR_RATIO,
            "pyiceberg_met": ratios["pyiceberg_over_mor"] >= TARGET_PYICEBERG_RATIO,
        },
        "checks": checks, "pyiceberg_sqlcatalog_check": sql_check, "profiles": profiles,
    }


def check_sqlcatalog(root: Path, rows: int, spec: DeleteSpec) -> dict[str, Any]:
    """Untimed: pyiceberg opens the table through the SQLite catalog mor wrote."""
    from pyiceberg.catalog.sql import SqlCatalog

    try:
        catalog = SqlCatalog("default", uri=f"sqlite:///{root}/catalog.db",
                             warehouse=f"file://{root}")
        result = catalog.load_table(TABLE_NAME).scan().to_arrow()
    except Exception as exc:  # report, do not hide: interop is part of the product
        log(f"WARNING: pyiceberg SqlCatalog could not read the table: {exc!r}")
        return {"ok": False, "error": repr(exc)}
    return check_rows("pyiceberg SqlCatalog load_table().scan().to_arrow()", result, rows, spec)


def profile_deletes(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table],
                    data_dir: Path) -> dict[str, Any]:
    """Extra, untimed-by-the-report runs under cProfile, on fresh warehouses."""
    spec = (in_list_predicate(data, args.delete_fraction, args.seed) if args.predicate == "in-list"
            else value_predicate(data, args.delete_fraction))
    out: dict[str, Any] = {}
    for mode in ("merge-on-read", "copy-on-write"):
        root = data_dir / f"wh-profile-{mode}"
        table, _ = build_warehouse(root, slices)
        base = args.out.parent / f"{args.out.stem}-profile-delete-{mode}"
        out[f"delete_{mode}"] = profile_call(lambda: table.delete(spec.text, mode=mode), base)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return out


# --------------------------------------------------------------------------- report


def machine_info() -> dict[str, Any]:
    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    mem_total = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_total = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        git_head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                                  capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        git_head = None
    try:
        git_dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "mor"],
                                   capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        git_dirty = None
    return {
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "arrow_cpu_threads": pa.cpu_count(),
        "arrow_io_threads": pa.io_thread_count(),
        "memory_total_bytes": mem_total,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "pyarrow": pa.__version__,
        "pyiceberg": version("pyiceberg"),
        "fastavro": version("fastavro"),
        "mor": getattr(mor, "__version__", None) or version("mor"),
        "mor_imported_from": str(Path(mor.__file__).resolve().parent),
        "git_head": git_head,
        "git_uncommitted_in_mor": git_dirty,
    }


def fmt_ratio(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.1f}x"


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def print_report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print()
    print(f"mor core benchmark  rows={result['params']['rows']:,} files={result['params']['files']}"
          f"  python {m['python']}  pyarrow {m['pyarrow']}  pyiceberg {m['pyiceberg']}"
          f"  cores={m['cpu_count']}")
    a = result.get("scenario_a")
    if a:
        print(f"\n(a) DELETE {a['deleted_rows']:,} of {a['rows']:,} rows "
              f"({a['deleted_fraction']:.3%}), predicate kind {a['predicate']['kind']}:"
              f" {a['predicate']['text'][:60]}")
        print(f"    {'mode':<15}{'wall s':>10}{'bytes written':>16}{'summary added-files-size':>26}"
              f"  new files by kind")
        for mode in ("copy-on-write", "merge-on-read"):
            run = a["runs"][mode][0]
            kinds = ", ".join(f"{k}={v['files']}/{v['bytes']:,}B"
                              for k, v in sorted(run["files"]["new_by_kind"].items()))
            wall = statistics.median(r["wall_seconds"] for r in a["runs"][mode])
            size = statistics.median(r["bytes_written"] for r in a["runs"][mode])
            print(f"    {mode:<15}{wall:>10.3f}{size:>16,.0f}"
                  f"{run['summary_added_files_size'] or 0:>26,}  {kinds}")
        r, t = a["ratios"], a["targets"]
        bytes_ratio = r["bytes_cow_over_mor"]
        print(f"    cow/mor time  {r['time_cow_over_mor']:8.1f}x  (target >= "
              f"{t['time_cow_over_mor_at_least']:.0f}x: {verdict(t['time_met'])})")
        print(f"    cow/mor bytes {bytes_ratio if bytes_ratio is not None else float('nan'):8.1f}x"
              f"  (target >= {t['bytes_cow_over_mor_at_least']:.0f}x: {verdict(t['bytes_met'])});"
              f" by summary added-files-size: {fmt_ratio(r['summary_added_files_size_cow_over_mor'])}")
        print(f"    (pyiceberg parser on the {a['in_list_ids']:,}-id IN list alone: "
              f"{a['in_list_parse_seconds']:.3f} s)")
    b = result.get("scenario_b")
    if b:
        print(f"\n(b) full read, {b['deleted_rows']:,} of {b['rows']:,} rows position-deleted "
              f"({b['deleted_fraction']:.2%}), {b['tasks']} tasks; "
              f"setup MOR delete {b['setup_delete']['wall_seconds']:.3f} s")
        print(f"    {'reader':<38}{'median s':>10}{'min s':>10}{'cpu s':>10}{'rows':>14}")
        labels = {"mor": "mor scan().to_arrow()",
                  "pyarrow_dataset": "pyarrow.dataset, deletes ignored",
                  "pyarrow_read_table_per_file": "pq.read_table per file, deletes ign.",
                  "pyiceberg": f"pyiceberg {m['pyiceberg']} scan().to_arrow()",
                  "mor_no_deletes": "(context) mor, snapshot before delete",
                  "pyiceberg_no_deletes": "(context) pyiceberg, snapshot before"}
        for name, timing in b["timings"].items():
            print(f"    {labels[name]:<38}{timing['median_seconds']:>10.3f}"
                  f"{timing['min_seconds']:>10.3f}{timing['median_cpu_seconds']:>10.3f}"
                  f"{timing['rows']:>14,}")
        r, t = b["ratios"], b["targets"]
        print(f"    mor / plain pyarrow ({r['floor_reader']}) {r['mor_over_floor']:6.2f}x"
              f"  (target <= {t['mor_over_floor_at_most']}x: {verdict(t['floor_met'])})")
        print(f"    pyiceberg / mor {r['pyiceberg_over_mor']:6.2f}x"
              f"  (target >= {t['pyiceberg_over_mor_at_least']:.0f}x: {verdict(t['pyiceberg_met'])})")
        print(f"    context: deletes cost mor {r['mor_deletes_over_mor_no_deletes']:.2f}x and pyiceberg"
              f" {r['pyiceberg_deletes_over_pyiceberg_no_deletes']:.2f}x their own no-delete read;"
              f" pyiceberg with no deletes is {r['pyiceberg_no_deletes_over_floor']:.2f}x the floor")
    print(f"\nload average start {result['load_average_start']}, end {result['load_average_end']};"
          f" total run {result['duration_seconds']:.1f} s")


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10, help="data files (one append each)")
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--repeat", type=int, default=3, help="timed read rounds after one warm-up")
    p.add_argument("--dml-repeat", type=int, default=1,
                   help="DELETE timings per mode, each on a freshly built warehouse (median)")
    p.add_argument("--delete-fraction", type=float, default=0.001, help="scenario (a)")
    p.add_argument("--read-delete-fraction", type=float, default=0.1, help="scenario (b)")
    p.add_argument("--predicate", choices=["value-range", "in-list"], default="value-range",
                   help="scenario (a) predicate: 'value < f' (default) or an IN list of random ids")
    p.add_argument("--scenarios", default="a,b", help="comma-separated subset of a,b")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "core.json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    p.add_argument("--keep", action="store_true", help="keep the warehouses under --data-dir")
    p.add_argument("--profile", action="store_true",
                   help="after timing, profile one mor read and one DELETE per mode (cProfile; "
                        "extra fresh warehouses), writing .prof/.txt next to --out")
    args = p.parse_args(argv)
    if args.rows < 1_000 or args.files < 1 or args.files > args.rows:
        p.error("need rows >= 1000 and 1 <= files <= rows")
    args.scenarios = {s.strip() for s in args.scenarios.split(",") if s.strip()}
    if not args.scenarios <= {"a", "b"}:
        p.error("--scenarios takes a, b or a,b")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "core",
        "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine_info(),
        "load_average_start": os.getloadavg(),
    }
    result["params"] = {k: (sorted(v) if isinstance(v, set) else str(v) if isinstance(v, Path) else v)
                        for k, v in vars(args).items()}
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)

    log(f"generating {args.rows:,} rows (seed {args.seed})")
    t0 = time.perf_counter()
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    result["generation"] = {"seconds": time.perf_counter() - t0, "arrow_bytes": data.nbytes}
    log(f"generated in {result['generation']['seconds']:.2f} s ({data.nbytes:,} Arrow bytes)")

    log("warm-up (untimed): tiny table, one delete per mode, one scan")
    warm_up(data, args.data_dir, "id-in-list" if args.predicate == "in-list" else "value-range",
            args.seed)
    if "a" in args.scenarios:
        result["scenario_a"] = scenario_delete(args, data, slices, args.data_dir)
    if "b" in args.scenarios:
        result["scenario_b"] = scenario_read(args, data, slices, args.data_dir)
    if args.profile and "a" in args.scenarios:
        log("profiling one DELETE per mode on fresh warehouses")
        result["scenario_a"]["profiles"] = profile_deletes(args, data, slices, args.data_dir)

    result["load_average_end"] = os.getloadavg()
    result["duration_seconds"] = time.perf_counter() - started
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print_report(result)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
