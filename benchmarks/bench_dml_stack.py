"""Key-lookup DML as deletes stack up (issue 9): UPSERT, UPDATE and MERGE of 1% of the keys
on a fresh table, against the same operations on the same table after 20 successive deletes.

Five warehouse states are built once, at the same path, and kept as templates:
- `fresh`: `--files` data files, no deletes;
- `position`: 20 merge-on-read DELETEs, each of `--fraction` of the rows spread over every
  file (20 position delete files per data file);
- `equality`: 20 `delete_rows`, each of `--fraction` of the keys (20 equality delete files,
  each applying to every data file);
- `upserts_position`, `upserts_equality`: 20 UPSERTs of `--stack-keys` of the rows each (half
  existing keys, half new) with either strategy: what a CDC feed leaves. Each adds a data
  file, and each data file sees a different subset of the later delete files.
Every timed call runs on a fresh copy of its template copied back to that path (metadata holds
absolute paths), so each round starts from the identical state. Operations, all on the same
keys (`--keys` of the rows: half existing, half new; the existing ones are deleted by no
stack): `upsert_position` (join on the keys, position deletes), `upsert_equality` (equality
deletes plus an append, no scan), `update` (the existing keys, `where id in (...)`), `merge`
(matched: set `value` from the source, a partial update that reads every column; not
matched: insert). Rounds are interleaved over operations and states; the median per (state,
operation) and the ratio stacked / fresh are reported, and the first round of each is checked
against a model of the live ids. The full read of each state is timed against the floor (a
plain pyarrow.dataset read of the same data files, deletes ignored). mor's process-wide cache
of decoded delete files (where this mor has one) is emptied before every timed call unless
`--warm`, so each call reads its delete files as a new process would.

    .venv/bin/python benchmarks/bench_dml_stack.py --rows 3000000 --files 4 \
        --out benchmarks/results/dml_stack.json --data-dir benchmarks/data
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from common import (
    TABLE_NAME,
    BenchmarkError,
    build_warehouse,
    file_slices,
    generate_events,
    local_path,
    log,
    median_timing,
    profile_call,
    remove_warehouse,
    start_result,
)
from pyiceberg.expressions import And, GreaterThanOrEqual, In, LessThan

import mor

STATES = ("fresh", "position", "equality", "upserts_position", "upserts_equality")
OPERATIONS = ("upsert_position", "upsert_equality", "update", "merge")
EQUALITY_BANDS_START = 0.5  # equality deletes take `value` bands from here; position deletes from 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--stack", type=int, default=20, help="successive deletes of each kind")
    parser.add_argument("--fraction", type=float, default=0.002, help="rows each stacked delete removes")
    parser.add_argument("--keys", type=float, default=0.01, help="DML keys, as a fraction of the rows")
    parser.add_argument("--stack-keys", type=float, default=0.01, help="keys of each stacked UPSERT, as a fraction of the rows")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per (state, operation)")
    parser.add_argument("--operations", default=",".join(OPERATIONS))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--warm",
        action="store_true",
        help="keep mor's process-wide cache of decoded delete files between calls (default: cleared before each)",
    )
    parser.add_argument("--profile", type=Path, default=None, help="cProfile every stacked operation once into this folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench"))
    args = parser.parse_args()
    operations = [o for o in args.operations.split(",") if o]
    result = start_result("dml_stack", args)
    data = generate_events(args.rows, args.seed)
    root = args.data_dir / "dml-stack"
    work = root / "work"
    existing, new = _dml_keys(data, args)
    source = _source_rows(data, existing, new)
    result["dml_keys"] = {"existing": len(existing), "new": len(new)}

    live: dict[str, int] = {}
    builds: dict[str, Any] = {}
    for state in STATES:
        started = time.perf_counter()
        table, build = build_warehouse(work, file_slices(data, args.files))
        live[state] = _stack(table, state, data, args, existing, first_new=int(new[-1].as_py()) + 1)
        read = table.scan().to_arrow().num_rows
        if read != live[state]:
            raise BenchmarkError(f"{state}: {read} live rows, expected {live[state]}")
        tasks = table.scan().plan_files()
        builds[state] = {
            **build,
            "seconds_with_deletes": time.perf_counter() - started,
            "data_files": len(tasks),
            "delete_files_per_data_file": max(len(t.delete_files) for t in tasks),
            "delete_files_per_data_file_mean": sum(len(t.delete_files) for t in tasks) / len(tasks),
            "live_rows": live[state],
        }
        log(
            f"built {state}: {len(tasks)} data files, up to {builds[state]['delete_files_per_data_file']} delete files "
            f"per data file, {live[state]} live rows"
        )
        shutil.rmtree(root / state, ignore_errors=True)
        os.rename(work, root / state)
    result["build"] = builds

    result["reads"] = _time_reads(root, work, args.repeat, args.warm)

    samples: dict[str, dict[str, list[dict[str, float]]]] = {s: {o: [] for o in operations} for s in STATES}
    for r in range(args.repeat):
        for op in operations:
            for state in STATES:
                table = _restore(root, work, state)
                call = _operation(op, table, source, existing)
                _cold(args.warm)
                gc.collect()
                c0, t0 = time.process_time(), time.perf_counter()
                call()
                samples[state][op].append({"wall_seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0})
                if r == 0:
                    _check(table, op, live[state], source, existing)
        log(f"round {r + 1}/{args.repeat} done")

    operations_out: dict[str, Any] = {}
    for op in operations:
        medians = {s: statistics.median(x["wall_seconds"] for x in samples[s][op]) for s in STATES}
        entry: dict[str, Any] = {s: {"median_seconds": medians[s], "samples": samples[s][op]} for s in STATES}
        entry["over_fresh"] = {s: medians[s] / medians["fresh"] for s in STATES if s != "fresh"}
        operations_out[op] = entry
        log(
            f"{op}: fresh {medians['fresh']:.3f} s; "
            + ", ".join(f"{s} {medians[s]:.3f} s ({entry['over_fresh'][s]:.2f}x)" for s in STATES if s != "fresh")
        )
    result["operations"] = operations_out

    if args.profile is not None:
        # cProfile sees one thread: profile with the DML thread pools run serially.
        import mor.dml.row_changes

        mor.dml.row_changes.parallel_map = lambda fn, items, max_workers=None: [fn(x) for x in items]  # type: ignore[assignment]
        args.profile.mkdir(parents=True, exist_ok=True)
        result["profiles"] = {}
        for op in operations:
            for state in STATES:
                table = _restore(root, work, state)
                _cold(args.warm)
                result["profiles"][f"{state}-{op}"] = profile_call(_operation(op, table, source, existing), args.profile / f"{state}-{op}")

    result["load_average_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    remove_warehouse(root)


def _dml_keys(data: pa.Table, args: argparse.Namespace) -> tuple[pa.Array, pa.Array]:
    """Half existing keys that neither stack deletes (their `value` lies outside every delete
    band), half new keys (ids above the table's)."""
    count = max(2, round(args.rows * args.keys))
    stacked = args.stack * args.fraction
    value = data["value"]
    outside = pc.or_(
        pc.and_(pc.greater_equal(value, stacked), pc.less(value, EQUALITY_BANDS_START)),
        pc.greater_equal(value, EQUALITY_BANDS_START + stacked),
    )
    candidates = pc.filter(data["id"], outside).to_numpy()
    rng = np.random.default_rng(args.seed)
    existing = np.sort(rng.choice(candidates, count // 2, replace=False))
    new = np.arange(args.rows, args.rows + count - count // 2, dtype=np.int64)
    return pa.array(existing, pa.int64()), pa.array(new, pa.int64())


def _source_rows(data: pa.Table, existing: pa.Array, new: pa.Array) -> pa.Table:
    """UPSERT/MERGE source: the existing keys' rows with `value` + 10, then the new keys with
    the columns of row 0 (and their own ids), `value` 20."""
    old = data.take(existing)
    old = old.set_column(old.schema.get_field_index("value"), "value", pc.add(old["value"], 10.0))
    fresh = data.take(pa.array(np.zeros(len(new), dtype=np.int64)))
    fresh = fresh.set_column(0, "id", new)
    fresh = fresh.set_column(fresh.schema.get_field_index("value"), "value", pa.array(np.full(len(new), 20.0)))
    return pa.concat_tables([old, fresh]).combine_chunks()


def _stack(table: Any, state: str, data: pa.Table, args: argparse.Namespace, keep: pa.Array, first_new: int) -> int:
    """Apply the state's stacked changes (which leave the rows of the keys in `keep` as they
    are); the number of live rows after them (from a model: which ids are live)."""
    alive = np.ones(args.rows, dtype=bool)
    added = 0
    value = data["value"]
    rng = np.random.default_rng(args.seed + 1)
    count = max(2, round(args.rows * args.stack_keys))
    others = np.setdiff1d(np.arange(args.rows, dtype=np.int64), keep.to_numpy())
    for k in range(args.stack if state != "fresh" else 0):
        if state in ("position", "equality"):
            low = (0.0 if state == "position" else EQUALITY_BANDS_START) + k * args.fraction
            in_band = pc.and_(pc.greater_equal(value, low), pc.less(value, low + args.fraction))
            if state == "position":
                table.delete(And(GreaterThanOrEqual("value", low), LessThan("value", low + args.fraction)))
            else:
                table.delete_rows(pa.table({"id": pc.filter(data["id"], in_band)}))
            alive &= ~in_band.to_numpy(zero_copy_only=False)
        else:  # half existing keys, half new ones, as the timed UPSERT
            existing = pa.array(np.sort(rng.choice(others, count // 2, replace=False)), pa.int64())
            new = pa.array(np.arange(first_new, first_new + count - count // 2, dtype=np.int64))
            first_new += len(new)
            strategy = "position" if state == "upserts_position" else "equality"
            table.upsert(_source_rows(data, existing, new), on=["id"], strategy=strategy)
            added += len(new)
    return int(alive.sum()) + added


def _restore(root: Path, work: Path, state: str) -> Any:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(root / state, work)
    return mor.load_catalog(str(work)).load_table(TABLE_NAME)


def _operation(op: str, table: Any, source: pa.Table, existing: pa.Array) -> Callable[[], Any]:
    if op == "upsert_position":
        return lambda: table.upsert(source, on=["id"], strategy="position")
    if op == "upsert_equality":
        return lambda: table.upsert(source, on=["id"], strategy="equality")
    if op == "update":
        where = In("id", existing.to_pylist())
        return lambda: table.update({"value": pc.field("value") + 10.0}, where=where)
    if op == "merge":
        return lambda: table.merge(source, on=["id"], when_matched_update={"value": pc.field("source.value")}, when_not_matched_insert="*")
    raise ValueError(op)


def _check(table: Any, op: str, live: int, source: pa.Table, existing: pa.Array) -> None:
    """After the first round of each (state, operation): the row count, every key once, and
    the existing keys' new values."""
    rows = table.scan().to_arrow()
    inserted = 0 if op == "update" else source.num_rows - len(existing)
    keys = existing if op == "update" else source["id"]
    got = rows.filter(pc.is_in(rows["id"], value_set=keys))
    expected_value = pc.sum(source["value"].slice(0, len(existing))).as_py() + (0 if op == "update" else 20.0 * inserted)
    problems = []
    if rows.num_rows != live + inserted:
        problems.append(f"{rows.num_rows} rows, expected {live + inserted}")
    if got.num_rows != len(keys) or pc.count_distinct(got["id"]).as_py() != len(keys):
        problems.append(f"{got.num_rows} rows hold the {len(keys)} keys")
    if abs(pc.sum(got["value"]).as_py() - expected_value) > 1e-6 * abs(expected_value):
        problems.append("the keys' values are not the new ones")
    if problems:
        raise BenchmarkError(f"{op}: {'; '.join(problems)}")


def _cold(warm: bool) -> None:
    """Unless `warm`, empty mor's process-wide cache of decoded delete files (when this mor
    has one), so that every timed call reads its delete files as a new process would."""
    if warm:
        return
    try:
        from mor.read.decoded_cache import SHARED
    except ImportError:
        return
    SHARED.clear()


def _time_reads(root: Path, work: Path, repeat: int, warm: bool) -> dict[str, Any]:
    """Full reads of each state against the floor, in one `median_timing` run per state."""
    out = {}
    for state in STATES:
        table = _restore(root, work, state)
        data_files = [local_path(t.data_file.file_path) for t in table.scan().plan_files()]

        def read(table: Any = table) -> pa.Table:
            _cold(warm)
            return table.scan().to_arrow()

        timings = median_timing({"mor": read, "floor": lambda data_files=data_files: ds.dataset(data_files).to_table()}, repeat)
        ratio = timings["mor"]["median_seconds"] / timings["floor"]["median_seconds"]
        out[state] = {"mor_over_floor": ratio, "timings": timings}
        log(f"read {state}: mor {timings['mor']['median_seconds']:.3f} s, floor {timings['floor']['median_seconds']:.3f} s, {ratio:.2f}x")
    return out


if __name__ == "__main__":
    main()
