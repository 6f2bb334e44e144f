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
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py

from common import (
    REPO_ROOT,
    TABLE_NAME,
    DeleteSpec,
    build_warehouse,
    check_rows,
    file_slices,
    fmt_ratio,
    generate_events,
    in_list_predicate,
    local_path,
    log,
    median_timing,
    profile_call,
    start_result,
    timed_dml,
    value_predicate,
    verdict,
)

TARGET_DELETE_TIME_RATIO = 10.0  # copy-on-write time / merge-on-read time, at least
TARGET_DELETE_BYTES_RATIO = 100.0  # copy-on-write bytes / merge-on-read bytes, at least
TARGET_READ_FLOOR_RATIO = 1.3  # mor read time / plain pyarrow read time, at most
TARGET_PYICEBERG_RATIO = 5.0  # pyiceberg read time / mor read time, at least


def time_predicate_parse(text: str) -> float:
    """Seconds for pyiceberg's filter parser (the filter language mor accepts) to parse `text`."""
    from pyiceberg.expressions import parser

    start = time.perf_counter()
    parser.parse(text)
    return time.perf_counter() - start


# --------------------------------------------------------------------------- timing


def timed_delete(table: Any, root: Path, spec: DeleteSpec, mode: str, data_columns: set[str]) -> dict[str, Any]:
    return timed_dml(table, root, lambda: table.delete(spec.text, mode=mode), data_columns, mode=mode)


# --------------------------------------------------------------------------- scenarios


def warm_up(data: pa.Table, data_dir: Path, spec_kind: str, seed: int) -> None:
    """Untimed: one delete in each mode and one scan on a tiny table, so that lazy imports and
    first-call costs are not charged to whichever timed call comes first."""
    tiny = data.slice(0, min(2_000, data.num_rows))
    for mode in ("merge-on-read", "copy-on-write"):
        root = data_dir / f"wh-warmup-{mode}"
        table, _ = build_warehouse(root, file_slices(tiny, 2))
        spec = in_list_predicate(tiny, 0.01, seed) if spec_kind == "id-in-list" else value_predicate(tiny, 0.01)
        table.delete(spec.text, mode=mode)
        table.scan().to_arrow()
        shutil.rmtree(root, ignore_errors=True)


def scenario_delete(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table], data_dir: Path) -> dict[str, Any]:
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
            log(f"(a)   built in {build['seconds']:.2f} s ({build['parquet_bytes']:,} Parquet bytes); timing DELETE {mode}")
            result = timed_delete(table, root, spec, mode, data_columns)
            runs[mode].append(result)
            log(f"(a)   {mode}: {result['wall_seconds']:.3f} s, {result['bytes_written']:,} bytes")
            if rep == 0:
                checks.append(check_rows(f"mor scan after {mode} delete", table.scan().to_arrow(), rows, spec))
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
        "rows": rows,
        "deleted_rows": spec.count,
        "deleted_fraction": spec.count / rows,
        "predicate": spec.as_json(),
        "in_list_parse_seconds": parse_seconds,
        "in_list_ids": in_list.count,
        "dml_repeat": args.dml_repeat,
        "builds": builds,
        "runs": runs,
        "median": {
            "copy_on_write_seconds": cow_t,
            "merge_on_read_seconds": mor_t,
            "copy_on_write_bytes": cow_b,
            "merge_on_read_bytes": mor_b,
        },
        "ratios": ratios,
        "targets": {
            "time_cow_over_mor_at_least": TARGET_DELETE_TIME_RATIO,
            "bytes_cow_over_mor_at_least": TARGET_DELETE_BYTES_RATIO,
            "time_met": ratios["time_cow_over_mor"] >= TARGET_DELETE_TIME_RATIO,
            "bytes_met": ratios["bytes_cow_over_mor"] is not None and ratios["bytes_cow_over_mor"] >= TARGET_DELETE_BYTES_RATIO,
        },
        "checks": checks,
    }


