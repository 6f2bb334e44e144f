"""Compaction (issue 10): reads after stacked merge-on-read DELETEs, and after `compact()`.

One run, on the generated events data (common.py), `--rows` rows appended as `--files` data
files (one append per file; `--partition-by` optional):
1. the floor table: a second warehouse holding exactly the rows the deletes will leave, in the
   same layout (the same slices, minus those rows), with no delete files;
2. `--deletes` successive merge-on-read DELETEs on the main table, each `id in (...)` of
   `--delete-rows` ids sampled uniformly (so each touches about every data file); each timed;
3. `compact()` (`--target-file-size`, default the table's `write.target-file-size-bytes`) in a
   fresh process (its wall and CPU time, and its peak RSS from VmHWM, as a cold maintenance
   job would see them), with the CompactionResult and every file that appeared meanwhile;
4. reads, interleaved in rounds after one warm-up each (common.median_timing, medians of
   `--repeat`): `floor` = pyarrow.dataset of the floor table's data files (the plain Parquet
   read DESIGN.md calls the floor); `floor_mor` = mor's scan of the floor table;
   `before_deletes`, `after_deletes` (decoded delete files warm in mor's cache),
   `after_deletes_cold` (that cache emptied first): mor scans of the main table at those
   snapshots (time travel: the files are still there); `after_compaction`: mor's scan of the
   compacted table; `compacted_files`: pyarrow.dataset of the compacted table's data files.
   The target: after_compaction / floor <= 1.05.
5. for context, the same DELETEs copy-on-write on a fresh copy of the table (`--cow-deletes`
   of them, 0 to skip), timed.
Every state read is checked against the ids it must hold (count, id sum, no deleted id,
distinct). The layout of the compacted and the floor table (files, bytes, row groups) is
reported, since it decides the post-compaction ratio.

    .venv/bin/python benchmarks/bench_compaction.py --rows 5000000 --files 10 \
        --out benchmarks/results/compaction.json --data-dir benchmarks/data
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from common import (
    TABLE_NAME,
    DeleteSpec,
    check_rows,
    diff_files,
    file_slices,
    generate_events,
    list_files,
    local_path,
    log,
    median_timing,
    peak_rss_mb,
    remove_warehouse,
    start_result,
)
from pyiceberg.expressions import In

import mor


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--partition-by", default="", help="comma-separated partition fields, e.g. category")
    parser.add_argument("--deletes", type=int, default=20)
    parser.add_argument("--delete-rows", type=int, default=300, help="ids each DELETE removes")
    parser.add_argument("--target-file-size", type=int, default=None, help="compact(target_file_size=...)")
    parser.add_argument("--cow-deletes", type=int, default=20, help="copy-on-write DELETEs for context; 0: skip")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench"))
    args = parser.parse_args()
    result = start_result("compaction", args)
    partition_by = [f for f in args.partition_by.split(",") if f] or None

    data = generate_events(args.rows, args.seed)
    columns = set(data.column_names)
    groups = delete_groups(args.rows, args.deletes, args.delete_rows, args.seed)
    deleted = pa.array(sorted(i for g in groups for i in g), pa.int64())
    spec = DeleteSpec("", deleted, "id-in-lists", f"{args.deletes} x {args.delete_rows} ids")
    slices = file_slices(data, args.files)

    root, floor_root = args.data_dir / "compaction", args.data_dir / "compaction-floor"
    table, result["build"] = build(root, slices, partition_by)
    keep = [s.filter(pc.invert(pc.is_in(s["id"], value_set=deleted))) for s in slices]
    floor_table, result["floor_build"] = build(floor_root, keep, partition_by)
    check_rows("floor table", floor_table.scan().to_arrow(), args.rows, spec)
    before_deletes = table.current_snapshot().snapshot_id
    log(f"built {args.rows} rows in {result['build']['data_files']} data files, and the floor table")

    delete_seconds = []
    result["load_average_before_deletes"] = os.getloadavg()
    for ids in groups:
        started = time.perf_counter()
        table.delete(In("id", ids), mode="merge-on-read")
        delete_seconds.append(time.perf_counter() - started)
    after_deletes = table.current_snapshot().snapshot_id
    per_file = max(len(t.position_deletes) for t in table.scan().plan_files())
    check_rows("after deletes", table.scan().to_arrow(), args.rows, spec)
    result["merge_on_read_deletes"] = {"count": len(groups), "seconds": delete_seconds, "total_seconds": sum(delete_seconds),
                                       "max_delete_files_per_data_file": per_file}  # fmt: skip
    log(f"{len(groups)} merge-on-read deletes in {sum(delete_seconds):.2f} s (up to {per_file} delete files per data file)")

    before = list_files(root)
    compaction = run_compaction_child(root, args.target_file_size)
    result["compaction"] = {**compaction, "files": diff_files(root, before, list_files(root), columns)}
    table = mor.load_catalog(root).load_table(TABLE_NAME)
    check_rows("after compaction", table.scan().to_arrow(), args.rows, spec)
    c = compaction["result"]
    log(f"compact(): {compaction['wall_seconds']:.2f} s, {c['rewritten_data_files']} files ({mb(c['rewritten_data_bytes'])}) -> "
        f"{c['added_data_files']} files ({mb(c['added_data_bytes'])}), {c['removed_position_delete_files']} delete files dropped, "
        f"peak RSS {compaction['peak_rss_mb']:.0f} MB")  # fmt: skip

    floor_files = data_file_paths(floor_table)
    compacted_files = data_file_paths(table)
    result["layout"] = {"floor": layout(floor_files), "compacted": layout(compacted_files),
                        "main_before_compaction": layout(data_file_paths(table, after_deletes))}  # fmt: skip
    for name, fn in {"before deletes": lambda: table.scan(snapshot_id=before_deletes).to_arrow(),
                     "after deletes": lambda: table.scan(snapshot_id=after_deletes).to_arrow()}.items():  # fmt: skip
        check_rows(name, fn(), args.rows, spec if name == "after deletes" else None)

    readers = {
        "floor": lambda: ds.dataset(floor_files).to_table(),
        "floor_mor": lambda: floor_table.scan().to_arrow(),
        "before_deletes": lambda: table.scan(snapshot_id=before_deletes).to_arrow(),
        "after_deletes": lambda: table.scan(snapshot_id=after_deletes).to_arrow(),
        "after_deletes_cold": lambda: cold_read(table, after_deletes),
        "after_compaction": lambda: table.scan().to_arrow(),
        "compacted_files": lambda: ds.dataset(compacted_files).to_table(),
    }
    result["load_average_before_reads"] = os.getloadavg()
    timings = median_timing(readers, args.repeat)
    floor_s, floor_mor_s = timings["floor"]["median_seconds"], timings["floor_mor"]["median_seconds"]
    ratios = {name: t["median_seconds"] / floor_s for name, t in timings.items()}
    ratios_to_floor_mor = {name: t["median_seconds"] / floor_mor_s for name, t in timings.items()}
    result["reads"] = {"timings": timings, "over_floor": ratios, "over_floor_mor": ratios_to_floor_mor,
                       "target_after_compaction_over_floor": 1.05, "met": ratios["after_compaction"] <= 1.05}  # fmt: skip

    if args.cow_deletes:
        result["copy_on_write_deletes"] = cow_deletes(args.data_dir / "compaction-cow", slices, partition_by, groups[: args.cow_deletes])
        log(f"{args.cow_deletes} copy-on-write deletes in {result['copy_on_write_deletes']['total_seconds']:.2f} s")

    result["peak_rss_mb_this_process"] = peak_rss_mb()
    result["load_average_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print_table(result)
    for path in (root, floor_root):
        remove_warehouse(path)


def delete_groups(rows: int, deletes: int, per_delete: int, seed: int) -> list[list[int]]:
    """`deletes` disjoint sorted lists of `per_delete` ids, sampled uniformly."""
    chosen = random.Random(seed).sample(range(rows), deletes * per_delete)
    return [sorted(chosen[i * per_delete : (i + 1) * per_delete]) for i in range(deletes)]


def build(root: Path, slices: list[pa.Table], partition_by: list[str] | None) -> tuple[mor.Table, dict[str, Any]]:
    """A fresh warehouse, one append per slice."""
    remove_warehouse(root)
    root.mkdir(parents=True)
    started = time.perf_counter()
    table = mor.load_catalog(str(root)).create_table(TABLE_NAME, schema=slices[0].schema, partition_by=partition_by)
    for piece in slices:
        table.append(piece)
    files = data_file_paths(table)
    return table, {"seconds": time.perf_counter() - started, "data_files": len(files), **layout(files)}


def data_file_paths(table: mor.Table, snapshot_id: int | None = None) -> list[str]:
    return [local_path(t.data_file.file_path) for t in table.scan(snapshot_id=snapshot_id).plan_files()]


def layout(paths: list[str]) -> dict[str, Any]:
    metadata = [pq.ParquetFile(p).metadata for p in paths]
    sizes = [Path(p).stat().st_size for p in paths]
    groups = [m.row_group(i).num_rows for m in metadata for i in range(m.num_row_groups)]
    return {"files": len(paths), "bytes": sum(sizes), "largest_file_bytes": max(sizes, default=0),
            "rows": sum(m.num_rows for m in metadata), "row_groups": len(groups),
            "rows_per_row_group": groups if len(groups) <= 50 else None}  # fmt: skip


def cold_read(table: mor.Table, snapshot_id: int) -> pa.Table:
    from mor.read.decoded_cache import SHARED

    SHARED.clear()
    return table.scan(snapshot_id=snapshot_id).to_arrow()


def run_compaction_child(root: Path, target_file_size: int | None) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child-compact", str(root), str(target_file_size or "")],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    return json.loads(out.splitlines()[-1])


def child_compact(root: str, target_file_size: str) -> None:
    """compact() in this fresh process: its time, result and the process's peak RSS."""
    table = mor.load_catalog(root).load_table(TABLE_NAME)
    base_mb = peak_rss_mb()
    c0, t0 = time.process_time(), time.perf_counter()
    result = table.compact(target_file_size=int(target_file_size) if target_file_size else None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    summary = {str(k): str(v) for k, v in dict(table.current_snapshot().summary).items()}
    print(json.dumps({"wall_seconds": wall, "cpu_seconds": cpu, "result": result.to_dict(), "summary": summary,
                      "peak_rss_mb": peak_rss_mb(), "rss_after_imports_mb": base_mb}))  # fmt: skip


def cow_deletes(root: Path, slices: list[pa.Table], partition_by: list[str] | None, groups: list[list[int]]) -> dict[str, Any]:
    table, _ = build(root, slices, partition_by)
    seconds = []
    for ids in groups:
        started = time.perf_counter()
        table.delete(In("id", ids), mode="copy-on-write")
        seconds.append(time.perf_counter() - started)
    rows = sum(slice.num_rows for slice in slices)
    spec = DeleteSpec("", pa.array(sorted(i for g in groups for i in g), pa.int64()), "id-in-lists", "")
    check_rows("copy-on-write deletes", table.scan().to_arrow(), rows, spec)
    remove_warehouse(root)
    return {"count": len(groups), "seconds": seconds, "total_seconds": sum(seconds)}


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def print_table(result: dict[str, Any]) -> None:
    reads = result["reads"]
    print()
    print(f"{'read':<22}{'median s':>10}{'/ floor':>10}{'/ floor_mor':>13}")
    for name, t in reads["timings"].items():
        print(f"{name:<22}{t['median_seconds']:>10.3f}{reads['over_floor'][name]:>9.2f}x{reads['over_floor_mor'][name]:>12.2f}x")
    mor_deletes, c = result["merge_on_read_deletes"], result["compaction"]
    print()
    print(f"{mor_deletes['count']} merge-on-read deletes: {mor_deletes['total_seconds']:.2f} s")
    if "copy_on_write_deletes" in result:
        cow = result["copy_on_write_deletes"]
        print(f"{cow['count']} copy-on-write deletes:  {cow['total_seconds']:.2f} s")
    r = c["result"]
    print(f"compact(): {c['wall_seconds']:.2f} s wall, {c['cpu_seconds']:.2f} s CPU, peak RSS {c['peak_rss_mb']:.0f} MB; "
          f"rewrote {r['rewritten_data_files']} files ({mb(r['rewritten_data_bytes'])}, {r['rewritten_rows']} rows), "
          f"added {r['added_data_files']} ({mb(r['added_data_bytes'])}, {r['written_rows']} rows), "
          f"dropped {r['removed_position_delete_files']} position delete files ({mb(r['removed_position_delete_bytes'])})")  # fmt: skip
    for name, lay in result["layout"].items():
        print(f"layout {name}: {lay['files']} files, {mb(lay['bytes'])}, {lay['row_groups']} row groups")
    met = "met" if reads["met"] else "MISSED"
    print(f"after compaction / floor: {reads['over_floor']['after_compaction']:.2f}x (target <= 1.05x: {met})")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-compact":
        child_compact(sys.argv[2], sys.argv[3])
    else:
        main()
