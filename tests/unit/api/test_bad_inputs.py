"""Bad inputs, tried as a new user would: each gets a typed error that names what is wrong (the
column, term, property, name or argument), and the table and catalog stay exactly as they were.

spec/bad-inputs.md lists these cases with the message each gets.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.schema import Schema
from unit_helpers import SCHEMA, files_under, local, make_rows, table_rows

import mor
from mor.cli import main
from mor.errors import StorageError  # not exported by mor yet

ROWS = make_rows([1, 2, 100])


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    t.append(make_rows(range(30)))
    t.delete("id = 3")
    return t


@contextmanager
def unchanged(catalog: mor.Catalog, table: mor.Table) -> Iterator[None]:
    """The operation inside fails and leaves the table as it was: same metadata file, current
    snapshot, rows and files, seen through a fresh load too."""
    location, snapshot = table.metadata_location, table.current_snapshot()
    rows, files = table_rows(table), files_under(table.location)
    yield
    fresh = catalog.load_table(table.identifier)
    for t in (table, fresh):
        assert t.metadata_location == location
        assert t.current_snapshot() == snapshot
    assert table_rows(fresh) == rows
    assert files_under(table.location) == files


@contextmanager
def catalog_unchanged(catalog: mor.Catalog, warehouse: Path) -> Iterator[None]:
    """Nothing was created: no table, no namespace, no file under the warehouse."""
    namespaces = catalog.list_namespaces()
    tables = {ns: catalog.list_tables(ns) for ns in namespaces}
    files = _all_files(warehouse)
    yield
    assert catalog.list_namespaces() == namespaces
    assert {ns: catalog.list_tables(ns) for ns in namespaces} == tables
    assert _all_files(warehouse) == files


def _all_files(folder: Path) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(folder) for n in names if n != "catalog.db"}


def raises(error: type[Exception], *fragments: str) -> Callable[[Callable[[], Any]], None]:
    """Run `call`: it raises `error` (exactly that class or a subclass) whose message holds
    every fragment."""

    def check(call: Callable[[], Any]) -> None:
        with pytest.raises(error) as info:
            call()
        for fragment in fragments:
            assert fragment in str(info.value), (fragment, str(info.value))

    return check


# -- create_table: partitioning, schema, names, properties, location ------------------------

BAD_CREATES = [
    pytest.param({"partition_by": ["nope"]}, mor.InvalidArgumentError, ["'nope'", "no column"], id="partition-unknown-column"),
    pytest.param(
        {"partition_by": ["bucket(16, nope)"]}, mor.InvalidArgumentError, ["bucket(16, nope)", "'nope'"], id="bucket-unknown-column"
    ),
    pytest.param({"partition_by": ["bucket(x, id)"]}, mor.InvalidArgumentError, ["bucket(x, id)", "'x'"], id="bucket-count-not-a-number"),
    pytest.param({"partition_by": ["bucket(0, id)"]}, mor.InvalidArgumentError, ["bucket(0, id)", "at least 1"], id="bucket-zero"),
    pytest.param({"partition_by": ["truncate(0, name)"]}, mor.InvalidArgumentError, ["truncate(0, name)"], id="truncate-zero"),
    pytest.param({"partition_by": ["bucket(id)"]}, mor.InvalidArgumentError, ["bucket(id)", "bucket(N, col)"], id="bucket-without-count"),
    pytest.param({"partition_by": ["day(16, id)"]}, mor.InvalidArgumentError, ["day(16, id)"], id="day-with-a-number"),
    pytest.param({"partition_by": ["foo(id)"]}, mor.InvalidArgumentError, ["foo(id)", "unknown transform 'foo'"], id="unknown-transform"),
    pytest.param({"partition_by": ["day(id)"]}, mor.InvalidArgumentError, ["day(id)", "'id'", "long"], id="transform-wrong-type"),
    pytest.param({"partition_by": ["category", "category"]}, mor.InvalidArgumentError, ["'category'", "repeats"], id="partition-repeated"),
    pytest.param({"partition_by": "category"}, mor.InvalidArgumentError, ["partition_by", "list"], id="partition-by-a-string"),
    pytest.param({"partition_by": [1]}, mor.InvalidArgumentError, ["partition term 1"], id="partition-term-not-a-string"),
    pytest.param({"partition_by": [""]}, mor.InvalidArgumentError, ["partition term ''"], id="partition-term-empty"),
    pytest.param({"partition_by": ["bucket(16, id"]}, mor.InvalidArgumentError, ["bucket(16, id"], id="partition-term-unbalanced"),
    pytest.param({"schema": None}, mor.InvalidArgumentError, ["schema", "NoneType"], id="schema-none"),
    pytest.param({"schema": {"id": "long"}}, mor.InvalidArgumentError, ["schema", "dict"], id="schema-a-dict"),
    pytest.param({"schema": pa.schema([])}, mor.SchemaMismatchError, ["at least one column"], id="schema-empty"),
    pytest.param({"schema": Schema()}, mor.SchemaMismatchError, ["at least one column"], id="iceberg-schema-empty"),
    pytest.param(
        {"schema": pa.schema([("a", pa.int64()), ("a", pa.string())])},
        mor.SchemaMismatchError,
        ["'a'", "twice"],
        id="schema-duplicate-column",
    ),
    pytest.param(
        {"schema": pa.schema([("s", pa.struct([("x", pa.int32()), ("x", pa.int32())]))])},
        mor.SchemaMismatchError,
        ["'s.x'", "twice"],
        id="schema-duplicate-nested",
    ),
    pytest.param({"schema": pa.schema([("", pa.int64())])}, mor.SchemaMismatchError, ["empty"], id="schema-empty-column-name"),
    pytest.param({"schema": pa.schema([("a", pa.uint64())])}, mor.SchemaMismatchError, ["uint64"], id="schema-unsupported-type"),
    pytest.param(
        {"properties": {"commit.retry.num-retries": 3}},
        mor.InvalidArgumentError,
        ["commit.retry.num-retries", "string"],
        id="property-not-a-string",
    ),
    pytest.param(
        {"properties": {"write.delete.mode": "foo"}},
        mor.InvalidArgumentError,
        ["write.delete.mode", "'foo'", "merge-on-read"],
        id="property-unknown-mode",
    ),
    pytest.param(
        {"properties": {"write.update.isolation-level": "chaos"}},
        mor.InvalidArgumentError,
        ["write.update.isolation-level", "'chaos'"],
        id="property-unknown-isolation",
    ),
    pytest.param(
        {"properties": {"commit.retry.total-timeout-ms": "soon"}},
        mor.InvalidArgumentError,
        ["commit.retry.total-timeout-ms", "'soon'"],
        id="property-not-a-number",
    ),
    pytest.param(
        {"properties": [("write.delete.mode", "copy-on-write")]}, mor.InvalidArgumentError, ["properties", "list"], id="properties-a-list"
    ),
    pytest.param({"location": "s3://bucket/t"}, mor.UnsupportedFeatureError, ["s3://bucket/t"], id="location-object-store"),
    pytest.param({"location": "file:relative/t"}, mor.InvalidArgumentError, ["file:relative/t", "absolute"], id="location-relative-uri"),
    pytest.param({"location": 5}, mor.InvalidArgumentError, ["location"], id="location-not-a-string"),
]


@pytest.mark.parametrize(("args", "error", "fragments"), BAD_CREATES)
def test_create_table_refuses_bad_arguments(
    catalog: mor.Catalog, warehouse: Path, args: dict[str, Any], error: type[Exception], fragments: list[str]
) -> None:
    catalog.create_table("db.existing", schema=SCHEMA)
    with catalog_unchanged(catalog, warehouse):
        raises(error, *fragments)(lambda: catalog.create_table("db.new", **{"schema": SCHEMA, **args}))
    assert not catalog.table_exists("db.new")


BAD_NAMES = [
    pytest.param("", "''", id="empty"),
    pytest.param("events", "'events'", id="no-namespace"),
    pytest.param("db..events", "'db..events'", id="empty-level"),
    pytest.param("db.", "'db.'", id="no-table-name"),
    pytest.param(".events", "'.events'", id="no-namespace-name"),
    pytest.param("db.a/b", "'/'", id="slash"),
    pytest.param("../x.y", "'../x.y'", id="path-escape"),
    pytest.param("db.a\\b", "'\\\\'", id="backslash"),
    pytest.param("db.a\nb", "'\\n'", id="newline"),
    pytest.param("db." + "x" * 256, "256 bytes", id="too-long"),
    pytest.param("n" * 253 + ".t", "253 bytes", id="namespace-too-long"),
    pytest.param(None, "NoneType", id="none"),
    pytest.param(5, "int", id="int"),
]


@pytest.mark.parametrize(("name", "fragment"), BAD_NAMES)
def test_bad_table_names_are_refused_on_create(catalog: mor.Catalog, warehouse: Path, name: Any, fragment: str) -> None:
    catalog.create_table("db.existing", schema=SCHEMA)
    with catalog_unchanged(catalog, warehouse):
        raises(mor.InvalidArgumentError, fragment)(lambda: catalog.create_table(name, schema=SCHEMA))


def test_a_malformed_name_names_no_table(catalog: mor.Catalog, table: mor.Table) -> None:
    """Looking up a string that is not 'namespace.table' finds no table, and says why; a name
    that is not a string at all is a bad argument."""
    with unchanged(catalog, table):
        raises(mor.NoSuchTableError, "'t'", "namespace.table")(lambda: catalog.load_table("t"))
        raises(mor.NoSuchTableError, "'db..t'")(lambda: catalog.drop_table("db..t"))
        assert not catalog.table_exists("t")
        raises(mor.InvalidArgumentError, "NoneType")(lambda: catalog.load_table(None))  # type: ignore[arg-type]
        raises(mor.InvalidArgumentError, "'t'")(lambda: catalog.register_table("t", table.metadata_location))
        raises(mor.InvalidArgumentError, "metadata_location")(lambda: catalog.register_table("db.r", None))  # type: ignore[arg-type]
        raises(mor.InvalidArgumentError, "int")(lambda: catalog.list_tables(5))  # type: ignore[arg-type]


def test_multi_level_namespaces_and_spaces_are_fine(catalog: mor.Catalog) -> None:
    """Not everything unusual is wrong: Iceberg namespaces have levels, names may hold spaces."""
    catalog.create_table("a.b.events", schema=SCHEMA).append(make_rows([1]))
    catalog.create_table("db.my events", schema=SCHEMA)
    assert catalog.list_tables("a.b") == ["a.b.events"]
    assert catalog.load_table("a.b.events").scan().count() == 1
    assert catalog.table_exists("db.my events")


@pytest.mark.parametrize(
    ("namespace", "properties", "error", "fragment"),
    [
        pytest.param("", None, mor.InvalidArgumentError, "''", id="empty"),
        pytest.param("a..b", None, mor.InvalidArgumentError, "'a..b'", id="empty-level"),
        pytest.param("a/b", None, mor.InvalidArgumentError, "'/'", id="slash"),
        pytest.param(3, None, mor.InvalidArgumentError, "int", id="not-a-string"),
        pytest.param("ok", {"owner": 1}, mor.InvalidArgumentError, "'owner'", id="property-not-a-string"),
        pytest.param("db", None, mor.NamespaceAlreadyExistsError, "'db'", id="exists"),
    ],
)
def test_bad_namespaces_are_refused(
    catalog: mor.Catalog, warehouse: Path, namespace: Any, properties: Any, error: type[Exception], fragment: str
) -> None:
    catalog.create_namespace("db")
    with catalog_unchanged(catalog, warehouse):
        raises(error, fragment)(lambda: catalog.create_namespace(namespace, properties))


def test_a_relative_location_becomes_absolute(catalog: mor.Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    table = catalog.create_table("db.t", schema=SCHEMA, location="elsewhere/t")
    assert table.location == "file://" + str(tmp_path / "elsewhere" / "t")
    monkeypatch.chdir("/")
    table.append(make_rows([1]))
    assert catalog.load_table("db.t").scan().count() == 1


def test_a_location_that_cannot_be_written_is_a_storage_error(catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    with catalog_unchanged(catalog, warehouse):
        raises(StorageError, str(a_file))(lambda: catalog.create_table("db.t", schema=SCHEMA, location=str(a_file)))
    assert isinstance(StorageError("x"), OSError)  # code that catches OSError still does
    assert list(tmp_path.glob("a-file*")) == [a_file]  # no temporary file left behind


# -- table properties ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        pytest.param("write.delete.mode", "foo", "merge-on-read, copy-on-write", id="delete-mode"),
        pytest.param("write.update.mode", "Merge-On-Read", "merge-on-read", id="update-mode-case"),
        pytest.param("write.merge.mode", "", "merge-on-read", id="merge-mode-empty"),
        pytest.param("write.delete.isolation-level", "chaos", "serializable, snapshot", id="isolation-level"),
        pytest.param("commit.retry.num-retries", "abc", "whole number", id="retries-not-a-number"),
        pytest.param("commit.retry.num-retries", "-1", ">= 0", id="retries-negative"),
        pytest.param("commit.retry.min-wait-ms", "1.5", "whole number", id="wait-not-whole"),
        pytest.param("mor.dml.replan.num-retries", "many", "whole number", id="replan-retries"),
        pytest.param("write.parquet.row-group-limit", "0", ">= 1", id="row-group-limit-zero"),
        pytest.param("write.parquet.compression-codec", "lzo", "zstd", id="codec-unknown-to-pyarrow"),
        pytest.param("write.metadata.previous-versions-max", "ten", "whole number", id="previous-versions"),
        pytest.param("write.delete.mode", 1, "string", id="not-a-string"),
    ],
)
def test_set_properties_refuses_values_mor_cannot_act_on(
    catalog: mor.Catalog, table: mor.Table, name: str, value: Any, fragment: str
) -> None:
    with unchanged(catalog, table):
        raises(mor.InvalidArgumentError, name, fragment)(lambda: table.set_properties(**{name: value}))
    table.delete("id = 1")  # the table still works


def test_good_and_unknown_properties_are_kept(table: mor.Table) -> None:
    table.set_properties(
        **{
            "write.delete.mode": "copy-on-write",
            "write.delete.isolation-level": "SNAPSHOT",  # levels are read case-insensitively
            "commit.retry.num-retries": "3",
            "write.parquet.compression-codec": "ZSTD",
            "some.other.engine.setting": "anything",
        }
    )
    assert table.properties["some.other.engine.setting"] == "anything"
    table.delete("id = 1")
    assert table.current_snapshot().operation in ("delete", "overwrite")  # type: ignore[union-attr]


# -- scan: columns and time travel ---------------------------------------------------------------

BAD_SCANS = [
    pytest.param({"columns": ["id", "nope"]}, mor.InvalidFilterError, ["'nope'"], id="unknown-column"),
    pytest.param({"columns": ["ID"]}, mor.InvalidFilterError, ["'ID'"], id="wrong-case"),
    pytest.param({"columns": ["id", "id"]}, mor.InvalidFilterError, ["'id'", "twice"], id="duplicate-column"),
    pytest.param({"columns": ["id", 1]}, mor.InvalidFilterError, ["[1]", "strings"], id="column-not-a-string"),
    pytest.param({"columns": "id"}, mor.InvalidFilterError, ["list", "'id'"], id="columns-a-string"),
    pytest.param({"columns": {"id", "name"}}, mor.InvalidFilterError, ["list", "set"], id="columns-a-set"),
    pytest.param({"columns": 5}, mor.InvalidFilterError, ["list", "int"], id="columns-an-int"),
    pytest.param({"snapshot_id": 12345}, mor.NoSuchSnapshotError, ["12345"], id="unknown-snapshot"),
    pytest.param({"snapshot_id": "12345"}, mor.InvalidArgumentError, ["snapshot_id", "str"], id="snapshot-id-a-string"),
    pytest.param({"snapshot_id": 1.5}, mor.InvalidArgumentError, ["snapshot_id", "float"], id="snapshot-id-a-float"),
    pytest.param({"snapshot_id": True}, mor.InvalidArgumentError, ["snapshot_id", "bool"], id="snapshot-id-a-bool"),
    pytest.param(
        {"as_of": dt.datetime(2000, 1, 1)}, mor.NoSuchSnapshotError, ["2000-01-01", "first snapshot"], id="as-of-before-the-first"
    ),
    pytest.param({"as_of": 5}, mor.NoSuchSnapshotError, ["first snapshot"], id="as-of-ms-before-the-first"),
    pytest.param({"as_of": "2000-01-01"}, mor.NoSuchSnapshotError, ["2000-01-01", "first snapshot"], id="as-of-text-before-the-first"),
    pytest.param(
        {"as_of": "last tuesday"},
        mor.InvalidArgumentError,
        ["as_of", "not a point in time", "current_timestamp - interval 1 hour"],
        id="as-of-not-a-time",
    ),
    pytest.param({"as_of": dt.date(2000, 1, 1)}, mor.NoSuchSnapshotError, ["2000-01-01"], id="as-of-a-date-before-the-first"),
    pytest.param({"as_of": 1.7e12}, mor.InvalidArgumentError, ["as_of", "float"], id="as-of-a-float"),
    pytest.param({"as_of": 1, "snapshot_id": 1}, mor.InvalidArgumentError, ["not both"], id="both"),
]


@pytest.mark.parametrize(("args", "error", "fragments"), BAD_SCANS)
def test_scan_refuses_bad_arguments(
    catalog: mor.Catalog, table: mor.Table, args: dict[str, Any], error: type[Exception], fragments: list[str]
) -> None:
    with unchanged(catalog, table):
        raises(error, *fragments)(lambda: table.scan(**args).to_arrow())


def test_scan_arguments_that_are_fine(table: mor.Table) -> None:
    assert table.scan(columns=[]).to_arrow().num_rows == 29  # no columns: rows still count
    assert table.scan(columns=("name", "id")).to_arrow().column_names == ["id", "name"]
    first = table.snapshots()[0]
    assert table.scan(snapshot_id=first.snapshot_id).count() == 30
    assert table.scan(as_of=first.timestamp_ms).count() == 30
    assert table.scan(as_of=dt.datetime(2100, 1, 1)).count() == 29  # the future: the current snapshot


# -- DML arguments -------------------------------------------------------------------------------

BAD_DML = [
    # UPDATE ... SET
    pytest.param(lambda t: t.update("name = 'x'", where="id = 1"), mor.InvalidArgumentError, ["dict", "str"], id="update-set-a-string"),
    pytest.param(lambda t: t.update([("name", "x")], where="id = 1"), mor.InvalidArgumentError, ["dict", "list"], id="update-set-a-list"),
    pytest.param(lambda t: t.update({}, where="id = 1"), mor.InvalidArgumentError, ["at least one column"], id="update-set-empty"),
    pytest.param(lambda t: t.update({1: "'x'"}, where="id = 1"), mor.InvalidArgumentError, ["[1]"], id="update-set-column-not-a-string"),
    pytest.param(lambda t: t.update({"nope": 1}, where="id = 1"), mor.SchemaMismatchError, ["'nope'"], id="update-unknown-column"),
    pytest.param(lambda t: t.update({"Name": "'x'"}, where="id = 1"), mor.SchemaMismatchError, ["'Name'"], id="update-wrong-case"),
    pytest.param(
        lambda t: t.update({"id": "'x'"}, where="id = 1"), mor.SchemaMismatchError, ["'x'", "int64"], id="update-value-wrong-type"
    ),
    pytest.param(lambda t: t.update({"id": 2**70}, where="id = 1"), mor.SchemaMismatchError, ["int64"], id="update-value-overflows"),
    pytest.param(
        lambda t: t.update({"id": pc.field("name")}, where="id = 1"),
        mor.SchemaMismatchError,
        ["'id'", "string"],
        id="update-expression-wrong-type",
    ),
    pytest.param(
        lambda t: t.update({"name": pc.field("nope")}, where="id = 1"),
        mor.SchemaMismatchError,
        ["'nope'", "name"],
        id="update-expression-unknown-column",
    ),
    pytest.param(lambda t: t.update({"id": None}, where="id = 1"), mor.SchemaMismatchError, ["'id'", "null"], id="update-required-to-null"),
    pytest.param(
        lambda t: t.update({"name": "'x'"}, where="id = 1", mode="fast"), mor.InvalidArgumentError, ["'fast'"], id="update-unknown-mode"
    ),
    # UPSERT ... ON
    pytest.param(lambda t: t.upsert(ROWS, on="id"), mor.InvalidArgumentError, ["'id'", "list"], id="upsert-on-a-string"),
    pytest.param(lambda t: t.upsert(ROWS, on=[]), mor.InvalidArgumentError, ["non-empty"], id="upsert-on-empty"),
    pytest.param(lambda t: t.upsert(ROWS, on=[1]), mor.InvalidArgumentError, ["[1]"], id="upsert-on-not-a-string"),
    pytest.param(lambda t: t.upsert(ROWS, on=["nope"]), mor.SchemaMismatchError, ["'nope'"], id="upsert-on-unknown-column"),
    pytest.param(lambda t: t.upsert(ROWS, on=["id", "id"]), mor.InvalidArgumentError, ["repeat", "'id'"], id="upsert-on-repeated"),
    pytest.param(lambda t: t.upsert(ROWS, on=["value"]), mor.SchemaMismatchError, ["'value'", "double"], id="upsert-on-a-double"),
    pytest.param(lambda t: t.upsert({"id": [1]}, on=["id"]), mor.SchemaMismatchError, ["pyarrow Table", "dict"], id="upsert-rows-a-dict"),
    pytest.param(
        lambda t: t.upsert(ROWS.to_pylist(), on=["id"]),
        mor.SchemaMismatchError,
        ["RecordBatches", "dict"],
        id="upsert-rows-a-list-of-dicts",
    ),
    pytest.param(
        lambda t: t.upsert(ROWS.drop_columns(["name"]), on=["id"]),
        mor.SchemaMismatchError,
        ["missing ['name']"],
        id="upsert-rows-lack-a-column",
    ),
    pytest.param(lambda t: t.upsert(make_rows([1, 1]), on=["id"]), mor.DuplicateKeyError, ["['id']"], id="upsert-repeated-key"),
    pytest.param(
        lambda t: t.upsert(ROWS, on=["id"], strategy="magic"), mor.InvalidArgumentError, ["'magic'"], id="upsert-unknown-strategy"
    ),
    # MERGE
    pytest.param(
        lambda t: t.merge(ROWS, on=["nope"], when_matched_update="*"), mor.SchemaMismatchError, ["'nope'"], id="merge-on-unknown-column"
    ),
    pytest.param(lambda t: t.merge(ROWS, on=[1], when_matched_update="*"), mor.InvalidArgumentError, ["[1]"], id="merge-on-not-a-string"),
    pytest.param(
        lambda t: t.merge(ROWS.drop_columns(["id"]), on=["id"], when_matched_update={"name": "'x'"}),
        mor.SchemaMismatchError,
        ["['id']"],
        id="merge-source-lacks-key",
    ),
    pytest.param(
        lambda t: t.merge({"id": [1]}, on=["id"], when_matched_update="*"), mor.SchemaMismatchError, ["dict"], id="merge-source-a-dict"
    ),
    pytest.param(lambda t: t.merge(ROWS, on=["id"]), mor.InvalidArgumentError, ["at least one clause"], id="merge-no-clause"),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_matched_update="all"),
        mor.InvalidArgumentError,
        ["when_matched_update", "'all'"],
        id="merge-clause-bad-string",
    ),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_not_matched_insert={1: "'x'"}),
        mor.InvalidArgumentError,
        ["when_not_matched_insert", "[1]"],
        id="merge-clause-column-not-a-string",
    ),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_matched_update={"nope": 1}),
        mor.SchemaMismatchError,
        ["'nope'"],
        id="merge-clause-unknown-column",
    ),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_matched_delete=5),
        mor.InvalidArgumentError,
        ["when_matched_delete", "5"],
        id="merge-delete-a-number",
    ),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_matched_update="*", when_matched_update_if=1),
        mor.InvalidArgumentError,
        ["when_matched_update_if"],
        id="merge-condition-a-number",
    ),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_matched_update="*", when_matched_update_if="source.nope > 1"),
        mor.InvalidFilterError,
        ["WHEN MATCHED UPDATE", "'source.nope'"],
        id="merge-condition-text-unknown-column",
    ),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_matched_delete="id >"),
        mor.InvalidFilterError,
        ["WHEN MATCHED DELETE", "^"],
        id="merge-condition-text-unparsable",
    ),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_matched_update={"name": pc.field("source.nope")}),
        mor.SchemaMismatchError,
        ["'source.nope'"],
        id="merge-expression-unknown-column",
    ),
    pytest.param(
        lambda t: t.merge(ROWS, on=["id"], when_matched_update="*", when_matched_update_if=pc.field("id")),
        mor.SchemaMismatchError,
        ["not boolean"],
        id="merge-condition-not-boolean",
    ),
    # delete_rows
    pytest.param(lambda t: t.delete_rows({"id": [1]}), mor.SchemaMismatchError, ["pyarrow Table", "dict"], id="delete-rows-a-dict"),
    pytest.param(lambda t: t.delete_rows(pa.table({})), mor.InvalidArgumentError, ["no columns"], id="delete-rows-no-columns"),
    pytest.param(lambda t: t.delete_rows(pa.table({"nope": [1]})), mor.SchemaMismatchError, ["'nope'"], id="delete-rows-unknown-column"),
    pytest.param(
        lambda t: t.delete_rows(pa.table({"value": [1.0]})), mor.SchemaMismatchError, ["'value'", "double"], id="delete-rows-double-key"
    ),
    pytest.param(
        lambda t: t.delete_rows(pa.table({"id": ["1"]})), mor.SchemaMismatchError, ["'id'", "string"], id="delete-rows-wrong-type"
    ),
    # append
    pytest.param(
        lambda t: t.append(ROWS.drop_columns(["name"])), mor.SchemaMismatchError, ["missing ['name']"], id="append-missing-column"
    ),
    pytest.param(
        lambda t: t.append(ROWS.append_column("extra", pa.array([1, 2, 3]))),
        mor.SchemaMismatchError,
        ["unexpected ['extra']"],
        id="append-extra-column",
    ),
    pytest.param(
        lambda t: t.append(ROWS.set_column(3, "value", pa.array(["a", "b", "c"]))),
        mor.SchemaMismatchError,
        ["'value'", "string", "double"],
        id="append-incompatible-type",
    ),
    pytest.param(
        lambda t: t.append(ROWS.set_column(0, pa.field("id", pa.int64()), pa.array([1, None, 3]))),
        mor.SchemaMismatchError,
        ["'id'", "1 nulls"],
        id="append-null-in-required",
    ),
    pytest.param(
        lambda t: t.append(ROWS.rename_columns(["ID", "category", "name", "value"])),
        mor.SchemaMismatchError,
        ["'ID' is spelled 'id'"],
        id="append-wrong-case",
    ),
    pytest.param(lambda t: t.append({"id": [1]}), mor.SchemaMismatchError, ["dict"], id="append-a-dict"),
]


@pytest.mark.parametrize(("operation", "error", "fragments"), BAD_DML)
def test_dml_refuses_bad_arguments(
    catalog: mor.Catalog, table: mor.Table, operation: Callable[[mor.Table], Any], error: type[Exception], fragments: list[str]
) -> None:
    with unchanged(catalog, table):
        raises(error, *fragments)(lambda: operation(table))


# -- catalogs and the command line ----------------------------------------------------------------


def test_a_missing_warehouse_is_not_created_by_a_read_only_open(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    raises(mor.InvalidArgumentError, str(missing), "no warehouse")(lambda: mor.load_catalog(missing, create=False))
    assert not missing.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    raises(mor.InvalidArgumentError, "no catalog.db")(lambda: mor.load_catalog(empty, create=False))
    assert list(empty.iterdir()) == []
    mor.load_catalog(empty).create_table("db.t", schema=SCHEMA)
    assert mor.load_catalog(empty, create=False).table_exists("db.t")


def test_a_missing_warehouse_folder_is_refused_unless_create_is_true(tmp_path: Path) -> None:
    """A mistyped path must not silently become a new, empty warehouse."""
    typo = tmp_path / "warehuose"
    raises(mor.InvalidArgumentError, str(typo), "no such folder", "create=True")(lambda: mor.load_catalog(typo))
    raises(mor.InvalidArgumentError, "no such folder")(lambda: mor.load_catalog(typo, uri=f"sqlite:///{tmp_path}/c.db"))
    assert not typo.exists() and not (tmp_path / "c.db").exists()
    made = tmp_path / "new" / "warehouse"
    mor.load_catalog(made, create=True).create_table("db.t", schema=SCHEMA)
    assert mor.load_catalog(made).table_exists("db.t")  # it exists now: the default opens it


@pytest.mark.parametrize(
    ("args", "error", "fragment"),
    [
        pytest.param({"warehouse": None}, mor.InvalidArgumentError, "None", id="warehouse-none"),
        pytest.param({"warehouse": ""}, mor.InvalidArgumentError, "''", id="warehouse-empty"),
        pytest.param({"uri": "nonsense://x"}, mor.InvalidArgumentError, "'nonsense://x'", id="uri-unknown-dialect"),
        pytest.param({"uri": "not a url"}, mor.InvalidArgumentError, "'not a url'", id="uri-not-a-url"),
    ],
)
def test_load_catalog_refuses_bad_arguments(tmp_path: Path, args: dict[str, Any], error: type[Exception], fragment: str) -> None:
    raises(error, fragment)(lambda: mor.load_catalog(**{"warehouse": tmp_path / "w", "create": True, **args}))


def test_a_missing_metadata_file_is_no_such_table_not_corrupt(catalog: mor.Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(3)))
    typo = table.metadata_location.replace("00001-", "00007-")
    for call in (
        lambda: mor.StaticTable.from_metadata(typo),
        lambda: mor.StaticTable.from_metadata(str(tmp_path / "no-table-here")),
        lambda: catalog.register_table("db.r", typo),
    ):
        with pytest.raises(mor.MetadataFileNotFoundError) as info:
            call()
        assert isinstance(info.value, mor.NoSuchTableError) and isinstance(info.value, mor.StorageError)
        assert not isinstance(info.value, mor.CorruptMetadataError)
    assert not catalog.table_exists("db.r")
    Path(local(table.metadata_location)).unlink()  # deleted behind the catalog's back
    raises(mor.MetadataFileNotFoundError, "db.t points at table metadata file", "does not exist")(lambda: catalog.load_table("db.t"))


def test_a_warehouse_that_is_a_file_or_a_corrupt_catalog(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    raises(mor.InvalidArgumentError, str(a_file), "not a folder")(lambda: mor.load_catalog(a_file))
    warehouse = tmp_path / "w"
    warehouse.mkdir()
    (warehouse / "catalog.db").write_bytes(b"garbage" * 100)
    raises(mor.CorruptMetadataError, "catalog.db", "not a database")(lambda: mor.load_catalog(warehouse))
    assert (warehouse / "catalog.db").read_bytes() == b"garbage" * 100


def test_cli_scan_of_a_missing_warehouse_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope"
    assert main(["scan", "db.t", "--warehouse", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "NoSuchTableError" in err and str(missing) in err and "no warehouse" in err
    assert not missing.exists()


def test_cli_reports_bad_inputs_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mor.load_catalog(tmp_path).create_table("db.t", schema=SCHEMA).append(make_rows(range(3)))
    for argv, expected in [
        (["scan", "db.t", "--filter", "nope = 1"], "InvalidFilterError"),
        (["scan", "db.t", "--snapshot-id", "5"], "NoSuchSnapshotError"),
        (["scan", "t"], "NoSuchTableError"),
    ]:
        assert main([*argv, "--warehouse", str(tmp_path)]) == 2
        assert expected in capsys.readouterr().err
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert main(["quickstart", "--warehouse", str(a_file)]) == 2
    assert "not a folder" in capsys.readouterr().err
