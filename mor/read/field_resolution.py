"""Reading a data file through the requested schema: columns are matched by field id, never by name.

A file written under an older schema still reads correctly: a renamed column keeps its values
(same id, new name), an added column reads as nulls (no such id in the file), a dropped column
is not asked for, a re-added name with a new id reads as nulls rather than the old column's
values, and a promoted type is cast (int -> long, float -> double, decimal(P,S) -> decimal(P2,S)).
The same holds inside structs, lists and maps (spec/schema-evolution.md).

Files without Parquet field ids (imported Parquet) get their ids from the table's name mapping
(`schema.name-mapping.default`); without one they cannot be read safely and raise
CorruptMetadataError.

The plan for one file (a tree of converters) is built once from its Arrow schema; applying it
to a batch costs nothing for columns that already have the requested shape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType

from mor.errors import CorruptMetadataError
from mor.format.arrow_types import FIELD_ID_KEY, default_array, to_arrow_field, to_arrow_type
from mor.format.properties import NAME_MAPPING_PROPERTY

if TYPE_CHECKING:  # importing pyiceberg.table costs a read ~0.2 s: only tables with a mapping pay it
    from pyiceberg.table.name_mapping import MappedField, NameMapping

Converter = Callable[[pa.Array], pa.Array]


def _identity(array: pa.Array) -> pa.Array:
    return array


@functools.lru_cache(maxsize=16)
def parse_name_mapping(text: str | None) -> NameMapping | None:
    """A table's name mapping from its property text (None: none); CorruptMetadataError if the
    text is not one. Cached: every task of a scan carries the same text."""
    if text is None:
        return None
    from pyiceberg.table.name_mapping import parse_mapping_from_json

    try:
        return parse_mapping_from_json(text)
    except (ValueError, TypeError) as e:
        raise CorruptMetadataError(f"table property {NAME_MAPPING_PROPERTY} is not a valid name mapping: {e}") from e


@dataclass(frozen=True)
class FileColumn:
    """A top-level requested field as one file holds it: the file's column (None when the file
    has no column with that id) and how to turn it into the requested type."""

    field: NestedField
    column: str | None
    convert: Converter

    def read(self, batch: pa.RecordBatch) -> pa.Array:
        if self.column is None:  # a file from before the field: its initial default (v3), else nulls
            return default_array(self.field, batch.num_rows)
        return self.convert(batch.column(self.column))

    @property
    def unchanged(self) -> bool:
        return self.column is not None and self.convert is _identity


class FileProjection:
    """How the columns of one data file (its Arrow schema) become the requested fields."""

    def __init__(self, file_schema: pa.Schema, fields: list[NestedField], path: str, name_mapping: NameMapping | None = None):
        ids = field_ids_by_place(file_schema, path, name_mapping)
        by_id = {ids[(i,)]: i for i in range(len(file_schema)) if (i,) in ids}
        self.columns: list[FileColumn] = []
        for f in fields:
            index = by_id.get(f.field_id)
            if index is None:
                self.columns.append(FileColumn(f, None, _identity))
                continue
            file_field = file_schema.field(index)
            convert = _converter(file_field.type, f.field_type, ids, (index,), f"{path}: column {f.name!r}")
            self.columns.append(FileColumn(f, file_field.name, convert))
        self.file_columns = [c.column for c in self.columns if c.column is not None]
        self.column_by_id = {c.field.field_id: c.column for c in self.columns if c.column is not None}

    def arrays(self, batch: pa.RecordBatch) -> list[pa.Array]:
        return [c.read(batch) for c in self.columns]


# -- field ids of a file ------------------------------------------------------------------

Path = tuple[int, ...]  # child indexes from the top: a field's place in the Arrow schema


def field_ids_by_place(file_schema: pa.Schema, path: str, mapping: NameMapping | None) -> dict[Path, int]:
    """Field id of every field of the file (top-level and nested), by its place."""
    ids: dict[Path, int] = {}
    for i, f in enumerate(file_schema):
        _ids_from_metadata(f, (i,), ids)
    if any(len(p) == 1 for p in ids):
        return ids
    if len(file_schema) == 0:
        return {}
    if mapping is None:
        raise CorruptMetadataError(
            f"data file {path} has no Parquet field ids and the table has no name mapping "
            f"({NAME_MAPPING_PROPERTY}): its columns cannot be matched to the schema safely"
        )
    ids = {}
    mapped = list(mapping)
    for i, f in enumerate(file_schema):
        _ids_from_mapping(f, (i,), mapped, ids)
    return ids


def _ids_from_metadata(f: pa.Field, place: Path, ids: dict[Path, int]) -> None:
    raw = (f.metadata or {}).get(FIELD_ID_KEY)
    if raw is not None:
        ids[place] = int(raw)
    for i, child in enumerate(_children(f.type)):
        _ids_from_metadata(child, (*place, i), ids)


def _ids_from_mapping(f: pa.Field, place: Path, mapped: list[MappedField], ids: dict[Path, int]) -> None:
    """A file field gets the id its name maps to among its siblings' mapped fields (lists'
    elements are "element", maps' keys and values "key" and "value", as the spec says)."""
    match = next((m for m in mapped if f.name in m.names), None)
    if match is None:
        return
    if match.field_id is not None:
        ids[place] = match.field_id
    children = _children(f.type)
    names = _child_names(f.type)
    for i, child in enumerate(children):
        _ids_from_mapping(child.with_name(names[i]) if names else child, (*place, i), list(match.fields), ids)


