"""What a REST catalog operation costs as the catalog grows (issue 53, item 4): `create_table`
and one page of a table listing through `mor serve`, at 100, 1,000 and 10,000 tables.

Creating a table checks that its folder is no other table's (nor inside or around one); the
catalog remembers every table's location, so that check is a few indexed lookups
(mor/catalog/locations.py). A listing page is one query after the previous page's last name
(mor/catalog/listings.py). Both should cost the same at every size.

One run, one machine: `mor serve` (SQLite catalog, loopback, a token) and this client share its
cores. The catalog is filled through mor's Python API on the same warehouse and database (what
`create_table` there writes is what the server's writes: the table row and its location), the
server running throughout; then at each size, interleaved in rounds: `--repeat` creates
(`POST .../namespaces/db/tables`, a one-column schema, the default location) and `--repeat`
reads of one listing page (`GET .../namespaces/db/tables?pageSize=100`, the first page and one
from the middle, by its token), over one kept-alive HTTP connection. Medians, and their ratio to
the smallest size.

    .venv/bin/python benchmarks/bench_rest_scale.py --out benchmarks/results/rest_scale.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import log, machine_info
from servers.rest import running_rest_server

import mor

SCHEMA = pa.schema([pa.field("id", pa.int64())])
SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
TOKEN = "bench-token"
PAGE_SIZE = 100


def fill(catalog: mor.Catalog, start: int, stop: int) -> None:
    began = time.perf_counter()
    for i in range(start, stop):
        catalog.create_table(f"db.t{i:06d}", SCHEMA)
    log(f"filled to {stop} tables ({(time.perf_counter() - began) / max(stop - start, 1) * 1000:.1f} ms a table)")


def timed(call: Any) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


def warm_up(session: requests.Session, base: str, repeat: int) -> None:
    """Creates and listings, untimed, so the first size measured pays no first-use costs."""
    tables = f"{base}/v1/namespaces/warm/tables"
    session.post(f"{base}/v1/namespaces", json={"namespace": ["warm"]}).raise_for_status()
    for i in range(repeat):
        session.post(tables, json={"name": f"w{i}", "schema": SCHEMA_JSON}).raise_for_status()
        session.get(tables, params={"pageSize": str(PAGE_SIZE), "pageToken": ""}).raise_for_status()


def measure(session: requests.Session, base: str, size: int, repeat: int, rounds: int) -> dict[str, Any]:
    """Medians (ms) of creates and listing pages at this size, `repeat` of each per round."""
    tables = f"{base}/v1/namespaces/db/tables"
    # A token from the middle of the listing (asked once, outside the timing).
    middle = session.get(tables, params={"pageSize": str(size // 2)}).json()["next-page-token"]
    samples: dict[str, list[float]] = {"create_table": [], "first_page": [], "middle_page": []}
    made = 0

    def create() -> None:
        nonlocal made
        answer = session.post(tables, json={"name": f"new{size}_{made:04d}", "schema": SCHEMA_JSON})
        answer.raise_for_status()
        made += 1

    def page(token: str) -> None:
        answer = session.get(tables, params={"pageSize": str(PAGE_SIZE), "pageToken": token})
        answer.raise_for_status()
        assert 0 < len(answer.json()["identifiers"]) <= PAGE_SIZE

    for _ in range(rounds):
        for _ in range(repeat):
            samples["create_table"].append(timed(create))
            samples["first_page"].append(timed(lambda: page("")))
            samples["middle_page"].append(timed(lambda: page(middle)))
    return {name: {"median_ms": statistics.median(v), "samples_ms": v} for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=20, help="creates and page reads per size (per round)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--label", default="", help="what code ran (kept in the result)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-rest-scale-"))
    (root / "token").write_text(f"{TOKEN}\n")
    warehouse = root / "warehouse"
    catalog = mor.load_catalog(warehouse, create=True)
    catalog.create_namespace("db")
    results: dict[int, dict[str, Any]] = {}
    filled = 0
    with running_rest_server(warehouse, token_file=root / "token") as server, requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {TOKEN}"
        session.get(f"{server.url}/v1/config").raise_for_status()
        warm_up(session, server.url, args.repeat)
        for size in sorted(args.sizes):
            fill(catalog, filled, size)
            filled = size
            results[size] = measure(session, server.url, size, args.repeat, args.rounds)
            line = ", ".join(f"{name} {r['median_ms']:.2f} ms" for name, r in results[size].items())
            log(f"{size} tables: {line}")
    smallest = min(results)
    ratios = {
        size: {name: r["median_ms"] / results[smallest][name]["median_ms"] for name, r in measured.items()}
        for size, measured in results.items()
    }
    print(f"\nmedians (ms) and ratio to {smallest} tables:")
    print(f"{'tables':>8} " + " ".join(f"{name:>22}" for name in results[smallest]))
    for size in sorted(results):
        cells = [f"{results[size][name]['median_ms']:9.2f} ({ratios[size][name]:5.2f}x)" for name in results[smallest]]
        print(f"{size:>8} " + " ".join(f"{c:>22}" for c in cells))
    if args.out:
        result = {
            "benchmark": "rest_scale",
            "label": args.label,
            "machine": machine_info(),
            "parameters": vars(args) | {"out": str(args.out), "page_size": PAGE_SIZE},
            "results": results,
            "ratios_to_smallest": ratios,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
