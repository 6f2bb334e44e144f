"""End-to-end cost of a large IN list (issue 9, part 4): a scan and a DELETE whose predicate is
`id in (...)` with `--values` values, as a pyiceberg `In` expression and as filter text, on a
table of `--rows` rows (`id` int64, `v` float64) in 4 files.

    .venv/bin/python benchmarks/bench_in_list.py --rows 4000000 --values 100000 --repeat 5 \
        --out benchmarks/results/in_list.json

Timed, `--repeat` rounds, the calls of a round one after the other (interleaved, so background
load touches all of them alike); medians of wall and CPU (all threads) seconds are reported:
- `in_construction`: `In("id", ids)` alone: pyiceberg's constructor, user code, not mor's. It
  makes every literal twice, and its cost depends on the process's heap: the cyclic garbage
  collector runs more often over a small one (on the reference machine 0.6 s, 0.3 s with two
  million other live objects or the collector off);
- `scan_in`: `table.scan(filter=In("id", ids)).to_arrow()`, the `In` built inside the timing;
- `scan_in_prebuilt`: the same scan of an `In` built beforehand (mor's share);
- `scan_isin`: `table.scan(filter=mor.isin("id", ids)).to_arrow()`: the same `In`, built by
  mor in one pass, inside the timing; `delete_isin` likewise for the DELETE;
- `parse_text`: `parse_filter(text)` alone; `scan_text`: `table.scan(filter=text).to_arrow()`;
- `scan_floor`: `table.scan(filter="id >= 0").to_arrow()`, reading every row through a filter
  that keeps them all: the cost of reading the filter's column, for comparison;
- `delete_in`: `table.delete(In("id", ids))` (merge-on-read), the `In` built inside the timing,
  on a freshly built table each round (the build is not timed).
Checks (untimed): each scan returns exactly the ids of the list; after each DELETE the table
holds `rows - values` rows and none of the ids. A failed check aborts the run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from common import BenchmarkError, log, start_result
from pyiceberg.expressions import In

import mor
from mor.expr.filters import parse_filter

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64())])
FILES = 4


def build(root: Path, rows: int) -> mor.Table:
    table = mor.load_catalog(tempfile.mkdtemp(dir=root), create=True).create_table("db.t", schema=SCHEMA)
    per_file = rows // FILES
    for f in range(FILES):
        ids = np.arange(f * per_file, (f + 1) * per_file)
        table.append(pa.table({"id": ids, "v": np.random.default_rng(f).random(per_file)}, schema=SCHEMA))
    return table


def timed(fn: Callable[[Any], Any], arg: Any) -> tuple[dict[str, float], Any]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(arg)
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}, result


def check_scan(label: str, result: pa.Table, ids: np.ndarray) -> None:
    got = np.sort(result.column("id").to_numpy())
    if not np.array_equal(got, ids):
        raise BenchmarkError(f"{label}: {len(got)} rows, expected the {len(ids)} listed ids")


def check_delete(table: mor.Table, rows: int, ids: np.ndarray) -> None:
    left = table.scan(columns=["id"]).to_arrow().column("id")
    if len(left) != rows - len(ids) or pc.any(pc.is_in(left, value_set=pa.array(ids))).as_py():
        raise BenchmarkError(f"delete: {len(left)} rows left, expected {rows - len(ids)} without the listed ids")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, help="results JSON")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    result = start_result("in_list", args)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="mor-in-list-", dir=args.data_dir))

    ids_list = list(range(0, args.rows, args.rows // args.values))[: args.values]
    ids = np.array(ids_list, dtype=np.int64)
    text = "id in (" + ", ".join(map(str, ids_list)) + ")"
    log(f"{args.rows:,} rows in {FILES} files; IN list of {len(ids_list):,} values ({len(text):,} characters as text)")
    table = build(root, args.rows)
    table.scan(filter="id < 3").to_arrow()  # warm-up: imports, first calls

    # name -> (untimed setup, timed call of the setup's result)
    calls: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
        "in_construction": (lambda: None, lambda _: In("id", ids_list)),
        "scan_in": (lambda: None, lambda _: table.scan(filter=In("id", ids_list)).to_arrow()),
        "scan_in_prebuilt": (lambda: In("id", ids_list), lambda expr: table.scan(filter=expr).to_arrow()),
        "parse_text": (lambda: None, lambda _: parse_filter(text)),
        "scan_text": (lambda: None, lambda _: table.scan(filter=text).to_arrow()),
        "scan_floor": (lambda: None, lambda _: table.scan(filter="id >= 0").to_arrow()),
        "delete_in": (lambda: build(root, args.rows), lambda target: (target, target.delete(In("id", ids_list)))),
        "scan_isin": (lambda: None, lambda _: table.scan(filter=mor.isin("id", ids)).to_arrow()),
        "delete_isin": (lambda: build(root, args.rows), lambda target: (target, target.delete(mor.isin("id", ids)))),
    }
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in calls}
    for round_ in range(args.repeat):
        for name, (setup, call) in calls.items():
            prepared = setup()
            timing, out = timed(call, prepared)
            samples[name].append(timing)
            if name.startswith("delete_"):
                check_delete(out[0], args.rows, ids)
            elif name.startswith("scan_") and name != "scan_floor":
                check_scan(name, out, ids)
            del prepared, out
        log(f"round {round_ + 1}: " + ", ".join(f"{n} {s[-1]['wall']:.3f}" for n, s in samples.items()))

    medians = {name: {kind: statistics.median(s[kind] for s in runs) for kind in ("wall", "cpu")} for name, runs in samples.items()}
    for name, m in medians.items():
        log(f"{name}: median {m['wall']:.3f} s wall, {m['cpu']:.3f} s CPU")
    result.update(samples=samples, medians=medians, text_characters=len(text))
    result["load_average_end"] = os.getloadavg()
    shutil.rmtree(root, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
        log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
