"""Reads from S3-compatible object storage vs from local disk (issue 13).

The generated events table (`--rows` rows in `--files` data files, one append each; see
benchmarks/README.md) is built twice from the same Arrow data: in a local warehouse (SQLite
catalog, local files) and in an S3 warehouse on moto's S3 server (a child process on loopback,
`tests/servers/s3.py`'s MotoProcess; SQLite catalog). Each then receives the same merge-on-read
DELETE of `--fraction` of the rows (`value < fraction`: scattered over every file), so each data
file has one position delete file.

Untimed first: both tables must read exactly the ids not deleted. Then the requests of one scan
are counted from the server's access log, by kind (GET, HEAD, LIST, PUT): planning alone, a
cold full read (mor's manifest and decoded-delete caches emptied: the first read in a process),
a warm one, and the floor. Then full reads are timed in `--repeat` interleaved rounds after one
warm-up each (`common.median_timing`): `mor_*` is a cold `table.scan().to_arrow()`, `floor_*`
a `pyarrow.dataset` read of the same data files that ignores the deletes (on S3 through an
S3FileSystem with the same settings).

moto on loopback answers in well under a millisecond, where a real object store takes tens.
With `--latency-ms` (default 20) the same S3 table is also read through
`benchmarks/latency_proxy.py`, a child process that delays every request that long: `*_latency`
readers. `mor_s3_latency_serial` is mor with its fetches ahead of the reader turned off
(manifests read by one thread, no delete file prefetch), to show what they save. moto is a
Python server: what it serves per second bounds the S3 numbers, so they say how mor uses the
protocol (requests, concurrency) more than how fast a real object store would be.

    .venv/bin/python benchmarks/bench_s3.py --rows 10000000 --files 10 --repeat 5 \\
        --out benchmarks/results/s3.json --data-dir benchmarks/data
    .venv/bin/python benchmarks/bench_s3.py --rows 200000 --files 4 --repeat 2 --out /tmp/s3-smoke.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py

from common import (
    REPO_ROOT,
    TABLE_NAME,
    build_warehouse,
    check_rows,
    file_slices,
    generate_events,
    log,
    median_timing,
    remove_warehouse,
    start_result,
    value_predicate,
)

sys.path.insert(0, str(REPO_ROOT))  # tests/servers/s3.py

import mor
from mor.io.fileio import FileIO
from mor.planning import manifest_cache
from mor.read import position_deletes
from mor.read.decoded_cache import SHARED
from tests.servers.s3 import MotoProcess


def cold_scan(table: Any) -> Any:
    """A full read as the first one in a process: no cached manifests or decoded deletes."""
    manifest_cache.clear()
    SHARED.clear()
    return table.scan().to_arrow()


def serial(read: Any) -> Any:
    """`read` with manifests read one after another and no delete file prefetch."""

    def run() -> Any:
        saved = position_deletes.PREFETCH_BYTES
        manifest_cache.configure(threads=1)
        position_deletes.PREFETCH_BYTES = 0
        try:
            return read()
        finally:
            manifest_cache.configure(threads=manifest_cache.DEFAULT_THREADS)
            position_deletes.PREFETCH_BYTES = saved

    return run


def start_proxy(target: str, delay_ms: float) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proxy = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("latency_proxy.py")),
            "--port",
            str(port),
            "--target",
            target.removeprefix("http://"),
            "--delay-ms",
            str(delay_ms),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    if not (proxy.stdout and proxy.stdout.readline().startswith("ready")):
        proxy.kill()
        raise RuntimeError("the latency proxy did not start")
    return proxy, f"http://127.0.0.1:{port}"


def build_s3(server: MotoProcess, data_dir: Path, slices: list) -> tuple[Any, dict[str, Any]]:
    catalog_db = data_dir / "s3-catalog.db"
    catalog_db.unlink(missing_ok=True)
    start = time.perf_counter()
    catalog = mor.load_catalog(server.server.fresh_prefix(), uri=f"sqlite:///{catalog_db}", properties=server.server.properties)
    table = catalog.create_table(TABLE_NAME, schema=slices[0].schema)
    for piece in slices:
        table.append(piece)
    return table, {"seconds": time.perf_counter() - start, "data_files": len(slices)}


def count_requests(server: MotoProcess, call: Any) -> dict[str, int]:
    server.reset()
    call()
    return server.requests()


def run(args: argparse.Namespace, result: dict[str, Any]) -> None:
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    spec = value_predicate(data, args.fraction)
    server = MotoProcess(str(args.data_dir / "moto-access.log"))
    try:
        log(f"moto's S3 server at {server.server.endpoint}; building the local warehouse")
        local, local_build = build_warehouse(args.data_dir / "wh-s3-local", slices)
        log(f"local build {local_build['seconds']:.1f} s; building the S3 warehouse")
        s3, s3_build = build_s3(server, args.data_dir, slices)
        log(f"S3 build {s3_build['seconds']:.1f} s; DELETE {spec.text} ({spec.count} rows) on both")
        deletes = {}
        for name, table in (("local", local), ("s3", s3)):
            start = time.perf_counter()
            table.delete(spec.text, mode="merge-on-read")
            deletes[name] = time.perf_counter() - start
        checks = [check_rows("mor local", cold_scan(local), args.rows, spec), check_rows("mor s3", cold_scan(s3), args.rows, spec)]
        tasks = s3.scan().plan_files()
        s3_files = [t.data_file.file_path for t in tasks]
        local_files = [t.data_file.file_path.removeprefix("file://") for t in local.scan().plan_files()]
        s3fs = FileIO(server.server.properties).s3
        s3_paths = [FileIO().path(p).removeprefix("s3://") for p in s3_files]
        checks.append(
            check_rows("floor s3 (deletes ignored)", ds.dataset(s3_paths, format="parquet", filesystem=s3fs).to_table(), args.rows, None)
        )

        def plan() -> None:
            manifest_cache.clear()
            s3.scan().plan_files()

        proxy = None
        latency_readers: dict[str, Any] = {}
        if args.latency_ms:
            proxy, endpoint = start_proxy(server.server.endpoint, args.latency_ms)
            slow_properties = {**server.server.properties, "s3.endpoint": endpoint}
            slow = mor.StaticTable.from_metadata(s3.metadata_location, properties=slow_properties)
            slow_fs = FileIO(slow_properties).s3
            check_rows("mor s3 latency", cold_scan(slow), args.rows, spec)
            latency_readers = {
                "mor_s3_latency": lambda: cold_scan(slow),
                "floor_s3_latency": lambda: ds.dataset(s3_paths, format="parquet", filesystem=slow_fs).to_table(),
                "mor_s3_latency_serial": serial(lambda: cold_scan(slow)),
            }
        requests = {
            "plan_cold": count_requests(server, plan),
            "scan_cold": count_requests(server, lambda: cold_scan(s3)),
            "scan_warm": count_requests(server, lambda: s3.scan().to_arrow()),
            "floor": count_requests(server, lambda: ds.dataset(s3_paths, format="parquet", filesystem=s3fs).to_table()),
        }
        log(f"requests per scan: {requests}")
        readers = {
            "mor_local": lambda: cold_scan(local),
            "floor_local": lambda: ds.dataset(local_files, format="parquet").to_table(),
            "mor_s3": lambda: cold_scan(s3),
            "floor_s3": lambda: ds.dataset(s3_paths, format="parquet", filesystem=s3fs).to_table(),
            "mor_s3_warm": lambda: s3.scan().to_arrow(),
            **latency_readers,
        }
        log(f"timing: one warm-up + {args.repeat} rounds of {list(readers)}")
        timings = median_timing(readers, args.repeat)
        if proxy is not None:
            proxy.kill()
        med = {name: t["median_seconds"] for name, t in timings.items()}
        latency_ratios = (
            {
                "mor_s3_latency_over_floor_s3_latency": med["mor_s3_latency"] / med["floor_s3_latency"],
                "mor_s3_latency_over_mor_local": med["mor_s3_latency"] / med["mor_local"],
                "mor_s3_latency_serial_over_mor_s3_latency": med["mor_s3_latency_serial"] / med["mor_s3_latency"],
            }
            if latency_readers
            else {}
        )
        result.update(
            {
                "rows": args.rows,
                "deleted_rows": spec.count,
                "predicate": spec.as_json(),
                "builds": {"local": local_build, "s3": s3_build},
                "delete_seconds": deletes,
                "tasks": len(tasks),
                "delete_files_per_task": [len(t.delete_files) for t in tasks],
                "checks": checks,
                "requests_per_scan": requests,
                "timings": timings,
                "ratios": {
                    "mor_s3_over_mor_local": med["mor_s3"] / med["mor_local"],
                    "mor_s3_over_floor_s3": med["mor_s3"] / med["floor_s3"],
                    "mor_local_over_floor_local": med["mor_local"] / med["floor_local"],
                    "floor_s3_over_floor_local": med["floor_s3"] / med["floor_local"],
                    "mor_s3_warm_over_mor_s3": med["mor_s3_warm"] / med["mor_s3"],
                    **latency_ratios,
                },
            }
        )
    finally:
        server.stop()
        if not args.keep:
            remove_warehouse(args.data_dir / "wh-s3-local")


def print_report(result: dict[str, Any]) -> None:
    print(
        f"\n{result['rows']:,} rows, {result['tasks']} data files, {result['deleted_rows']:,} rows "
        "position-deleted; full reads (median s, CPU s):"
    )
    for name, t in result["timings"].items():
        print(f"  {name:<22}{t['median_seconds']:>8.3f}{t['median_cpu_seconds']:>8.3f}")
    for name, ratio in result["ratios"].items():
        print(f"  {name:<42}{ratio:>6.2f}x")
    print("requests per scan (moto's access log):")
    for name, counts in result["requests_per_scan"].items():
        print(f"  {name:<12}" + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"load average start {result['load_average_start']}, end {result['load_average_end']}; total {result['duration_seconds']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--fraction", type=float, default=0.1, help="rows the DELETE removes")
    p.add_argument("--repeat", type=int, default=5, help="timed read rounds after one warm-up")
    p.add_argument("--latency-ms", type=float, default=20.0, help="also read through a proxy adding this to every request (0: not)")
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "s3.json")
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench"))
    p.add_argument("--keep", action="store_true", help="keep the local warehouse under --data-dir")
    args = p.parse_args(argv)
    started = time.perf_counter()
    result = start_result("s3", args)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    run(args, result)
    result["load_average_end"] = os.getloadavg()
    result["duration_seconds"] = time.perf_counter() - started
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print_report(result)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
