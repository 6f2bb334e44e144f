"""One reader (or mor with its floor) on one table state, in a fresh process (so no reader
inherits another's caches, threads or memory), for each form: a checked warm-up call each, then
`repeat` timed rounds; prints one JSON line per reader and form. Run by suite/reads.py as

    python read_worker.py '{"readers": ["mor", "floor"], "forms": ["arrow", "aggregate"], "warehouse": ...,
                            "metadata": ..., "data_files": [...], "expected": {...}, "repeat": 3}'

Every call returns (rows, id sum): of the Arrow table for form `arrow`, the aggregate's count(*)
and sum(id) for form `aggregate` (which also computes sum(value), min/max(ts), min(category) and
sum(length(payload)), so every column is read).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

Call = Callable[[], tuple[int, int]]
SLOW_SECONDS = 5.0
AGG_SQL = "count(*), sum(id), sum(value), min(ts), max(ts), min(category), sum(length(payload))"


def of_table(t: pa.Table) -> tuple[int, int]:
    return t.num_rows, int(pc.sum(t["id"]).as_py() or 0)


def of_batches(batches: Iterable[pa.RecordBatch]) -> tuple[int, int]:
    """The aggregate over a stream of batches with pyarrow compute: per batch, then combined."""
    rows = id_sum = payload = 0
    value = 0.0
    lows: list[Any] = []
    highs: list[Any] = []
    cats: list[Any] = []
    for b in batches:
        if not b.num_rows:
            continue
        rows += b.num_rows
        id_sum += pc.sum(b["id"]).as_py()
        value += pc.sum(b["value"]).as_py()
        lo_hi = pc.min_max(b["ts"])
        lows.append(lo_hi["min"].as_py())
        highs.append(lo_hi["max"].as_py())
        cats.append(pc.min(b["category"]).as_py())
        payload += pc.sum(pc.binary_length(b["payload"])).as_py()
    _ = (value, min(lows, default=None), max(highs, default=None), min(cats, default=None), payload)
    return rows, id_sum


# --------------------------------------------------------------------------- readers


def mor_call(spec: dict[str, Any]) -> Call:
    import mor

    def table() -> Any:  # catalog and table loaded per call: part of what a read costs
        return mor.load_catalog(spec["warehouse"]).load_table("bench.events")

    if spec["form"] == "arrow":
        return lambda: of_table(table().scan().to_arrow())
    return lambda: of_batches(table().scan().to_batches())


def floor_call(spec: dict[str, Any]) -> Call:
    import pyarrow.dataset as ds

    files = spec["data_files"]
    if spec["form"] == "arrow":
        return lambda: of_table(ds.dataset(files, format="parquet").to_table())
    return lambda: of_batches(ds.dataset(files, format="parquet").to_batches())


def duckdb_call(spec: dict[str, Any]) -> Call:
    import duckdb

    con = duckdb.connect(config={"allow_unsigned_extensions": True, "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})  # fmt: skip
    for name in ("avro", "iceberg"):  # from the wheels only, never the network; iceberg needs avro
        package = __import__(f"duckdb_extension_{name}")
        con.execute(f"LOAD '{Path(package.__file__).parent / 'extensions' / f'v{duckdb.__version__}' / f'{name}.duckdb_extension'}'")
    source = f"iceberg_scan('{spec['metadata']}')"
    if spec["form"] == "arrow":
        return lambda: of_table(con.execute(f"SELECT * FROM {source}").fetch_arrow_table())

    def aggregate() -> tuple[int, int]:  # one query: DuckDB fuses the scan and the aggregate
        row = con.execute(f"SELECT {AGG_SQL} FROM {source}").fetchone()
        return int(row[0]), int(row[1] or 0)

    return aggregate


def pyiceberg_call(spec: dict[str, Any]) -> Call:
    from pyiceberg.table import StaticTable

    def scan() -> Any:
        return StaticTable.from_metadata(spec["metadata"]).scan()

    if spec["form"] == "arrow":
        return lambda: of_table(scan().to_arrow())
    return lambda: of_batches(scan().to_arrow_batch_reader())


def polars_call(spec: dict[str, Any]) -> Call:
    import polars as pl

    if spec["form"] == "arrow":
        return lambda: of_table(pl.scan_iceberg(spec["metadata"]).collect().to_arrow())
    aggs = [pl.len(), pl.col("id").sum(), pl.col("value").sum(), pl.col("ts").min().alias("lo"), pl.col("ts").max().alias("hi"),
            pl.col("category").min(), pl.col("payload").str.len_bytes().sum()]  # fmt: skip

    def aggregate() -> tuple[int, int]:  # one lazy query: polars plans the scan with the aggregate
        row = pl.scan_iceberg(spec["metadata"]).select(aggs).collect().row(0)
        return int(row[0]), int(row[1] or 0)

    return aggregate


def daft_call(spec: dict[str, Any]) -> Call:
    import daft
    from pyiceberg.table import StaticTable

    def frame() -> Any:
        return daft.read_iceberg(StaticTable.from_metadata(spec["metadata"]))

    if spec["form"] == "arrow":
        return lambda: of_table(frame().to_arrow())
    c = daft.col

    def aggregate() -> tuple[int, int]:
        out = frame().agg(c("id").count().alias("n"), c("id").sum().alias("id_sum"), c("value").sum().alias("v"),
                          c("ts").min().alias("lo"), c("ts").max().alias("hi"), c("category").min().alias("cat"),
                          c("payload").length_bytes().sum().alias("p")).to_pydict()  # fmt: skip
        return int(out["n"][0]), int(out["id_sum"][0] or 0)

    return aggregate


READERS = {"mor": mor_call, "floor": floor_call, "duckdb": duckdb_call, "pyiceberg": pyiceberg_call,
           "polars": polars_call, "daft": daft_call}  # fmt: skip


# --------------------------------------------------------------------------- one measurement


def _failure(e: Exception) -> str:
    """`unsupported` when the library says so (e.g. pyiceberg on equality deletes), else `error`."""
    said = str(e).lower()
    return "unsupported" if isinstance(e, NotImplementedError) or "not yet support" in said or "not supported" in said else "error"


def measure(spec: dict[str, Any], readers: list[str]) -> dict[str, dict[str, Any]]:
    """reader -> its cell for one form: each reader's checked warm-up call, then `repeat` rounds
    calling the readers in turn (first one, then the other, first), so readers measured together
    (mor and the floor) see the machine in the same state and their ratio does not drift with it."""
    cells: dict[str, dict[str, Any]] = {}
    calls: dict[str, Call] = {}
    slow = False
    for reader in readers:
        # The floor ignores deletes by design: it must return every row of its data files instead.
        want = spec["floor_expected"] if reader == "floor" else spec["expected"]
        try:
            call = READERS[reader]({**spec, "reader": reader})
            t0 = time.perf_counter()
            rows, id_sum = call()
            warm_up = time.perf_counter() - t0
        except Exception as e:  # a reader that fails is a result, not a crash
            cells[reader] = {"status": _failure(e), "detail": " ".join(f"{type(e).__name__}: {e}".split())[:300]}
            continue
        if rows != want["rows"] or want["id_sum"] not in (None, id_sum):  # the floor's is row count only
            cells[reader] = {
                "status": "wrong",
                "detail": f"got {rows} rows, id sum {id_sum}; expected {want['rows']} rows, id sum {want['id_sum']}",
            }
            continue
        calls[reader], slow = call, slow or warm_up > SLOW_SECONDS
        cells[reader] = {"status": "ok", "samples_seconds": [], "cpu": [], "detail": f"{rows} rows checked"}
    # A reader that takes minutes gets one timed call: more would only repeat its verdict and
    # push the section past its time limit.
    order = list(calls.items())
    for _ in range(1 if slow else spec["repeat"]):
        for reader, call in order:
            c0, t0 = time.process_time(), time.perf_counter()
            call()
            cells[reader]["samples_seconds"].append(time.perf_counter() - t0)
            cells[reader]["cpu"].append(time.process_time() - c0)
        order = order[1:] + order[:1]  # who goes first changes every round: neither gets the warmer machine
    for reader in calls:
        cell = cells[reader]
        cell["median_seconds"] = statistics.median(cell["samples_seconds"])
        cell["median_cpu_seconds"] = statistics.median(cell.pop("cpu"))
    return cells


if __name__ == "__main__":
    # One process per reader group and table, its forms in turn: one JSON line per reader and
    # form, printed as soon as the form is measured (a form the time limit cuts off leaves the
    # earlier ones' lines).
    request = json.loads(sys.argv[1])
    readers = request.pop("readers")
    for form in request.pop("forms"):
        for reader, cell in measure({**request, "form": form}, readers).items():
            print(json.dumps({"form": form, "reader": reader, **cell}), flush=True)
