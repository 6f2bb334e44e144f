"""Every error leaves the table as it was: same metadata location, same files, no orphans."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pyarrow as pa
import pytest
from unit_helpers import SCHEMA, assert_no_orphans, files_under, make_rows, scan_ids

import mor

ROWS = make_rows(range(10))


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    t.append(make_rows(range(0, 30)))
    t.delete("id = 3")
    return t


@contextmanager
def unchanged(catalog: mor.Catalog, table: mor.Table) -> Iterator[None]:
    location = table.metadata_location
    metadata = table.metadata
    files = files_under(table.location)
    rows = scan_ids(table)
    yield
    assert table.metadata_location == location
    assert table.metadata == metadata
    fresh = catalog.load_table(table.identifier)
    assert fresh.metadata_location == location
    assert files_under(table.location) == files
    assert scan_ids(fresh) == rows
    assert_no_orphans(fresh)


def _without(data: pa.Table, column: str) -> pa.Table:
    return data.drop_columns([column])


BAD_APPENDS: list[object] = [
    pytest.param(lambda: _without(ROWS, "name"), id="missing-column"),
    pytest.param(lambda: _without(ROWS, "value"), id="missing-column-value"),
    pytest.param(lambda: ROWS.append_column("extra", pa.array(range(10))), id="extra-column"),
    pytest.param(lambda: ROWS.set_column(1, "category", pa.array(range(10))), id="int-into-string"),
    pytest.param(lambda: ROWS.set_column(0, "id", pa.array([str(i) for i in range(10)])), id="string-into-long"),
    pytest.param(lambda: ROWS.set_column(0, "id", pa.array([i + 0.5 if i != 3 else float("nan") for i in range(10)])), id="nan-into-long"),
    pytest.param(lambda: ROWS.set_column(3, "value", pa.array([str(i) for i in range(10)])), id="string-into-double"),
    pytest.param(
        lambda: ROWS.set_column(0, pa.field("id", pa.int64()), pa.array([1, None, *range(2, 10)])),
        id="null-in-required-column",
    ),
    pytest.param(lambda: ROWS.rename_columns(["ID", "category", "name", "value"]), id="wrong-case-name"),
    pytest.param(lambda: ROWS.to_pylist(), id="not-a-table"),  # (a RecordBatch is taken)
]


@pytest.mark.parametrize("make_data", BAD_APPENDS)
def test_append_with_a_wrong_schema_is_refused(catalog: mor.Catalog, table: mor.Table, make_data: Callable[[], pa.Table]) -> None:
    with unchanged(catalog, table):
        with pytest.raises(mor.SchemaMismatchError):
            table.append(make_data())


def test_schema_mismatch_names_the_column(table: mor.Table) -> None:
    with pytest.raises(mor.SchemaMismatchError, match="name"):
        table.append(_without(ROWS, "name"))
    with pytest.raises(mor.SchemaMismatchError, match="extra"):
        table.append(ROWS.append_column("extra", pa.array(range(10))))
    with pytest.raises(mor.SchemaMismatchError, match="category"):
        table.append(ROWS.set_column(1, "category", pa.array(range(10))))


def test_append_accepts_what_fits(table: mor.Table) -> None:
    """Not everything different is wrong: column order, narrower ints, nullable fields without nulls."""
    reordered = ROWS.select(["value", "name", "id", "category"])
    narrow = pa.table(
        {
            "id": pa.array([100, 101], pa.int32()),
            "category": ["a", None],
            "name": pa.array(["x", "y"], pa.large_string()),
            "value": pa.array([1.5, None], pa.float32()),
        }
    )
    nullable_id = pa.table({"id": [200], "category": ["a"], "name": ["z"], "value": [0.0]})
    table.append(reordered)
    table.append(narrow)
    table.append(nullable_id)
    got = table.scan(filter="id >= 100").to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == [100, 101, 200]
    assert got.column("value").to_pylist() == [1.5, None, 0.0]
    assert got.schema.field("id").type == pa.int64()


@pytest.mark.parametrize(
    ("where", "column"),
    [
        pytest.param("nope = 1", "nope", id="unknown-column"),
        pytest.param("id < 5 and Name = 'n1'", "Name", id="wrong-case"),
        pytest.param("id < 5 or missing is null", "missing", id="unknown-in-or"),
    ],
)
def test_delete_with_an_unknown_column(catalog: mor.Catalog, table: mor.Table, where: str, column: str) -> None:
    with unchanged(catalog, table):
        with pytest.raises(mor.InvalidFilterError, match=column):
            table.delete(where)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("id <<< 3", id="bad-operator"),
        pytest.param("id = ", id="no-value"),
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("id = 'abc'", id="wrong-literal-type"),
        pytest.param(42, id="not-text"),
    ],
)
def test_delete_with_unusable_predicate(catalog: mor.Catalog, table: mor.Table, where: object) -> None:
    with unchanged(catalog, table):
        with pytest.raises(mor.InvalidFilterError):
            table.delete(where)  # type: ignore[arg-type]


def test_delete_with_an_unknown_mode(catalog: mor.Catalog, table: mor.Table) -> None:
    with unchanged(catalog, table):
        with pytest.raises(mor.InvalidArgumentError):
            table.delete("id = 1", mode="merge-on-write")


@pytest.mark.parametrize(
    "columns",
    [pytest.param(["id", "nope"], id="unknown"), pytest.param(["ID"], id="wrong-case"), pytest.param("id", id="a-string")],
)
def test_scan_with_unknown_columns(catalog: mor.Catalog, table: mor.Table, columns: object) -> None:
    with unchanged(catalog, table):
        with pytest.raises(mor.InvalidFilterError):
            table.scan(columns=columns).to_arrow()  # type: ignore[arg-type]


def test_scan_unknown_column_error_names_it(table: mor.Table) -> None:
    with pytest.raises(mor.InvalidFilterError, match="nope"):
        table.scan(columns=["id", "nope"])
    with pytest.raises(mor.InvalidFilterError, match="nope"):
        table.scan(filter="nope > 1")


def test_time_travel_to_a_missing_snapshot(catalog: mor.Catalog, table: mor.Table) -> None:
    first = table.snapshots()[0]
    with unchanged(catalog, table):
        with pytest.raises(mor.NoSuchSnapshotError):
            table.scan(snapshot_id=12345)
        with pytest.raises(mor.NoSuchSnapshotError):
            table.scan(as_of=first.timestamp_ms - 1)
        with pytest.raises(mor.NoSuchSnapshotError):
            table.scan(as_of=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))


def test_errors_are_mor_errors() -> None:
    for error in [
        mor.NoSuchTableError, mor.NoSuchNamespaceError, mor.NoSuchSnapshotError, mor.TableAlreadyExistsError,
        mor.NamespaceNotEmptyError, mor.InvalidFilterError, mor.SchemaMismatchError, mor.CommitConflictError,
        mor.CommitStateUnknownError, mor.CorruptMetadataError, mor.UnsupportedFeatureError, mor.InvalidArgumentError,
    ]:  # fmt: skip
        assert issubclass(error, mor.MorError)
