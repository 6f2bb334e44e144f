"""Shared helpers for the mor benchmarks (bench_core.py, bench_dml.py).

Data generation, warehouse building, byte accounting (what a call wrote under the warehouse
directory, classified by file header), correctness checks, interleaved median timing,
profiling and machine info. Nothing here prints a number; the benchmarks do, and only numbers
they measured in the same run.
"""

from __future__ import annotations

import cProfile
import datetime as dt
import gc
import importlib.metadata
import io
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
import pyarrow.parquet as pq

import mor

REPO_ROOT = Path(__file__).resolve().parent.parent
TABLE_NAME = "bench.events"
CATEGORIES = [f"cat-{i:02d}" for i in range(12)]
TS_BASE_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z in microseconds
TS_STEP_US = 3_000_000  # ids are 3 s apart, plus up to 1 s of random jitter
PAYLOAD_PIECE = 20_000_000
V3_LINEAGE_COLUMNS = {"_row_id", "_last_updated_sequence_number"}  # format v3 row lineage


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
    id_text, number_text = pc.cast(ids, pa.string()), pc.cast(payload_number, pa.string())
    # In pieces: one string array holds at most 2 GiB (100M payloads are about 2.7 GB).
    payload = pa.chunked_array([
        pc.binary_join_element_wise(category.slice(at, PAYLOAD_PIECE), id_text.slice(at, PAYLOAD_PIECE),
                                    number_text.slice(at, PAYLOAD_PIECE), "/")
        for at in range(0, rows, PAYLOAD_PIECE)
    ], pa.string())  # fmt: skip
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
        return {"kind": self.kind, "text": shown, "description": self.description, "selected_rows": self.count}


def value_predicate(data: pa.Table, fraction: float) -> DeleteSpec:
    """`value < fraction`: value is uniform in [0, 1), so this selects ~fraction of the rows, at
    random positions in every file. The exact selected ids are computed from the data."""
    text = f"value < {fraction!r}"
    deleted = pc.filter(data["id"], pc.less(data["value"], fraction)).combine_chunks()
    return DeleteSpec(text, deleted, "value-range", f"rows whose uniform-random value is below {fraction!r}")


def in_list_predicate(data: pa.Table, fraction: float, seed: int) -> DeleteSpec:
    """`id in (...)` with round(rows * fraction) distinct ids sampled uniformly (fixed seed)."""
    rows = data.num_rows
    k = max(1, round(rows * fraction))
    chosen = sorted(random.Random(seed).sample(range(rows), k))
    text = "id in (" + ", ".join(map(str, chosen)) + ")"
    return DeleteSpec(
        text, pa.array(chosen, pa.int64()), "id-in-list", f"{k} distinct ids sampled uniformly from 0..{rows - 1} (seed {seed})"
    )


