"""Metadata column names (`_file`, `_pos`, `_row_id`, `_last_updated_sequence_number`) are no
names for table columns: mor refuses them when a table is created or evolved. A table another
engine made with such columns stays readable, and its DML works (v2) or is a typed error (v3,
where `_row_id` and `_last_updated_sequence_number` are the row lineage columns), never a
KeyError from a clash with the names mor uses inside."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from foreign_writes import commit_as_another_engine
from pyiceberg.schema import Schema
from unit_helpers import SCHEMA, files_under, make_rows

import mor
from mor.format.metadata import with_schema

RESERVED = ["_pos", "_file", "_row_id", "_last_updated_sequence_number"]


@pytest.mark.parametrize("name", RESERVED)
def test_create_table_refuses_a_reserved_column_name(catalog: mor.Catalog, name: str) -> None:
    with pytest.raises(mor.SchemaMismatchError, match=f"column name '{name}' is reserved for a metadata column"):
        catalog.create_table("db.t", schema=SCHEMA.append(pa.field(name, pa.int64())))
    assert not catalog.table_exists("db.t")


@pytest.mark.parametrize("name", RESERVED)
def test_create_table_refuses_a_reserved_name_in_a_pyiceberg_schema(catalog: mor.Catalog, name: str) -> None:
    from pyiceberg.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, name, LongType(), required=False))
    with pytest.raises(mor.SchemaMismatchError, match=f"column name '{name}' is reserved"):
        catalog.create_table("db.t", schema=schema)
    assert not catalog.table_exists("db.t")


def test_a_nested_field_may_have_such_a_name(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA.append(pa.field("s", pa.struct([pa.field("_pos", pa.int64())]))))
    assert t.schema().find_field("s._pos") is not None


@pytest.mark.parametrize("name", RESERVED)
def test_schema_evolution_refuses_a_reserved_column_name(catalog: mor.Catalog, name: str) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(5)))
    location = t.metadata_location
    with pytest.raises(mor.SchemaEvolutionError, match=f"cannot add '{name}': column name '{name}' is reserved"):
        t.update_schema().add_column(name, pa.int64()).commit()
    with pytest.raises(mor.SchemaEvolutionError, match=f"cannot rename 'name' to '{name}': column name '{name}' is reserved"):
        t.update_schema().rename_column("name", name).commit()
    with pytest.raises(mor.SchemaMismatchError, match=f"column name '{name}' is reserved"):
        t.append(make_rows(range(5, 10)).append_column(name, pa.array(range(5), pa.int64())), schema_mode="merge")
    assert t.metadata_location == location
    t.update_schema().add_column("s", pa.struct([pa.field("x", pa.int64())])).commit()
    t.update_schema().add_column(f"s.{name}", pa.int64()).commit()  # inside a struct: no clash


FOREIGN_NAMES = {"p": "_pos", "f": "_file", "r": "_row_id", "s": "_last_updated_sequence_number"}
FOREIGN_SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), pa.field("p", pa.int64()),
     pa.field("f", pa.string()), pa.field("r", pa.int64()), pa.field("s", pa.int64())]
)  # fmt: skip


def _foreign_rows(ids: list[int]) -> pa.Table:
    return pa.table(
        [ids, [f"n{i}" for i in ids], [100 + i for i in ids], [f"f{i}" for i in ids], [200 + i for i in ids], [300 + i for i in ids]],
        schema=FOREIGN_SCHEMA,
    ).rename_columns([FOREIGN_NAMES.get(n, n) for n in FOREIGN_SCHEMA.names])


@pytest.fixture(params=["2", "3"], ids=["v2", "v3"])
def foreign(catalog: mor.Catalog, request: pytest.FixtureRequest) -> mor.Table:
    return _make_foreign(catalog, request.param)


def _make_foreign(catalog: mor.Catalog, format_version: str) -> mor.Table:
    """A table with columns named `_pos`, `_file`, `_row_id`, `_last_updated_sequence_number`,
    as another engine may have made it (renamed here in the metadata, past mor's checks)."""
    t = catalog.create_table("db.t", schema=FOREIGN_SCHEMA, properties={"format-version": format_version})
    t.append(_foreign_rows(list(range(10))).rename_columns(FOREIGN_SCHEMA.names))
    schema = t.metadata.schema()
    renamed = Schema(*[f.model_copy(update={"name": FOREIGN_NAMES.get(f.name, f.name)}) for f in schema.fields])
    commit_as_another_engine(t, with_schema(t.metadata, renamed))
    return t


def _rows(t: mor.Table) -> list[dict]:
    return t.scan().to_arrow().sort_by("id").to_pylist()


def _expected(ids: list[int], **changes: dict[int, object]) -> list[dict]:
    rows = _foreign_rows(ids).to_pylist()
    for column, by_id in changes.items():
        for row in rows:
            row[column] = by_id.get(row["id"], row[column])
    return rows


def test_a_foreign_table_with_reserved_names_is_readable(foreign: mor.Table) -> None:
    assert _rows(foreign) == _expected(list(range(10)))
    assert foreign.scan(filter="_pos = 103", columns=["id", "_file"]).to_arrow().to_pylist() == [{"id": 3, "_file": "f3"}]


V2_DML: list[object] = [
    pytest.param(lambda t: t.delete("id = 1"), _expected([0, *range(2, 10)]), id="delete"),
    pytest.param(lambda t: t.delete("_pos = 102", mode="copy-on-write"), _expected([0, 1, *range(3, 10)]), id="delete-cow"),
    pytest.param(
        lambda t: t.update({"name": pc.field("_file"), "_row_id": 7}, where="_pos = 103"),
        _expected(list(range(10)), name={3: "f3"}, _row_id={3: 7}),
        id="update",
    ),
    pytest.param(
        lambda t: t.update({"_last_updated_sequence_number": 1}, where="id = 4", mode="copy-on-write"),
        _expected(list(range(10)), _last_updated_sequence_number={4: 1}),
        id="update-cow",
    ),
    pytest.param(
        lambda t: t.upsert(_foreign_rows([5, 11]).set_column(1, "name", pa.array(["u5", "u11"])), on=["_pos"]),
        _expected([*range(10), 11], name={5: "u5", 11: "u11"}),
        id="upsert-on-_pos",
    ),
    pytest.param(
        lambda t: t.merge(
            _foreign_rows([7, 8]), on=["id"], when_matched_update={"name": pc.field("source._file"), "_pos": pc.field("_pos") + 1}
        ),
        _expected(list(range(10)), name={7: "f7", 8: "f8"}, _pos={7: 108, 8: 109}),
        id="merge",
    ),
    pytest.param(lambda t: t.delete_rows(pa.table({"_row_id": pa.array([209], pa.int64())})), _expected(list(range(9))), id="delete-rows"),
]


@pytest.mark.parametrize(("dml", "expected"), V2_DML)
def test_dml_on_a_v2_table_with_reserved_names(catalog: mor.Catalog, dml: Callable[[mor.Table], object], expected: list[dict]) -> None:
    dml(_make_foreign(catalog, "2"))
    assert _rows(catalog.load_table("db.t")) == expected


def test_dml_that_moves_rows_of_a_v3_table_with_lineage_names_is_a_typed_error(catalog: mor.Catalog) -> None:
    foreign = _make_foreign(catalog, "3")
    files = files_under(foreign.location)
    for dml in (
        lambda: foreign.update({"name": "'x'"}, where="id = 1"),
        lambda: foreign.upsert(_foreign_rows([1]), on=["id"]),
        lambda: foreign.merge(_foreign_rows([1]), on=["id"], when_matched_update="*"),
        lambda: foreign.delete("id = 1", mode="copy-on-write"),
    ):
        with pytest.raises(mor.UnsupportedFeatureError, match="column '_row_id' has the name of a row lineage column"):
            dml()
    assert files_under(foreign.location) == files
    foreign.delete("id = 1")  # merge-on-read moves no row: fine
    assert _rows(foreign) == _expected([0, *range(2, 10)])


def _twice(rows: pa.Table, name: str) -> pa.Table:
    return pa.table([*rows.columns, rows.column(name)], names=[*rows.column_names, name])


DUPLICATED: list[object] = [
    pytest.param(lambda t: t.append(_twice(make_rows([1]), "name")), "the data", id="append"),
    pytest.param(lambda t: t.append(_twice(make_rows([1]), "name"), schema_mode="merge"), "the data", id="append-merge"),
    pytest.param(lambda t: t.upsert(_twice(make_rows([1]), "id"), on=["id"]), "the data", id="upsert"),
    pytest.param(lambda t: t.upsert(_twice(make_rows([1]), "name"), on=["id"], strategy="equality"), "the data", id="upsert-eq"),
    pytest.param(lambda t: t.merge(_twice(make_rows([1]), "id"), on=["id"], when_matched_update="*"), "the MERGE source", id="merge"),
]


@pytest.mark.parametrize(("call", "where"), DUPLICATED)
def test_data_with_a_column_twice_is_a_schema_mismatch(catalog: mor.Catalog, call: Callable[[mor.Table], object], where: str) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(5)))
    location, files = t.metadata_location, files_under(t.location)
    with pytest.raises(mor.SchemaMismatchError, match=f"column '(id|name)' appears twice in {where}"):
        call(t)
    assert t.metadata_location == location
    assert files_under(t.location) == files
