"""`table.append(data, schema_mode="merge")`: the data's new columns join the schema in the
same commit as the rows (one metadata version holds the new schema and the new snapshot).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from unit_helpers import assert_no_orphans, local

import mor

BASE = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("n", pa.int32()),
        ("f", pa.float32()),
        ("name", pa.string()),
        ("info", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        ("points", pa.list_(pa.struct([("x", pa.int32())]))),
    ]
)  # ids: id 1, n 2, f 3, name 4, info 5, points 6, info.a 7, info.b 8, points.element 9, x 10


def rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "n": [i * 10 for i in ids],
            "f": [i + 0.5 for i in ids],
            "name": [f"n{i}" for i in ids],
            "info": [{"a": i, "b": f"b{i}"} for i in ids],
            "points": [[{"x": i}] for i in ids],
        },
        schema=BASE,
    )


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mor.commit.retry.time.sleep", lambda seconds: None)


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.m", schema=BASE)
    t.append(rows([0, 1, 2]))
    return t


def on_disk(location: str) -> dict[str, Any]:
    with open(local(location)) as f:
        return json.load(f)


def metadata_files(table: mor.Table) -> set[str]:
    return {p.name for p in Path(local(table.location), "metadata").glob("*.metadata.json")}


def read(table: mor.Table) -> list[dict[str, Any]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])


def test_new_top_level_columns_join_the_schema_in_the_same_commit(table: mor.Table, catalog: mor.Catalog) -> None:
    before, files = table.metadata_location, metadata_files(table)
    data = rows([3]).append_column("extra", pa.array(["e"])).append_column("score", pa.array([1.5]))
    snapshot = table.append(data, schema_mode="merge")

    assert len(metadata_files(table) - files) == 1, "one commit: one metadata version"
    d = on_disk(table.metadata_location)
    assert d["metadata-log"][-1]["metadata-file"] == before
    assert on_disk(before)["current-schema-id"] == 0
    assert d["current-schema-id"] == 1 and d["last-column-id"] == 12
    new_fields = [f for f in d["schemas"][1]["fields"] if f["id"] > 10]
    assert new_fields == [
        {"id": 11, "name": "extra", "required": False, "type": "string"},
        {"id": 12, "name": "score", "required": False, "type": "double"},
    ]
    assert len(d["snapshots"]) == 2 and d["snapshots"][-1]["schema-id"] == 1 == snapshot.schema_id
    got = read(catalog.load_table("db.m"))
    assert [(r["extra"], r["score"]) for r in got] == [(None, None)] * 3 + [("e", 1.5)]
    assert got[3]["name"] == "n3"


def test_new_struct_fields_are_added_inside_structs_and_list_elements(table: mor.Table) -> None:
    info = pa.struct([("b", pa.string()), ("c", pa.int64()), ("a", pa.int32()), ("deep", pa.struct([("z", pa.bool_())]))])
    data = rows([3]).set_column(4, "info", pa.array([{"a": 3, "b": "b3", "c": 33, "deep": {"z": True}}], info))
    data = data.set_column(5, "points", pa.array([[{"x": 3, "y": "why"}]], pa.list_(pa.struct([("x", pa.int32()), ("y", pa.string())]))))
    table.append(data, schema_mode="merge")

    schema = table.schema()
    assert [f.name for f in schema.find_field("info").field_type.fields] == ["a", "b", "c", "deep"]
    assert (schema.find_field("info.c").field_id, schema.find_field("info.deep").field_id) == (11, 12)
    assert schema.find_field("info.deep.z").field_id == 13
    assert schema.find_field("points.element.y").field_id == 14
    assert table.metadata.last_column_id == 14
    got = read(table)
    assert got[0]["info"] == {"a": 0, "b": "b0", "c": None, "deep": None}
    assert got[3]["info"] == {"a": 3, "b": "b3", "c": 33, "deep": {"z": True}}
    assert got[0]["points"] == [{"x": 0, "y": None}] and got[3]["points"] == [{"x": 3, "y": "why"}]


def test_missing_optional_columns_and_fields_are_written_as_nulls(table: mor.Table) -> None:
    data = pa.table({"id": [7], "info": pa.array([{"b": "only b"}]), "new": [True]})
    table.append(data, schema_mode="merge")
    got = read(table)[-1]
    assert got == {"id": 7, "n": None, "f": None, "name": None, "info": {"a": None, "b": "only b"}, "points": None, "new": True}
    location = table.metadata_location
    with pytest.raises(mor.SchemaMismatchError, match="missing"):
        table.append(pa.table({"n": [1]}), schema_mode="merge")  # id is required
    assert table.metadata_location == location


def test_promotable_types_are_widened(table: mor.Table) -> None:
    data = rows([3]).set_column(1, "n", pa.array([1 << 40])).set_column(2, "f", pa.array([0.1], pa.float64()))
    table.append(data, schema_mode="merge")
    types = {f.name: f.type for f in table.arrow_schema()}
    assert (types["n"], types["f"]) == (pa.int64(), pa.float64())
    assert [r["n"] for r in read(table)] == [0, 10, 20, 1 << 40]
    assert read(table)[3]["f"] == 0.1
    assert table.metadata.current_schema_id == 1


def test_types_that_do_not_promote_are_still_a_mismatch(table: mor.Table) -> None:
    location = table.metadata_location
    with pytest.raises(mor.SchemaMismatchError, match="'name'"):
        table.append(rows([3]).set_column(3, "name", pa.array([3])), schema_mode="merge")
    with pytest.raises(mor.SchemaMismatchError):
        table.append(rows([3]).set_column(0, "id", pa.array([3], pa.int32())).set_column(1, "n", pa.array(["x"])), schema_mode="merge")
    assert table.metadata_location == location
    assert_no_orphans(table)


def test_strict_is_the_default(table: mor.Table) -> None:
    location = table.metadata_location
    data = rows([3]).append_column("extra", pa.array(["e"]))
    for mode in (None, "strict"):
        with pytest.raises(mor.SchemaMismatchError, match="unexpected"):
            table.append(data, schema_mode=mode)
    with pytest.raises(mor.SchemaMismatchError):
        table.append(rows([3]).set_column(1, "n", pa.array([1 << 40])))
    with pytest.raises(mor.InvalidArgumentError, match="schema_mode"):
        table.append(data, schema_mode="evolve")
    assert table.metadata_location == location
    assert_no_orphans(table)


def test_merge_without_new_columns_keeps_the_schema(table: mor.Table) -> None:
    table.append(rows([3]), schema_mode="merge")
    assert table.metadata.current_schema_id == 0 and len(table.metadata.schemas) == 1
    assert table.current_snapshot().schema_id == 0


def test_a_stream_of_batches_takes_the_schema_of_its_first_batch(table: mor.Table) -> None:
    data = rows([3, 4, 5]).append_column("extra", pa.array(["a", "b", "c"]))
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=1))
    table.append(reader, schema_mode="merge")
    assert [r["extra"] for r in read(table)] == [None, None, None, "a", "b", "c"]

    location = table.metadata_location
    other = rows([6]).append_column("later", pa.array([1]))
    with pytest.raises(mor.SchemaMismatchError, match="later"):
        table.append(iter([*rows([7]).to_batches(), *other.to_batches()]), schema_mode="merge")
    assert table.metadata_location == location
    assert_no_orphans(table)


def test_merge_into_a_partitioned_table(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.p", schema=BASE, partition_by=["bucket(4, n)", "truncate(2, name)"])
    t.append(rows([0, 1, 2]))
    t.append(
        rows([3, 4]).set_column(1, "n", pa.array([30, 40], pa.int64())).append_column("extra", pa.array(["x", "y"])), schema_mode="merge"
    )
    assert [(r["n"], r["extra"]) for r in read(t)] == [(0, None), (10, None), (20, None), (30, "x"), (40, "y")]
    assert [r["id"] for r in t.scan(filter="n = 30").to_arrow().to_pylist()] == [3]


def test_time_travel_before_the_merge_sees_the_old_schema(table: mor.Table) -> None:
    first = table.current_snapshot().snapshot_id
    table.append(rows([3]).append_column("extra", pa.array(["e"])), schema_mode="merge")
    assert "extra" not in table.scan(snapshot_id=first).to_arrow().column_names
    assert "extra" in table.scan().to_arrow().column_names


def test_a_concurrent_schema_change_conflicts_and_leaves_no_files(table: mor.Table, catalog: mor.Catalog) -> None:
    first, second = catalog.load_table("db.m"), catalog.load_table("db.m")
    first.add_column("other", pa.string())
    location = first.metadata_location
    with pytest.raises(mor.CommitConflictError, match="schema"):
        second.append(rows([3]).append_column("extra", pa.array(["e"])), schema_mode="merge")
    current = catalog.load_table("db.m")
    assert current.metadata_location == location
    assert [f.name for f in current.schema().fields] == [*BASE.names, "other"]
    assert_no_orphans(current)


def test_a_concurrent_append_is_retried_over_in_one_commit(table: mor.Table, catalog: mor.Catalog) -> None:
    first, second = catalog.load_table("db.m"), catalog.load_table("db.m")
    first.append(rows([3]))
    files = metadata_files(table)
    second.append(rows([4]).append_column("extra", pa.array(["e"])), schema_mode="merge")
    assert len(metadata_files(table) - files) == 1
    current = catalog.load_table("db.m")
    assert [(r["id"], r["extra"]) for r in read(current)] == [(0, None), (1, None), (2, None), (3, None), (4, "e")]
    assert current.metadata.last_column_id == 11 and current.current_snapshot().schema_id == 1
    assert_no_orphans(current)


def test_merge_into_an_empty_table(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.e", schema=pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string())}), schema_mode="merge")
    assert [f.name for f in t.schema().fields] == ["id", "v"]
    t.append(pa.table({"id": [1], "v": ["x"]}))
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "v": "x"}]


def test_pyiceberg_reads_a_merged_table(table: mor.Table) -> None:
    from pyiceberg.table import StaticTable

    info = pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.int64())])
    data = rows([3]).set_column(4, "info", pa.array([{"a": 3, "b": "b3", "c": 33}], info)).append_column("extra", pa.array(["e"]))
    table.append(data.set_column(1, "n", pa.array([1 << 40])), schema_mode="merge")

    theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    ours = table.scan().to_arrow()
    assert theirs.column_names == ours.column_names
    assert sorted(theirs.to_pylist(), key=lambda r: r["id"]) == read(table)
    assert read(table)[0]["info"] == {"a": 0, "b": "b0", "c": None}
