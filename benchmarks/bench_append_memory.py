"""Peak memory of a streaming append (issue 9): `--rows` rows from a RecordBatchReader that
generates its batches lazily, appended in one `table.append`, in a fresh process so its peak
RSS is the append's. For comparison, the same rows appended as one in-memory Table.

    .venv/bin/python benchmarks/bench_append_memory.py --rows 10000000 \
        --out benchmarks/results/append_memory.json --data-dir benchmarks/data
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from common import log, peak_rss_mb, start_result

BATCH_ROWS = 100_000


def child(mode: str, rows: int, root: Path) -> None:
    import numpy as np
    import pyarrow as pa

    import mor

    schema = pa.schema([("id", pa.int64()), ("category", pa.string()), ("value", pa.float64()),
                        ("ts", pa.timestamp("us", "UTC")), ("payload", pa.string())])  # fmt: skip
    categories = np.array([f"cat-{i:02d}" for i in range(12)])

    def batches():
        rng = np.random.default_rng(7)
        for start in range(0, rows, BATCH_ROWS):
            ids = np.arange(start, min(rows, start + BATCH_ROWS))
            yield pa.RecordBatch.from_arrays([
                pa.array(ids), pa.array(categories[ids % 12]), pa.array(rng.random(len(ids))),
                pa.array(ids * 1000, pa.timestamp("us", "UTC")),
                pa.array(np.char.add("payload-0123456789-abcdefghij-", (ids % 1000).astype(str))),
            ], schema=schema)  # fmt: skip

    table = mor.load_catalog(str(root), create=True).create_table("db.t", schema=schema)
    base_mb = peak_rss_mb()  # the interpreter and its imports: what any append starts from
    start = time.perf_counter()
    data = pa.RecordBatchReader.from_batches(schema, batches()) if mode == "stream" else pa.Table.from_batches(list(batches()))
    snapshot = table.append(data)
    seconds = time.perf_counter() - start
    peak_mb = peak_rss_mb()
    files = len(table.scan().plan_files())
    print(json.dumps({"mode": mode, "seconds": seconds, "peak_rss_mb": peak_mb, "files": files,
                      "records": int(snapshot.summary["added-records"]), "rss_after_imports_mb": base_mb}))  # fmt: skip


def append_peak(mode: str, rows: int, data_dir: Path) -> dict:
    """One append of `rows` rows (mode "stream" or "table") in a fresh child process, in a
    warehouse under `data_dir` removed afterwards; the child's report (peak RSS and all)."""
    root = data_dir / f"append-{mode}"
    subprocess.run(["rm", "-rf", str(root)], check=True)
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(rows), str(root)],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    subprocess.run(["rm", "-rf", str(root)], check=True)
    return json.loads(out.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench"))
    args = parser.parse_args()
    result = start_result("append_memory", args)
    runs = []
    for mode in ("stream", "table"):
        run = append_peak(mode, args.rows, args.data_dir)
        runs.append(run)
        log(f"{mode}: {run['seconds']:.1f} s, peak RSS {run['peak_rss_mb']:.0f} MB, {run['files']} files")
    result["runs"] = runs
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
    else:
        main()
