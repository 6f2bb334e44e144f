"""Sort orders: `replace_sort_order` writes the order as Iceberg Java does, reuses identical
orders, refuses bad terms with the table unchanged; appends and compaction sort each file by
the table's default order and record its id; pyiceberg reads the sorted files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable
from unit_helpers import make_rows, scan_ids

import mor
from mor.errors import InvalidArgumentError


def metadata_json(table: mor.Table) -> dict:
    return json.loads(Path(table.metadata_location.removeprefix("file://")).read_text())


def file_rows(table: mor.Table) -> list[pa.Table]:
    return [pq.read_table(t.data_file.file_path.removeprefix("file://")) for t in table.scan().plan_files()]


def test_metadata_has_java_shape(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    order = table.replace_sort_order("category", "id desc", "name asc nulls last", "value desc nulls first")
    m = metadata_json(table)
    assert m["default-sort-order-id"] == 1 == order.order_id
    assert m["sort-orders"] == [
        {"order-id": 0, "fields": []},
        {
            "order-id": 1,
            "fields": [
                {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
                {"transform": "identity", "source-id": 1, "direction": "desc", "null-order": "nulls-last"},
                {"transform": "identity", "source-id": 3, "direction": "asc", "null-order": "nulls-last"},
                {"transform": "identity", "source-id": 4, "direction": "desc", "null-order": "nulls-first"},
            ],
        },
    ]
    assert table.current_snapshot() is None  # metadata only
    assert StaticTable.from_metadata(table.metadata_location).sort_order().order_id == 1


def test_transforms_and_reuse_of_identical_orders(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    first = table.replace_sort_order("bucket(16, id)", "truncate(2, name) desc")
    assert [str(f.transform) for f in first.fields] == ["bucket[16]", "truncate[2]"]
    assert table.replace_sort_order("id").order_id == 2
    location = table.metadata_location
    assert table.replace_sort_order("id").order_id == 2 and table.metadata_location == location  # nothing to commit
    assert table.replace_sort_order("bucket(16, id)", "truncate(2, name) DESC").order_id == 1  # the same order: its id
    assert table.replace_sort_order(["id"]).order_id == 2  # a list works too
    assert table.replace_sort_order().order_id == 0 and table.sort_order().fields == []
    assert [o["order-id"] for o in metadata_json(table)["sort-orders"]] == [0, 1, 2]
    assert catalog.load_table("db.t").sort_order().order_id == 0


@pytest.mark.parametrize(
    "terms",
    [
        ("nope",),
        ("id sideways",),
        ("id desc nulls middle",),
        ("id nulls",),
        ("",),
        (3,),
        ("id", "id desc"),
        ("bucket(0, id)",),
        ("day(name)",),
        ("id desc asc",),
    ],
)
def test_bad_terms_are_refused_and_the_table_is_unchanged(catalog: mor.Catalog, terms: tuple) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.replace_sort_order("id")
    location = table.metadata_location
    with pytest.raises(InvalidArgumentError):
        table.replace_sort_order(*terms)
    assert table.metadata_location == location
    assert catalog.load_table("db.t").metadata_location == location


def test_appends_sort_each_file_and_record_the_order(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    table.append(make_rows(range(0, 50)))
    order = table.replace_sort_order("value desc", "id")
    ids = list(np.random.default_rng(1).permutation(np.arange(50, 350)))
    table.append(make_rows(ids))
    by_order = {}
    for task in table.scan().plan_files():
        by_order.setdefault(task.data_file.sort_order_id, []).append(task)
    assert sorted(by_order) == [0, order.order_id]  # the first append was unsorted
    for task in by_order[order.order_id]:
        values = pq.read_table(task.data_file.file_path.removeprefix("file://"))["value"].to_pylist()
        assert values == sorted(values, reverse=True) and len(values) > 1
    assert scan_ids(table) == list(range(350))
    assert sorted(StaticTable.from_metadata(table.metadata_location).scan().to_arrow()["id"].to_pylist()) == list(range(350))


def test_nulls_follow_the_null_order(catalog: mor.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("x", pa.int64())])
    table = catalog.create_table("db.t", schema=schema)
    rows = pa.table({"id": range(6), "x": [3, None, 1, None, 2, 1]}, schema=schema)
    table.replace_sort_order("x desc nulls first", "id desc")
    table.append(rows)
    [written] = file_rows(table)
    assert written["x"].to_pylist() == [None, None, 3, 2, 1, 1]
    assert written["id"].to_pylist() == [3, 1, 0, 4, 5, 2]
    table.replace_sort_order("x")  # asc: nulls first by default
    table.append(rows)
    latest = [t for t in table.scan().plan_files() if t.data_file.sort_order_id == table.sort_order().order_id]
    [only] = latest
    assert pq.read_table(only.data_file.file_path.removeprefix("file://"))["x"].to_pylist() == [None, None, 1, 1, 2, 3]


def test_compaction_sorts_by_the_table_order(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    for start in range(0, 600, 100):
        table.append(make_rows(np.random.default_rng(start).permutation(np.arange(start, start + 100))))
    order = table.replace_sort_order("id desc")
    table.delete("id % 5 = 0")
    expected = [i for i in range(600) if i % 5]
    result = table.compact()
    assert result.written_rows == len(expected)
    assert scan_ids(table) == expected
    for task in table.scan().plan_files():
        assert task.data_file.sort_order_id == order.order_id
        ids = pq.read_table(task.data_file.file_path.removeprefix("file://"))["id"].to_pylist()
        assert ids == sorted(ids, reverse=True)


def test_sort_columns_cannot_be_dropped(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.replace_sort_order("name")
    location = table.metadata_location
    with pytest.raises(InvalidArgumentError):
        table.drop_column("name")
    assert table.metadata_location == location


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_dml_writes_sorted_files(catalog: mor.Catalog, mode: str) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(np.random.default_rng(3).permutation(np.arange(200))))
    order = table.replace_sort_order("id desc")
    table.update({"value": -1.0}, where="id % 3 = 0", mode=mode)
    table.upsert(make_rows([5, 1000, 999, 7]), on=["id"])
    new_files = [t.data_file for t in table.scan().plan_files() if t.data_file.sort_order_id == order.order_id]
    assert len(new_files) >= 2
    for f in new_files:
        ids = pq.read_table(f.file_path.removeprefix("file://"))["id"].to_pylist()
        assert ids == sorted(ids, reverse=True)
    assert scan_ids(table) == sorted([*range(200), 999, 1000])
    assert table.scan(filter="value = -1.0").to_arrow().num_rows == len([i for i in range(200) if i % 3 == 0 and i not in (5, 7)])


def test_transform_orders_sort_by_the_transformed_value(catalog: mor.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
    table = catalog.create_table("db.t", schema=schema)
    table.replace_sort_order("day(ts) desc", "bucket(4, id)", "id")
    start = np.datetime64("2024-01-01T00:00:00", "us")
    ts = start + np.random.default_rng(5).integers(0, 5 * 86_400_000_000, 400).astype("timedelta64[us]")
    table.append(pa.table({"id": np.arange(400), "ts": pa.array(ts, pa.timestamp("us", tz="UTC"))}, schema=schema))
    [written] = file_rows(table)
    days = written["ts"].cast(pa.timestamp("us")).to_numpy().astype("datetime64[D]").astype(np.int64)
    assert (np.diff(days) <= 0).all()  # day descending; within a day, by bucket then id
    assert sorted(written["id"].to_pylist()) == list(range(400))
    assert table.scan().plan_files()[0].data_file.sort_order_id == table.sort_order().order_id == 1
