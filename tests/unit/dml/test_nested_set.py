"""UPDATE of a field inside a struct (`addr.city`, the name `mor describe` lists), as Spark's and
Delta's UPDATE set one: the other fields and a null struct stay as they were."""

from __future__ import annotations

import pyarrow as pa
import pytest

import mor

GEO = pa.struct([("lat", pa.float64()), ("lon", pa.float64())])
ADDR = pa.struct([("city", pa.string()), ("zip", pa.int32()), ("geo", GEO)])
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("addr", ADDR), ("n", pa.int64())])
ROWS = [
    {"id": 1, "addr": {"city": "oslo", "zip": 150, "geo": {"lat": 59.9, "lon": 10.7}}, "n": 1},
    {"id": 2, "addr": None, "n": 2},
    {"id": 3, "addr": {"city": None, "zip": 7, "geo": None}, "n": 3},
]


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    table = catalog.create_table("db.people", schema=SCHEMA)
    table.append(pa.table({k: [r[k] for r in ROWS] for k in SCHEMA.names}, schema=SCHEMA))
    return table


def _rows(table: mor.Table) -> list[dict[str, object]]:
    return table.refresh().scan().to_arrow().sort_by("id").to_pylist()


def test_a_nested_field_is_set_and_the_rest_kept(table: mor.Table) -> None:
    table.update({"addr.city": "upper(coalesce(addr.city, 'none'))", "addr.geo.lat": "addr.geo.lat + 1", "n": "n * 10"}, where="id != 2")
    assert _rows(table) == [
        {"id": 1, "addr": {"city": "OSLO", "zip": 150, "geo": {"lat": 60.9, "lon": 10.7}}, "n": 10},
        {"id": 2, "addr": None, "n": 2},
        {"id": 3, "addr": {"city": "NONE", "zip": 7, "geo": None}, "n": 30},  # a null struct inside stays null
    ]


def test_a_null_struct_stays_null(table: mor.Table) -> None:
    table.update({"addr.zip": 9}, where="true")
    assert [r["addr"] and r["addr"]["zip"] for r in _rows(table)] == [9, None, 9]


@pytest.mark.parametrize(
    ("assignments", "error", "message"),
    [
        ({"addr.nope": "1"}, mor.SchemaMismatchError, "has no field 'nope'"),
        ({"n.x": "1"}, mor.SchemaMismatchError, "not a struct"),
        ({"addr": "null", "addr.city": "'x'"}, mor.InvalidArgumentError, "and fields inside it"),
        ({"addr.zip": "'x'"}, mor.SchemaMismatchError, "addr.zip"),
    ],
)
def test_bad_nested_sets_are_refused_and_change_nothing(
    table: mor.Table, assignments: dict[str, object], error: type[Exception], message: str
) -> None:
    before = table.current_snapshot()
    with pytest.raises(error, match=message):
        table.update(assignments, where="true")
    assert table.refresh().current_snapshot() == before
