"""A small commit as a table's history grows. Every commit writes the whole table metadata
(each snapshot, the snapshot log, the metadata log), so its cost grows with the history; mor
writes that JSON compact, as Iceberg Java does. Measured in one run, at each history length:
  - an append of one row (median of `--repeat`, after the history was built by appends);
  - encoding the table's metadata as written (`TableMetadata.to_json`: compact, json's C
    encoder) against the same document indented (`indent=2`: json's Python encoder, what mor
    wrote before), and their ratio.
Each append is checked (the row count grows by one).

    .venv/bin/python benchmarks/bench_commit_history.py --out benchmarks/results/commit_history.json
    .venv/bin/python benchmarks/bench_commit_history.py --sizes 10,100 --repeat 5   # smoke
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from common import BenchmarkError, log, remove_warehouse, start_result

import mor

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def one_row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "name": [f"row {i}"]}, schema=SCHEMA)


def interleaved_medians(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """The median seconds of each of `fns`, called in turn each round, so that a drift of the
    machine's speed weighs on all of them alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def at_history(root: Path, snapshots: int, repeat: int) -> dict[str, Any]:
    table = mor.load_catalog(root / f"wh-{snapshots}", create=True).create_table("bench.t", schema=SCHEMA)
    for i in range(snapshots):
        table.append(one_row(i))
    rows = snapshots
    appends = []
    for _ in range(repeat):
        start = time.perf_counter()
        table.append(one_row(rows))
        appends.append(time.perf_counter() - start)
        rows += 1
    if table.scan().count() != rows:
        raise BenchmarkError(f"{table.scan().count()} rows after {rows} one-row appends")
    metadata = table.metadata
    document = metadata.to_dict()
    encoded = interleaved_medians({"compact": metadata.to_json, "indented": lambda: json.dumps(document, indent=2)}, repeat)
    compact, indented = encoded["compact"], encoded["indented"]
    return {
        "snapshots": len(metadata.snapshots),
        "metadata_bytes": len(metadata.to_json()),
        "append_median_s": round(statistics.median(appends), 5),
        "json_compact_median_s": round(compact, 6),
        "json_indented_median_s": round(indented, 6),
        "indented_over_compact": round(indented / compact, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,1000", help="history lengths (snapshots), comma-separated")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = start_result("commit_history", args)
    root = Path(tempfile.mkdtemp(prefix="mor-bench-history-"))
    try:
        result["runs"] = []
        for size in (int(s) for s in args.sizes.split(",")):
            run = at_history(root, size, args.repeat)
            ms = {key: run[key] * 1000 for key in ("append_median_s", "json_compact_median_s", "json_indented_median_s")}
            log(
                f"{run['snapshots']} snapshots ({run['metadata_bytes']:,} bytes of metadata): append {ms['append_median_s']:.1f} ms; "
                f"metadata JSON compact {ms['json_compact_median_s']:.2f} ms, indented {ms['json_indented_median_s']:.2f} ms "
                f"({run['indented_over_compact']}x)"
            )
            result["runs"].append(run)
    finally:
        remove_warehouse(root)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
