"""Planning and reading with deletes on each emulated object store vs local files (issue 42).

The generated events table (`--rows` rows in `--files` data files, one append each; see
benchmarks/README.md) is built in each store from the same Arrow data, with a SQLite catalog:
local files; S3 on moto (`tests/servers/s3.py`'s MotoProcess); Google Cloud Storage on
gcp-storage-emulator (PyPI); Azure Blob / ADLS on Azurite (npm, installed into .cache/ by
`tests/servers/azurite.py`). Every emulator runs in a child process, so that serving does not
compete with the measured reader for the GIL. Each table then receives the same merge-on-read
DELETE of `--fraction` of the rows (`value < fraction`: one position delete file per data file)
and the same blind delete of `--equality-keys` surviving ids (`delete_rows`: one equality delete
file that applies to every data file).

Untimed first: every store's table must read exactly the ids not deleted. Then the requests of
one cold planning (`table.scan().plan_files()` with mor's manifest cache emptied) and of one cold
full read (`table.scan().to_arrow()` with the manifest and decoded-delete caches emptied, as the
first read of a process) are counted from each emulator's own access log, by kind and by the
kind of file they touched; so are the writes that built the table. Then planning and reading are
timed for every store in `--repeat` interleaved, rotated rounds after one warm-up each
(`common.median_timing`), and each store's median is divided by the local one.

Request kinds: the HTTP method, except that a listing is LIST, and on GCS (JSON API) a GET of an
object's metadata is HEAD (what S3 and Azure ask with a HEAD) and a GET with `alt=media` is GET.
Uploads are reported as sent: on S3 a PUT, or for a large object a multipart upload (POST,
a PUT per part, POST); on GCS a resumable upload (POST, then a PUT per chunk); on Azure PUT
(create), PUT per block, PUT (block list), after a LIST.

Where the counts come from: moto logs each request through werkzeug when it sends the response
headers; gcp-storage-emulator logs each request line through its `log_message` at INFO (so it
runs without `-q`); Azurite writes one line per request to standard output (its morgan access
log, on without `--silent`) when the response is finished, so counts are read once the log has
been quiet for `SETTLE_SECONDS`. All three are served by emulators on loopback that answer in
well under a millisecond and are not the services: the ratios say how mor uses each protocol
(requests, round trips, concurrency) and what each emulator costs, not how fast the real store
would be (moto and gcp-storage-emulator are Python servers; the latter is run here with a thread
per request, see GCS_THREADED).

    .venv/bin/python benchmarks/bench_stores.py --rows 10000000 --files 10 --repeat 5 \\
        --out benchmarks/results/stores.json
    .venv/bin/python benchmarks/bench_stores.py --rows 200000 --files 4 --repeat 3 --out /tmp/stores-smoke.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/common.py

from common import (
    REPO_ROOT,
    TABLE_NAME,
    DeleteSpec,
    check_rows,
    file_slices,
    generate_events,
    log,
    median_timing,
    remove_warehouse,
    start_result,
    value_predicate,
)

sys.path.insert(0, str(REPO_ROOT))  # tests/servers/

import mor
from mor.planning import manifest_cache
from mor.read.decoded_cache import SHARED
from tests.servers import azurite, gcs
from tests.servers.postgres import free_port
from tests.servers.s3 import MotoProcess, request_kind

STORES = ("local", "s3", "gcs", "azure")
BUCKET = "mor-bench"  # the bucket (S3, GCS) or container (Azure)
SETTLE_SECONDS = 0.2  # an access log quiet this long has every line of the requests before
GCS_THREADED = gcs.THREADED  # a thread per request: tests/servers/gcs.py says why
_REQUEST_LINE = re.compile(r'"(GET|HEAD|PUT|POST|DELETE|PATCH) (/\S*) HTTP/')


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Request:
    kind: str  # GET, HEAD, LIST, PUT, POST, ...
    name: str  # the object's file name, '' for a listing


def _method_and_path(line: str) -> tuple[str, str, dict[str, str]] | None:
    found = _REQUEST_LINE.search(line)
    if not found:
        return None
    method, target = found.groups()
    path, _, query = target.partition("?")
    return method, urllib.parse.unquote(path), dict(urllib.parse.parse_qsl(query))


def _file_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def s3_request(line: str) -> Request | None:
    """A werkzeug access log line of moto: `"GET /bucket/key HTTP/1.1" 206 -`."""
    parsed, kind = _method_and_path(line), request_kind(line)
    if parsed is None or kind is None:
        return None
    return Request(kind, "" if kind == "LIST" else _file_name(parsed[1]))


def gcs_request(line: str) -> Request | None:
    """gcp-storage-emulator's request line: JSON API paths, `/storage/v1/b/<bucket>/o/<name>`
    (metadata, or the bytes with `alt=media`), `.../o?prefix=` (a listing),
    `/upload/storage/v1/b/<bucket>/o?name=` (uploads), `/download/...` (bytes)."""
    parsed = _method_and_path(line)
    if parsed is None:
        return None
    method, path, query = parsed
    if path.endswith("/o"):
        return Request("LIST" if method == "GET" else method, _file_name(query.get("name", "")))
    if method == "GET" and "/o/" in path:
        media = query.get("alt") == "media" or path.startswith("/download/")
        return Request("GET" if media else "HEAD", _file_name(path))
    return Request(method, _file_name(path))


def azure_request(line: str) -> Request | None:
    """Azurite's access log line (morgan, "common"): `"GET /account/container/key HTTP/1.1" 206 n`;
    a listing is a GET with `comp=list`."""
    parsed = _method_and_path(line)
    if parsed is None:
        return None
    method, path, query = parsed
    if method == "GET" and query.get("comp") == "list":
        return Request("LIST", "")
    return Request(method, _file_name(path))


def file_kind(name: str) -> str:
    """What an Iceberg file is, by the names mor gives them."""
    if not name:
        return "listing"
    if name.endswith(".metadata.json"):
        return "metadata_json"
    if name.endswith(".avro"):
        return "manifest_list" if name.startswith("snap-") else "manifest"
    if name.endswith("-eq-deletes.parquet"):
        return "equality_deletes"
    if name.endswith("-deletes.parquet"):
        return "position_deletes"
    if name.endswith(".parquet"):
        return "data"
    return "other"


class AccessLog:
    """An emulator's log file, read from where `reset()` left it: the requests since."""

    def __init__(self, path: Path, parse: Callable[[str], Request | None]) -> None:
        self.path, self.parse, self.offset = path, parse, 0

    def _settled_size(self) -> int:
        size, deadline = self.path.stat().st_size, time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(SETTLE_SECONDS)
            now = self.path.stat().st_size
            if now == size:
                break
            size = now
        return size

    def reset(self) -> None:
        self.offset = self._settled_size()

    def count(self) -> dict[str, Any]:
        """{total, by_kind: {GET: n, ...}, by_file: {data: {objects: n, GET: n, ...}, ...}}."""
        end = self._settled_size()
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            lines = f.read(end - self.offset).decode(errors="replace").splitlines()
        requests = [r for r in map(self.parse, lines) if r is not None]
        by_file: dict[str, Counter[str]] = {}
        objects: dict[str, set[str]] = {}
        for r in requests:
            kind = file_kind(r.name)
            by_file.setdefault(kind, Counter())[r.kind] += 1
            objects.setdefault(kind, set()).add(r.name)
        return {
            "total": len(requests),
            "by_kind": dict(sorted(Counter(r.kind for r in requests).items())),
            "by_file": {k: {"objects": len(objects[k]), **dict(sorted(c.items()))} for k, c in sorted(by_file.items())},
        }

    def measure(self, call: Callable[[], object]) -> dict[str, Any]:
        self.reset()
        call()
        return self.count()


