"""Schema evolution through `table.update_schema()` (and the one-change shortcuts on Table).

Every change is read back through the table (old files through the new schema: renamed keeps
values, added is null, widened is cast, dropped is gone), the metadata JSON on disk is checked
on its own (schemas, ids, last-column-id), and every invalid change must raise
SchemaEvolutionError and leave the table exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from unit_helpers import local

import mor
from mor.format.metadata import TableMetadata, with_schema

INFO = pa.struct([("a", pa.int32()), ("b", pa.string())])
BASE = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("n", pa.int32()),
        ("f", pa.float32()),
        ("d", pa.decimal128(5, 2)),
        ("name", pa.string()),
        ("info", INFO),
    ]
)  # ids: id 1, n 2, f 3, d 4, name 5, info 6 (a 7, b 8)


def rows(ids: range | list[int]) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "n": [i * 10 for i in ids],
            "f": [i + 0.5 for i in ids],
            "d": [Decimal(i) / 4 for i in ids],
            "name": [f"n{i}" for i in ids],
            "info": [None if i % 5 == 4 else {"a": i, "b": f"b{i}"} for i in ids],
        },
        schema=BASE,
    )


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mor.commit.retry.time.sleep", lambda seconds: None)


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.s", schema=BASE)
    t.append(rows(range(0, 5)))
    t.append(rows(range(5, 10)))
    return t


def on_disk(table: mor.Table) -> dict[str, Any]:
    with open(local(table.metadata_location)) as f:
        return json.load(f)


def current_schema_json(table: mor.Table) -> dict[str, Any]:
    d = on_disk(table)
    return next(s for s in d["schemas"] if s["schema-id"] == d["current-schema-id"])


def read(table: mor.Table, **scan_args: Any) -> list[dict[str, Any]]:
    return sorted(table.scan(**scan_args).to_arrow().to_pylist(), key=lambda r: r["id"])


def names(table: mor.Table) -> list[str]:
    return [f.name for f in table.schema().fields]


def metadata_files(table: mor.Table) -> set[str]:
    return {p.name for p in Path(local(table.location), "metadata").glob("*.metadata.json")}


# -- each change, read back ---------------------------------------------------------------


def test_add_column_reads_null_for_old_rows_and_takes_the_next_id(table: mor.Table, catalog: mor.Catalog) -> None:
    before = table.metadata_location
    schema = table.add_column("extra", pa.string(), doc="added later")

    assert schema.find_field("extra").field_id == 9
    d = on_disk(table)
    assert table.metadata_location != before
    assert d["last-column-id"] == 9 and d["current-schema-id"] == 1
    assert [s["schema-id"] for s in d["schemas"]] == [0, 1]
    assert current_schema_json(table)["fields"][-1] == {"id": 9, "name": "extra", "required": False, "type": "string", "doc": "added later"}
    assert len(d["snapshots"]) == 2, "a schema change makes no snapshot"

    table.append(rows([10]).append_column("extra", pa.array(["x"])))
    reloaded = catalog.load_table("db.s")
    got = read(reloaded)
    assert [r["extra"] for r in got] == [None] * 10 + ["x"]
    assert [r["name"] for r in got] == [f"n{i}" for i in range(11)]


def test_add_nested_struct_field(table: mor.Table) -> None:
    table.update_schema().add_column("info.c", pa.int64()).commit()

    assert table.arrow_schema().field("info").type.names == ["a", "b", "c"]
    got = read(table)
    assert [r["info"] for r in got[:5]] == [{"a": i, "b": f"b{i}", "c": None} for i in range(4)] + [None]
    info = pa.array([{"a": 1, "b": "x", "c": 7}], table.arrow_schema().field("info").type)
    table.append(rows([10]).set_column(5, "info", info))
    assert read(table, filter="id = 10")[0]["info"] == {"a": 1, "b": "x", "c": 7}


def test_nested_types_get_fresh_ids_after_last_column_id(table: mor.Table) -> None:
    with table.update_schema() as update:
        update.add_column("tags", pa.list_(pa.struct([("k", pa.string()), ("v", pa.int32())])))
        # a pyiceberg type keeps its shape, not its ids (1 and 2 are taken)
        update.add_column("attrs", MapType(1, StringType(), 2, StructType(NestedField(1, "x", LongType())), value_required=False))

    fields = {f["name"]: f for f in current_schema_json(table)["fields"]}
    assert fields["tags"]["id"] == 9
    assert fields["tags"]["type"]["element-id"] == 10
    assert [f["id"] for f in fields["tags"]["type"]["element"]["fields"]] == [11, 12]
    assert fields["attrs"]["id"] == 13
    assert (fields["attrs"]["type"]["key-id"], fields["attrs"]["type"]["value-id"]) == (14, 15)
    assert fields["attrs"]["type"]["value"]["fields"][0]["id"] == 16
    assert on_disk(table)["last-column-id"] == 16
    assert all(r["tags"] is None and r["attrs"] is None for r in read(table))
    ids = [f.field_id for f in table.schema().fields]
    assert len(set(table.schema()._lazy_id_to_name)) == len(table.schema()._lazy_id_to_name) and ids == [1, 2, 3, 4, 5, 6, 9, 13]


def test_rename_keeps_values_and_filters_use_the_new_name(table: mor.Table) -> None:
    with table.update_schema() as update:
        update.rename_column("name", "label").rename_column("info.a", "alpha")

    assert table.schema().find_field("label").field_id == 5
    assert table.schema().find_field("info.alpha").field_id == 7
    got = read(table)
    assert [r["label"] for r in got] == [f"n{i}" for i in range(10)]
    assert got[1]["info"] == {"alpha": 1, "b": "b1"}
    assert [r["id"] for r in read(table, filter="label = 'n3' or info.alpha = 7")] == [3, 7]
    with pytest.raises(mor.InvalidFilterError):
        table.scan(columns=["name"])


def test_drop_column_is_gone_and_a_readded_name_reads_null_for_old_rows(table: mor.Table) -> None:
    table.drop_column("name")
    table.update_schema().drop_column("info.b").commit()
    assert "name" not in table.arrow_schema().names
    assert read(table)[0] == {"id": 0, "n": 0, "f": 0.5, "d": Decimal("0.00"), "info": {"a": 0}}

    table.add_column("name", pa.string())
    assert table.schema().find_field("name").field_id == 9, "a re-added name is a new column"
    assert on_disk(table)["last-column-id"] == 9
    new = rows([10]).drop_columns(["name", "info"])
    new = new.append_column("info", pa.array([{"a": 10}], pa.struct([("a", pa.int32())]))).append_column("name", pa.array(["new"]))
    table.append(new)
    assert [r["name"] for r in read(table)] == [None] * 10 + ["new"], "old values of the dropped column must not come back"


def test_widen_casts_old_values(table: mor.Table) -> None:
    with table.update_schema() as update:
        update.widen("n", pa.int64()).widen("f", pa.float64()).widen("d", DecimalType(9, 2)).widen("info.a", LongType())

    types = {f.name: f.type for f in table.arrow_schema()}
    assert (types["n"], types["f"], types["d"]) == (pa.int64(), pa.float64(), pa.decimal128(9, 2))
    assert types["info"].field("a").type == pa.int64()
    data = table.scan().to_arrow().sort_by("id")
    assert data.schema.field("n").type == pa.int64()
    assert data.column("n").to_pylist() == [i * 10 for i in range(10)]
    assert data.column("f").to_pylist() == [i + 0.5 for i in range(10)]
    assert data.column("d").to_pylist() == [Decimal(i) / 4 for i in range(10)]
    types_json = {f["name"]: f["type"] for f in current_schema_json(table)["fields"]}
    assert (types_json["n"], types_json["f"], types_json["d"]) == ("long", "double", "decimal(9, 2)")
    table.append(rows([10]).set_column(1, "n", pa.array([1 << 40])).cast(table.arrow_schema()))
    assert read(table, filter="id = 10")[0]["n"] == 1 << 40


def test_make_optional_then_nulls_can_be_written(table: mor.Table) -> None:
    table.update_schema().make_optional("id").commit()
    assert table.arrow_schema().field("id").nullable
    assert current_schema_json(table)["fields"][0]["required"] is False
    table.append(rows([10]).set_column(0, "id", pa.array([None], pa.int64())))
    assert table.scan(filter="id is null").to_arrow().num_rows == 1


def test_moves_reorder_columns_in_their_struct(table: mor.Table) -> None:
    with table.update_schema() as update:
        update.move_first("name").move_after("id", "d").move_before("f", "n").move_first("info.b")

    assert table.arrow_schema().names == ["name", "f", "n", "d", "id", "info"]
    data = table.scan().to_arrow()
    assert data.column_names == ["name", "f", "n", "d", "id", "info"]
    assert data.schema.field("info").type.names == ["b", "a"]
    assert read(table)[3] == {"name": "n3", "f": 3.5, "n": 30, "d": Decimal("0.75"), "id": 3, "info": {"b": "b3", "a": 3}}
    assert [f["id"] for f in current_schema_json(table)["fields"]] == [5, 3, 2, 4, 1, 6]


def test_set_doc(table: mor.Table) -> None:
    table.update_schema().set_doc("info.a", "the a").commit()
    assert table.schema().find_field("info.a").doc == "the a"


def test_changes_of_one_builder_see_each_other(table: mor.Table) -> None:
    with table.update_schema() as update:
        update.rename_column("n", "count").widen("count", pa.int64()).add_column("info.c", pa.string()).move_first("info.c")
        update.drop_column("name").add_column("name", pa.int32())
        assert update.apply().find_field("count").field_type == LongType()

    schema = table.schema()
    assert schema.find_field("count").field_id == 2 and schema.find_field("count").field_type == LongType()
    assert [f.name for f in schema.find_field("info").field_type.fields] == ["c", "a", "b"]
    assert schema.find_field("name").field_id == 10 and schema.find_field("name").field_type == IntegerType()
    assert on_disk(table)["last-column-id"] == 10
    assert read(table)[2]["count"] == 20 and read(table)[2]["name"] is None


def test_one_metadata_version_per_commit_and_shortcuts_commit_one_change(table: mor.Table, catalog: mor.Catalog) -> None:
    files = metadata_files(table)
    with table.update_schema() as update:
        update.add_column("a", pa.int32()).add_column("b", pa.int32()).rename_column("name", "label")
    assert len(metadata_files(table) - files) == 1
    for change in (lambda: table.add_column("c", pa.string()), lambda: table.rename_column("c", "cc"), lambda: table.drop_column("a")):
        previous = table.metadata_location
        change()
        assert on_disk(table)["metadata-log"][-1]["metadata-file"] == previous
    d = on_disk(table)
    assert [s["schema-id"] for s in d["schemas"]] == [0, 1, 2, 3, 4]
    assert len(metadata_files(table) - files) == 4
    assert names(catalog.load_table("db.s")) == ["id", "n", "f", "d", "label", "info", "b", "cc"]


def test_a_schema_identical_to_an_older_one_reuses_its_id(table: mor.Table) -> None:
    table.add_column("x", pa.int32())
    table.drop_column("x")
    d = on_disk(table)
    assert d["current-schema-id"] == 0, "the old schema comes back with its id"
    assert [s["schema-id"] for s in d["schemas"]] == [0, 1]
    assert d["last-column-id"] == 9, "ids are never handed out twice"
    assert table.add_column("x", pa.int32()).find_field("x").field_id == 10
    assert on_disk(table)["current-schema-id"] == 2


def test_no_effective_change_commits_nothing(table: mor.Table) -> None:
    before = table.metadata_location
    table.update_schema().commit()
    with table.update_schema() as update:
        update.rename_column("name", "x").rename_column("x", "name").widen("n", pa.int32()).make_optional("n")
    assert table.metadata_location == before


def test_with_schema_is_pure() -> None:
    schema = Schema(NestedField(1, "a", LongType()), schema_id=0)
    base = TableMetadata(
        table_uuid="u", location="/t", last_sequence_number=0, last_updated_ms=1, last_column_id=1,
        schemas=(schema,), current_schema_id=0, partition_specs=(), default_spec_id=0, last_partition_id=999,
        sort_orders_json=(), default_sort_order_id=0,
    )  # fmt: skip
    bigger = Schema(NestedField(1, "a", LongType()), NestedField(3, "b", LongType()), schema_id=77)
    new = with_schema(base, bigger)
    assert (new.current_schema_id, new.last_column_id, len(new.schemas)) == (1, 3, 2)
    assert new.schema().schema_id == 1 and new.schema() == bigger
    assert base.current_schema_id == 0 and len(base.schemas) == 1
    back = with_schema(new, Schema(NestedField(1, "a", LongType()), schema_id=5), last_column_id=4)
    assert (back.current_schema_id, back.last_column_id, len(back.schemas)) == (0, 4, 2)


def test_time_travel_reads_the_old_schema(table: mor.Table) -> None:
    first = table.snapshots()[0].snapshot_id
    with table.update_schema() as update:
        update.rename_column("name", "label").drop_column("f").widen("n", pa.int64()).add_column("extra", pa.string())
    table.append(
        rows([10])
        .drop_columns(["f"])
        .rename_columns(["id", "n", "d", "label", "info"])
        .append_column("extra", pa.array(["e"]))
        .cast(table.arrow_schema())
    )

    old = table.scan(snapshot_id=first).to_arrow()
    assert old.column_names == BASE.names
    assert old.schema.field("n").type == pa.int32()
    assert sorted(old.column("name").to_pylist()) == sorted(f"n{i}" for i in range(5))
    now = table.scan().to_arrow()
    assert now.column_names == ["id", "n", "d", "label", "info", "extra"]
    assert table.current_snapshot().schema_id == table.metadata.current_schema_id == 1
    assert table.snapshots()[0].schema_id == 0


# -- invalid changes: SchemaEvolutionError, and the table is untouched ----------------------

Change = Callable[[mor.Table], object]

INVALID: dict[str, Change] = {
    "unknown column": lambda t: t.update_schema().rename_column("nope", "x"),
    "unknown nested column": lambda t: t.update_schema().drop_column("info.zz"),
    "unknown column to widen": lambda t: t.update_schema().widen("nope", pa.int64()),
    "paths are case-sensitive": lambda t: t.update_schema().drop_column("NAME"),
    "duplicate name on add": lambda t: t.update_schema().add_column("name", pa.string()),
    "duplicate nested name on add": lambda t: t.update_schema().add_column("info.a", pa.string()),
    "duplicate name on rename": lambda t: t.update_schema().rename_column("name", "n"),
    "duplicate name after a rename": lambda t: t.update_schema().rename_column("name", "label").rename_column("n", "label"),
    "add under a non-struct": lambda t: t.update_schema().add_column("name.x", pa.string()),
    "add under a missing parent": lambda t: t.update_schema().add_column("nope.x", pa.string()),
    "required add": lambda t: t.update_schema().add_column("x", pa.int64(), required=True),
    "narrowing long to int": lambda t: t.update_schema().widen("id", pa.int32()),
    "narrowing decimal precision": lambda t: t.update_schema().widen("d", pa.decimal128(4, 2)),
    "decimal scale change": lambda t: t.update_schema().widen("d", pa.decimal128(9, 3)),
    "incompatible string to long": lambda t: t.update_schema().widen("name", pa.int64()),
    "incompatible int to double": lambda t: t.update_schema().widen("n", pa.float64()),
    "widen a struct": lambda t: t.update_schema().widen("info", pa.string()),
    "move relative to itself": lambda t: t.update_schema().move_before("n", "n"),
    "move across structs": lambda t: t.update_schema().move_after("info.a", "name"),
    "rename then drop": lambda t: t.update_schema().rename_column("name", "label").drop_column("label"),
    "drop then rename": lambda t: t.update_schema().drop_column("name").rename_column("name", "label"),
    "widen then drop": lambda t: t.update_schema().widen("n", pa.int64()).drop_column("n"),
    "add inside then drop the struct": lambda t: t.update_schema().add_column("info.c", pa.string()).drop_column("info"),
    "rename inside then drop the struct": lambda t: t.update_schema().rename_column("info.a", "z").drop_column("info"),
    "drop then add inside": lambda t: t.update_schema().drop_column("info").add_column("info.c", pa.string()),
    "add then drop": lambda t: t.update_schema().add_column("x", pa.string()).drop_column("x"),
    "drop the only field of a struct": lambda t: t.update_schema().drop_column("info.a").drop_column("info.b"),
    "type given as text": lambda t: t.update_schema().add_column("x", "long"),
    "arrow type without an Iceberg type": lambda t: t.update_schema().add_column("x", pa.uint64()),
    "blank name": lambda t: t.update_schema().add_column("info. ", pa.string()),
    "name with a dot": lambda t: t.update_schema().rename_column("name", "a.b"),
    "nested duplicate in an added struct": lambda t: t.update_schema().add_column(
        "s", StructType(NestedField(1, "x", LongType()), NestedField(2, "x", LongType()))
    ),
    "empty struct": lambda t: t.update_schema().add_column("s", pa.struct([])),
    "rename a list element": lambda t: t.update_schema().add_column("l", pa.list_(pa.int32())).rename_column("l.element", "e"),
    "shortcut add of an existing name": lambda t: t.add_column("id", pa.int64()),
    "shortcut drop of an unknown column": lambda t: t.drop_column("zzz"),
    "shortcut rename to an existing name": lambda t: t.rename_column("n", "f"),
}


@pytest.mark.parametrize("change", INVALID.values(), ids=INVALID.keys())
def test_invalid_change_raises_and_changes_nothing(table: mor.Table, catalog: mor.Catalog, change: Change) -> None:
    location, metadata, files = table.metadata_location, table.metadata, metadata_files(table)
    with pytest.raises(mor.SchemaEvolutionError):
        change(table)
    assert table.metadata_location == location and table.metadata == metadata
    assert catalog.load_table("db.s").metadata_location == location
    assert metadata_files(table) == files
    assert len(read(table)) == 10


def test_schema_evolution_error_is_an_invalid_argument_error() -> None:
    assert issubclass(mor.SchemaEvolutionError, mor.InvalidArgumentError)
    assert issubclass(mor.SchemaEvolutionError, ValueError)


def test_an_error_inside_the_with_block_commits_nothing(table: mor.Table) -> None:
    location = table.metadata_location
    with pytest.raises(RuntimeError):
        with table.update_schema() as update:
            update.add_column("x", pa.string())
            raise RuntimeError("boom")
    with pytest.raises(mor.SchemaEvolutionError):
        with table.update_schema() as update:
            update.add_column("y", pa.string())
            update.drop_column("nope")
    assert table.metadata_location == location and names(table) == BASE.names


def test_a_failed_change_leaves_the_builder_as_it_was(table: mor.Table) -> None:
    update = table.update_schema().add_column("x", pa.string())
    with pytest.raises(mor.SchemaEvolutionError):
        update.add_column("x", pa.int32())
    with pytest.raises(mor.SchemaEvolutionError):
        update.drop_column("info.a").drop_column("info.b")  # the first drop is kept, the second refused
    update.commit()
    assert names(table) == [*BASE.names, "x"]
    assert table.schema().find_field("x").field_type == StringType()
    assert [f.name for f in table.schema().find_field("info").field_type.fields] == ["b"]
    with pytest.raises(mor.InvalidArgumentError):
        update.add_column("z", pa.string())  # committed already


def test_dropping_a_partition_source_is_refused_renaming_it_is_fine(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.p", schema=BASE, partition_by=["truncate(2, name)", "bucket(4, n)"])
    t.append(rows(range(10)))
    location = t.metadata_location
    with pytest.raises(mor.SchemaEvolutionError, match="partition field 'name_truncate_2'"):
        t.drop_column("name")
    with pytest.raises(mor.SchemaEvolutionError, match="partition field 'n_bucket_4'"):
        t.update_schema().drop_column("n")
    assert t.metadata_location == location
    t.rename_column("name", "label")
    t.update_schema().widen("n", pa.int64()).commit()  # bucket hashes int and long alike
    assert [r["label"] for r in read(t)] == [f"n{i}" for i in range(10)]
    assert [r["id"] for r in read(t, filter="label = 'n3' or n = 70")] == [3, 7]
    t.append(rows([10]).rename_columns(["id", "n", "f", "d", "label", "info"]).cast(t.arrow_schema()))
    assert len(read(t)) == 11


def test_identifier_fields_cannot_be_dropped_nor_made_optional(catalog: mor.Catalog) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "v", StringType()), schema_id=0, identifier_field_ids=[1]
    )
    t = catalog.create_table("db.ident", schema=schema)
    with pytest.raises(mor.SchemaEvolutionError, match="identifier"):
        t.drop_column("id")
    with pytest.raises(mor.SchemaEvolutionError, match="identifier"):
        t.update_schema().make_optional("id")
    t.rename_column("id", "key")
    assert t.schema().identifier_field_ids == [1]
    assert current_schema_json(t)["identifier-field-ids"] == [1]


def test_dropping_an_equality_delete_field_is_refused(table: mor.Table) -> None:
    table.delete_rows(pa.table({"name": ["n3"]}))
    with pytest.raises(mor.SchemaEvolutionError, match="equality field"):
        table.drop_column("name")
    table.drop_column("f")  # other columns still go
    assert [r["id"] for r in read(table)] == [0, 1, 2, 4, 5, 6, 7, 8, 9]


def test_equality_deletes_still_apply_after_rename_and_widen(table: mor.Table) -> None:
    table.delete_rows(pa.table({"name": ["n3"], "n": pa.array([30], pa.int32())}))
    table.delete_rows(pa.table({"n": pa.array([70], pa.int32())}))
    with table.update_schema() as update:
        update.rename_column("name", "label").widen("n", pa.int64())
    assert [r["id"] for r in read(table)] == [0, 1, 2, 4, 5, 6, 8, 9]


# -- concurrent changes -------------------------------------------------------------------


def test_a_concurrent_schema_change_is_a_conflict(table: mor.Table, catalog: mor.Catalog) -> None:
    first, second = catalog.load_table("db.s"), catalog.load_table("db.s")
    first.add_column("x", pa.string())
    location = first.metadata_location
    update = second.update_schema().add_column("y", pa.string())
    with pytest.raises(mor.CommitConflictError, match="concurrent commit changed the schema") as e:
        update.commit()
    assert "schema 1" in str(e.value)
    current = catalog.load_table("db.s")
    assert current.metadata_location == location
    assert names(current) == [*BASE.names, "x"]


def test_a_concurrent_rename_conflicts_with_a_drop_of_the_old_name(table: mor.Table, catalog: mor.Catalog) -> None:
    first, second = catalog.load_table("db.s"), catalog.load_table("db.s")
    first.rename_column("name", "label")
    with pytest.raises(mor.CommitConflictError):
        second.drop_column("name")
    assert names(catalog.load_table("db.s")) == ["id", "n", "f", "d", "label", "info"]


def test_a_commit_that_leaves_the_schema_alone_is_retried_over(table: mor.Table, catalog: mor.Catalog) -> None:
    first, second = catalog.load_table("db.s"), catalog.load_table("db.s")
    update = second.update_schema().add_column("x", pa.string()).rename_column("name", "label")
    first.append(rows([10]))
    first.set_properties(**{"some.property": "v"})
    schema = update.commit()

    current = catalog.load_table("db.s")
    assert current.metadata_location == second.metadata_location
    assert [f.name for f in schema.fields] == names(current) == ["id", "n", "f", "d", "label", "info", "x"]
    assert current.properties["some.property"] == "v"
    assert [r["label"] for r in read(current)] == [f"n{i}" for i in range(11)]
    assert len(current.snapshots()) == 3


def test_a_concurrent_equality_delete_on_a_column_to_drop_is_a_conflict(table: mor.Table, catalog: mor.Catalog) -> None:
    first, second = catalog.load_table("db.s"), catalog.load_table("db.s")
    update = second.update_schema().drop_column("name")
    first.delete_rows(pa.table({"name": ["n1"]}))
    with pytest.raises(mor.CommitConflictError, match="equality field"):
        update.commit()
    assert names(catalog.load_table("db.s")) == BASE.names


def test_concurrent_add_then_retry_hands_out_fresh_ids(table: mor.Table, catalog: mor.Catalog) -> None:
    """A schema that came back to the one a builder was built on (add x, drop x) lets it
    retry, but the ids x used are not handed out again."""
    first, second = catalog.load_table("db.s"), catalog.load_table("db.s")
    update = second.update_schema().add_column("y", pa.string())
    first.add_column("x", pa.string())
    first.append(rows([10]).append_column("x", pa.array(["old x"])))
    first.drop_column("x")
    schema = update.commit()
    assert schema.find_field("y").field_id == 10
    assert on_disk(second)["last-column-id"] == 10
    assert [r["y"] for r in read(second)] == [None] * 11, "y must not read x's values"


# -- DML after evolution ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_dml_after_evolution_reads_old_files_right(table: mor.Table, mode: str) -> None:
    with table.update_schema() as update:
        update.rename_column("name", "label").widen("n", pa.int64()).drop_column("f").add_column("extra", pa.string())
        update.add_column("info.c", pa.int32()).move_first("extra")
    assert table.arrow_schema().names == ["extra", "id", "n", "d", "label", "info"]

    table.delete("id < 2", mode=mode)
    table.update({"extra": "'u'", "n": pc.field("n") + 1}, where="label = 'n3'", mode=mode)
    new = pa.table(
        {
            "extra": ["up", "ins"], "id": [4, 20], "n": [1 << 40, 5], "d": [Decimal("1.00"), Decimal("2.00")],
            "label": ["four", "twenty"], "info": [{"a": 4, "b": "x", "c": 1}, None],
        }
    ).cast(table.arrow_schema())  # fmt: skip
    table.upsert(new, on=["id"], mode=mode)
    table.merge(
        pa.table({"id": [5, 6, 30], "label": ["m5", "del", "m30"]}),
        on=["id"],
        when_matched_delete=pc.field("source.label") == "del",
        when_matched_update={"label": pc.field("source.label")},
        when_not_matched_insert={"id": pc.field("source.id"), "label": pc.field("source.label")},
        mode=mode,
    )
    table.delete_rows(pa.table({"label": ["n9"]}))

    got = {r["id"]: r for r in read(table)}
    assert sorted(got) == [2, 3, 4, 5, 7, 8, 20, 30]
    assert got[2] == {"extra": None, "id": 2, "n": 20, "d": Decimal("0.50"), "label": "n2", "info": {"a": 2, "b": "b2", "c": None}}
    assert got[3]["extra"] == "u" and got[3]["n"] == 31 and got[3]["label"] == "n3"
    assert got[4]["n"] == 1 << 40 and got[4]["label"] == "four" and got[4]["info"] == {"a": 4, "b": "x", "c": 1}
    assert got[5]["label"] == "m5" and got[5]["n"] == 50
    assert got[30] == {"extra": None, "id": 30, "n": None, "d": None, "label": "m30", "info": None}
    assert got[8]["info"] == {"a": 8, "b": "b8", "c": None}


def test_upsert_by_equality_after_a_rename(table: mor.Table) -> None:
    table.rename_column("id", "key")
    new = rows([3, 11]).rename_columns(["key", "n", "f", "d", "name", "info"]).cast(table.arrow_schema())
    table.upsert(new, on=["key"], strategy="equality")
    got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["key"])
    assert [r["key"] for r in got] == [*range(10), 11]


# -- other readers ------------------------------------------------------------------------


def test_pyiceberg_reads_an_evolved_table(table: mor.Table, warehouse: Path) -> None:
    from pyiceberg.table import StaticTable

    with table.update_schema() as update:
        update.rename_column("name", "label").widen("n", pa.int64()).drop_column("f").add_column("extra", pa.string())
        update.add_column("info.c", pa.int32()).move_first("extra")
    table.append(
        pa.table(
            {"extra": ["e"], "id": [10], "n": [7], "d": [Decimal("1.00")], "label": ["ten"], "info": [{"a": 1, "b": "z", "c": 3}]}
        ).cast(table.arrow_schema())
    )
    table.delete("id = 2")

    theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    ours = table.scan().to_arrow()
    assert theirs.column_names == ours.column_names
    assert sorted(theirs.to_pylist(), key=lambda r: r["id"]) == sorted(ours.to_pylist(), key=lambda r: r["id"])
    assert theirs.schema.field("n").type == pa.int64()


def test_list_elements_and_map_values_widen_and_become_optional(catalog: mor.Catalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("l", pa.list_(pa.field("element", pa.int32(), nullable=False))),
            ("m", pa.map_(pa.string(), pa.field("value", pa.float32(), nullable=False))),
        ]
    )
    t = catalog.create_table("db.c", schema=schema)
    t.append(pa.table({"id": [1], "l": [[1, 2]], "m": [[("k", 0.5)]]}, schema=schema))
    with t.update_schema() as update:
        update.widen("l.element", pa.int64()).make_optional("l.element").widen("m.value", pa.float64()).make_optional("m.value")
    with pytest.raises(mor.SchemaEvolutionError, match="map key"):
        t.update_schema().make_optional("m.key")
    with pytest.raises(mor.SchemaEvolutionError, match="list or map"):
        t.update_schema().drop_column("l.element")
    arrow = t.arrow_schema()
    assert arrow.field("l").type.value_field.type == pa.int64() and arrow.field("l").type.value_field.nullable
    assert arrow.field("m").type.item_field.type == pa.float64() and arrow.field("m").type.item_field.nullable
    t.append(
        pa.table(
            {
                "id": pa.array([2]),
                "l": pa.array([[None, 1 << 40]], arrow.field("l").type),
                "m": pa.array([[("k", None)]], arrow.field("m").type),
            }
        )
    )
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "l": [1, 2], "m": [("k", 0.5)]},
        {"id": 2, "l": [None, 1 << 40], "m": [("k", None)]},
    ]
