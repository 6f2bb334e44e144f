"""Reading a file through a newer schema: fields are matched by id, at every nesting level."""

from __future__ import annotations

import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

from mor.errors import CorruptMetadataError
from mor.format.arrow_types import FIELD_ID_KEY
from mor.read.field_resolution import FileProjection, file_matches_schema, parse_name_mapping


def field(name: str, type_: pa.DataType, field_id: int | None, nullable: bool = True) -> pa.Field:
    metadata = None if field_id is None else {FIELD_ID_KEY: str(field_id)}
    return pa.field(name, type_, nullable=nullable, metadata=metadata)


def read_through(tmp_path: Path, data: pa.Table, fields: list[NestedField], mapping: str | None = None) -> pa.Table:
    """`data` written as a Parquet file, read back through `fields` (the newer schema)."""
    path = tmp_path / "f.parquet"
    pq.write_table(data, path)
    parquet = pq.ParquetFile(path)
    projection = FileProjection(parquet.schema_arrow, fields, str(path), parse_name_mapping(mapping))
    batch = parquet.read(columns=projection.file_columns).combine_chunks().to_batches()[0]
    return pa.table(projection.arrays(batch), names=[f.name for f in fields])


def test_top_level_rename_add_drop_and_reused_name(tmp_path: Path) -> None:
    schema = pa.schema([field("id", pa.int64(), 1), field("name", pa.string(), 2), field("gone", pa.int32(), 3)])
    data = pa.table([pa.array([1, 2]), pa.array(["a", None]), pa.array([7, 8], pa.int32())], schema=schema)
    fields = [
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "full_name", StringType(), required=False),  # renamed: same id
        NestedField(4, "name", StringType(), required=False),  # the old name, a new column
        NestedField(5, "added", IntegerType(), required=False),
    ]
    out = read_through(tmp_path, data, fields)
    assert out.to_pylist() == [
        {"id": 1, "full_name": "a", "name": None, "added": None},
        {"id": 2, "full_name": None, "name": None, "added": None},
    ]
    assert out.schema.field("added").type == pa.int32()


def test_promoted_types_are_cast(tmp_path: Path) -> None:
    schema = pa.schema([field("n", pa.int32(), 1), field("x", pa.float32(), 2), field("p", pa.decimal128(9, 2), 3)])
    data = pa.table(
        [pa.array([1, -(2**31)], pa.int32()), pa.array([0.5, None], pa.float32()),
         pa.array([decimal.Decimal("1.25"), decimal.Decimal("-9999999.99")], pa.decimal128(9, 2))],
        schema=schema,
    )  # fmt: skip
    fields = [
        NestedField(1, "n", LongType(), required=False),
        NestedField(2, "x", DoubleType(), required=False),
        NestedField(3, "p", DecimalType(20, 2), required=False),
    ]
    out = read_through(tmp_path, data, fields)
    assert out.schema.types == [pa.int64(), pa.float64(), pa.decimal128(20, 2)]
    assert out.to_pylist() == [
        {"n": 1, "x": 0.5, "p": decimal.Decimal("1.25")},
        {"n": -(2**31), "x": None, "p": decimal.Decimal("-9999999.99")},
    ]


@pytest.mark.parametrize(
    "file_type, table_type",
    [
        pytest.param(pa.int64(), IntegerType(), id="long-as-int"),
        pytest.param(pa.float64(), FloatType(), id="double-as-float"),
        pytest.param(pa.decimal128(12, 2), DecimalType(9, 2), id="decimal-narrower"),
        pytest.param(pa.decimal128(9, 2), DecimalType(9, 3), id="decimal-other-scale"),
        pytest.param(pa.string(), LongType(), id="string-as-long"),
    ],
)
def test_narrowing_or_incompatible_types_are_refused(tmp_path: Path, file_type: pa.DataType, table_type) -> None:
    data = pa.table([pa.array([], file_type)], schema=pa.schema([field("c", file_type, 1)]))
    with pytest.raises(CorruptMetadataError, match="cannot be read as"):
        read_through(tmp_path, data, [NestedField(1, "c", table_type, required=False)])


def struct_data() -> pa.Table:
    info = pa.struct([field("a", pa.int32(), 11), field("b", pa.string(), 12)])
    schema = pa.schema([field("id", pa.int64(), 1), field("info", info, 10)])
    rows = [{"id": 1, "info": {"a": 1, "b": "x"}}, {"id": 2, "info": None}, {"id": 3, "info": {"a": None, "b": "z"}}]
    return pa.Table.from_pylist(rows, schema=schema)


def test_struct_fields_resolve_by_id(tmp_path: Path) -> None:
    """info.a renamed to aa and widened to long, info.b dropped, info.c added, info.b's name
    re-used by a new field: the struct's own nulls stay nulls."""
    info = StructType(
        NestedField(11, "aa", LongType(), required=False),
        NestedField(13, "c", StringType(), required=False),
        NestedField(14, "b", StringType(), required=False),
    )
    out = read_through(tmp_path, struct_data(), [NestedField(10, "info", info, required=False)])
    assert out.column("info").to_pylist() == [{"aa": 1, "c": None, "b": None}, None, {"aa": None, "c": None, "b": None}]


