"""Format v3 deletion vectors vs v2 position deletes vs copy-on-write (issue 12).

On the generated events table (`--rows` rows in `--files` data files, one append each), every
variant's warehouse is built from the same Arrow data, then receives `--deletes` successive
DELETEs, each of `--fraction` of the rows scattered over every data file: delete k (0-based) is
`value >= k*f and value < (k+1)*f` (`value` is uniform in [0, 1) and independent of position,
so each band selects different rows, in every file; the exact ids are computed from the data).
Variants (`--variants`):

- `v3_mor`: format v3, merge-on-read: one deletion vector per touched data file, merged with
  that file's previous vector (which the same commit removes); all of a DELETE's vectors in one
  Puffin file;
- `v2_mor`: format v2, merge-on-read: one Parquet position delete file per touched data file
  per DELETE (they stack up);
- `v2_cow`, `v3_cow`: table property `write.delete.mode=copy-on-write`: touched data files are
  rewritten.

Each DELETE is timed (wall and CPU of the single `table.delete(text)` call; the variants take
turns, the order rotated every round) with the bytes of every file that appeared, classified by
header (Puffin, position-delete Parquet, data Parquet, manifests, manifest list, metadata JSON),
and the live data and delete files after it (from `plan_files()`). After it, the snapshot
summary's live row count (`total-records - total-position-deletes`) must equal the expected one.

After delete 1 and after the last, full reads `table.scan().to_arrow()` of every variant are
timed against the floor, a `pyarrow.dataset` read of the merge-on-read variants' data files
(the original ones; deletes ignored), in `--repeat` rounds after one warm-up each, the order
rotated every round (`common.median_timing`). `<variant>_cold` empties mor's decoded-delete
cache first (the first read in a process); `<variant>_files` is `pyarrow.dataset` on a
copy-on-write variant's own rewritten files. Before timing, every variant's result must hold
exactly the ids not deleted.

    .venv/bin/python benchmarks/bench_v3.py --rows 10000000 --files 10 --deletes 10 \
        --out benchmarks/results/v3_deletes.json --data-dir benchmarks/data
    .venv/bin/python benchmarks/bench_v3.py --rows 500000 --files 4 --deletes 3 --out /tmp/v3-smoke.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py

from bench_delete_stack import cold_read
from common import (
    REPO_ROOT,
    BenchmarkError,
    DeleteSpec,
    build_warehouse,
    check_rows,
    file_slices,
    generate_events,
    local_path,
    log,
    median_timing,
    profile_call,
    start_result,
    timed_dml,
)

COW = {"write.delete.mode": "copy-on-write"}
VARIANTS: dict[str, dict[str, Any]] = {
    "v3_mor": {"format_version": 3, "properties": None},
    "v2_mor": {"format_version": 2, "properties": None},
    "v2_cow": {"format_version": 2, "properties": COW},
    "v3_cow": {"format_version": 3, "properties": COW},
}
CONTENT_KINDS = ("puffin", "position_delete_parquet", "data_parquet")


def band(data: pa.Table, k: int, fraction: float) -> DeleteSpec:
    """Delete k: `value >= k*f and value < (k+1)*f`, and exactly the ids it selects."""
    low, high = k * fraction, (k + 1) * fraction
    text = f"value >= {low!r} and value < {high!r}"
    mask = pc.and_(pc.greater_equal(data["value"], low), pc.less(data["value"], high))
    return DeleteSpec(text, pc.filter(data["id"], mask).combine_chunks(), "value-band", f"band {k} of uniform-random value")


def union(specs: list[DeleteSpec]) -> DeleteSpec:
    ids = pa.concat_arrays([s.deleted_ids for s in specs])
    return DeleteSpec(" or ".join(f"({s.text})" for s in specs), ids, "value-bands", f"the first {len(specs)} bands")


def live_files(table: Any) -> dict[str, int]:
    """The data and delete files the current snapshot reads (deletion vectors counted apart
    from the Puffin files that hold them)."""
    tasks = list(table.scan().plan_files())
    deletes = {d.file_path: d for t in tasks for d in t.delete_files}
    entries = {(d.file_path, d.content_offset) for t in tasks for d in t.delete_files}
    return {
        "data_files": len(tasks),
        "delete_entries": len(entries),
        "deletion_vectors": sum(1 for t in tasks for d in t.delete_files if d.is_deletion_vector),
        "delete_files_on_disk": len(deletes),
        "max_delete_entries_per_data_file": max((len(t.delete_files) for t in tasks), default=0),
        "data_bytes": sum(t.data_file.file_size_in_bytes for t in tasks),
        "delete_bytes": sum(d.file_size_in_bytes for d in deletes.values()),
    }


def decode_deletes(table: Any, repeat: int) -> dict[str, Any]:
    """CPU seconds to decode every live delete file of `table` once, on this thread, without
    mor's decoded-delete cache (what a cold read adds before applying positions)."""
    from mor.read.position_deletes import read_position_delete_file

    entries = {d.key: d for t in table.scan().plan_files() for d in t.delete_files}
    samples = []
    for _ in range(repeat):
        c0 = time.process_time()
        positions = sum(len(p) for d in entries.values() for p in read_position_delete_file(table.io, d).values())
        samples.append(time.process_time() - c0)
    return {
        "delete_entries": len(entries),
        "positions": positions,
        "median_cpu_seconds": statistics.median(samples),
        "samples_cpu_seconds": samples,
    }