def scenario_read(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table], data_dir: Path) -> dict[str, Any]:
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
    log(f"(b) setup delete: {setup_delete['wall_seconds']:.3f} s, {setup_delete['bytes_written']:,} bytes")

    tasks = list(table.scan().plan_files())
    paths = [local_path(t.data_file.file_path) for t in tasks]
    task_deletes = [len(getattr(t, "delete_files", None) or ()) for t in tasks]
    metadata_location = table.metadata_location
    static = StaticTable.from_metadata(metadata_location)

    # Correctness first (untimed): readers that honour deletes must drop exactly the deleted rows.
    checks = [
        check_rows("mor table.scan().to_arrow()", table.scan().to_arrow(), rows, spec),
        check_rows("pyiceberg StaticTable scan().to_arrow()", static.scan().to_arrow(), rows, spec),
        check_rows("pyarrow.dataset on data files (no deletes)", ds.dataset(paths, format="parquet").to_table(), rows, None),
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
    floor_name = min(("pyarrow_dataset", "pyarrow_read_table_per_file"), key=lambda n: timings[n]["median_seconds"])
    mor_s = timings["mor"]["median_seconds"]
    floor_s = timings[floor_name]["median_seconds"]
    ratios = {
        "mor_over_floor": mor_s / floor_s,
        "floor_reader": floor_name,
        "mor_over_pyarrow_dataset": mor_s / timings["pyarrow_dataset"]["median_seconds"],
        "mor_over_pyarrow_read_table_per_file": mor_s / timings["pyarrow_read_table_per_file"]["median_seconds"],
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
        "rows": rows,
        "deleted_rows": spec.count,
        "deleted_fraction": spec.count / rows,
        "predicate": spec.as_json(),
        "build": build,
        "setup_delete": setup_delete,
        "tasks": len(tasks),
        "delete_files_per_task": task_deletes,
        "metadata_location": metadata_location,
        "timings": timings,
        "ratios": ratios,
        "targets": {
            "mor_over_floor_at_most": TARGET_READ_FLOOR_RATIO,
            "pyiceberg_over_mor_at_least": TARGET_PYICEBERG_RATIO,
            "floor_met": ratios["mor_over_floor"] <= TARGET_READ_FLOOR_RATIO,
            "pyiceberg_met": ratios["pyiceberg_over_mor"] >= TARGET_PYICEBERG_RATIO,
        },
        "checks": checks,
        "pyiceberg_sqlcatalog_check": sql_check,
        "profiles": profiles,
    }


def check_sqlcatalog(root: Path, rows: int, spec: DeleteSpec) -> dict[str, Any]:
    """Untimed: pyiceberg opens the table through the SQLite catalog mor wrote."""
    from pyiceberg.catalog.sql import SqlCatalog

    try:
        catalog = SqlCatalog("default", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
        result = catalog.load_table(TABLE_NAME).scan().to_arrow()
    except Exception as exc:  # report, do not hide: interop is part of the product
        log(f"WARNING: pyiceberg SqlCatalog could not read the table: {exc!r}")
        return {"ok": False, "error": repr(exc)}
    return check_rows("pyiceberg SqlCatalog load_table().scan().to_arrow()", result, rows, spec)


def profile_deletes(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table], data_dir: Path) -> dict[str, Any]:
    """Extra, untimed-by-the-report runs under cProfile, on fresh warehouses."""
    spec = (
        in_list_predicate(data, args.delete_fraction, args.seed)
        if args.predicate == "in-list"
        else value_predicate(data, args.delete_fraction)
    )
    out: dict[str, Any] = {}
    for mode in ("merge-on-read", "copy-on-write"):
        root = data_dir / f"wh-profile-{mode}"
        table, _ = build_warehouse(root, slices)
        base = args.out.parent / f"{args.out.stem}-profile-delete-{mode}"
        out[f"delete_{mode}"] = profile_call(lambda table=table, mode=mode: table.delete(spec.text, mode=mode), base)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return out


# --------------------------------------------------------------------------- report


# --------------------------------------------------------------------------- report


def print_report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print()
    print(
        f"mor core benchmark  rows={result['params']['rows']:,} files={result['params']['files']}"
        f"  python {m['python']}  pyarrow {m['pyarrow']}  pyiceberg {m['pyiceberg']}"
        f"  cores={m['cpu_count']}"
    )
    a = result.get("scenario_a")
    if a:
        print(
            f"\n(a) DELETE {a['deleted_rows']:,} of {a['rows']:,} rows "
            f"({a['deleted_fraction']:.3%}), predicate kind {a['predicate']['kind']}:"
            f" {a['predicate']['text'][:60]}"
        )
        print(f"    {'mode':<15}{'wall s':>10}{'bytes written':>16}{'summary added-files-size':>26}  new files by kind")
        for mode in ("copy-on-write", "merge-on-read"):
            run = a["runs"][mode][0]
            kinds = ", ".join(f"{k}={v['files']}/{v['bytes']:,}B" for k, v in sorted(run["files"]["new_by_kind"].items()))
            wall = statistics.median(r["wall_seconds"] for r in a["runs"][mode])
            size = statistics.median(r["bytes_written"] for r in a["runs"][mode])
            print(f"    {mode:<15}{wall:>10.3f}{size:>16,.0f}{run['summary_added_files_size'] or 0:>26,}  {kinds}")
        r, t = a["ratios"], a["targets"]
        bytes_ratio = r["bytes_cow_over_mor"]
        print(
            f"    cow/mor time  {r['time_cow_over_mor']:8.1f}x  (target >= "
            f"{t['time_cow_over_mor_at_least']:.0f}x: {verdict(t['time_met'])})"
        )
        print(
            f"    cow/mor bytes {bytes_ratio if bytes_ratio is not None else float('nan'):8.1f}x"
            f"  (target >= {t['bytes_cow_over_mor_at_least']:.0f}x: {verdict(t['bytes_met'])});"
            f" by summary added-files-size: {fmt_ratio(r['summary_added_files_size_cow_over_mor'])}"
        )
        print(f"    (pyiceberg parser on the {a['in_list_ids']:,}-id IN list alone: {a['in_list_parse_seconds']:.3f} s)")
    b = result.get("scenario_b")
    if b:
        print(
            f"\n(b) full read, {b['deleted_rows']:,} of {b['rows']:,} rows position-deleted "
            f"({b['deleted_fraction']:.2%}), {b['tasks']} tasks; "
            f"setup MOR delete {b['setup_delete']['wall_seconds']:.3f} s"
        )
        print(f"    {'reader':<38}{'median s':>10}{'min s':>10}{'cpu s':>10}{'rows':>14}")
        labels = {
            "mor": "mor scan().to_arrow()",
            "pyarrow_dataset": "pyarrow.dataset, deletes ignored",
            "pyarrow_read_table_per_file": "pq.read_table per file, deletes ign.",
            "pyiceberg": f"pyiceberg {m['pyiceberg']} scan().to_arrow()",
            "mor_no_deletes": "(context) mor, snapshot before delete",
            "pyiceberg_no_deletes": "(context) pyiceberg, snapshot before",
        }
        for name, timing in b["timings"].items():
            print(
                f"    {labels[name]:<38}{timing['median_seconds']:>10.3f}"
                f"{timing['min_seconds']:>10.3f}{timing['median_cpu_seconds']:>10.3f}"
                f"{timing['rows']:>14,}"
            )
        r, t = b["ratios"], b["targets"]
        print(
            f"    mor / plain pyarrow ({r['floor_reader']}) {r['mor_over_floor']:6.2f}x"
            f"  (target <= {t['mor_over_floor_at_most']}x: {verdict(t['floor_met'])})"
        )
        print(
            f"    pyiceberg / mor {r['pyiceberg_over_mor']:6.2f}x"
            f"  (target >= {t['pyiceberg_over_mor_at_least']:.0f}x: {verdict(t['pyiceberg_met'])})"
        )
        print(
            f"    context: deletes cost mor {r['mor_deletes_over_mor_no_deletes']:.2f}x and pyiceberg"
            f" {r['pyiceberg_deletes_over_pyiceberg_no_deletes']:.2f}x their own no-delete read;"
            f" pyiceberg with no deletes is {r['pyiceberg_no_deletes_over_floor']:.2f}x the floor"
        )
    print(
        f"\nload average start {result['load_average_start']}, end {result['load_average_end']};"
        f" total run {result['duration_seconds']:.1f} s"
    )


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10, help="data files (one append each)")
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--repeat", type=int, default=3, help="timed read rounds after one warm-up")
    p.add_argument("--dml-repeat", type=int, default=1, help="DELETE timings per mode, each on a freshly built warehouse (median)")
    p.add_argument("--delete-fraction", type=float, default=0.001, help="scenario (a)")
    p.add_argument("--read-delete-fraction", type=float, default=0.1, help="scenario (b)")
    p.add_argument(
        "--predicate",
        choices=["value-range", "in-list"],
        default="value-range",
        help="scenario (a) predicate: 'value < f' (default) or an IN list of random ids",
    )
    p.add_argument("--scenarios", default="a,b", help="comma-separated subset of a,b")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "core.json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    p.add_argument("--keep", action="store_true", help="keep the warehouses under --data-dir")
    p.add_argument(
        "--profile",
        action="store_true",
        help="after timing, profile one mor read and one DELETE per mode (cProfile; "
        "extra fresh warehouses), writing .prof/.txt next to --out",
    )
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
    result = start_result("core", args)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)

    log(f"generating {args.rows:,} rows (seed {args.seed})")
    t0 = time.perf_counter()
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    result["generation"] = {"seconds": time.perf_counter() - t0, "arrow_bytes": data.nbytes}
    log(f"generated in {result['generation']['seconds']:.2f} s ({data.nbytes:,} Arrow bytes)")

    log("warm-up (untimed): tiny table, one delete per mode, one scan")
    warm_up(data, args.data_dir, "id-in-list" if args.predicate == "in-list" else "value-range", args.seed)
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
