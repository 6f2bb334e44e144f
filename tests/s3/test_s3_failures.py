"""Object storage that fails: unreachable (a port nobody listens on, as a client sees a server
that is down). Every read and write raises StorageError naming the file, never a bare pyarrow
OSError or a CorruptMetadataError (the files are fine: the storage is not there), and the table
is left as it was."""

from __future__ import annotations

import socket
from pathlib import Path

import pyarrow as pa
import pytest

import mor

SCHEMA = pa.schema([("id", pa.int64()), ("n", pa.int64())])


def rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "n": [i * 10 for i in ids]}, schema=SCHEMA)


def dead_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed again: nothing listens there


@pytest.fixture
def table_and_dead_catalog(s3_server, s3_warehouse: str, tmp_path: Path):
    uri = f"sqlite:///{tmp_path}/catalog.db"
    catalog = mor.load_catalog(s3_warehouse, uri=uri, properties=s3_server.properties)
    table = catalog.create_table("db.t", SCHEMA)
    table.append(rows(range(10)))
    table.delete("id < 3")
    dead = mor.load_catalog(s3_warehouse, uri=uri, properties={**s3_server.properties, "s3.endpoint": dead_endpoint()})
    return catalog, dead


def test_loading_a_table_from_unreachable_storage_is_a_storage_error(table_and_dead_catalog) -> None:
    catalog, dead = table_and_dead_catalog
    with pytest.raises(mor.StorageError, match=r"cannot read table metadata file s3://.*\.metadata\.json") as error:
        dead.load_table("db.t")
    assert not isinstance(error.value, mor.CorruptMetadataError)


def test_scan_and_writes_on_unreachable_storage_are_storage_errors_and_change_nothing(table_and_dead_catalog) -> None:
    catalog, dead = table_and_dead_catalog
    live = catalog.load_table("db.t")
    cut_off = catalog.load_table("db.t")  # loaded while the storage answered, then lost it
    cut_off.io = dead.io
    with pytest.raises(mor.StorageError, match="cannot read manifest list s3://"):
        cut_off.scan().to_arrow()

    writer = catalog.load_table("db.t")
    writer.io = dead.io
    before = live.metadata_location
    with pytest.raises(mor.StorageError, match=r"cannot write s3://.*\.parquet"):
        writer.append(rows(range(10, 20)))
    with pytest.raises(mor.StorageError, match="cannot read"):
        writer.delete("id = 5")
    assert catalog.load_table("db.t").metadata_location == before
    assert sorted(catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == list(range(3, 10))


def test_creating_a_table_in_unreachable_storage_is_a_storage_error(s3_server, tmp_path: Path) -> None:
    properties = {**s3_server.properties, "s3.endpoint": dead_endpoint()}
    catalog = mor.load_catalog(s3_server.fresh_prefix(), uri=f"sqlite:///{tmp_path}/c.db", properties=properties)
    with pytest.raises(mor.StorageError, match=r"cannot write s3://.*\.metadata\.json"):
        catalog.create_table("db.t", SCHEMA)
    assert not catalog.table_exists("db.t")
