"""Spark's pushed filters -> mor row filters, and the packing of tasks into input partitions.
No SparkSession is started: these use pyspark's plain Python filter classes."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyiceberg.expressions import AlwaysTrue
from unit_helpers import make_rows

import mor
from mor.planning.packing import OPEN_COST_BYTES, pack_tasks, task_weight

sf = pytest.importorskip("pyspark.sql.datasource")
from mor.spark.filters import convert, to_row_filter  # noqa: E402
from mor.spark.options import TableRef, read_options  # noqa: E402
from mor.spark.scan import plan_scan  # noqa: E402
from mor.spark.source import MorFilteringReader  # noqa: E402


def test_convertible_filters(make_table) -> None:
    schema = make_table(name="f").schema()
    assert str(convert(sf.EqualTo(("ID",), 5), schema)) == str(convert(sf.EqualTo(("id",), 5), schema))
    assert convert(sf.GreaterThan(("id",), 5), schema) is not None
    assert convert(sf.In(("category",), ("a", None, "b")), schema) is not None
    assert convert(sf.IsNull(("name",)), schema) is not None
    assert convert(sf.Not(sf.IsNull(("name",))), schema) is not None
    assert convert(sf.StringStartsWith(("name",), "n1"), schema) is not None
    assert convert(sf.EqualNullSafe(("name",), None), schema) is not None


def test_filters_that_could_change_meaning_are_not_converted(make_table) -> None:
    schema = make_table(name="f").schema()
    assert convert(sf.GreaterThan(("value",), 1.0), schema) is None  # Spark orders NaN above all
    assert convert(sf.EqualTo(("value",), 1.0), schema) is None
    assert convert(sf.Not(sf.EqualTo(("id",), 1)), schema) is None
    assert convert(sf.StringContains(("name",), "x"), schema) is None
    assert convert(sf.EqualTo(("nope",), 1), schema) is None
    assert convert(sf.EqualTo(("a", "b"), 1), schema) is None
    assert convert(sf.EqualTo(("id",), None), schema) is None
    assert isinstance(to_row_filter([sf.EqualTo(("id",), "not a number")], schema), AlwaysTrue)


def test_pushed_filters_prune_files_and_rows_are_still_exact(catalog: mor.Catalog, warehouse) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    table.append(make_rows(range(60)))
    options = {"path": "db.t", "warehouse": str(warehouse)}
    plan = plan_scan(TableRef("db.t", str(warehouse)), read_options(options), requested=None)
    reader = MorFilteringReader(plan)
    pushed = [sf.EqualTo(("category",), "a"), sf.StringContains(("name",), "1")]
    assert reader.pushFilters(pushed) == pushed  # Spark evaluates every filter again
    tasks = reader.plan.tasks()
    assert {t.data_file.partition for t in tasks} == {("a",)}
    assert len(tasks) < len(plan.tasks())


def test_timestamp_and_date_literals_convert() -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, NestedField, TimestamptzType

    schema = Schema(NestedField(1, "ts", TimestamptzType()), NestedField(2, "d", DateType()))
    ts = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert not isinstance(to_row_filter([sf.GreaterThan(("ts",), ts), sf.EqualTo(("d",), dt.date(2024, 1, 1))], schema), AlwaysTrue)


class _Task:
    def __init__(self, size: int, name: str):
        self.data_file = type("F", (), {"file_size_in_bytes": size, "file_path": name})()
        self.delete_files = ()


def test_packing_balances_bytes_and_keeps_planned_order() -> None:
    sizes = [100, 5, 60, 40, 50, 10, 30]
    tasks = [_Task(s << 20, f"f{i}") for i, s in enumerate(sizes)]
    groups = pack_tasks(tasks, 3)  # type: ignore[arg-type]
    assert len(groups) == 3
    assert sorted(t.data_file.file_path for g in groups for t in g) == sorted(t.data_file.file_path for t in tasks)
    for g in groups:  # planned order within a group
        names = [t.data_file.file_path for t in g]
        assert names == sorted(names, key=lambda n: int(n[1:]))
    loads = [sum(task_weight(t) for t in g) for g in groups]  # type: ignore[arg-type]
    assert max(loads) - min(loads) <= (100 << 20) + OPEN_COST_BYTES
    assert pack_tasks([], 4) == []
    assert len(pack_tasks(tasks[:2], 8)) == 2  # type: ignore[arg-type]


def test_empty_schema_selection_is_refused(catalog: mor.Catalog, warehouse) -> None:
    catalog.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
    with pytest.raises(mor.InvalidFilterError):
        plan_scan(TableRef("db.t", str(warehouse)), read_options({"columns": "nope"}), requested=None)