def summary_live_rows(summary: dict[str, str]) -> int:
    return int(summary["total-records"]) - int(summary.get("total-position-deletes", "0"))


def warm_up(data: pa.Table, data_dir: Path, variants: list[str]) -> None:
    """Untimed: every variant deletes from and scans a 2,000-row table once, so that lazy
    imports and first-call costs are not charged to whichever timed call comes first."""
    tiny = data.slice(0, min(2_000, data.num_rows))
    for name in variants:
        root = data_dir / f"wh-v3-warmup-{name}"
        table, _ = build_warehouse(root, file_slices(tiny, 2), **VARIANTS[name])
        table.delete(band(tiny, 0, 0.01).text)
        table.delete(band(tiny, 1, 0.01).text)
        table.scan().to_arrow()
        shutil.rmtree(root, ignore_errors=True)


def time_reads(tables: dict[str, Any], rows: int, cumulative: DeleteSpec, repeat: int) -> dict[str, Any]:
    first_mor = next(n for n in tables if n.endswith("_mor"))
    floor_paths = [local_path(t.data_file.file_path) for t in tables[first_mor].scan().plan_files()]
    checks = [check_rows(f"{name} scan().to_arrow()", table.scan().to_arrow(), rows, cumulative) for name, table in tables.items()]
    checks.append(check_rows("floor (pyarrow.dataset, deletes ignored)", ds.dataset(floor_paths).to_table(), rows, None))
    readers: dict[str, Any] = {"floor": lambda: ds.dataset(floor_paths).to_table()}
    for name, table in tables.items():
        readers[name] = table.scan().to_arrow
        if name.endswith("_mor"):
            readers[f"{name}_cold"] = lambda table=table: cold_read(table)
        else:
            paths = [local_path(t.data_file.file_path) for t in table.scan().plan_files()]
            readers[f"{name}_files"] = lambda paths=paths: ds.dataset(paths).to_table()
    decode = {name: decode_deletes(table, max(repeat, 5)) for name, table in tables.items() if name.endswith("_mor")}
    timings = median_timing(readers, repeat)
    floor = timings["floor"]["median_seconds"]
    ratios = {f"{name}_over_floor": t["median_seconds"] / floor for name, t in timings.items() if name != "floor"}
    return {"floor_data_files": len(floor_paths), "timings": timings, "ratios": ratios, "decode_deletes": decode, "checks": checks}


