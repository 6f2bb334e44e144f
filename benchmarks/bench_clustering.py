"""Clustering (issue 27): how much of a table a selective filter on two columns plans before and
after `compact(zorder_by=...)` and `compact(sort_by=...)`.

A table of `--rows` rows in `--files` appended files, with two uniformly random columns `x`
(int64) and `y` (double), so every file spans both columns' whole range and min/max pruning
skips nothing. The filter `x < X and y < Y` selects `--selectivity` of each column's range (so
about its square of the rows); `y < Y` alone shows what each layout does for a filter on its
second column only (a sort by x, y cannot prune by y; a Z-order can). For each layout the script reports the files and bytes the
filter plans (`table.scan(filter=...).plan_files()`), the rows it reads, and the read time.
Each layout starts from a fresh copy of the same appends.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_clustering.py --rows 2000000 --files 20 \
        --out benchmarks/results/clustering.json --data-dir benchmarks/data
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import mor
from common import log, start_result

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("y", pa.float64()), ("payload", pa.string())])
X_RANGE = 1_000_000


def build(root: Path, rows: int, files: int) -> mor.Table:
    if root.exists():
        shutil.rmtree(root)
    catalog = mor.load_catalog(root, create=True)
    table = catalog.create_table("db.t", schema=SCHEMA)
    rng = np.random.default_rng(27)
    per_file = rows // files
    for i in range(files):
        ids = np.arange(i * per_file, (i + 1) * per_file)
        table.append(
            pa.table(
                {
                    "id": ids,
                    "x": rng.integers(0, X_RANGE, len(ids)),
                    "y": rng.random(len(ids)),
                    "payload": np.char.add("p-", (ids % 997).astype(str)),
                },
                schema=SCHEMA,
            )
        )
    return table


def measure(table: mor.Table, row_filter: str) -> dict[str, object]:
    every = table.scan().plan_files()
    planned = table.scan(filter=row_filter).plan_files()
    start = time.perf_counter()
    rows = table.scan(filter=row_filter).to_arrow().num_rows
    seconds = time.perf_counter() - start
    total_bytes = sum(t.data_file.file_size_in_bytes for t in every)
    planned_bytes = sum(t.data_file.file_size_in_bytes for t in planned)
    return {
        "files": len(every),
        "planned_files": len(planned),
        "planned_files_pct": round(100 * len(planned) / max(len(every), 1), 1),
        "bytes": total_bytes,
        "planned_bytes": planned_bytes,
        "planned_bytes_pct": round(100 * planned_bytes / max(total_bytes, 1), 1),
        "rows_matched": rows,
        "read_seconds": round(seconds, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--selectivity", type=float, default=0.1, help="share of each column's range the filter keeps")
    parser.add_argument("--data-dir", type=Path, default=Path("benchmarks/data"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    result = start_result("clustering", args)
    row_filter = f"x < {int(X_RANGE * args.selectivity)} and y < {args.selectivity}"
    y_filter = f"y < {args.selectivity}"
    result["filter"], result["y_filter"] = row_filter, y_filter
    layouts: dict[str, dict[str, object]] = {}
    for name, clustering in [("appended", None), ("zorder_by x,y", {"zorder_by": ["x", "y"]}), ("sort_by x,y", {"sort_by": ["x", "y"]})]:
        table = build(args.data_dir / "clustering", args.rows, args.files)
        target = sum(t.data_file.file_size_in_bytes for t in table.scan().plan_files()) // args.files
        entry: dict[str, object] = {}
        if clustering is not None:
            start = time.perf_counter()
            table.compact(target_file_size=target, **clustering)
            entry["compact_seconds"] = round(time.perf_counter() - start, 2)
        entry.update(measure(table, row_filter))
        entry["y_only"] = {k: v for k, v in measure(table, y_filter).items() if k.startswith("planned_files")}
        layouts[name] = entry
        log(f"{name}: {entry}")
    result["layouts"] = layouts
    shutil.rmtree(args.data_dir / "clustering", ignore_errors=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(layouts, indent=2))


if __name__ == "__main__":
    main()
