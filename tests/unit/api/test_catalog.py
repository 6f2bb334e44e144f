"""The SQL catalog: pyiceberg's layout, table and namespace verbs, and their errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from unit_helpers import JAVA_FIXTURES, SCHEMA, files_under, local, make_rows, scan_ids

import mor


def _sqlite_rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_catalog_file_has_pyicebergs_layout(catalog: mor.Catalog, warehouse: Path) -> None:
    catalog.create_table("db.t", schema=SCHEMA)
    db = warehouse / "catalog.db"
    assert db.is_file()
    tables = {r[0] for r in _sqlite_rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"iceberg_tables", "iceberg_namespace_properties"} <= tables
    columns = {r[1] for r in _sqlite_rows(db, "PRAGMA table_info(iceberg_tables)")}
    assert {"catalog_name", "table_namespace", "table_name", "metadata_location", "previous_metadata_location"} <= columns
    ns_columns = {r[1] for r in _sqlite_rows(db, "PRAGMA table_info(iceberg_namespace_properties)")}
    assert {"catalog_name", "namespace", "property_key", "property_value"} <= ns_columns


def test_catalog_rows_name_the_current_and_previous_metadata(catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    first = table.metadata_location
    table.append(make_rows([1]))
    rows = _sqlite_rows(
        warehouse / "catalog.db",
        "SELECT catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location FROM iceberg_tables",
    )
    assert rows == [("default", "db", "t", table.metadata_location, first)]
    assert catalog.name == "default"


def test_namespace_is_recorded_like_pyiceberg_does(catalog: mor.Catalog, warehouse: Path) -> None:
    catalog.create_table("db.t", schema=SCHEMA)
    rows = _sqlite_rows(
        warehouse / "catalog.db", "SELECT catalog_name, namespace, property_key, property_value FROM iceberg_namespace_properties"
    )
    assert rows == [("default", "db", "exists", "true")]


def test_table_location_is_under_the_warehouse(catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    assert local(table.location) == str(warehouse.resolve() / "db.db" / "t")
    assert local(table.metadata_location).startswith(local(table.location) + "/metadata/")
    assert Path(local(table.metadata_location)).is_file()


def test_create_load_list_drop(catalog: mor.Catalog) -> None:
    created = catalog.create_table("db.a", schema=SCHEMA)
    catalog.create_table("db.b", schema=SCHEMA, partition_by=["category"])
    created.append(make_rows(range(5)))

    loaded = catalog.load_table("db.a")
    assert loaded.metadata_location == created.metadata_location
    assert loaded.metadata == catalog.load_table("db.a").metadata
    assert scan_ids(loaded) == [0, 1, 2, 3, 4]
    assert catalog.list_tables("db") == ["db.a", "db.b"]
    assert catalog.table_exists("db.a")

    files_before = files_under(created.location)
    catalog.drop_table("db.a")
    assert not catalog.table_exists("db.a")
    assert catalog.list_tables("db") == ["db.b"]
    with pytest.raises(mor.NoSuchTableError):
        catalog.load_table("db.a")
    assert files_under(created.location) == files_before  # dropping leaves the files


def test_namespaces_are_created_on_demand(catalog: mor.Catalog) -> None:
    assert catalog.list_namespaces() == []
    catalog.create_table("sales.orders", schema=SCHEMA)
    catalog.create_table("sales.refunds", schema=SCHEMA)
    catalog.create_table("hr.people", schema=SCHEMA)
    assert catalog.list_namespaces() == ["hr", "sales"]
    assert catalog.list_tables("sales") == ["sales.orders", "sales.refunds"]


def test_explicit_namespaces(catalog: mor.Catalog) -> None:
    catalog.create_namespace("empty")
    assert catalog.list_namespaces() == ["empty"]
    assert catalog.list_tables("empty") == []
    catalog.drop_namespace("empty")
    assert catalog.list_namespaces() == []


def test_creating_an_existing_namespace_raises_a_mor_error(catalog: mor.Catalog) -> None:
    catalog.create_namespace("db")
    with pytest.raises(mor.MorError):
        catalog.create_namespace("db")
    assert catalog.list_namespaces() == ["db"]


def test_non_empty_namespace_cannot_be_dropped(catalog: mor.Catalog) -> None:
    catalog.create_table("db.t", schema=SCHEMA)
    with pytest.raises(mor.NamespaceNotEmptyError):
        catalog.drop_namespace("db")
    assert catalog.list_tables("db") == ["db.t"]


def test_missing_namespace_errors(catalog: mor.Catalog) -> None:
    with pytest.raises(mor.NoSuchNamespaceError):
        catalog.list_tables("nope")
    with pytest.raises(mor.NoSuchNamespaceError):
        catalog.drop_namespace("nope")


def test_missing_table_errors(catalog: mor.Catalog) -> None:
    catalog.create_namespace("db")
    with pytest.raises(mor.NoSuchTableError):
        catalog.load_table("db.nope")
    with pytest.raises(mor.NoSuchTableError):
        catalog.drop_table("db.nope")
    with pytest.raises(mor.NoSuchTableError):
        catalog.load_table("no_namespace_given")


def test_creating_an_existing_table_fails_and_changes_nothing(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows([1, 2]))
    files = files_under(table.location)
    with pytest.raises(mor.TableAlreadyExistsError):
        catalog.create_table("db.t", schema=SCHEMA)
    assert catalog.load_table("db.t").metadata_location == table.metadata_location
    assert files_under(table.location) == files  # no stray metadata file either


def test_register_table_adopts_existing_metadata(catalog: mor.Catalog) -> None:
    original = catalog.create_table("db.t", schema=SCHEMA)
    original.append(make_rows(range(3)))
    original.delete("id = 1")
    registered = catalog.register_table("other.copy", original.metadata_location, allow_shared=True)  # two names, one set of files
    assert registered.metadata_location == original.metadata_location
    assert catalog.list_namespaces() == ["db", "other"]
    assert scan_ids(catalog.load_table("other.copy")) == [0, 2]


def test_register_table_under_a_taken_name_fails(catalog: mor.Catalog) -> None:
    original = catalog.create_table("db.t", schema=SCHEMA)
    catalog.create_table("db.u", schema=SCHEMA)
    with pytest.raises(mor.TableAlreadyExistsError):
        catalog.register_table("db.u", original.metadata_location)
    assert catalog.load_table("db.u").metadata_location != original.metadata_location


def test_register_refuses_metadata_of_an_unknown_format_version(catalog: mor.Catalog, tmp_path: Path) -> None:
    v3 = JAVA_FIXTURES / "db" / "v3_dv" / "metadata" / "v6.metadata.json"
    v4 = tmp_path / "v4.metadata.json"
    v4.write_text(v3.read_text().replace('"format-version":3', '"format-version":4'))
    assert '"format-version":4' in v4.read_text()
    with pytest.raises(mor.UnsupportedFeatureError):
        catalog.register_table("db.v4", str(v4))
    assert not catalog.table_exists("db.v4")


def test_register_refuses_a_missing_file(catalog: mor.Catalog, tmp_path: Path) -> None:
    with pytest.raises(mor.MetadataFileNotFoundError):
        catalog.register_table("db.ghost", str(tmp_path / "nope.metadata.json"))
    assert not catalog.table_exists("db.ghost")


def test_register_reads_java_v2_metadata(catalog: mor.Catalog) -> None:
    v2 = JAVA_FIXTURES / "db" / "cow_v2" / "metadata" / "v6.metadata.json"
    table = catalog.register_table("java.cow", str(v2))
    assert table.current_snapshot() is not None
    assert table.current_snapshot().operation == "delete"  # type: ignore[union-attr]
    assert catalog.list_tables("java") == ["java.cow"]


def test_catalog_is_shared_by_two_catalog_objects(warehouse: Path) -> None:
    first = mor.load_catalog(warehouse)
    table = first.create_table("db.t", schema=SCHEMA)
    table.append(make_rows([7]))
    second = mor.load_catalog(warehouse)
    assert second.list_tables("db") == ["db.t"]
    assert scan_ids(second.load_table("db.t")) == [7]


def test_catalog_with_another_name_sees_other_tables(warehouse: Path) -> None:
    mor.load_catalog(warehouse).create_table("db.t", schema=SCHEMA)
    other = mor.load_catalog(warehouse, name="other")
    assert other.list_namespaces() == []
    assert not other.table_exists("db.t")


def test_static_table_reads_without_a_catalog(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(4)))
    table.delete("id = 2")
    static = mor.StaticTable.from_metadata(table.metadata_location)
    assert scan_ids(static) == [0, 1, 3]
    with pytest.raises(mor.MorError):
        static.append(make_rows([9]))
