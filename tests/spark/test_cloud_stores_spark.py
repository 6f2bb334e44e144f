"""Spark on tables in Google Cloud Storage and Azure (the emulators of tests/servers/gcs.py and
tests/servers/azurite.py): the session has no Hadoop filesystem for `gs`/`abfss`, so reads go
through mor's Python source (the executors open the store with the table's FileIO properties);
a write through `format("mor")` and a DML verb land in the store, and mor reads them back."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mor
import mor.spark
from tests.servers.azurite import azurite_server  # noqa: F401  (the session fixture)
from tests.servers.gcs import gcs_server  # noqa: F401  (the session fixture)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string())])


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "cat": [("a", "b")[i % 2] for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("store", ["gcs_server", "azurite_server"])
def test_spark_reads_writes_and_deletes_on_gcs_and_azure(
    spark: Any, request: pytest.FixtureRequest, tmp_path: Path, store: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = request.getfixturevalue(store)
    warehouse, properties = server.fresh_prefix(), server.properties
    uri = f"sqlite:///{tmp_path}/catalog.db"
    catalog = mor.load_catalog(warehouse, uri=uri, properties=properties)
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["cat"])
    table.append(rows(range(0, 40)))
    table.delete("id % 5 = 0")
    with caplog.at_level(logging.INFO, logger="mor.spark"):
        df = mor.spark.read_table(spark, "db.t", warehouse=warehouse, uri=uri, properties=properties)
    assert "through the Python source" in caplog.text
    assert sorted(r["id"] for r in df.collect()) == [i for i in range(40) if i % 5]

    new = spark.createDataFrame(rows(range(40, 50)).to_pandas())
    new.write.format("mor").options(warehouse=warehouse, uri=uri, **properties).mode("append").save("db.t")
    mor.spark.delete(spark, catalog.load_table("db.t"), "id < 10")
    table = catalog.load_table("db.t")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [i for i in range(10, 50) if i % 5 or i >= 40]
    stored = [t.data_file.file_path for t in table.scan().plan_files()]
    assert stored and all(p.startswith(warehouse.split("://")[0] + "://") for p in stored)
