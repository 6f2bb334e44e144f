"""UPDATE that matches nothing on a wide table, against a full scan (issue 23, part 8).

A table of `--columns` columns (int64 `id`, then float64 `c1`...) and `--rows` rows; each
measurement runs in a fresh process, so its peak RSS (VmHWM) is its own:
- scan: every column of every row, streamed (`to_batches`, nothing kept): the decode floor;
- update-nothing: `update({"c1": 0.0}, where="c2 = 0.5")`: c2 is uniform in [0, 1), so 0.5
  lies inside every row group's bounds (metrics prune nothing) and no row holds it;
- delete-nothing: the same predicate as a DELETE (which reads the predicate's column only).
Printed and written: median wall seconds and peak RSS of each, and update/scan ratios.

    .venv/bin/python benchmarks/bench_wide_update.py --columns 1000 --rows 200000 \
        --out benchmarks/results/wide_update.json

`--mor-path DIR` runs the measured children with `DIR` first on PYTHONPATH (e.g. an older
checkout of mor, `git archive <commit> mor | tar -x -C DIR`), to compare before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import log, peak_rss_mb, start_result

TABLE = "db.wide"
BATCH_ROWS = 20_000


def build(root: Path, rows: int, columns: int) -> None:
    import numpy as np
    import pyarrow as pa

    import mor

    names = ["id", *(f"c{i}" for i in range(1, columns))]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), *(pa.field(n, pa.float64()) for n in names[1:])])

    def batches():
        rng = np.random.default_rng(7)
        for start in range(0, rows, BATCH_ROWS):
            n = min(rows, start + BATCH_ROWS) - start
            values = rng.random((columns - 1, n))
            ids = pa.array(np.arange(start, start + n, dtype=np.int64))
            yield pa.RecordBatch.from_arrays([ids, *(pa.array(v) for v in values)], schema=schema)

    table = mor.load_catalog(str(root), create=True).create_table(TABLE, schema=schema)
    table.append(pa.RecordBatchReader.from_batches(schema, batches()))


def measure(root: Path, what: str, rows: int) -> None:
    import mor

    table = mor.load_catalog(str(root), create=False).load_table(TABLE)
    start = time.perf_counter()
    if what == "scan":
        count = sum(b.num_rows for b in table.scan().to_batches())
        if count != rows:
            raise SystemExit(f"scan read {count} rows, expected {rows}")
    elif what == "update-nothing":
        if table.update({"c1": 0.0}, where="c2 = 0.5") is not None:
            raise SystemExit("the UPDATE matched a row")
    elif what == "delete-nothing":
        if table.delete("c2 = 0.5") is not None:
            raise SystemExit("the DELETE matched a row")
    seconds = time.perf_counter() - start
    print(json.dumps({"what": what, "seconds": seconds, "peak_rss_mb": peak_rss_mb(), "mor": mor.__file__}))


def run_child(args: argparse.Namespace, *child_args: str) -> dict:
    env = dict(os.environ)
    if args.mor_path:
        env["PYTHONPATH"] = os.pathsep.join([str(args.mor_path), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, __file__, "--child", *child_args], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.splitlines()[-1]) if out.stdout.strip() else {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--columns", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench-wide"))
    parser.add_argument("--mor-path", type=Path, default=None)
    args = parser.parse_args()
    result = start_result("wide_update", args)
    root = args.data_dir / "warehouse"
    subprocess.run(["rm", "-rf", str(root)], check=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--build", str(root), str(args.rows), str(args.columns)], check=True)
    result["build_seconds"] = time.perf_counter() - started
    log(f"built {args.rows} rows x {args.columns} columns in {result['build_seconds']:.1f} s")
    samples: dict[str, list[dict]] = {"scan": [], "update-nothing": [], "delete-nothing": []}
    for _ in range(args.repeat):  # interleaved, so a change in machine load touches all alike
        for what, runs in samples.items():
            run = run_child(args, str(root), what, str(args.rows))
            runs.append(run)
            log(f"{what}: {run['seconds']:.2f} s, peak RSS {run['peak_rss_mb']:.0f} MB ({run['mor']})")
    summary = {
        what: {"seconds": statistics.median(r["seconds"] for r in runs), "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs)}
        for what, runs in samples.items()
    }
    ratios = {
        "update_over_scan_seconds": summary["update-nothing"]["seconds"] / summary["scan"]["seconds"],
        "update_over_scan_peak_rss": summary["update-nothing"]["peak_rss_mb"] / summary["scan"]["peak_rss_mb"],
        "update_over_delete_seconds": summary["update-nothing"]["seconds"] / summary["delete-nothing"]["seconds"],
    }
    for what, s in summary.items():
        print(f"{what:>15}: median {s['seconds']:.2f} s, peak RSS {s['peak_rss_mb']:.0f} MB")
    for name, value in ratios.items():
        print(f"{name}: {value:.3f}")
    result.update(samples=samples, summary=summary, ratios=ratios, load_average_end=os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    subprocess.run(["rm", "-rf", str(root)], check=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        measure(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--build":
        build(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
