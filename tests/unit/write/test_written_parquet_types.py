"""The Parquet schema of every file mor writes is the one the Iceberg spec names.

The expected schema is derived here from the table's Iceberg schema by the spec's Parquet type
mapping ("Parquet" appendix: physical type, logical annotation, REQUIRED/OPTIONAL, field ids
on every node, 3-level lists and maps) and from its position delete schema (`file_path`
string 2147483546, `pos` long 2147483545, both required). It is compared with the schema
pyarrow reads from the file footer, so neither side trusts mor's own schema code. Readers
that take the Arrow schema stored in the footer (polars did, and refused a dictionary-typed
`file_path`) must see plain types too; dictionary *encoding* on disk is checked separately.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from unit_helpers import FILE_PATH_ID, POS_ID, local

import mor
from mor.format.arrow_types import from_arrow_schema

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("flag", pa.bool_()),
        ("small", pa.int32()),
        ("ratio", pa.float32()),
        ("score", pa.float64()),
        ("dec9", pa.decimal128(9, 2)),
        ("dec18", pa.decimal128(18, 3)),
        ("dec38", pa.decimal128(38, 10)),
        ("day", pa.date32()),
        ("at", pa.time64("us")),
        ("ts", pa.timestamp("us")),
        ("tstz", pa.timestamp("us", tz="UTC")),
        pa.field("name", pa.string(), nullable=False),
        ("uid", pa.binary(16)),
        ("fx", pa.binary(5)),
        ("blob", pa.binary()),
        ("point", pa.struct([pa.field("x", pa.int32(), nullable=False), ("label", pa.string())])),
        ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.float64())),
    ]
)


def make_rows(ids: range) -> pa.Table:
    rows = [
        {
            "id": i,
            "flag": i % 2 == 0,
            "small": i,
            "ratio": i / 4,
            "score": i / 8,
            "dec9": decimal.Decimal(i) / 100,
            "dec18": decimal.Decimal(i) / 1000,
            "dec38": decimal.Decimal(i) / 10**10,
            "day": dt.date(2024, 1, 1) + dt.timedelta(days=i % 3),
            "at": dt.time(12, i % 60),
            "ts": dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i),
            "tstz": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=i),
            "name": f"n{i}",
            "uid": uuid.UUID(int=i).bytes,
            "fx": b"abcde",
            "blob": bytes([i % 256]),
            "point": {"x": i, "label": None if i % 3 else "p"},
            "tags": ["a", "b"][: i % 3],
            "attrs": [("k", float(i))],
        }
        for i in ids
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


# ---------------------------------------------------------------------------------------------
# The spec's Parquet schema for an Iceberg schema
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """One node of a Parquet schema: depth, repetition, physical type ("group" for groups and
    its length for fixed_len_byte_array), field id (None: none written), name, logical type."""

    depth: int
    repetition: str
    physical: str
    field_id: int | None
    name: str
    logical: (
        str | None
    )  # the annotation's name and the parameters the spec fixes, e.g. "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds)"


def _decimal_bytes(precision: int) -> int:
    """The minimum number of bytes for a two's complement unscaled value of `precision` digits."""
    return next(n for n in range(1, 17) if 2 ** (8 * n - 1) > 10**precision - 1)


def _primitive(t: IcebergType) -> tuple[str, str | None]:
    """(physical type, logical annotation) of the spec's mapping table."""
    simple: dict[type, tuple[str, str | None]] = {
        BooleanType: ("boolean", None),
        IntegerType: ("int32", None),
        LongType: ("int64", None),
        FloatType: ("float", None),
        DoubleType: ("double", None),
        DateType: ("int32", "Date"),
        TimeType: ("int64", "Time(isAdjustedToUTC=false, timeUnit=microseconds)"),
        TimestampType: ("int64", "Timestamp(isAdjustedToUTC=false, timeUnit=microseconds)"),
        TimestamptzType: ("int64", "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds)"),
        StringType: ("binary", "String"),
        UUIDType: ("fixed_len_byte_array(16)", "UUID"),
        BinaryType: ("binary", None),
    }
    if type(t) in simple:
        return simple[type(t)]
    if isinstance(t, FixedType):
        return f"fixed_len_byte_array({len(t)})", None
    if isinstance(t, DecimalType):
        # The spec allows int32 (P <= 9), int64 (P <= 18) or fixed of the minimum length; we
        # take the last, which every reader supports (and Iceberg Java writes).
        return f"fixed_len_byte_array({_decimal_bytes(t.precision)})", f"Decimal(precision={t.precision}, scale={t.scale})"
    raise AssertionError(f"no Parquet mapping in this test for {t}")


