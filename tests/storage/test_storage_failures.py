"""GCS and Azure storage that refuses: a bucket or container that does not exist, and (Azure;
the GCS emulator checks no credentials) a wrong account key. Every read and write raises
StorageError naming the file, never a bare pyarrow OSError or a CorruptMetadataError (the
files are fine, or were never there to be damaged: the storage is misconfigured), and the
table is left as it was."""

from __future__ import annotations

import socket
from pathlib import Path

import pyarrow as pa
import pytest

import mor
from mor.errors import MetadataFileNotFoundError
from mor.io.fileio import FileIO

WRONG_KEY = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ=="  # base64, as keys are
SCHEMA = pa.schema([("id", pa.int64()), ("n", pa.int64())])


def rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "n": [i * 10 for i in ids]}, schema=SCHEMA)


def test_creating_a_table_in_a_missing_bucket_or_container_is_a_storage_error(store, tmp_path: Path) -> None:
    catalog = mor.load_catalog(store.missing_container_prefix, uri=f"sqlite:///{tmp_path}/c.db", properties=store.properties)
    with pytest.raises(mor.StorageError, match=r"cannot write \S+://\S+\.metadata\.json"):
        catalog.create_table("db.t", SCHEMA)
    assert not catalog.table_exists("db.t")


def test_reading_from_a_missing_bucket_or_container_is_a_storage_error(store) -> None:
    """A missing object whose bucket or container is missing too: misconfiguration, not a
    damaged table."""
    location = f"{store.missing_container_prefix}/metadata/00001-x.metadata.json"
    with pytest.raises(mor.StorageError, match=r"cannot read table metadata file \S+00001-x\.metadata\.json: .*does not exist") as e:
        mor.StaticTable.from_metadata(location, properties=store.properties)
    assert not isinstance(e.value, (mor.CorruptMetadataError, MetadataFileNotFoundError))
    # A missing file in a bucket that is there stays what it was: no table there.
    present = f"{store.fresh_prefix()}/metadata/00001-x.metadata.json"
    with pytest.raises(MetadataFileNotFoundError, match="no table metadata file at"):
        mor.StaticTable.from_metadata(present, properties=store.properties)


def test_a_wrong_azure_key_is_a_storage_error_and_changes_nothing(azurite_server, tmp_path: Path) -> None:
    """(The GCS emulator accepts any credentials: Azure alone is refused by key.)"""
    properties = azurite_server.properties
    catalog = mor.load_catalog(azurite_server.fresh_prefix(), uri=f"sqlite:///{tmp_path}/c.db", properties=properties)
    wrong_key = {**properties, "adls.account-key": WRONG_KEY}
    table = catalog.create_table("db.t", SCHEMA)
    table.append(rows(range(10)))
    table.delete("id < 3")
    before = table.metadata_location
    refused = FileIO(wrong_key)

    with pytest.raises(mor.StorageError, match=r"cannot read table metadata file abfss://\S+\.metadata\.json") as e:
        mor.StaticTable.from_metadata(before, properties=wrong_key)
    assert not isinstance(e.value, mor.CorruptMetadataError)

    reader = catalog.load_table("db.t")
    reader.io = refused
    with pytest.raises(mor.StorageError, match=r"cannot read manifest list abfss://"):
        reader.scan().to_arrow()

    writer = catalog.load_table("db.t")
    writer.io = refused
    with pytest.raises(mor.StorageError, match=r"cannot write abfss://\S+\.parquet"):
        writer.append(rows(range(10, 20)))
    with pytest.raises(mor.StorageError, match="cannot read"):
        writer.delete("id = 5")
    assert catalog.load_table("db.t").metadata_location == before
    assert sorted(catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == list(range(3, 10))


def test_unreachable_gcs_is_a_storage_error(gcs_server, tmp_path: Path) -> None:
    """A port nobody listens on, as a client sees a server that is down; the retry limit only
    bounds how long Google's client retries before it reports the failure."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # closed again: nothing listens there
    properties = {**gcs_server.properties, "gcs.service.host": dead, "gcs.retry-time-limit": "0.5"}
    catalog = mor.load_catalog(gcs_server.fresh_prefix(), uri=f"sqlite:///{tmp_path}/c.db", properties=properties)
    with pytest.raises(mor.StorageError, match=r"cannot write gs://\S+\.metadata\.json"):
        catalog.create_table("db.t", SCHEMA)
    with pytest.raises(mor.StorageError, match=r"cannot read table metadata file gs://\S+: .*UNAVAILABLE"):
        mor.StaticTable.from_metadata(f"{gcs_server.fresh_prefix()}/metadata/00001-x.metadata.json", properties=properties)
