"""End-to-end cost of a large IN list (issue 9, part 4): a scan and a DELETE whose predicate is
`id in (...)` with `--values` values, as a pyiceberg `In` expression and as filter text, on a
table of `--rows` rows in 4 files.

    .venv/bin/python benchmarks/bench_in_list.py --rows 4000000 --values 100000
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import In

import mor


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    args = parser.parse_args()
    table = mor.load_catalog(tempfile.mkdtemp()).create_table("db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.float64())]))
    per_file = args.rows // 4
    for f in range(4):
        table.append(pa.table({"id": np.arange(f * per_file, (f + 1) * per_file), "v": np.random.default_rng(f).random(per_file)}))
    ids = list(range(0, args.rows, args.rows // args.values))[: args.values]
    text = "id in (" + ", ".join(map(str, ids)) + ")"
    for label, run in [
        ("scan, In expression (built inside the timing)", lambda: table.scan(filter=In("id", ids)).to_arrow()),
        ("scan, filter text", lambda: table.scan(filter=text).to_arrow()),
        ("delete, In expression (built inside the timing)", lambda: table.delete(In("id", ids))),
    ]:
        started = time.perf_counter()
        run()
        print(f"{label}: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
