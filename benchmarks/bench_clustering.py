"""Clustering (issue 27): how much of a table a selective filter on two columns plans before and
after `compact(zorder_by=...)` and `compact(sort_by=...)`.

A table of `--rows` rows in `--files` appended files, with two uniformly random columns `x`
(int64) and `y` (double), so every file spans both columns' whole range and min/max pruning
skips nothing. The filter `x < X and y < Y` selects `--selectivity` of each column's range (so
about its square of the rows); `y < Y` alone shows what each layout does for a filter on its
second column only (a sort by x, y cannot prune by y; a Z-order can). For each layout the script reports the files and bytes the
filter plans (`table.scan(filter=...).plan_files()`), the rows it reads, and the read time.
Each layout starts from a fresh copy of the same appends.

With `--java`, Iceberg Java (the oracle: Spark 3.5 + Iceberg 1.10.2) builds the same table from
the same rows (one INSERT per appended file) and rewrites it with its own
`rewrite_data_files(strategy => 'sort', sort_order => 'x, y')` and `sort_order => 'zorder(x, y)'`
at the same target file size; mor's planner then measures its layouts the same way (both use
Iceberg's min/max pruning), so the numbers compare the layouts, not the planners.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_clustering.py --rows 2000000 --files 20 --java \
        --out benchmarks/results/clustering.json --data-dir benchmarks/data
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from common import log, start_result

import mor

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("y", pa.float64()), ("payload", pa.string())])
X_RANGE = 1_000_000


def appends(rows: int, files: int) -> list[pa.Table]:
    """The rows of each append: the same for every layout and for Iceberg Java."""
    rng = np.random.default_rng(27)
    per_file = rows // files
    out = []
    for i in range(files):
        ids = np.arange(i * per_file, (i + 1) * per_file)
        x, y = rng.integers(0, X_RANGE, len(ids)), rng.random(len(ids))
        out.append(pa.table({"id": ids, "x": x, "y": y, "payload": np.char.add("p-", (ids % 997).astype(str))}, schema=SCHEMA))
    return out


def build(root: Path, rows: int, files: int) -> mor.Table:
    if root.exists():
        shutil.rmtree(root)
    catalog = mor.load_catalog(root, create=True)
    table = catalog.create_table("db.t", schema=SCHEMA)
    for data in appends(rows, files):
        table.append(data)
    return table


def java_layouts(args: argparse.Namespace, target: int, filters: list[str]) -> dict[str, dict[str, object]]:
    """Iceberg Java's appends and its rewrite_data_files sort and zorder, measured by mor."""
    import pyarrow.parquet as pq

    repo = Path(__file__).resolve().parents[1]
    oracle_dir = repo.parent / "shared" / "tools" / "iceberg-oracle"
    venv = Path(os.environ.get("MOR_ORACLE_VENV", repo / ".oracle-venv"))
    subprocess.run(["bash", str(oracle_dir / "setup.sh")], check=True, env={**os.environ, "ORACLE_VENV": str(venv)})
    work = args.data_dir / "clustering-java"
    shutil.rmtree(work, ignore_errors=True)
    (work / "inputs").mkdir(parents=True)
    inputs = []
    for i, data in enumerate(appends(args.rows, args.files)):
        path = work / "inputs" / f"append-{i:03d}.parquet"
        pq.write_table(data, path)
        inputs.append(path)
    warehouse = work / "warehouse"
    options = f"map('rewrite-all', 'true', 'target-file-size-bytes', '{target}')"
    rewrites = {"appended": None, "sort x,y": "x ASC NULLS FIRST, y ASC NULLS FIRST", "zorder x,y": "zorder(x, y)"}
    statements = []
    for n, order in enumerate(rewrites.values()):
        statements.append(f"CREATE TABLE hc.db.t{n} (id bigint, x bigint, y double, payload string) USING iceberg")
        statements += [f"INSERT INTO hc.db.t{n} SELECT * FROM parquet.`{p}`" for p in inputs]
        if order is not None:
            statements.append(
                f"CALL hc.system.rewrite_data_files(table => 'db.t{n}', strategy => 'sort', sort_order => '{order}', options => {options})"
            )
    python = venv / "bin" / "python"
    started = time.perf_counter()
    subprocess.run([str(python), str(oracle_dir / "oracle.py"), "sql", "--warehouse", warehouse.as_uri(), *statements], check=True,
                   env={**os.environ, "PYSPARK_PYTHON": str(python)}, stdout=subprocess.DEVNULL)  # fmt: skip
    log(f"Iceberg Java built and rewrote three tables in {time.perf_counter() - started:.0f} s")
    out = {}
    for n, name in enumerate(rewrites):
        table = mor.StaticTable.from_metadata(str(warehouse / "db" / f"t{n}"))
        entry = measure(table, filters[0])
        entry["y_only"] = {k: v for k, v in measure(table, filters[1]).items() if k.startswith("planned_files")}
        out[f"Iceberg Java {name}"] = entry
        log(f"Iceberg Java {name}: {entry}")
    shutil.rmtree(work, ignore_errors=True)
    return out


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
    parser.add_argument("--java", action="store_true", help="also Iceberg Java's rewrite_data_files sort and zorder")
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
    if args.java:
        layouts.update(java_layouts(args, target, [row_filter, y_filter]))
    result["layouts"] = layouts
    shutil.rmtree(args.data_dir / "clustering", ignore_errors=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(layouts, indent=2))


if __name__ == "__main__":
    main()