def spec_nodes(field: NestedField, depth: int = 1, repetition: str | None = None) -> list[Node]:
    rep = repetition or ("required" if field.required else "optional")
    t = field.field_type
    if isinstance(t, StructType):
        return [Node(depth, rep, "group", field.field_id, field.name, None)] + [n for f in t.fields for n in spec_nodes(f, depth + 1)]
    if isinstance(t, ListType):
        return [
            Node(depth, rep, "group", field.field_id, field.name, "List"),
            Node(depth + 1, "repeated", "group", None, "list", None),
            *spec_nodes(t.element_field, depth + 2),
        ]
    if isinstance(t, MapType):
        return [
            Node(depth, rep, "group", field.field_id, field.name, "Map"),
            Node(depth + 1, "repeated", "group", None, "key_value", None),
            *spec_nodes(t.key_field, depth + 2, "required"),
            *spec_nodes(t.value_field, depth + 2),
        ]
    physical, logical = _primitive(t)
    return [Node(depth, rep, physical, field.field_id, field.name, logical)]


def spec_schema(schema: Schema) -> list[Node]:
    return [n for f in schema.fields for n in spec_nodes(f)]


POSITION_DELETE_SCHEMA = Schema(
    NestedField(FILE_PATH_ID, "file_path", StringType(), required=True),
    NestedField(POS_ID, "pos", LongType(), required=True),
)

# ---------------------------------------------------------------------------------------------
# The schema written in a file footer
# ---------------------------------------------------------------------------------------------

_LINE = re.compile(
    r"^(?P<indent> *)(?P<rep>required|optional|repeated) (?P<physical>group|[a-z_0-9]+(?:\(\d+\))?) "
    r"field_id=(?P<id>-?\d+) (?P<name>[^ ;{]+)(?: \((?P<logical>.*)\))?(?: \{|;)$"
)
# Logical annotation parameters the spec does not fix (pyarrow prints them for timestamps).
_FREE_PARAMETERS = {"is_from_converted_type", "force_set_converted_type"}


def _normalized_logical(text: str | None) -> str | None:
    if text is None:
        return None
    m = re.fullmatch(r"(\w+)(?:\((.*)\))?", text)
    assert m is not None, text
    if m.group(2) is None:
        return m.group(1)
    params = [p for p in m.group(2).split(", ") if p.split("=")[0] not in _FREE_PARAMETERS]
    return f"{m.group(1)}({', '.join(params)})"


def written_schema(path: str) -> list[Node]:
    """The Parquet schema of a file, from its footer (the root group left out)."""
    lines = str(pq.ParquetFile(path).schema).splitlines()
    assert lines[1].startswith("required group field_id=-1 schema {"), lines[:2]
    nodes = []
    for line in lines[2:]:
        if line.strip() in ("}", ""):
            continue
        m = _LINE.match(line)
        assert m is not None, f"unparsed schema line {line!r}"
        field_id = int(m.group("id"))
        nodes.append(
            Node(
                len(m.group("indent")) // 2,
                m.group("rep"),
                m.group("physical"),
                None if field_id == -1 else field_id,
                m.group("name"),
                _normalized_logical(m.group("logical")),
            )
        )
    return nodes


def assert_plain_arrow_types(path: str) -> None:
    """What a reader that takes the footer's Arrow schema sees: no dictionary type anywhere."""
    arrow = pq.ParquetFile(path).schema_arrow

    def walk(t: pa.DataType) -> None:
        assert not pa.types.is_dictionary(t), f"{path}: dictionary type {t} in {arrow}"
        for i in range(t.num_fields):
            walk(t.field(i).type)

    for f in arrow:
        walk(f.type)


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.types", schema=SCHEMA, partition_by=["day"])
    t.append(make_rows(range(0, 40)))
    return t


def _data_paths(table: mor.Table) -> list[str]:
    return sorted({local(t.data_file.file_path) for t in table.scan().plan_files()})


def _delete_paths(table: mor.Table, content: mor.FileContent) -> list[str]:
    return sorted({local(d.file_path) for t in table.scan().plan_files() for d in t.delete_files if d.content == content})