def _children(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return list(t)
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    return []


def _child_names(t: pa.DataType) -> list[str] | None:
    """The names the name mapping uses for a list's or map's children (Arrow's vary by writer)."""
    if pa.types.is_map(t):
        return ["key", "value"]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ["element"]
    return None


# -- converters ---------------------------------------------------------------------------


def _converter(file_type: pa.DataType, target: IcebergType, ids: dict[Path, int], place: Path, where: str) -> Converter:
    """How an array of `file_type` (the field at `place` in the file) becomes `target`."""
    if isinstance(target, StructType):
        return _struct_converter(file_type, target, ids, place, where)
    if isinstance(target, ListType):
        if not (pa.types.is_list(file_type) or pa.types.is_large_list(file_type)):
            raise _mismatch(where, file_type, target)
        element = _child_converter(file_type.value_field, target.element_field, ids, (*place, 0), where)
        if element is _identity and pa.types.is_list(file_type) and _same_nullability(file_type.value_field, target.element_field):
            return _identity if file_type.value_field.name == "element" else _renamed(to_arrow_type(target))
        return _list_converter(element, to_arrow_type(target))
    if isinstance(target, MapType):
        if not pa.types.is_map(file_type):
            raise _mismatch(where, file_type, target)
        key = _child_converter(file_type.key_field, target.key_field, ids, (*place, 0), where)
        value = _child_converter(file_type.item_field, target.value_field, ids, (*place, 1), where)
        if key is _identity and value is _identity and file_type == to_arrow_type(target):
            return _identity
        return _map_converter(key, value, to_arrow_type(target))
    return _primitive_converter(file_type, target, where)


def _child_converter(file_field: pa.Field, target: NestedField, ids: dict[Path, int], place: Path, where: str) -> Converter:
    """A list element or map key/value: same id or the file is not this table's."""
    file_id = ids.get(place)
    if file_id is not None and file_id != target.field_id:
        raise CorruptMetadataError(f"{where}: nested field id {file_id} where the schema has {target.field_id}")
    return _converter(file_field.type, target.field_type, ids, place, where)


def _struct_converter(file_type: pa.DataType, target: StructType, ids: dict[Path, int], place: Path, where: str) -> Converter:
    if not pa.types.is_struct(file_type):
        raise _mismatch(where, file_type, target)
    by_id = {ids[(*place, i)]: i for i in range(file_type.num_fields) if (*place, i) in ids}
    parts: list[tuple[int | None, Converter]] = []
    for child in target.fields:
        index = by_id.get(child.field_id)
        if index is None:
            parts.append((None, _identity))
        else:
            parts.append((index, _converter(file_type.field(index).type, child.field_type, ids, (*place, index), f"{where}.{child.name}")))
    arrow_fields = [to_arrow_field(c) for c in target.fields]
    unchanged = len(parts) == file_type.num_fields and all(
        index == i and convert is _identity and file_type.field(i).name == af.name and file_type.field(i).nullable == af.nullable
        for i, ((index, convert), af) in enumerate(zip(parts, arrow_fields))
    )
    if unchanged:
        return _identity

    def convert(array: pa.Array) -> pa.Array:
        if isinstance(array, pa.ChunkedArray):
            return pa.chunked_array([convert(c) for c in array.chunks], type=pa.struct(arrow_fields))
        children = [
            default_array(child, len(array)) if index is None else conv(array.field(index))
            for (index, conv), child in zip(parts, target.fields)
        ]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=arrow_fields, mask=mask)

    return convert


