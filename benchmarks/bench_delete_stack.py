"""Full reads as position deletes stack up (issue 9): a table of `--files` data files receives
successive merge-on-read DELETEs, each removing `--fraction` of the rows spread over every
file, so after k deletes each data file carries k position delete files. At each k in
`--stack` the merged read is timed against the floor (a plain pyarrow.dataset read of the same
data files, deletes ignored), in the same round: `mor` is a read in a process that has read
the table before (decoded delete files come from mor's shared cache), `mor_cold` one whose
cache is empty (the first read in a process). After the last round, the peak RSS of a
streaming read (`to_batches`) is measured in a fresh process, against a streaming floor.

    .venv/bin/python benchmarks/bench_delete_stack.py --rows 2000000 --files 2 \
        --stack 1,5,20,100 --out benchmarks/results/delete_stack.json --data-dir benchmarks/data
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
from common import (
    build_warehouse,
    file_slices,
    generate_events,
    local_path,
    log,
    median_timing,
    peak_rss_mb,
    remove_warehouse,
    start_result,
)
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=2)
    parser.add_argument("--stack", default="1,5,20,100")
    parser.add_argument("--fraction", type=float, default=0.002, help="rows each DELETE removes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench"))
    args = parser.parse_args()
    result = start_result("delete_stack", args)
    data = generate_events(args.rows, args.seed)
    root = args.data_dir / "delete-stack"
    table, build = build_warehouse(root, file_slices(data, args.files))
    result["build"] = build
    data_files = [local_path(t.data_file.file_path) for t in table.scan().plan_files()]
    stack = sorted(int(k) for k in args.stack.split(","))
    rounds = []
    deletes = 0
    for k in stack:
        started = time.perf_counter()
        while deletes < k:  # `value` is uniform in [0, 1): each band hits every file
            low = deletes * args.fraction
            table.delete(And(GreaterThanOrEqual("value", low), LessThan("value", low + args.fraction)))
            deletes += 1
        delete_seconds = time.perf_counter() - started
        timings = median_timing(
            {"mor": lambda: table.scan().to_arrow(), "mor_cold": lambda: cold_read(table),
             "floor": lambda: ds.dataset(data_files).to_table()}, args.repeat
        )  # fmt: skip
        per_file = max(len(t.position_deletes) for t in table.scan().plan_files())
        ratio = timings["mor"]["median_seconds"] / timings["floor"]["median_seconds"]
        cold_ratio = timings["mor_cold"]["median_seconds"] / timings["floor"]["median_seconds"]
        expected = args.rows - round(args.rows * args.fraction * k)
        rounds.append(
            {
                "deletes": k,
                "delete_files_per_data_file": per_file,
                "mor_over_floor": ratio,
                "mor_cold_over_floor": cold_ratio,
                "rows_read": timings["mor"]["rows"],
                "rows_expected_about": expected,
                "seconds_to_add_deletes": delete_seconds,
                "timings": timings,
            }
        )
        log(
            f"{k:>4} deletes ({per_file} per data file): mor {timings['mor']['median_seconds']:.3f} s, "
            f"cold {timings['mor_cold']['median_seconds']:.3f} s, floor {timings['floor']['median_seconds']:.3f} s, "
            f"{ratio:.2f}x / cold {cold_ratio:.2f}x"
        )
    result["rounds"] = rounds
    result["streaming_peak_rss"] = {mode: streaming_peak(mode, root, data_files) for mode in ("mor", "floor")}
    log(f"streaming read peak RSS: {result['streaming_peak_rss']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    remove_warehouse(root)


def cold_read(table):
    from mor.read.decoded_cache import SHARED

    SHARED.clear()
    return table.scan().to_arrow()


def streaming_peak(mode: str, root: Path, data_files: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child-read", mode, str(root), *data_files],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    return json.loads(out.splitlines()[-1])


def child_read(mode: str, root: str, data_files: list[str]) -> None:
    """Stream every row batch of the table (mor) or of its data files (floor); peak RSS."""
    from common import TABLE_NAME

    import mor

    base_mb = peak_rss_mb()
    if mode == "mor":
        batches = mor.load_catalog(root).load_table(TABLE_NAME).scan().to_batches()
    else:
        batches = ds.dataset(data_files).to_batches()
    rows = sum(b.num_rows for b in batches)
    peak_mb = peak_rss_mb()
    print(json.dumps({"rows": rows, "peak_rss_mb": peak_mb, "rss_after_imports_mb": base_mb}))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-read":
        child_read(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        main()
