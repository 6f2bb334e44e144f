"""No name puts a file outside its table or turns a user's file into a catalog.

Partition field names and values are escaped in file paths as Iceberg Java escapes them
(`URLEncoder`), and every new data and delete file is checked to lie under the table location
(`mor.io.fileio.check_inside`). A warehouse folder of any legal name makes the catalog file
inside it. `mor quickstart` never replaces a table it did not make.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable
from unit_helpers import files_under, live_data_paths, live_delete_entries, local

import mor
from mor.cli import main
from mor.errors import InvalidArgumentError
from mor.format.partition_values import escape_path_part
from mor.io.fileio import check_inside

ESCAPING = "../../../../x"


def every_file(root: Path) -> set[str]:
    return {os.path.join(folder, n) for folder, _, names in os.walk(root) for n in names}


def assert_all_inside(tmp_path: Path, table: mor.Table) -> None:
    """Every file below tmp_path is in the warehouse's catalog or under the table's folder,
    and so is every file the table references."""
    table_root = local(table.location)
    outside = {f for f in every_file(tmp_path) if not f.startswith(table_root + "/") and not f.endswith("catalog.db")}
    assert outside == set()
    referenced = live_data_paths(table) | {e.path for e in live_delete_entries(table)}
    assert referenced and all(os.path.normpath(local(p)).startswith(table_root + "/") for p in referenced)
    assert {local(p) for p in referenced} <= files_under(table.location)


def test_escape_is_java_url_encoding() -> None:
    # java.net.URLEncoder.encode(s, UTF_8) of each, as Iceberg Java's partitionToPath calls it
    assert escape_path_part("a b/é%=?") == "a+b%2F%C3%A9%25%3D%3F"
    assert escape_path_part("Az09.-*_") == "Az09.-*_"
    assert escape_path_part(ESCAPING) == "..%2F..%2F..%2F..%2Fx"


def test_partition_column_named_like_a_path_stays_in_the_table(tmp_path: Path) -> None:
    catalog = mor.load_catalog(tmp_path / "w", create=True)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field(ESCAPING, pa.string())])
    table = catalog.create_table("db.t", schema=schema, partition_by=[ESCAPING])
    table.append(pa.table({"id": [1, 2, 3], ESCAPING: ["a", "../../../../y", None]}, schema=schema))
    table.delete("id = 2")
    assert_all_inside(tmp_path, table)
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 3]
    # pyiceberg finds the files where the manifests say they are
    pyiceberg_rows = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    assert sorted(pyiceberg_rows.column("id").to_pylist()) == [1, 3]


def test_renamed_partition_field_stays_in_the_table(tmp_path: Path) -> None:
    catalog = mor.load_catalog(tmp_path / "w", create=True)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("category", pa.string())])
    table = catalog.create_table("db.t", schema=schema, partition_by=["category"])
    table.update_spec().rename_field("category", ESCAPING).commit()
    table = catalog.load_table("db.t")
    table.append(pa.table({"id": [1, 2], "category": ["a", "b"]}, schema=schema))
    table.delete("id = 1")
    assert_all_inside(tmp_path, table)
    assert table.scan().to_arrow().column("id").to_pylist() == [2]
    pyiceberg_rows = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    assert pyiceberg_rows.column("id").to_pylist() == [2]


def test_check_inside_refuses_a_path_that_leaves_the_table() -> None:
    assert check_inside("file:///w/db.db/t", "file:///w/db.db/t/data/a.parquet") == "file:///w/db.db/t/data/a.parquet"
    assert check_inside("s3://b/w/t/", "s3a://b/w/t/data/x=1/a.parquet")
    for outside in (
        "file:///w/db.db/t/data/../../../x.parquet",
        "file:///w/db.db/t2/data/a.parquet",  # a sibling whose name starts like the table's
        "/w/db.db/t/../t.parquet",
        "s3://b/w/t/data/../../u/a.parquet",
        "s3://other/w/t/data/a.parquet",
    ):
        with pytest.raises(InvalidArgumentError, match="not under the table location"):
            check_inside("file:///w/db.db/t" if not outside.startswith("s3") else "s3://b/w/t", outside)


@pytest.mark.parametrize("folder", ["notes?1", "w%41", "a#b", "sp ace@x:y"])
def test_warehouse_folder_of_any_name_holds_its_catalog(tmp_path: Path, folder: str) -> None:
    victim = tmp_path / folder.split("?")[0].split("#")[0]  # what an unescaped URL would name instead
    if folder != victim.name:
        victim.write_text("the user's notes\n")
    catalog = mor.load_catalog(tmp_path / folder, create=True)
    catalog.create_table("db.t", schema=pa.schema([pa.field("id", pa.int64())])).append(pa.table({"id": [1, 2]}))
    assert (tmp_path / folder / "catalog.db").is_file()
    if folder != victim.name:
        assert victim.read_text() == "the user's notes\n"
    assert mor.load_catalog(tmp_path / folder, create=False).load_table("db.t").scan().count() == 2
    # pyiceberg's SqlCatalog opens the same catalog from the same URL
    uri = mor.load_catalog(tmp_path / folder, create=True).store.engine.url.render_as_string(hide_password=False)
    pyiceberg_catalog = SqlCatalog("default", uri=uri, warehouse=(tmp_path / folder).as_uri())
    assert pyiceberg_catalog.list_tables("db") == [("db", "t")]


def test_quickstart_leaves_an_existing_table_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = mor.load_catalog(tmp_path)
    mine = catalog.create_table("demo.events", schema=pa.schema([pa.field("note", pa.string())]))
    mine.append(pa.table({"note": ["precious"]}))
    before = mine.metadata_location
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    assert "this run uses a new table, demo.events_2" in capsys.readouterr().out
    catalog = mor.load_catalog(tmp_path)
    assert catalog.load_table("demo.events").metadata_location == before
    assert catalog.load_table("demo.events").scan().to_arrow().column("note").to_pylist() == ["precious"]
    assert catalog.load_table("demo.events_2").scan().count() == 1948