# --------------------------------------------------------------------------- stores


@dataclass
class Store:
    name: str
    warehouse: str  # a local folder or an object storage prefix
    properties: dict[str, str]
    log: AccessLog | None  # None for local files
    server: str  # what serves it, for the results
    stop: Callable[[], None]


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _child(command: list[str], log_path: Path, cwd: Path) -> tuple[subprocess.Popen[bytes], Callable[[], None]]:
    """Start `command` with its output to `log_path`; returns it and how to stop it (killed: the
    emulators keep their state in memory, nothing to flush)."""
    out = open(log_path, "wb")
    process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop() -> None:
        if process.poll() is None:
            process.kill()
            process.wait()
        out.close()

    return process, stop


def start_local(data_dir: Path) -> Store:
    root = data_dir / "wh-stores-local"
    remove_warehouse(root)
    return Store("local", str(root), {}, None, "local files", lambda: remove_warehouse(root))


def start_s3(data_dir: Path) -> Store:
    moto = MotoProcess(str(data_dir / "s3-access.log"))
    server = moto.server
    return Store("s3", server.fresh_prefix(), server.properties, AccessLog(Path(moto.log_path), s3_request),
                 f"moto {_version('moto')} (child process)", moto.stop)  # fmt: skip


def start_gcs(data_dir: Path) -> Store:
    gcs.ensure_installed()
    port, log_path = free_port(), data_dir / "gcs-access.log"
    command = [sys.executable, "-c", GCS_THREADED, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory"]
    process, stop = _child(command, log_path, data_dir)
    server = gcs.GcsServer(f"http://127.0.0.1:{port}", BUCKET)
    try:
        gcs.wait_until_answering(f"{server.endpoint}/storage/v1/b", process, log_path, "the GCS emulator")
        server.create_bucket(BUCKET)
    except Exception:
        stop()
        raise
    return Store("gcs", server.fresh_prefix(), server.properties, AccessLog(log_path, gcs_request),
                 f"gcp-storage-emulator {_version('gcp-storage-emulator')} (child process, a thread per request)", stop)  # fmt: skip


def start_azure(data_dir: Path) -> Store:
    import pyarrow.fs as pafs

    azurite.ensure_installed()
    port, log_path = free_port(), data_dir / "azure-access.log"
    command = [str(azurite.azurite_bin()), "--blobHost", "127.0.0.1", "--blobPort", str(port),
               "--inMemoryPersistence", "--skipApiVersionCheck", "--loose"]  # fmt: skip
    process, stop = _child(command, log_path, data_dir)
    server = azurite.AzuriteServer(f"http://127.0.0.1:{port}", BUCKET)
    try:
        azurite.wait_until_answering(f"{server.endpoint}/{azurite.ACCOUNT}?comp=list", process, log_path, "Azurite")
        authority = server.authority
        pafs.AzureFileSystem(
            account_name=azurite.ACCOUNT, account_key=azurite.ACCOUNT_KEY, blob_storage_authority=authority,
            dfs_storage_authority=authority, blob_storage_scheme="http", dfs_storage_scheme="http",
        ).create_dir(BUCKET)  # fmt: skip
    except Exception:
        stop()
        raise
    return Store("azure", server.fresh_prefix(), server.properties, AccessLog(log_path, azure_request),
                 f"Azurite {azurite.installed_version()} (node child process)", stop)  # fmt: skip


SETUPS: dict[str, Callable[[Path], Store]] = {"local": start_local, "s3": start_s3, "gcs": start_gcs, "azure": start_azure}


# --------------------------------------------------------------------------- the table


def equality_keys(data: pa.Table, position: DeleteSpec, count: int) -> pa.Array:
    """`count` ids the position DELETE leaves, evenly spaced over them (so over every file)."""
    left = pc.filter(data["id"], pc.invert(pc.is_in(data["id"], value_set=position.deleted_ids))).combine_chunks()
    if count <= 0:
        return left.slice(0, 0)
    return left.take(pa.array(range(0, len(left), max(1, len(left) // count)), pa.int64())).slice(0, count)


def measured(store: Store, call: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """call()'s result, its seconds and, on an emulator, the requests it made."""
    if store.log is not None:
        store.log.reset()
    start = time.perf_counter()
    out = call()
    info: dict[str, Any] = {"seconds": time.perf_counter() - start}
    if store.log is not None:
        info["requests"] = store.log.count()
    return out, info


def build(store: Store, data_dir: Path, slices: list[pa.Table], spec: DeleteSpec, keys: pa.Array) -> tuple[Any, dict[str, Any]]:
    """The table in `store`: created, one append per slice, the DELETE, the blind delete of
    `keys`; each step's seconds and requests."""
    catalog_db = data_dir / f"{store.name}-catalog.db"
    catalog_db.unlink(missing_ok=True)
    catalog = mor.load_catalog(store.warehouse, uri=f"sqlite:///{catalog_db}", create=True, properties=store.properties)
    table, create = measured(store, lambda: catalog.create_table(TABLE_NAME, schema=slices[0].schema))
    info = {"create": create}
    _, info["append"] = measured(store, lambda: [table.append(piece) for piece in slices])
    _, info["delete"] = measured(store, lambda: table.delete(spec.text, mode="merge-on-read"))
    if len(keys):
        _, info["delete_rows"] = measured(store, lambda: table.delete_rows(pa.table({"id": keys})))
    return table, info


def plan(table: Any) -> pa.Table:
    """A cold planning (no cached manifests); its data files as a table (median_timing counts rows)."""
    manifest_cache.clear()
    return pa.table({"file_path": [t.data_file.file_path for t in table.scan().plan_files()]})


def read(table: Any) -> pa.Table:
    """A full read as the first one in a process: no cached manifests or decoded deletes."""
    manifest_cache.clear()
    SHARED.clear()
    return table.scan().to_arrow()


# --------------------------------------------------------------------------- the run


def run(args: argparse.Namespace, result: dict[str, Any]) -> None:
    names = ["local", *(s for s in args.stores.split(",") if s and s != "local")]
    unknown = sorted(set(names) - set(STORES))
    if unknown:
        raise SystemExit(f"unknown stores {unknown}; choose among {', '.join(STORES)}")
    data = generate_events(args.rows, args.seed)
    slices = file_slices(data, args.files)
    position = value_predicate(data, args.fraction)
    keys = equality_keys(data, position, args.equality_keys)
    spec = DeleteSpec(f"{position.text}; delete_rows of {len(keys)} ids", pa.concat_arrays([position.deleted_ids, keys]),
                      "value-range+equality", f"{position.description}, then {len(keys)} other ids by equality delete")  # fmt: skip
    stores: dict[str, Store] = {}
    try:
        for name in names:
            stores[name] = SETUPS[name](args.data_dir)
            log(f"{name}: {stores[name].server} at {stores[name].warehouse}")
        tables: dict[str, Any] = {}
        builds: dict[str, dict[str, Any]] = {}
        checks = []
        for name, store in stores.items():
            tables[name], builds[name] = build(store, args.data_dir, slices, position, keys)
            log(f"{name}: built in {sum(s['seconds'] for s in builds[name].values()):.1f} s")
            checks.append(check_rows(f"mor {name}", read(tables[name]), args.rows, spec))
        tasks = tables["local"].scan().plan_files()
        requests = {
            name: {"plan": store.log.measure(partial(plan, tables[name])), "read": store.log.measure(partial(read, tables[name]))}
            for name, store in stores.items()
            if store.log is not None
        }
        for name, counts in requests.items():
            log(f"{name} requests: plan {counts['plan']['by_kind']}, read {counts['read']['by_kind']}")
        readers: dict[str, Callable[[], pa.Table]] = {}
        for name, table in tables.items():
            readers[f"plan_{name}"] = partial(plan, table)
            readers[f"read_{name}"] = partial(read, table)
        log(f"timing: one warm-up + {args.repeat} rounds of {list(readers)}")
        timings = median_timing(readers, args.repeat)
        med = {name: t["median_seconds"] for name, t in timings.items()}
        result.update({
            "rows": args.rows, "position_deleted_rows": position.count, "equality_deleted_rows": len(keys),
            "predicate": spec.as_json(), "servers": {name: s.server for name, s in stores.items()},
            "tasks": len(tasks), "delete_files_per_task": [len(t.delete_files) for t in tasks],
            "builds": builds, "checks": checks, "requests": requests, "timings": timings,
            "ratios_over_local": {name: {"plan": med[f"plan_{name}"] / med["plan_local"], "read": med[f"read_{name}"] / med["read_local"]}
                                  for name in stores if name != "local"},
        })  # fmt: skip
    finally:
        for store in stores.values():
            store.stop()


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


def print_report(result: dict[str, Any]) -> None:
    print(f"\n{result['rows']:,} rows, {result['tasks']} data files, {result['position_deleted_rows']:,} rows position-deleted, "
          f"{result['equality_deleted_rows']:,} by equality delete; medians of {result['params']['repeat']} rounds (wall s):")  # fmt: skip
    t, ratios, requests = result["timings"], result["ratios_over_local"], result["requests"]
    print(f"  {'store':<7}{'plan s':>8}{'x local':>9}{'read s':>8}{'x local':>9}   requests of one plan | one read")
    for name in result["servers"]:
        r = ratios.get(name, {"plan": 1.0, "read": 1.0})
        counts = requests.get(name)
        shown = f"{_counts(counts['plan']['by_kind'])} | {_counts(counts['read']['by_kind'])}" if counts else "-"
        print(f"  {name:<7}{t[f'plan_{name}']['median_seconds']:>8.3f}{r['plan']:>8.2f}x"
              f"{t[f'read_{name}']['median_seconds']:>8.3f}{r['read']:>8.2f}x   {shown}")  # fmt: skip
    print("requests of one read, by file (objects: requests):")
    for name, counts in requests.items():
        parts = [
            f"{kind} {c['objects']}: {_counts({k: v for k, v in c.items() if k != 'objects'})}"
            for kind, c in counts["read"]["by_file"].items()
        ]
        print(f"  {name:<7}" + "; ".join(parts))
    print(f"load average start {result['load_average_start']}, end {result['load_average_end']}; total {result['duration_seconds']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--fraction", type=float, default=0.1, help="rows the position DELETE removes")
    p.add_argument("--equality-keys", type=int, default=1000, help="ids then deleted by one equality delete (0: none)")
    p.add_argument("--stores", default=",".join(STORES), help="comma-separated; local is always measured, as the baseline")
    p.add_argument("--repeat", type=int, default=5, help="timed rounds after one warm-up")
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "stores.json")
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/mor-bench-stores"))
    args = p.parse_args(argv)
    started = time.perf_counter()
    result = start_result("stores", args)
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
