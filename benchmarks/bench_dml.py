"""DML benchmark for mor: equality deletes on read, UPDATE and UPSERT, merge-on-read vs copy-on-write.

Same generated table as bench_core.py (rows x 5 columns, one data file per slice), in one run:

(c) `table.delete_rows(pa.table({"id": ...}))` of a fraction (default 1%) of the ids, chosen at
    random with a fixed seed: one equality delete file, no data read (its time and bytes are
    reported). Then a full read, mor ``table.scan().to_arrow()`` (which anti-joins every data
    batch against the deleted keys) vs a plain pyarrow read of the same data files that ignores
    the deletes (the floor); target mor / floor <= 1.5x. Context: mor reading the snapshot
    before the delete.
(d) UPDATE of a small fraction (default 0.1%) of scattered rows, ``value = value + 1 where
    value < 0.001``, merge-on-read vs copy-on-write: wall time and bytes written, ratios.
(e) UPSERT of a fraction (default 1%) of existing ids (random, fixed seed) with changed values,
    plus a few new ids: merge-on-read with strategy "position", merge-on-read with strategy
    "equality", and copy-on-write: wall time and bytes written, ratios vs copy-on-write; then a
    full read of each resulting table vs a plain pyarrow read of its data files.

Every DML timing is on a freshly built warehouse (median of --dml-repeat). Every number printed
or written to JSON is measured in this run. See benchmarks/README.md.

    .venv/bin/python benchmarks/bench_dml.py                         # 10M rows, 10 files
    .venv/bin/python benchmarks/bench_dml.py --rows 200000 --files 4  # smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py

from common import (
    REPO_ROOT,
    BenchmarkError,
    DeleteSpec,
    build_warehouse,
    check_rows,
    file_slices,
    fmt_ratio,
    generate_events,
    local_path,
    log,
    median_of,
    median_timing,
    profile_call,
    remove_warehouse,
    start_result,
    timed_dml,
    value_predicate,
    verdict,
)

TARGET_EQ_READ_FLOOR_RATIO = 1.5  # (c) mor read with equality deletes / plain pyarrow read, at most

MOR, COW = "merge-on-read", "copy-on-write"
# (e) variants: label -> (mode, strategy)
UPSERT_VARIANTS: dict[str, tuple[str, str]] = {
    "merge-on-read/position": (MOR, "position"),
    "merge-on-read/equality": (MOR, "equality"),
    "copy-on-write": (COW, "position"),  # copy-on-write joins, like the position strategy
}
UPSERT_PAYLOAD_SUFFIX = "upserted"
UPSERT_VALUE_DELTA = 1.0


# --------------------------------------------------------------------------- inputs


def random_ids(rows: int, fraction: float, seed: int) -> pa.Array:
    """round(rows * fraction) distinct ids from 0..rows-1, uniformly at random, in random order."""
    k = max(1, round(rows * fraction))
    chosen = np.random.default_rng(seed).choice(rows, size=k, replace=False)
    return pa.array(chosen.astype(np.int64))


def upsert_source(data: pa.Table, ids: pa.Array, new_rows: int, seed: int) -> tuple[pa.Table, pa.Table]:
    """(source, its new-id part). Existing ids carry value + 1 and payload + '/upserted';
    new ids are rows..rows+new_rows-1 with freshly generated values."""
    existing = data.take(ids)
    existing = existing.set_column(existing.schema.get_field_index("value"), "value", pc.add(existing["value"], UPSERT_VALUE_DELTA))
    existing = existing.set_column(
        existing.schema.get_field_index("payload"), "payload", pc.binary_join_element_wise(existing["payload"], UPSERT_PAYLOAD_SUFFIX, "/")
    )
    fresh = generate_events(new_rows, seed) if new_rows else data.schema.empty_table()
    fresh = fresh.set_column(0, "id", pa.arange(data.num_rows, data.num_rows + new_rows))
    return pa.concat_tables([existing, fresh]).combine_chunks(), fresh


# --------------------------------------------------------------------------- checks


def check_table_equals(label: str, result: pa.Table, expected: pa.Table) -> dict[str, Any]:
    """Abort loudly unless `result`, sorted by id, equals `expected` (sorted by id) column by
    column. Untimed."""
    got = result.sort_by("id")
    check: dict[str, Any] = {
        "reader": label,
        "rows": got.num_rows,
        "expected_rows": expected.num_rows,
        "distinct_ids": pc.count_distinct(got["id"]).as_py(),
        "mismatched_columns": [],
    }
    if got.num_rows == expected.num_rows:
        for name in expected.column_names:
            a = got[name].combine_chunks()
            b = expected[name].combine_chunks()
            if a.type != b.type:
                b = b.cast(a.type)
            if not a.equals(b):
                differing = pc.sum(pc.cast(pc.invert(pc.fill_null(pc.equal(a, b), False)), pa.int64()))
                check["mismatched_columns"].append({"column": name, "rows": differing.as_py()})
    check["ok"] = got.num_rows == expected.num_rows and check["distinct_ids"] == got.num_rows and not check["mismatched_columns"]
    if not check["ok"]:
        print(f"\n!!! CORRECTNESS FAILURE in {label}: {check}\n", file=sys.stderr, flush=True)
        raise BenchmarkError(f"{label}: wrong rows: {check}")
    return check


def expected_after_update(data: pa.Table, updated_ids: pa.Array) -> pa.Table:
    mask = pc.is_in(data["id"], value_set=updated_ids)
    value = pc.if_else(mask, pc.add(data["value"], 1), data["value"])
    return data.set_column(data.schema.get_field_index("value"), "value", value)


def expected_after_upsert(data: pa.Table, source: pa.Table, fresh: pa.Table) -> pa.Table:
    existing = source.slice(0, source.num_rows - fresh.num_rows)
    positions = existing["id"].to_numpy()  # id == row position in the generated data
    value = data["value"].to_numpy().copy()
    value[positions] = existing["value"].to_numpy()
    payload = pc.if_else(
        pc.is_in(data["id"], value_set=existing["id"]),
        pc.binary_join_element_wise(data["payload"], UPSERT_PAYLOAD_SUFFIX, "/"),
        data["payload"],
    )
    out = data.set_column(data.schema.get_field_index("value"), "value", pa.array(value))
    out = out.set_column(out.schema.get_field_index("payload"), "payload", payload)
    return pa.concat_tables([out, fresh.cast(out.schema)])


def floor_readers(paths: list[str], suffix: str = "") -> dict[str, Callable[[], pa.Table]]:
    return {
        f"pyarrow_dataset{suffix}": lambda: ds.dataset(paths, format="parquet").to_table(),
        f"pyarrow_read_table_per_file{suffix}": lambda: pa.concat_tables([pq.read_table(p) for p in paths]),
    }


# --------------------------------------------------------------------------- scenarios


def warm_up(data: pa.Table, data_dir: Path, seed: int) -> None:
    """Untimed: every verb timed below, once, on a tiny table, so that lazy imports and
    first-call costs are not charged to whichever timed call comes first."""
    tiny = data.slice(0, min(2_000, data.num_rows))
    slices = file_slices(tiny, 2)
    root = data_dir / "wh-warmup-dml"
    table, _ = build_warehouse(root, slices)
    table.delete_rows(pa.table({"id": random_ids(tiny.num_rows, 0.01, seed)}))
    table.scan().to_arrow()
    remove_warehouse(root)
    for mode in (MOR, COW):
        table, _ = build_warehouse(root, slices)
        table.update({"value": pc.field("value") + 1}, where="value < 0.01", mode=mode)
        table.scan().to_arrow()
        remove_warehouse(root)
    for mode, strategy in UPSERT_VARIANTS.values():
        table, _ = build_warehouse(root, slices)
        source, _ = upsert_source(tiny, random_ids(tiny.num_rows, 0.01, seed), 3, seed)
        table.upsert(source, on=["id"], mode=mode, strategy=strategy)
        table.scan().to_arrow()
        remove_warehouse(root)


def scenario_equality_read(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table], data_dir: Path) -> dict[str, Any]:
    rows = data.num_rows
    data_columns = set(data.column_names)
    ids = random_ids(rows, args.delete_keys_fraction, args.seed + 100)
    spec = DeleteSpec(
        f"delete_rows(id: {len(ids)} keys)",
        ids,
        "equality-delete-keys",
        f"{len(ids)} distinct ids sampled uniformly from 0..{rows - 1} (numpy default_rng seed {args.seed + 100}), random order",
    )
    keys = pa.table({"id": ids})
    root = data_dir / "wh-c"
    builds, runs = [], []
    for rep in range(args.dml_repeat):
        log(f"(c) rep {rep + 1}/{args.dml_repeat}: building warehouse")
        table, build = build_warehouse(root, slices)
        builds.append(build)
        before_delete = table.current_snapshot().snapshot_id
        log(f"(c)   built in {build['seconds']:.2f} s; timing delete_rows of {len(ids):,} ids")
        run = timed_dml(table, root, lambda table=table: table.delete_rows(keys), data_columns, operation="delete_rows")
        runs.append(run)
        log(f"(c)   delete_rows: {run['wall_seconds']:.3f} s, {run['bytes_written']:,} bytes")
        if rep + 1 < args.dml_repeat:
            remove_warehouse(root)
    # The last warehouse stays for the reads.
    tasks = list(table.scan().plan_files())
    paths = [local_path(t.data_file.file_path) for t in tasks]
    eq_files_per_task = [len(t.equality_deletes) for t in tasks]
    pos_files_per_task = [len(t.position_deletes) for t in tasks]
    if not all(eq_files_per_task):
        raise BenchmarkError(f"(c) expected every task to carry the equality delete file: {eq_files_per_task}")

    checks = [
        check_rows("mor table.scan().to_arrow() after delete_rows", table.scan().to_arrow(), rows, spec),
        check_rows("mor scan of the snapshot before delete_rows", table.scan(snapshot_id=before_delete).to_arrow(), rows, None),
        check_rows("pyarrow.dataset on data files (no deletes)", ds.dataset(paths, format="parquet").to_table(), rows, None),
    ]
    readers: dict[str, Callable[[], pa.Table]] = {
        "mor": lambda: table.scan().to_arrow(),
        **floor_readers(paths),
        "mor_no_deletes": lambda: table.scan(snapshot_id=before_delete).to_arrow(),
    }
    log(f"(c) timing reads: warm-up + {args.repeat} interleaved rounds of {list(readers)}")
    timings = median_timing(readers, args.repeat)
    floor_name = min(("pyarrow_dataset", "pyarrow_read_table_per_file"), key=lambda n: timings[n]["median_seconds"])
    mor_s = timings["mor"]["median_seconds"]
    floor_s = timings[floor_name]["median_seconds"]
    ratios = {
        "mor_over_floor": mor_s / floor_s,
        "floor_reader": floor_name,
        "mor_over_pyarrow_dataset": mor_s / timings["pyarrow_dataset"]["median_seconds"],
        "mor_over_pyarrow_read_table_per_file": mor_s / timings["pyarrow_read_table_per_file"]["median_seconds"],
        "mor_no_deletes_over_floor": timings["mor_no_deletes"]["median_seconds"] / floor_s,
        "mor_deletes_over_mor_no_deletes": mor_s / timings["mor_no_deletes"]["median_seconds"],
    }
    profiles: dict[str, Any] = {}
    if args.profile:
        base = args.out.parent / f"{args.out.stem}-profile-read-equality-deletes"
        profiles["read_mor"] = profile_call(lambda: table.scan().to_arrow(), base)
    if not args.keep:
        remove_warehouse(root)
    return {
        "rows": rows,
        "deleted_keys": len(ids),
        "deleted_fraction": len(ids) / rows,
        "keys": spec.as_json(),
        "dml_repeat": args.dml_repeat,
        "builds": builds,
        "delete_rows_runs": runs,
        "delete_rows_median": {"wall_seconds": median_of(runs, "wall_seconds"), "bytes_written": median_of(runs, "bytes_written")},
        "tasks": len(tasks),
        "equality_delete_files_per_task": eq_files_per_task,
        "position_delete_files_per_task": pos_files_per_task,
        "timings": timings,
        "ratios": ratios,
        "targets": {
            "mor_over_floor_at_most": TARGET_EQ_READ_FLOOR_RATIO,
            "floor_met": ratios["mor_over_floor"] <= TARGET_EQ_READ_FLOOR_RATIO,
        },
        "checks": checks,
        "profiles": profiles,
    }


def scenario_update(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table], data_dir: Path) -> dict[str, Any]:
    rows = data.num_rows
    data_columns = set(data.column_names)
    spec = value_predicate(data, args.update_fraction)
    assignments = {"value": pc.field("value") + 1}
    log(f"(d) UPDATE set value = value + 1 where {spec.text} -> selects {spec.count} rows")
    expected: pa.Table | None = None
    runs: dict[str, list[dict[str, Any]]] = {COW: [], MOR: []}
    builds, checks = [], []
    for rep in range(args.dml_repeat):
        for mode in (COW, MOR):
            root = data_dir / f"wh-d-{mode}"
            log(f"(d) rep {rep + 1}/{args.dml_repeat}: building {mode} warehouse")
            table, build = build_warehouse(root, slices)
            build["mode"] = mode
            builds.append(build)
            log(f"(d)   built in {build['seconds']:.2f} s; timing UPDATE {mode}")
            run = timed_dml(
                table, root, lambda table=table, mode=mode: table.update(assignments, where=spec.text, mode=mode), data_columns, mode=mode
            )
            runs[mode].append(run)
            log(f"(d)   {mode}: {run['wall_seconds']:.3f} s, {run['bytes_written']:,} bytes")
            if rep == 0:
                if expected is None:
                    expected = expected_after_update(data, spec.deleted_ids)
                checks.append(check_table_equals(f"mor scan after {mode} UPDATE", table.scan().to_arrow(), expected))
            if not args.keep:
                remove_warehouse(root)
    del expected
    cow_t, mor_t = median_of(runs[COW], "wall_seconds"), median_of(runs[MOR], "wall_seconds")
    cow_b, mor_b = median_of(runs[COW], "bytes_written"), median_of(runs[MOR], "bytes_written")
    return {
        "rows": rows,
        "updated_rows": spec.count,
        "updated_fraction": spec.count / rows,
        "predicate": spec.as_json(),
        "set": {"value": "value + 1"},
        "predicate_note": "the predicate is on the column it updates (value); an updated row "
        "(value >= 1) no longer matches it, which changes nothing for a "
        "one-shot UPDATE",
        "dml_repeat": args.dml_repeat,
        "builds": builds,
        "runs": runs,
        "median": {
            "copy_on_write_seconds": cow_t,
            "merge_on_read_seconds": mor_t,
            "copy_on_write_bytes": cow_b,
            "merge_on_read_bytes": mor_b,
        },
        "ratios": {"time_cow_over_mor": cow_t / mor_t, "bytes_cow_over_mor": cow_b / mor_b if mor_b else None},
        "checks": checks,
    }


def scenario_upsert(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table], data_dir: Path) -> dict[str, Any]:
    rows = data.num_rows
    data_columns = set(data.column_names)
    ids = random_ids(rows, args.upsert_fraction, args.seed + 200)
    source, fresh = upsert_source(data, ids, args.upsert_new_rows, args.seed + 300)
    log(
        f"(e) UPSERT source: {len(ids):,} existing ids (value + {UPSERT_VALUE_DELTA}, payload + "
        f"'/{UPSERT_PAYLOAD_SUFFIX}') + {fresh.num_rows} new ids = {source.num_rows:,} rows"
    )
    expected = expected_after_upsert(data, source, fresh)
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in UPSERT_VARIANTS}
    builds, checks = [], []
    kept: dict[str, tuple[Any, Path]] = {}
    for rep in range(args.dml_repeat):
        for label, (mode, strategy) in UPSERT_VARIANTS.items():
            root = data_dir / f"wh-e-{label.replace('/', '-')}"
            log(f"(e) rep {rep + 1}/{args.dml_repeat}: building warehouse for {label}")
            table, build = build_warehouse(root, slices)
            build["variant"] = label
            builds.append(build)
            log(f"(e)   built in {build['seconds']:.2f} s; timing UPSERT {label}")
            run = timed_dml(
                table,
                root,
                lambda table=table, mode=mode, strategy=strategy: table.upsert(source, on=["id"], mode=mode, strategy=strategy),
                data_columns,
                variant=label,
                mode=mode,
                strategy=strategy,
            )
            runs[label].append(run)
            log(f"(e)   {label}: {run['wall_seconds']:.3f} s, {run['bytes_written']:,} bytes")
            if rep + 1 < args.dml_repeat:
                remove_warehouse(root)
            else:
                kept[label] = (table, root)  # the last table of each variant is read below
    for label, (table, _) in kept.items():
        checks.append(check_table_equals(f"mor scan after UPSERT {label}", table.scan().to_arrow(), expected))
    del expected

    readers: dict[str, Callable[[], pa.Table]] = {}
    tasks_info: dict[str, Any] = {}
    for label, (table, _) in kept.items():
        tasks = list(table.scan().plan_files())
        paths = [local_path(t.data_file.file_path) for t in tasks]
        tasks_info[label] = {
            "tasks": len(tasks),
            "position_delete_files_per_task": [len(t.position_deletes) for t in tasks],
            "equality_delete_files_per_task": [len(t.equality_deletes) for t in tasks],
        }
        readers[f"mor:{label}"] = lambda t=table: t.scan().to_arrow()
        readers[f"pyarrow_dataset:{label}"] = lambda p=paths: ds.dataset(p, format="parquet").to_table()
    log(f"(e) timing reads: warm-up + {args.repeat} interleaved rounds of {list(readers)}")
    timings = median_timing(readers, args.repeat)
    for label in kept:
        floor_rows = timings[f"pyarrow_dataset:{label}"]["rows"]
        tasks_info[label]["data_file_rows_deletes_ignored"] = floor_rows

    cow_t, cow_b = median_of(runs[COW], "wall_seconds"), median_of(runs[COW], "bytes_written")
    median = {
        label: {"wall_seconds": median_of(r, "wall_seconds"), "bytes_written": median_of(r, "bytes_written")} for label, r in runs.items()
    }
    ratios: dict[str, Any] = {}
    for label in UPSERT_VARIANTS:
        m = median[label]
        read_s = timings[f"mor:{label}"]["median_seconds"]
        ratios[label] = {
            "time_cow_over_variant": cow_t / m["wall_seconds"],
            "bytes_cow_over_variant": cow_b / m["bytes_written"] if m["bytes_written"] else None,
            "read_mor_over_pyarrow_dataset": read_s / timings[f"pyarrow_dataset:{label}"]["median_seconds"],
            "read_over_cow_read": read_s / timings[f"mor:{COW}"]["median_seconds"],
        }
    profiles: dict[str, Any] = {}
    if args.profile:
        for label, (table, _) in kept.items():
            base = args.out.parent / f"{args.out.stem}-profile-read-after-upsert-{label.replace('/', '-')}"
            profiles[f"read_{label}"] = profile_call(lambda t=table: t.scan().to_arrow(), base)
        for label, (mode, strategy) in UPSERT_VARIANTS.items():
            root = data_dir / f"wh-e-profile-{label.replace('/', '-')}"
            table, _ = build_warehouse(root, slices)
            base = args.out.parent / f"{args.out.stem}-profile-upsert-{label.replace('/', '-')}"
            profiles[f"upsert_{label}"] = profile_call(
                lambda table=table, mode=mode, strategy=strategy: table.upsert(source, on=["id"], mode=mode, strategy=strategy), base
            )
            remove_warehouse(root)
    if not args.keep:
        for _, root in kept.values():
            remove_warehouse(root)
    return {
        "rows": rows,
        "upserted_existing_rows": len(ids),
        "new_rows": fresh.num_rows,
        "source_rows": source.num_rows,
        "upserted_fraction": len(ids) / rows,
        "source": {
            "existing_ids": f"{len(ids)} distinct ids sampled uniformly from 0..{rows - 1} "
            f"(numpy default_rng seed {args.seed + 200}), random order",
            "changes": f"value + {UPSERT_VALUE_DELTA}, payload + '/{UPSERT_PAYLOAD_SUFFIX}'",
            "new_ids": f"{rows}..{rows + fresh.num_rows - 1}, generated with seed {args.seed + 300}",
        },
        "variants": {label: {"mode": m, "strategy": s} for label, (m, s) in UPSERT_VARIANTS.items()},
        "dml_repeat": args.dml_repeat,
        "builds": builds,
        "runs": runs,
        "median": median,
        "tasks_after": tasks_info,
        "read_timings": timings,
        "ratios": ratios,
        "checks": checks,
        "profiles": profiles,
    }


def profile_update(args: argparse.Namespace, data: pa.Table, slices: list[pa.Table], data_dir: Path) -> dict[str, Any]:
    spec = value_predicate(data, args.update_fraction)
    out: dict[str, Any] = {}
    for mode in (MOR, COW):
        root = data_dir / f"wh-d-profile-{mode}"
        table, _ = build_warehouse(root, slices)
        base = args.out.parent / f"{args.out.stem}-profile-update-{mode}"
        out[f"update_{mode}"] = profile_call(
            lambda table=table, mode=mode: table.update({"value": pc.field("value") + 1}, where=spec.text, mode=mode), base
        )
        remove_warehouse(root)
    return out


# --------------------------------------------------------------------------- report


def kinds(run: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v['files']}/{v['bytes']:,}B" for k, v in sorted(run["files"]["new_by_kind"].items()))


def print_report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print()
    print(
        f"mor DML benchmark  rows={result['params']['rows']:,} files={result['params']['files']}"
        f"  python {m['python']}  pyarrow {m['pyarrow']}  pyiceberg {m['pyiceberg']}"
        f"  cores={m['cpu_count']}  git {str(m['git_head'])[:10]}"
    )
    c = result.get("scenario_c")
    if c:
        d = c["delete_rows_median"]
        print(
            f"\n(c) delete_rows of {c['deleted_keys']:,} of {c['rows']:,} ids "
            f"({c['deleted_fraction']:.2%}), equality delete on id: {d['wall_seconds']:.3f} s, "
            f"{d['bytes_written']:,.0f} bytes written ({kinds(c['delete_rows_runs'][0])})"
        )
        print(f"    full read, {c['tasks']} tasks, each with {sorted(set(c['equality_delete_files_per_task']))} equality delete file(s)")
        print(f"    {'reader':<38}{'median s':>10}{'min s':>10}{'cpu s':>10}{'rows':>14}")
        labels = {
            "mor": "mor scan().to_arrow()",
            "pyarrow_dataset": "pyarrow.dataset, deletes ignored",
            "pyarrow_read_table_per_file": "pq.read_table per file, deletes ign.",
            "mor_no_deletes": "(context) mor, snapshot before delete",
        }
        for name, timing in c["timings"].items():
            print(
                f"    {labels[name]:<38}{timing['median_seconds']:>10.3f}"
                f"{timing['min_seconds']:>10.3f}{timing['median_cpu_seconds']:>10.3f}"
                f"{timing['rows']:>14,}"
            )
        r, t = c["ratios"], c["targets"]
        print(
            f"    mor / plain pyarrow ({r['floor_reader']}) {r['mor_over_floor']:6.2f}x"
            f"  (target <= {t['mor_over_floor_at_most']}x: {verdict(t['floor_met'])});"
            f" mor / pyarrow.dataset {r['mor_over_pyarrow_dataset']:.2f}x"
        )
        print(
            f"    context: the equality deletes cost mor {r['mor_deletes_over_mor_no_deletes']:.2f}x"
            f" its no-delete read; mor with no deletes is {r['mor_no_deletes_over_floor']:.2f}x the floor"
        )
    d_ = result.get("scenario_d")
    if d_:
        print(
            f"\n(d) UPDATE set value = value + 1 where {d_['predicate']['text']}: "
            f"{d_['updated_rows']:,} of {d_['rows']:,} rows ({d_['updated_fraction']:.3%})"
        )
        print(f"    {'mode':<15}{'wall s':>10}{'cpu s':>10}{'bytes written':>16}  new files by kind")
        for mode in (COW, MOR):
            runs = d_["runs"][mode]
            print(
                f"    {mode:<15}{median_of(runs, 'wall_seconds'):>10.3f}"
                f"{median_of(runs, 'cpu_seconds'):>10.3f}{median_of(runs, 'bytes_written'):>16,.0f}"
                f"  {kinds(runs[0])}"
            )
        r = d_["ratios"]
        print(
            f"    cow/mor time {r['time_cow_over_mor']:8.1f}x   cow/mor bytes "
            f"{fmt_ratio(r['bytes_cow_over_mor'])}   (no target set for UPDATE)"
        )
    e = result.get("scenario_e")
    if e:
        print(
            f"\n(e) UPSERT on id: {e['upserted_existing_rows']:,} existing ids "
            f"({e['upserted_fraction']:.2%}) changed + {e['new_rows']} new ids"
        )
        print(
            f"    {'variant':<25}{'wall s':>9}{'cpu s':>9}{'bytes written':>15}{'cow/x time':>12}"
            f"{'cow/x bytes':>13}{'read s':>9}{'floor s':>9}{'read/floor':>11}"
        )
        for label in e["runs"]:
            runs = e["runs"][label]
            r = e["ratios"][label]
            read = e["read_timings"][f"mor:{label}"]["median_seconds"]
            floor = e["read_timings"][f"pyarrow_dataset:{label}"]["median_seconds"]
            print(
                f"    {label:<25}{median_of(runs, 'wall_seconds'):>9.3f}{median_of(runs, 'cpu_seconds'):>9.3f}"
                f"{median_of(runs, 'bytes_written'):>15,.0f}{r['time_cow_over_variant']:>11.1f}x"
                f"{fmt_ratio(r['bytes_cow_over_variant']):>13}{read:>9.3f}{floor:>9.3f}"
                f"{r['read_mor_over_pyarrow_dataset']:>10.2f}x"
            )
        for label in e["runs"]:
            print(f"    new files {label}: {kinds(e['runs'][label][0])}")
        print(
            "    read s = mor scan().to_arrow() after the upsert; floor s = pyarrow.dataset on the"
            " same data files, deletes ignored (no target set for UPSERT)"
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
    p.add_argument("--dml-repeat", type=int, default=1, help="DML timings per variant, each on a freshly built warehouse (median)")
    p.add_argument("--delete-keys-fraction", type=float, default=0.01, help="scenario (c)")
    p.add_argument("--update-fraction", type=float, default=0.001, help="scenario (d): value < f")
    p.add_argument("--upsert-fraction", type=float, default=0.01, help="scenario (e)")
    p.add_argument("--upsert-new-rows", type=int, default=100, help="scenario (e): new ids")
    p.add_argument("--scenarios", default="c,d,e", help="comma-separated subset of c,d,e")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "dml.json")
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data")
    p.add_argument("--keep", action="store_true", help="keep the warehouses under --data-dir")
    p.add_argument(
        "--profile",
        action="store_true",
        help="after timing, profile the reads and one DML call per variant (cProfile; "
        "DML on extra fresh warehouses), writing .prof/.txt next to --out",
    )
    args = p.parse_args(argv)
    if args.rows < 1_000 or args.files < 1 or args.files > args.rows:
        p.error("need rows >= 1000 and 1 <= files <= rows")
    if args.repeat < 1 or args.dml_repeat < 1 or args.upsert_new_rows < 0:
        p.error("--repeat and --dml-repeat must be >= 1, --upsert-new-rows >= 0")
    args.scenarios = {s.strip() for s in args.scenarios.split(",") if s.strip()}
    if not args.scenarios or not args.scenarios <= {"c", "d", "e"}:
        p.error("--scenarios takes a subset of c,d,e")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result = start_result("dml", args)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)

    log(f"generating {args.rows:,} rows (seed {args.seed})")
    t0 = time.perf_counter()
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    result["generation"] = {"seconds": time.perf_counter() - t0, "arrow_bytes": data.nbytes}
    log(f"generated in {result['generation']['seconds']:.2f} s ({data.nbytes:,} Arrow bytes)")

    log("warm-up (untimed): tiny table, delete_rows, UPDATE per mode, UPSERT per variant, scans")
    warm_up(data, args.data_dir, args.seed)
    if "c" in args.scenarios:
        result["scenario_c"] = scenario_equality_read(args, data, slices, args.data_dir)
    if "d" in args.scenarios:
        result["scenario_d"] = scenario_update(args, data, slices, args.data_dir)
        if args.profile:
            log("profiling one UPDATE per mode on fresh warehouses")
            result["scenario_d"]["profiles"] = profile_update(args, data, slices, args.data_dir)
    if "e" in args.scenarios:
        result["scenario_e"] = scenario_upsert(args, data, slices, args.data_dir)

    result["load_average_end"] = os.getloadavg()
    result["duration_seconds"] = time.perf_counter() - started
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print_report(result)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