def build_warehouse(
    root: Path, slices: list[pa.Table], *, format_version: int | None = None, properties: dict[str, str] | None = None
) -> tuple[Any, dict[str, Any]]:
    """Fresh warehouse with one append (one data file) per slice; returns (table, build info).
    `format_version` and `properties` go to `create_table` (defaults: mor's)."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    start = time.perf_counter()
    catalog = mor.load_catalog(str(root))
    table = catalog.create_table(TABLE_NAME, schema=slices[0].schema, properties=properties, format_version=format_version)
    for piece in slices:
        table.append(piece)
    seconds = time.perf_counter() - start
    files = list_files(root)
    parquet_bytes = sum(size for rel, (size, _) in files.items() if rel.endswith(".parquet"))
    return table, {
        "seconds": seconds,
        "data_files": len(slices),
        "parquet_bytes": parquet_bytes,
        "warehouse_bytes": sum(size for size, _ in files.values()),
    }


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
        if set(columns) - data_columns == V3_LINEAGE_COLUMNS:  # v3 rewrite: rows keep their lineage
            return "data_parquet"
        if columns and set(columns) < data_columns:  # only key columns: an equality delete file
            return "equality_delete_parquet"
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
    if name.endswith(".puffin"):  # deletion vectors (format v3); checked by the Puffin magic
        with open(path, "rb") as f:
            return "puffin" if f.read(4) == b"PFA1" else "other"
    if name.startswith("catalog.db"):
        return "catalog_db"
    return "other"


def diff_files(root: Path, before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], data_columns: set[str]) -> dict[str, Any]:
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
        "changed_existing": {p: {"size_before": before[p][0], "size_after": after[p][0]} for p in changed},
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
        raise BenchmarkError(f"contract: current_snapshot().summary should be a dict of str, got {type(summary)!r}") from exc


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
    ok = got_count == expected_count and got_sum == expected_sum and leaked == 0 and distinct == got_count
    check = {
        "reader": label,
        "rows": got_count,
        "expected_rows": expected_count,
        "id_sum_ok": got_sum == expected_sum,
        "deleted_ids_present": leaked,
        "distinct_ids": distinct,
        "ok": ok,
    }
    if not ok:
        print(f"\n!!! CORRECTNESS FAILURE in {label}: {check}\n", file=sys.stderr, flush=True)
        raise BenchmarkError(f"{label}: wrong rows: {check}")
    return check


# --------------------------------------------------------------------------- timing


def median_timing(fns: dict[str, Callable[[], pa.Table]], repeat: int) -> dict[str, dict[str, Any]]:
    """One warm-up call of each reader, then `repeat` timed rounds, readers interleaved per round
    so that background load drifts affect all readers alike, and the order rotated each round so
    that no reader always runs right after the same one (whose freed memory or cache the next
    one would pay for)."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    rows: dict[str, int] = {}
    for name, fn in fns.items():
        result = fn()
        rows[name] = result.num_rows
        del result
    gc.collect()
    names = list(fns)
    for round_ in range(repeat):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            fn = fns[name]
            c0, t0 = time.process_time(), time.perf_counter()
            result = fn()
            samples[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            if result.num_rows != rows[name]:
                raise BenchmarkError(f"{name}: row count changed between runs")
            del result
            gc.collect()
    return {
        name: {
            "median_seconds": statistics.median(samples[name]),
            "min_seconds": min(samples[name]),
            "samples_seconds": samples[name],
            "median_cpu_seconds": statistics.median(cpu[name]),
            "rows": rows[name],
        }
        for name in fns
    }


def round_ratios(numerators: list[float], denominators: list[float]) -> tuple[float, float] | None:
    """The lowest and highest ratio of two readers' times round by round (interleaved rounds,
    so each pair saw the machine in the same state); None without two paired rounds."""
    if len(numerators) != len(denominators) or len(numerators) < 2:
        return None
    ratios = [n / d for n, d in zip(numerators, denominators)]
    return min(ratios), max(ratios)


def timed_dml(table: Any, root: Path, call: Callable[[], Any], data_columns: set[str], **labels: Any) -> dict[str, Any]:
    """Run `call()` once (a DML call on `table`), timed: wall (`perf_counter`) and CPU of all
    threads (`process_time`), and the bytes of every file that appeared under `root` meanwhile.
    `labels` (e.g. mode=...) come first in the returned dict."""
    before = list_files(root)
    gc.collect()
    load_before = os.getloadavg()
    c0, t0 = time.process_time(), time.perf_counter()
    call()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    after = list_files(root)
    summary = snapshot_summary(table)
    written = diff_files(root, before, after, data_columns)
    added = summary.get("added-files-size")
    return {
        **labels,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "bytes_written": written["new_bytes"],
        "files": written,
        "summary_added_files_size": int(added) if added is not None else None,
        "summary": summary,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }


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
    return {"wall_seconds_under_profiler": wall, "prof": str(out_base) + ".prof", "text": str(out_base) + ".txt"}


# --------------------------------------------------------------------------- report


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB. From VmHWM, not getrusage: on Linux
    ru_maxrss survives exec, so a child started by a big parent would report the parent's peak."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise BenchmarkError("no VmHWM in /proc/self/status")


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
        git_head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        git_head = None
    try:
        git_dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "mor"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
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


def start_result(benchmark: str, args: Any) -> dict[str, Any]:
    """The head of a results JSON: what ran, where, on what, with which parameters."""
    result: dict[str, Any] = {
        "benchmark": benchmark,
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine_info(),
        "load_average_start": os.getloadavg(),
    }
    result["params"] = {k: (sorted(v) if isinstance(v, set) else str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    return result


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def remove_warehouse(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