def run(args: argparse.Namespace, result: dict[str, Any]) -> None:
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    rows, columns = data.num_rows, set(data.column_names)
    specs = [band(data, k, args.fraction) for k in range(args.deletes)]
    result["deletes_selected_rows"] = [s.count for s in specs]
    result["predicates"] = [s.text for s in specs]
    log(
        f"{rows:,} rows in {args.files} files; {args.deletes} DELETEs of "
        f"{statistics.median(result['deletes_selected_rows']):,.0f} rows (median) each"
    )
    warm_up(data, args.data_dir, args.variants)

    tables, roots = {}, {}
    result["builds"] = {}
    for name in args.variants:
        roots[name] = args.data_dir / f"wh-v3-{name}"
        tables[name], result["builds"][name] = build_warehouse(roots[name], slices, **VARIANTS[name])
        log(f"built {name} in {result['builds'][name]['seconds']:.2f} s")
    deletes: dict[str, list[dict[str, Any]]] = {name: [] for name in args.variants}
    reads: dict[str, Any] = {}
    read_after = sorted({1, args.deletes})
    for k, spec in enumerate(specs):
        shift = k % len(args.variants)
        for name in args.variants[shift:] + args.variants[:shift]:
            table = tables[name]
            run_ = timed_dml(table, roots[name], lambda t=table, s=spec: t.delete(s.text), columns, delete=k + 1, selected_rows=spec.count)
            run_["content_bytes"] = {kind: run_["files"]["new_by_kind"].get(kind, {}).get("bytes", 0) for kind in CONTENT_KINDS}
            run_["live_after"] = live_files(table)
            expected = rows - sum(s.count for s in specs[: k + 1])
            if summary_live_rows(run_["summary"]) != expected:
                raise BenchmarkError(
                    f"{name} after delete {k + 1}: summary says {summary_live_rows(run_['summary'])} live rows, expected {expected}"
                )
            deletes[name].append(run_)
            log(
                f"delete {k + 1:>2} {name}: {run_['wall_seconds']:.3f} s wall, {run_['cpu_seconds']:.3f} s cpu, "
                f"{run_['bytes_written']:,} B ({run_['files']['new_files']} files); "
                f"live delete entries {run_['live_after']['delete_entries']}"
            )
        if k + 1 in read_after:
            log(f"timing reads after {k + 1} deletes: {args.repeat} rounds")
            reads[str(k + 1)] = time_reads(tables, rows, union(specs[: k + 1]), args.repeat)
            log("  " + ", ".join(f"{n} {t['median_seconds']:.3f} s" for n, t in reads[str(k + 1)]["timings"].items()))
    result["deletes"] = deletes
    result["reads"] = reads
    result["summary_table"] = summarize(deletes, reads[str(args.deletes)])
    if args.profile:
        result["profiles"] = profile(args, data, tables)
    if not args.keep:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)


def summarize(deletes: dict[str, list[dict[str, Any]]], last_read: dict[str, Any]) -> dict[str, Any]:
    out = {}
    floor = last_read["timings"]["floor"]
    for name, runs in deletes.items():
        out[name] = {
            "first_delete_wall_seconds": runs[0]["wall_seconds"],
            "median_delete_wall_seconds": statistics.median(r["wall_seconds"] for r in runs),
            "median_delete_cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
            "first_delete_bytes": runs[0]["bytes_written"],
            "median_delete_bytes": statistics.median(r["bytes_written"] for r in runs),
            "total_bytes": sum(r["bytes_written"] for r in runs),
            "median_delete_content_bytes": statistics.median(sum(r["content_bytes"].values()) for r in runs),
            "live_delete_entries_after_last": runs[-1]["live_after"]["delete_entries"],
            "live_delete_files_after_last": runs[-1]["live_after"]["delete_files_on_disk"],
            "read_seconds": last_read["timings"][name]["median_seconds"],
            "read_over_floor": last_read["ratios"][f"{name}_over_floor"],
            # Less sensitive to other processes than the medians: fastest sample, and CPU time.
            "read_min_over_floor_min": last_read["timings"][name]["min_seconds"] / floor["min_seconds"],
            "read_cpu_over_floor_cpu": last_read["timings"][name]["median_cpu_seconds"] / floor["median_cpu_seconds"],
            "cold_read_over_floor": last_read["ratios"].get(f"{name}_cold_over_floor"),
            "decode_deletes_cpu_seconds": last_read["decode_deletes"].get(name, {}).get("median_cpu_seconds"),
        }
    return out


