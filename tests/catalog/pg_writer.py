"""A writer process of tests/catalog/test_postgres_concurrency.py: tests/concurrency/writer.py's
`run`, with every `mor.load_catalog(warehouse)` in it pointed at the PostgreSQL catalog (and,
for a warehouse in object storage, given the S3 settings).
Run in processes of a multiprocessing pool (spawn), one call after another; returns writer.py's
JSON log lines instead of printing."""

from __future__ import annotations

import contextlib
import functools
import io

import mor


def run_writer(
    uri: str, warehouse: str, worker: int, operations: int, seed: int, mode: str, properties: dict[str, str] | None = None
) -> list[str]:
    """`properties`: file access (the S3 server's), for an s3:// warehouse."""
    import writer  # tests/concurrency, on the path the parent passes to spawned children

    load_catalog = mor.load_catalog
    mor.load_catalog = functools.partial(load_catalog, uri=uri, properties=properties)  # this process, this call
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            writer.run(warehouse, worker, operations, seed, mode)
    finally:
        mor.load_catalog = load_catalog
    return out.getvalue().splitlines()
