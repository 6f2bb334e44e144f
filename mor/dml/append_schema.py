"""How appended rows fit the table: `schema_mode` "strict" (the rows conformed to the schema)
or "merge" (the schema grows by what the rows add, in the same commit), write defaults and
missing optional columns filled. The changes themselves are SchemaEditor's
(mor/dml/schema_rules.py), as `update_schema()`'s are."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, IcebergType, ListType, MapType, NestedField, StructType, UnknownType

from mor.dml.schema_rules import SchemaEditor, iceberg_type, is_promotion
from mor.errors import InvalidArgumentError, SchemaEvolutionError, SchemaMismatchError
from mor.format.arrow_types import default_array, to_arrow_type
from mor.format.metadata import TableMetadata, same_schema
from mor.write.arrow_schema import check_unique_names, conform
from mor.write.decimals import MAX_PRECISION
from mor.write.safe_casts import WIDEN_HINT

STRICT, MERGE = "strict", "merge"

# What a strict append says when a value is too large for its decimal column.
APPEND_WIDEN_HINT = 'append(..., schema_mode="merge") widens the column to {type} (or table.update_schema().widen({name!r}, {type}))'


def check_schema_mode(schema_mode: str | None) -> str:
    mode = schema_mode or STRICT
    if mode not in (STRICT, MERGE):
        raise InvalidArgumentError(f"schema_mode must be {STRICT!r} or {MERGE!r}, got {schema_mode!r}")
    return mode


def prepare_append(
    metadata: TableMetadata, tables: Iterator[pa.Table], schema_mode: str | None, widen_hint: str = WIDEN_HINT
) -> tuple[Schema, Iterator[pa.Table], Schema | None]:
    """(the schema to write with, the rows conformed to it, the new schema to commit or None).

    "strict" (default): the data must fit the table's schema (SchemaMismatchError otherwise).
    "merge": columns and struct fields of the data that the table lacks are added (optional,
    new ids, at the end of their struct); a column whose type is a promotion of the table's
    (int -> long, float -> double, decimal precision up; e.g. int64 data for an int32 column)
    is widened, and so is a decimal column of another scale than the data's when the data's
    type has more digits before the point (decimal(14, 4) data, 10 digits, makes a
    decimal(10, 2) column decimal(12, 2): Iceberg never changes a scale); other type
    differences are still a SchemaMismatchError. Values are then fitted by value (`conform`:
    rounded HALF_UP to the column's scale; `widen_hint` says how to widen a decimal column too
    narrow for a value in strict mode). Optional columns (and
    struct fields) the data lacks are written as nulls; a missing required one is an error.
    The schema is taken from the first batch: a later batch with other new columns does not fit.
    """
    schema = metadata.schema()
    if check_schema_mode(schema_mode) == STRICT:
        return schema, (conform(with_write_defaults(rows, schema), schema, widen_hint) for rows in tables), None
    first = next(tables, None)
    if first is None:
        return schema, iter(()), None
    check_unique_names(first.schema, "the data")
    merged = merged_schema(schema, metadata.last_column_id, first.schema)
    target = schema if merged is None else merged
    rows = (conform(with_missing_as_nulls(t, target), target) for t in chain([first], tables))
    return target, rows, merged


def merged_schema(schema: Schema, last_column_id: int, incoming: pa.Schema) -> Schema | None:
    """`schema` with what the Arrow schema `incoming` adds (see prepare_append); None if nothing."""
    editor = SchemaEditor(schema, last_column_id)
    try:
        _merge_fields(editor, "", tuple(schema.fields), list(incoming))
    except SchemaEvolutionError as e:
        raise SchemaMismatchError(f"cannot merge the data's schema into the table's: {e}") from None
    merged = editor.schema()
    return None if same_schema(merged, schema) else merged


def _merge_fields(editor: SchemaEditor, prefix: str, fields: tuple[NestedField, ...], incoming: Iterable[pa.Field]) -> None:
    by_name = {f.name: f for f in fields}
    for arrow_field in incoming:
        path = f"{prefix}{arrow_field.name}"
        existing = by_name.get(arrow_field.name)
        if existing is None:
            editor.add_column(path, arrow_field.type)
        else:
            _merge_type(editor, path, existing.field_type, arrow_field.type)


def _merge_type(editor: SchemaEditor, path: str, current: IcebergType, incoming: pa.DataType) -> None:
    if isinstance(current, StructType) and pa.types.is_struct(incoming):
        _merge_fields(editor, f"{path}.", tuple(current.fields), list(incoming))
    elif isinstance(current, ListType) and (pa.types.is_list(incoming) or pa.types.is_large_list(incoming)):
        _merge_type(editor, f"{path}.element", current.element_type, incoming.value_type)
    elif isinstance(current, MapType) and pa.types.is_map(incoming):
        _merge_type(editor, f"{path}.value", current.value_type, incoming.item_type)
    elif current.is_primitive:
        try:
            new = iceberg_type(incoming, path)
        except SchemaEvolutionError:
            return  # conform names the mismatch
        if isinstance(current, DecimalType) and isinstance(new, DecimalType) and new.scale != current.scale:
            # Iceberg keeps a decimal's scale: the column gets the digits before the point the data has
            new = DecimalType(min(new.precision - new.scale + current.scale, MAX_PRECISION), current.scale)
        if new != current and new.is_primitive and is_promotion(current, new):
            editor.widen(path, new)


def with_missing_as_nulls(data: pa.Table, schema: Schema) -> pa.Table:
    """`data` with the optional columns and struct fields of `schema` it lacks, as nulls
    (columns of `data` the schema lacks stay: conform names them)."""
    columns, names = [], []
    for field in schema.fields:
        if field.name in data.column_names:
            column = data.column(field.name)
            if isinstance(field.field_type, StructType) and pa.types.is_struct(column.type):
                column = _fill_struct(column.combine_chunks(), field.field_type)
            columns.append(column)
            names.append(field.name)
        elif not field.required or field.write_default is not None:
            columns.append(default_array(field, data.num_rows, write=True))
            names.append(field.name)
    extra = [n for n in data.column_names if n not in names]
    return pa.table(columns + [data.column(n) for n in extra], names=names + extra)


def with_write_defaults(data: pa.Table, schema: Schema) -> pa.Table:
    """`data` with the top-level columns it lacks that have a write default (v3), filled with
    it, and those of type `unknown` (always null); any other missing column stays missing
    (conform names it)."""
    missing = [
        f
        for f in schema.fields
        if (f.write_default is not None or isinstance(f.field_type, UnknownType)) and f.name not in data.column_names
    ]
    for field in missing:
        data = data.append_column(field.name, default_array(field, data.num_rows, write=True))
    return data


def _fill_struct(array: pa.StructArray, struct: StructType) -> pa.StructArray:
    arrow_type = array.type
    present = {arrow_type.field(i).name: i for i in range(arrow_type.num_fields)}
    children, fields = [], []
    for f in struct.fields:
        if f.name in present:
            i = present.pop(f.name)
            child = array.field(i)
            if isinstance(f.field_type, StructType) and pa.types.is_struct(child.type):
                child = _fill_struct(child, f.field_type)
            children.append(child)
            fields.append(arrow_type.field(i).with_type(child.type))
        elif not f.required or f.write_default is not None:
            children.append(default_array(f, len(array), write=True))
            fields.append(pa.field(f.name, to_arrow_type(f.field_type)))
    for i in present.values():
        children.append(array.field(i))
        fields.append(arrow_type.field(i))
    mask = pc.is_null(array) if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