def profile(args: argparse.Namespace, data: pa.Table, tables: dict[str, Any]) -> dict[str, Any]:
    """After everything is timed: one more DELETE (band `--deletes`) and one read per variant
    under cProfile, written next to --out."""
    spec = band(data, args.deletes, args.fraction)
    out = {}
    for name, table in tables.items():
        base = args.out.parent / f"{args.out.stem}-profile-{name}"
        out[f"delete_{name}"] = profile_call(lambda t=table: t.delete(spec.text), Path(f"{base}-delete"))
        out[f"read_{name}"] = profile_call(table.scan().to_arrow, Path(f"{base}-read"))
    return out


def print_report(result: dict[str, Any], args: argparse.Namespace) -> None:
    floor = result["reads"][str(args.deletes)]["timings"]["floor"]["median_seconds"]
    print(
        f"\n{args.rows:,} rows, {args.files} files, {args.deletes} DELETEs of ~{args.fraction:.2%}; "
        f"read after the last: floor {floor:.3f} s (pyarrow.dataset, deletes ignored)"
    )
    print(
        f"{'variant':<8}{'1st s':>8}{'med s':>8}{'med cpu':>8}{'1st bytes':>12}{'med bytes':>12}"
        f"{'live del':>9}{'read s':>8}{'/floor':>8}{'min':>7}{'cpu':>7}{'cold':>7}"
    )
    for name, s in result["summary_table"].items():
        cold = s["cold_read_over_floor"]
        print(
            f"{name:<8}{s['first_delete_wall_seconds']:>8.3f}{s['median_delete_wall_seconds']:>8.3f}"
            f"{s['median_delete_cpu_seconds']:>8.3f}{s['first_delete_bytes']:>12,}"
            f"{s['median_delete_bytes']:>12,.0f}{s['live_delete_entries_after_last']:>9}"
            f"{s['read_seconds']:>8.3f}{s['read_over_floor']:>7.2f}x"
            f"{s['read_min_over_floor_min']:>6.2f}x{s['read_cpu_over_floor_cpu']:>6.2f}x"
            f"{'' if cold is None else f'{cold:>6.2f}x'}"
        )
    print(
        "decode of the live delete files (CPU, one thread, no cache): "
        + ", ".join(
            f"{n} {s['decode_deletes_cpu_seconds'] * 1000:.2f} ms"
            for n, s in result["summary_table"].items()
            if s["decode_deletes_cpu_seconds"] is not None
        )
    )
    print(f"load average start {result['load_average_start']}, end {result['load_average_end']}; total {result['duration_seconds']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--deletes", type=int, default=10)
    p.add_argument("--fraction", type=float, default=0.001, help="rows each DELETE removes")
    p.add_argument("--repeat", type=int, default=5, help="timed read rounds after one warm-up")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"subset of {','.join(VARIANTS)}")
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "v3_deletes.json")
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench"))
    p.add_argument("--keep", action="store_true", help="keep the warehouses under --data-dir")
    p.add_argument("--profile", action="store_true", help="after timing, one more DELETE and one read per variant under cProfile")
    args = p.parse_args(argv)
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not args.variants or set(args.variants) - set(VARIANTS) or not any(v.endswith("_mor") for v in args.variants):
        p.error(f"--variants: a subset of {', '.join(VARIANTS)} with at least one *_mor")
    if args.deletes < 1 or args.fraction * (args.deletes + args.profile) > 1:
        p.error("need deletes >= 1 and fraction * deletes <= 1")
    started = time.perf_counter()
    result = start_result("v3_deletes", args)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    run(args, result)
    result["load_average_end"] = os.getloadavg()
    result["duration_seconds"] = time.perf_counter() - started
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print_report(result, args)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