def test_the_spec_mapping_of_this_test_is_the_one_we_think() -> None:
    """A few nodes spelled out literally, so a slip in the derivation above cannot hide."""
    nodes = {n.name: n for n in spec_schema(from_arrow_schema(SCHEMA))}
    assert nodes["id"] == Node(1, "required", "int64", 1, "id", None)
    assert nodes["dec9"].physical == "fixed_len_byte_array(4)" and nodes["dec38"].physical == "fixed_len_byte_array(16)"
    assert nodes["tstz"].logical == "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds)"
    assert nodes["element"] == Node(3, "optional", "binary", nodes["element"].field_id, "element", "String")
    assert nodes["key"].repetition == "required" and nodes["key_value"].repetition == "repeated"
    assert spec_schema(POSITION_DELETE_SCHEMA) == [
        Node(1, "required", "binary", 2147483546, "file_path", "String"),
        Node(1, "required", "int64", 2147483545, "pos", None),
    ]


def test_data_files_have_the_spec_parquet_schema(table: mor.Table) -> None:
    table.update({"score": 0.5}, where="id < 5")  # DML writes data files too
    table.delete("id = 30", mode="copy-on-write")  # and copy-on-write rewrites
    expected = spec_schema(table.schema())
    assert any(n.physical == "fixed_len_byte_array(16)" and n.logical is None for n in expected)  # uid: fixed(16)
    paths = _data_paths(table)
    assert len(paths) >= 4
    for path in paths:
        assert written_schema(path) == expected, path
        assert_plain_arrow_types(path)


def test_uuid_columns_carry_the_uuid_annotation(catalog: mor.Catalog) -> None:
    t = catalog.create_table(
        "db.uuids", schema=Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "u", UUIDType(), required=False))
    )
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "u": pa.array([uuid.uuid4().bytes, None], pa.binary(16))}))
    (path,) = _data_paths(t)
    assert written_schema(path) == spec_schema(t.schema())
    assert written_schema(path)[1] == Node(1, "optional", "fixed_len_byte_array(16)", 2, "u", "UUID")


def test_position_delete_files_have_the_spec_parquet_schema(table: mor.Table) -> None:
    table.delete("id < 3")
    table.delete("id = 7")
    table.rewrite_position_deletes()  # a second writer of position delete files
    paths = _delete_paths(table, mor.FileContent.POSITION_DELETES)
    assert paths
    for path in paths:
        assert written_schema(path) == spec_schema(POSITION_DELETE_SCHEMA), path
        assert_plain_arrow_types(path)
        parquet = pq.ParquetFile(path)
        assert parquet.schema_arrow.field("file_path").type == pa.string()
        # Still dictionary-encoded on disk: the path repeats on every row.
        for i in range(parquet.metadata.num_row_groups):
            encodings = parquet.metadata.row_group(i).column(0).encodings
            assert "RLE_DICTIONARY" in encodings or "PLAIN_DICTIONARY" in encodings, encodings


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param(lambda: pa.table({"id": pa.array([1, 2], pa.int64())}), id="long"),
        pytest.param(lambda: pa.table({"name": ["n3"], "day": [dt.date(2024, 1, 1)]}), id="string-date"),
        pytest.param(
            lambda: pa.table({"dec9": pa.array([decimal.Decimal("0.04")], pa.decimal128(9, 2)),
                              "uid": pa.array([uuid.UUID(int=4).bytes], pa.binary(16)), "small": pa.array([4], pa.int32())}),
            id="decimal-fixed-int",
        ),
        pytest.param(lambda: pa.table({"ts": [dt.datetime(2024, 1, 1, 0, 5)], "tstz": [dt.datetime(2024, 1, 1, 0, 5, tzinfo=dt.UTC)],
                                       "flag": [False]}), id="timestamps-bool"),
    ],
)  # fmt: skip
def test_equality_delete_files_have_the_spec_parquet_schema(table: mor.Table, keys: Callable[[], pa.Table]) -> None:
    """The equality columns, with the table's field ids, types and required-ness, in key order."""
    key_table = keys()
    before = len(table.scan().to_arrow())
    table.delete_rows(key_table)
    assert len(table.scan().to_arrow()) < before  # the keys matched rows: the file is real
    schema = table.schema()
    expected = spec_schema(Schema(*[schema.find_field(n) for n in key_table.column_names]))
    paths = _delete_paths(table, mor.FileContent.EQUALITY_DELETES)
    assert paths
    for path in paths:
        assert written_schema(path) == expected, path
        assert_plain_arrow_types(path)
