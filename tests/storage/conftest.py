"""Tables in Google Cloud Storage and Azure: each store's emulator on loopback
(tests/servers/gcs.py, tests/servers/azurite.py), the catalog a local SQLite file, every table
file an object in the store. `store` parametrizes a test over both; `Store` gives what a test
needs of one: its properties, fresh folders, and pyiceberg's reading of a table there."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from tests.servers.azurite import azurite_server  # noqa: F401  (the session fixture)
from tests.servers.gcs import gcs_server  # noqa: F401  (the session fixture)

# pyiceberg 0.12's PyArrowFileIO puts the account of `abfss://container@account...` into the
# path it hands pyarrow (apache/iceberg-python#2698): Azure tables are read back through its
# FsspecFileIO, on adlfs and the Azure SDK, an implementation independent of mor's.
ADLFS = "adlfs==2026.8.0"


def ensure_adlfs() -> None:
    if importlib.util.find_spec("adlfs") is not None:
        return
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", ADLFS], capture_output=True, text=True)
    if done.returncode != 0 or importlib.util.find_spec("adlfs") is None:
        pytest.fail(f'pyiceberg reads Azure tables through adlfs, which did not install (pip install "{ADLFS}"): {done.stderr[-2000:]}')


@dataclass(frozen=True)
class Store:
    name: str  # "gcs" or "azure"
    properties: dict[str, str]  # mor's (and for GCS pyiceberg's) FileIO properties
    fresh_prefix: Callable[[], str]
    pyiceberg_properties: dict[str, str]
    missing_container_prefix: str  # a folder in a bucket or container that does not exist

    def pyiceberg_rows(self, metadata_location: str, key: str = "id") -> pa.Table:
        """The table's rows as pyiceberg reads them from `metadata_location`. pyiceberg's scan
        refuses equality deletes: with some, the rows are put together here from the files
        pyiceberg lists and reads (`_merge_on_read`)."""
        from pyiceberg.table import StaticTable

        table = StaticTable.from_metadata(metadata_location, properties=self.pyiceberg_properties)
        entries = table.inspect.entries().to_pylist()
        if not any(e["status"] != 2 and e["data_file"]["content"] == 2 for e in entries):
            return table.scan().to_arrow()
        return _merge_on_read(table, [e for e in entries if e["status"] != 2], key)


@pytest.fixture(params=["gcs", "azure"])
def store(request) -> Store:
    if request.param == "gcs":
        gcs = request.getfixturevalue("gcs_server")
        return Store("gcs", gcs.properties, gcs.fresh_prefix, gcs.properties, "gs://mor-no-such-bucket/t")
    azure = request.getfixturevalue("azurite_server")
    ensure_adlfs()
    reader = {"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO", "adls.connection-string": azure.connection_string}
    return Store("azure", azure.properties, azure.fresh_prefix, reader, azure.location("mor-no-such-container", "t"))


@pytest.fixture
def catalog(store: Store, tmp_path: Path):
    import mor

    return mor.load_catalog(store.fresh_prefix(), uri=f"sqlite:///{tmp_path}/catalog.db", properties=store.properties)


def _merge_on_read(table, entries: list[dict], key: str) -> pa.Table:
    """The live rows of the data files among `entries` (live manifest entries, as pyiceberg's
    `inspect.entries()` gives them): a row goes when a position delete of a sequence number at
    least its file's names its position, or an equality delete on `key` of a greater sequence
    number holds its value (the Iceberg spec's rules; partition scoping is left out: the tests'
    keys are unique across partitions)."""
    import pyarrow.parquet as pq

    def read(path: str) -> pa.Table:
        with table.io.new_input(path).open() as f:
            return pq.read_table(f)

    positions: dict[str, list[tuple[int, int]]] = {}  # data file -> (position, sequence number)
    equality: list[tuple[set[object], int]] = []
    for e in entries:
        content, path, seq = e["data_file"]["content"], e["data_file"]["file_path"], e["sequence_number"]
        if content == 1:
            for r in read(path).select(["file_path", "pos"]).to_pylist():
                positions.setdefault(r["file_path"], []).append((r["pos"], seq))
        elif content == 2:
            equality.append((set(read(path).column(key).to_pylist()), seq))
    parts = []
    for e in entries:
        if e["data_file"]["content"] != 0:
            continue
        path, seq = e["data_file"]["file_path"], e["sequence_number"]
        data = read(path)
        gone = {pos for pos, s in positions.get(path, []) if s >= seq}
        keep = [
            i not in gone and not any(v in values for values, s in equality if s > seq) for i, v in enumerate(data.column(key).to_pylist())
        ]
        parts.append(data.filter(pa.array(keep, pa.bool_())))
    return pa.concat_tables(parts)