def _list_converter(element: Converter, target: pa.DataType) -> Converter:
    def convert(array: pa.Array) -> pa.Array:
        if isinstance(array, pa.ChunkedArray):
            return pa.chunked_array([convert(c) for c in array.chunks], type=target)
        flat = array.cast(pa.list_(array.type.value_field)) if pa.types.is_large_list(array.type) else array
        values = element(flat.values)
        mask = flat.is_null() if flat.null_count else None
        return pa.ListArray.from_arrays(flat.offsets, values, type=target, mask=mask)

    return convert


def _map_converter(key: Converter, value: Converter, target: pa.DataType) -> Converter:
    def convert(array: pa.Array) -> pa.Array:
        if isinstance(array, pa.ChunkedArray):
            return pa.chunked_array([convert(c) for c in array.chunks], type=target)
        mask = array.is_null() if array.null_count else None
        return pa.MapArray.from_arrays(array.offsets, key(array.keys), value(array.items), type=target, mask=mask)

    return convert


def _renamed(target: pa.DataType) -> Converter:
    """The same values under the requested child names (e.g. a list's element field)."""
    return lambda array: array.cast(target)


def _primitive_converter(file_type: pa.DataType, target: IcebergType, where: str) -> Converter:
    wanted = to_arrow_type(target)
    if file_type == wanted:
        return _identity
    if not _readable_as(file_type, wanted):
        raise _mismatch(where, file_type, target)
    return lambda array: array.cast(wanted)


def _readable_as(file_type: pa.DataType, wanted: pa.DataType) -> bool:
    """The promotions Iceberg allows, plus the Arrow spellings of one Iceberg type that
    writers differ in (timestamp time zone names and units, string and binary sizes, uuid as
    Arrow's extension type or as 16 bytes, dictionary-encoded values, a null-typed column)."""
    if isinstance(file_type, pa.BaseExtensionType):  # e.g. arrow.uuid: read as its storage
        return _readable_as(file_type.storage_type, wanted)
    if pa.types.is_null(file_type):  # a column of nulls only (pyarrow writes one for all-None data)
        return True
    if pa.types.is_dictionary(file_type):  # a stored Arrow schema can ask for dictionary arrays (pandas categoricals)
        return _readable_as(file_type.value_type, wanted)
    if pa.types.is_integer(file_type) and pa.types.is_integer(wanted):
        return file_type.bit_width <= wanted.bit_width
    if pa.types.is_floating(file_type) and pa.types.is_floating(wanted):
        return file_type.bit_width <= wanted.bit_width
    if pa.types.is_decimal(file_type) and pa.types.is_decimal(wanted):
        return file_type.scale == wanted.scale and file_type.precision <= wanted.precision
    if pa.types.is_timestamp(file_type) and pa.types.is_timestamp(wanted):
        return (file_type.tz is None) == (wanted.tz is None)
    if pa.types.is_time(file_type) and pa.types.is_time(wanted):
        return True
    if pa.types.is_date(file_type) and pa.types.is_date(wanted):
        return True
    strings = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    binaries = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view, pa.types.is_fixed_size_binary)
    for family in (strings, binaries):
        if any(p(file_type) for p in family) and any(p(wanted) for p in family):
            return True
    return False


def _same_nullability(file_field: pa.Field, target: NestedField) -> bool:
    return file_field.nullable == (not target.required)


def _mismatch(where: str, file_type: pa.DataType, target: IcebergType) -> CorruptMetadataError:
    return CorruptMetadataError(f"{where} is {file_type} in the file, which cannot be read as {target}")


def file_matches_schema(file_schema: pa.Schema, schema: Schema) -> bool:
    """Does the file hold every column of `schema` exactly: same ids, names and Arrow types?"""
    try:
        projection = FileProjection(file_schema, list(schema.fields), "")
    except CorruptMetadataError:
        return False
    return all(c.unchanged and c.column == c.field.name for c in projection.columns)
