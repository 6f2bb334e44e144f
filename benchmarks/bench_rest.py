"""The cost of the REST catalog: commits per second through `mor serve` vs the SQL catalog it
serves, opened directly; and the added latency of planning a scan through the REST client.

One run, one machine: the server (`mor serve`, SQLite catalog, loopback, with a token) and the
clients share its cores. Each commit is a one-row append (the smallest commit: the catalog's
share of the cost is largest); `--commits` of them per path, interleaved in rounds so that
machine noise hits both. Planning: `table.scan().plan_files()` on a table of `--files` data
files, each with a position delete file, loaded through each path (median of `--repeat`).

    .venv/bin/python benchmarks/bench_rest.py --out benchmarks/results/rest.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import log, machine_info
from servers.rest import running_rest_server

import mor

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def commits_per_second(table: mor.Table, commits: int, start: int) -> float:
    began = time.perf_counter()
    for i in range(start, start + commits):
        table.append(pa.table({"id": [i], "v": [str(i)]}))
    return commits / (time.perf_counter() - began)


def planning_s(catalog: mor.Catalog, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        catalog.load_table("db.planned").scan().plan_files()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=40, help="commits per path per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=200, help="data files of the planned table")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-rest-"))
    token_file = root / "token"
    token_file.write_text("bench-token\n")
    warehouse = root / "warehouse"
    direct = mor.load_catalog(warehouse, create=True)
    with running_rest_server(warehouse, token_file=token_file) as server:
        rest = mor.load_catalog(uri=server.url, token="bench-token")
        rest.create_table("db.commits", schema=SCHEMA)
        planned = direct.create_table("db.planned", schema=SCHEMA)
        log(f"building a table of {args.files} data files, each with a position delete file")
        for i in range(args.files):
            planned.append(pa.table({"id": [2 * i, 2 * i + 1], "v": ["a", "b"]}))
        planned.delete(mor.isin("id", list(range(0, 2 * args.files, 2))))
        rates: dict[str, list[float]] = {"sql": [], "rest": []}
        for r in range(args.rounds):
            for path, catalog in (("sql", direct), ("rest", rest)):
                table = catalog.load_table("db.commits")
                rates[path].append(commits_per_second(table, args.commits, (r * 2 + (path == "rest")) * args.commits))
                log(f"round {r + 1}: {path} {rates[path][-1]:.1f} commits/s")
        plans = {"sql": planning_s(direct, args.repeat), "rest": planning_s(rest, args.repeat)}
    result = {
        "benchmark": "rest",
        "machine": machine_info(),
        "parameters": vars(args) | {"out": str(args.out)},
        "commits_per_second": {k: {"samples": v, "median": statistics.median(v)} for k, v in rates.items()},
        "planning_median_s": plans,
    }
    sql, via_rest = result["commits_per_second"]["sql"]["median"], result["commits_per_second"]["rest"]["median"]
    print(f"commits/s: SQL catalog directly {sql:.1f}, through mor serve {via_rest:.1f} (rest/sql {via_rest / sql:.2f}x)")
    print(
        f"planning {args.files} files + {args.files} delete files: SQL {plans['sql'] * 1000:.1f} ms, "
        f"REST {plans['rest'] * 1000:.1f} ms (+{(plans['rest'] - plans['sql']) * 1000:.1f} ms)"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
