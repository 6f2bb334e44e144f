"""Spark through a REST catalog (issue 24): `format("mor")` reads, appends, creates and
overwrites tables, and distributed DML runs, all with the options `mor.load_catalog` takes for
a REST catalog (`uri`, `token`), against `mor serve` on loopback. The server's own SQL catalog
and pyiceberg's RestCatalog see the same rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from servers.rest import RestServer, running_rest_server

import mor
import mor.spark

TOKEN = "spark-rest-token"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RestServer]:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with running_rest_server(tmp_path / "warehouse", token_file=token_file) as running:
        yield running


def options(server: RestServer) -> dict[str, str]:
    return {"uri": server.url, "token": TOKEN}


def ids_of(df: Any) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


@pytest.mark.cluster
def test_spark_reads_writes_and_deletes_through_the_rest_catalog(spark: Any, server: RestServer) -> None:
    catalog = mor.load_catalog(uri=server.url, token=TOKEN)
    table = catalog.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    table.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    table.delete("id = 2")
    assert ids_of(spark.read.format("mor").options(**options(server)).load("db.t")) == [1, 3]

    new_rows = spark.createDataFrame([(4, "d"), (5, "e")], "id long, v string")
    new_rows.write.format("mor").options(**options(server)).mode("append").save("db.t")
    new_rows.write.format("mor").options(**options(server)).mode("append").save("db.created")  # made on the server first
    assert ids_of(spark.read.format("mor").options(**options(server)).load("db.t")) == [1, 3, 4, 5]
    assert ids_of(spark.read.format("mor").options(**options(server)).load("db.created")) == [4, 5]

    mor.spark.delete(spark, catalog.load_table("db.t"), "id >= 4")
    mor.spark.update(spark, catalog.load_table("db.t"), {"v": "'z'"}, "id = 1")  # Spark SQL: a quoted text
    expected = [{"id": 1, "v": "z"}, {"id": 3, "v": "c"}]
    df = spark.read.format("mor").options(**options(server)).load("db.t")
    assert sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"]) == expected
    direct = mor.load_catalog(server.warehouse).load_table("db.t")  # the SQL catalog the server keeps
    assert sorted(direct.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == expected
    theirs = RestCatalog("py", uri=server.url, token=TOKEN, **{"oauth2-server-uri": f"{server.url}/v1/oauth/tokens"})
    assert sorted(theirs.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 3]


def test_a_wrong_token_in_spark_options_is_a_typed_error(spark: Any, server: RestServer) -> None:
    mor.load_catalog(uri=server.url, token=TOKEN).create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    with pytest.raises(Exception) as raised:
        spark.read.format("mor").option("uri", server.url).option("token", "wrong").load("db.t").collect()
    assert "NotAuthorizedError" in str(raised.value) or "401" in str(raised.value)


def test_a_stream_reads_each_appended_row_once_through_the_rest_catalog(spark: Any, server: RestServer, tmp_path: Path) -> None:
    catalog = mor.load_catalog(uri=server.url, token=TOKEN)
    table = catalog.create_table("db.s", schema=pa.schema([("id", pa.int64())]))
    checkpoint = tmp_path / "checkpoint"

    def run() -> list[int]:
        seen: list[int] = []
        query = (
            spark.readStream.format("mor").options(**options(server)).load("db.s")
            .writeStream.foreachBatch(lambda df, _: seen.extend(r["id"] for r in df.collect()))
            .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
        )  # fmt: skip
        query.awaitTermination()
        return sorted(seen)

    table.append(pa.table({"id": [1, 2]}))
    assert run() == [1, 2]
    table.append(pa.table({"id": [3]}))
    assert run() == [3]


def test_the_mor_in_spark_recipe_serve_prints_reads_the_table(spark: Any, server: RestServer) -> None:
    from mor.server.clients import TOKEN_PLACEHOLDER, client_recipes

    catalog = mor.load_catalog(uri=server.url, token=TOKEN)
    catalog.create_table("db.events", schema=pa.schema([("id", pa.int64())])).append(pa.table({"id": [1, 2, 3]}))
    recipe = client_recipes(server.url, "warehouse", secured=True)["mor in Spark"].replace(TOKEN_PLACEHOLDER, TOKEN)
    scope: dict[str, Any] = {"spark": spark}
    exec(recipe, scope)  # as printed, with the token in its place
    assert ids_of(scope["df"]) == [1, 2, 3]