def test_unchanged_struct_is_passed_through(tmp_path: Path) -> None:
    info = StructType(NestedField(11, "a", IntegerType(), required=False), NestedField(12, "b", StringType(), required=False))
    fields = [NestedField(1, "id", LongType(), required=False), NestedField(10, "info", info, required=False)]
    data = struct_data()
    out = read_through(tmp_path, data, fields)
    assert out.to_pylist() == data.to_pylist()
    assert file_matches_schema(data.schema, _schema(fields))


def test_same_names_but_new_ids_do_not_match(tmp_path: Path) -> None:
    """A struct whose field was dropped and re-added under the same name: same names and
    types, different id; the old values must not show up."""
    info = StructType(NestedField(11, "a", IntegerType(), required=False), NestedField(15, "b", StringType(), required=False))
    fields = [NestedField(10, "info", info, required=False)]
    out = read_through(tmp_path, struct_data(), fields)
    assert out.column("info").to_pylist() == [{"a": 1, "b": None}, None, {"a": None, "b": None}]
    assert not file_matches_schema(struct_data().schema, _schema(fields))


def test_list_of_structs_and_maps(tmp_path: Path) -> None:
    point = pa.struct([field("x", pa.int32(), 21)])
    schema = pa.schema([
        field("points", pa.list_(field("element", point, 20)), 2),
        field("attrs", pa.map_(field("key", pa.string(), 31, nullable=False), field("value", pa.float32(), 32)), 3),
    ])  # fmt: skip
    rows = [
        {"points": [{"x": 1}, None, {"x": 3}], "attrs": [("k", 1.5)]},
        {"points": None, "attrs": None},
        {"points": [], "attrs": []},
    ]
    data = pa.Table.from_pylist(rows, schema=schema)
    new_point = StructType(NestedField(21, "x", LongType(), required=False), NestedField(22, "y", StringType(), required=False))
    fields = [
        NestedField(2, "points", ListType(20, new_point, element_required=False), required=False),
        NestedField(3, "attrs", MapType(31, StringType(), 32, DoubleType(), value_required=False), required=False),
    ]
    out = read_through(tmp_path, data, fields)
    assert out.column("points").to_pylist() == [[{"x": 1, "y": None}, None, {"x": 3, "y": None}], None, []]
    assert out.column("attrs").to_pylist() == [[("k", 1.5)], None, []]
    assert out.column("attrs").type.item_type == pa.float64()


def test_sliced_nested_arrays_keep_their_rows(tmp_path: Path) -> None:
    """Batches after a delete mask are slices and filtered copies: offsets must be honoured."""
    data = struct_data()
    path = tmp_path / "f.parquet"
    pq.write_table(data, path)
    parquet = pq.ParquetFile(path)
    info = StructType(NestedField(11, "a", LongType(), required=False))
    projection = FileProjection(parquet.schema_arrow, [NestedField(10, "info", info, required=False)], str(path))
    batch = parquet.read().combine_chunks().to_batches()[0].slice(1, 2)
    assert projection.arrays(batch)[0].to_pylist() == [None, {"a": None}]


def test_files_without_ids_use_the_name_mapping(tmp_path: Path) -> None:
    schema = pa.schema([
        field("id", pa.int64(), None),
        field("old_name", pa.string(), None),
        field("info", pa.struct([field("a", pa.int32(), None)]), None),
    ])  # fmt: skip
    data = pa.Table.from_pylist([{"id": 1, "old_name": "x", "info": {"a": 5}}], schema=schema)
    mapping = json.dumps([
        {"field-id": 1, "names": ["id"]},
        {"field-id": 2, "names": ["name", "old_name"]},
        {"field-id": 3, "names": ["info"], "fields": [{"field-id": 4, "names": ["a"]}]},
    ])  # fmt: skip
    info = StructType(NestedField(4, "a", LongType(), required=False))
    fields = [
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "info", info, required=False),
    ]
    out = read_through(tmp_path, data, fields, mapping)
    assert out.to_pylist() == [{"id": 1, "name": "x", "info": {"a": 5}}]


def test_files_without_ids_and_no_mapping_are_refused(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array([1], pa.int64())})
    with pytest.raises(CorruptMetadataError, match="no Parquet field ids"):
        read_through(tmp_path, data, [NestedField(1, "id", LongType(), required=False)])


def test_a_bad_name_mapping_is_a_clear_error() -> None:
    with pytest.raises(CorruptMetadataError, match="name mapping"):
        parse_name_mapping("[{not json")


def _schema(fields: list[NestedField]) -> Schema:
    return Schema(*fields)
