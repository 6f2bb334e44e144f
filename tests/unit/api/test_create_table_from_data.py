"""`catalog.create_table(name, data)` (issue 43 item 2): the schema inferred from a DataFrame or
Arrow data, the rows appended in the same catalog operation; the table appears with its first
snapshot or not at all."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mor
from mor.errors import InvalidArgumentError, SchemaMismatchError, TableAlreadyExistsError

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")


def rows_of(table: mor.Table) -> list[dict[str, Any]]:
    """The table's rows as dicts, by id (or by their first column)."""
    rows = table.scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda r: r[next(iter(r))])


def files_in(warehouse: Path) -> set[str]:
    return {str(p) for p in warehouse.rglob("*") if p.is_file() and p.name != "catalog.db"}


def test_a_pandas_frame_with_decimals_makes_a_table_that_takes_larger_values_later(catalog: mor.Catalog) -> None:
    df = pd.DataFrame({"id": [1, 2], "amount": [Decimal("1.50"), Decimal("2.25")], "name": ["a", "b"]})
    table = catalog.create_table("db.t", df)
    # pyarrow infers decimal(3, 2) from these values; the column is decimal(38, 2)
    assert table.arrow_schema().field("amount").type == pa.decimal128(38, 2)
    assert [s.operation for s in table.snapshots()] == ["append"]
    table.append(pd.DataFrame({"id": [3], "amount": [Decimal("12345678.90")], "name": ["c"]}))
    assert rows_of(table) == [
        {"id": 1, "amount": Decimal("1.50"), "name": "a"},
        {"id": 2, "amount": Decimal("2.25"), "name": "b"},
        {"id": 3, "amount": Decimal("12345678.90"), "name": "c"},
    ]
    assert catalog.load_table("db.t").arrow_schema() == table.arrow_schema()


@pytest.mark.parametrize("kind", ["pyarrow", "batch", "reader", "polars", "data="])
def test_arrow_data_and_polars_frames_keep_their_declared_types(catalog: mor.Catalog, kind: str) -> None:
    arrow = pa.table({"id": pa.array([1, 2], pa.int32()), "amount": pa.array([Decimal("1.5"), None], pa.decimal128(4, 1))})
    data = {
        "pyarrow": arrow,
        "batch": arrow.to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(arrow.schema, arrow.to_batches()),
        "polars": pl.from_arrow(arrow),
        "data=": arrow,
    }[kind]
    table = catalog.create_table("db.t", data=data) if kind == "data=" else catalog.create_table("db.t", data)
    assert table.arrow_schema().field("amount").type == pa.decimal128(4, 1)
    assert table.arrow_schema().field("id").type == pa.int32()
    assert rows_of(table) == [{"id": 1, "amount": Decimal("1.5")}, {"id": 2, "amount": None}]
    assert len(table.snapshots()) == 1


def test_a_schema_and_data_together_the_data_fits_the_schema(catalog: mor.Catalog, warehouse: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.decimal128(10, 2))])
    table = catalog.create_table("db.t", schema=schema, data=pl.DataFrame({"id": [1], "amount": [Decimal("2.50")]}))
    assert table.arrow_schema().field("amount").type == pa.decimal128(10, 2)
    assert rows_of(table) == [{"id": 1, "amount": Decimal("2.50")}]
    with pytest.raises(SchemaMismatchError, match="column 'amount': value 123456789.00"):
        catalog.create_table("db.u", schema=schema, data=pa.table({"id": [1], "amount": [Decimal("123456789.00")]}))
    assert not catalog.table_exists("db.u")
    assert not any("db.db/u" in f for f in files_in(warehouse))


def test_data_that_fails_halfway_leaves_no_table_and_no_file(catalog: mor.Catalog, warehouse: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("amount", pa.decimal128(5, 2))])
    good = pa.record_batch({"id": [1], "amount": pa.array([Decimal("1.00")], pa.decimal128(5, 2))})
    bad = pa.record_batch({"id": [2], "amount": pa.array([Decimal("9999.9")], pa.decimal128(5, 1))})
    with pytest.raises(SchemaMismatchError):
        catalog.create_table("db.t", data=iter([good, bad]), schema=schema, partition_by=["id"])
    assert not catalog.table_exists("db.t")
    assert files_in(warehouse) == set()


def test_partitions_properties_and_format_version_apply_to_a_table_made_from_data(catalog: mor.Catalog) -> None:
    df = pd.DataFrame({"id": [1, 2, 3], "region": ["eu", "us", "eu"]})
    table = catalog.create_table("db.t", df, partition_by=["region"], properties={"owner": "me"}, format_version=3)
    assert table.metadata.format_version == 3 and table.properties["owner"] == "me"
    assert [f.name for f in table.spec().fields] == ["region"] and len(table.scan().plan_files()) == 2
    assert table.scan(filter="region = 'eu'").to_arrow().num_rows == 2


def test_create_table_refuses_what_it_cannot_use(catalog: mor.Catalog) -> None:
    with pytest.raises(InvalidArgumentError, match="needs a schema"):
        catalog.create_table("db.t")
    with pytest.raises(InvalidArgumentError, match="schema is a pyarrow.Schema or a pyiceberg Schema, got str"):
        catalog.create_table("db.t", "not data")
    with pytest.raises(SchemaMismatchError, match="must be"):
        catalog.create_table("db.t", data="not data")
    with pytest.raises(SchemaMismatchError, match="no batches"):
        catalog.create_table("db.t", data=iter([]))
    catalog.create_table("db.t", pd.DataFrame({"id": [1]}))
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", pd.DataFrame({"id": [2]}))
    assert rows_of(catalog.load_table("db.t")) == [{"id": 1}]
