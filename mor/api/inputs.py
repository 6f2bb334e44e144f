"""The rows users hand to append, upsert, merge and delete_rows, as Arrow tables.

Taken: pyarrow Tables, RecordBatches, RecordBatchReaders and iterables of batches or tables;
pandas DataFrames; and anything that exports the Arrow PyCapsule stream interface
(`__arrow_c_stream__`: polars DataFrames, DuckDB relations, nanoarrow and arro3 objects...).
Nothing here imports pandas or polars: a pandas DataFrame is known by the module of its type
and converted by pyarrow, which imports pandas then (the caller has it loaded already).

pandas goes through `pa.Table.from_pandas` rather than its stream export so that the index is
dropped and nullable ints (`Int64`) stay integers with nulls. Dictionary-encoded columns
(pandas categoricals, polars `Categorical`/`Enum`) are decoded to their values (a table column
holds values), and string and binary views (polars' strings) become plain strings and binaries.
The values are then fitted to the table's types by `conform`
(mor/write/arrow_schema.py), where the cast rules live.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import pyarrow as pa

from mor.errors import SchemaMismatchError


class ArrowStream(Protocol):
    """An object that exports its rows through the Arrow PyCapsule stream interface."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...


# What the write verbs take. pandas DataFrames too, which are typed as Any: no pandas stubs needed.
Rows = pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch] | ArrowStream | Any

# Rows per table handed to the writer from one large input: about a row group.
CHUNK_ROWS = 1 << 20

ACCEPTED = (
    "a pyarrow Table, RecordBatch, RecordBatchReader or iterable of RecordBatches, "
    "a pandas or polars DataFrame, or an object with __arrow_c_stream__"
)


def as_table(data: Any, what: str) -> pa.Table:
    """All the rows of `data` in one table; SchemaMismatchError for what is no table of rows."""
    if isinstance(data, pa.Table):
        return decoded(data)
    if isinstance(data, pa.RecordBatchReader) or _is_arrow_stream(data):
        reader = data if isinstance(data, pa.RecordBatchReader) else _stream_reader(data, what)
        return decoded(reader.read_all())  # an empty stream keeps its schema
    tables = list(as_tables(data, what))
    if not tables:
        raise SchemaMismatchError(f"{what} holds no batches, so it has no schema: pass {ACCEPTED}")
    try:
        return pa.concat_tables(tables)
    except pa.ArrowInvalid as e:
        raise SchemaMismatchError(f"the batches of {what} differ in schema: {e}") from None


def as_tables(data: Any, what: str) -> Iterator[pa.Table]:
    """The rows of `data` as a stream of tables of at most about a row group each (a reader or
    iterator is read as it is consumed). The kind of input is checked now, not on first use."""
    if isinstance(data, pa.Table):
        return _chunks(decoded(data))
    if isinstance(data, pa.RecordBatch):
        return _chunks(decoded(pa.Table.from_batches([data])))
    if isinstance(data, pa.RecordBatchReader):
        return _read(data)
    if _is_pandas_frame(data):
        return _chunks(decoded(_from_pandas(data, what)))
    if _is_arrow_stream(data):
        return _read(_stream_reader(data, what))
    if isinstance(data, (str, bytes, dict)) or not isinstance(data, Iterable):
        raise SchemaMismatchError(f"{what} must be {ACCEPTED}; got {type(data).__name__}")
    return _from_iterable(data, what)


def is_rows(data: Any) -> bool:
    """Is `data` something the write verbs take as rows (rather than, say, a schema or a dict)?"""
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)) or _is_pandas_frame(data) or _is_arrow_stream(data):
        return True
    return isinstance(data, Iterable) and not isinstance(data, (str, bytes, dict, pa.Schema))


def known_row_count(data: Any) -> int | None:
    """The number of rows of `data` when it says so without being read (a table, batch or data
    frame); None for streams and iterators."""
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return data.num_rows
    if _is_pandas_frame(data):
        return len(data)
    return None


# The precision of decimals inferred from Python Decimal objects in a pandas column, as Spark
# infers DecimalType(38, 18) from them (mor keeps the data's scale instead of 18).
INFERRED_DECIMAL_PRECISION = 38


def new_table_schema(data: Any, inferred: pa.Schema) -> pa.Schema:
    """The Arrow schema a new table takes from `data`, whose rows came out with Arrow schema
    `inferred`. pyarrow infers a decimal from the Python Decimal objects of a pandas object
    column with the fewest digits that hold those values (decimal(5, 2) for 123.45), so the
    next append's larger values would not fit: such a decimal (also inside a struct, list or
    map) becomes decimal(38, S), its scale S kept (the most decimal places of any value). A
    type the data declares (pyarrow, polars, a pandas ArrowDtype column) is kept as it is."""
    if not _is_pandas_frame(data):
        return inferred
    object_columns = {str(name) for name, dtype in data.dtypes.items() if str(dtype) == "object"}
    return pa.schema([f.with_type(_wide_decimals(f.type)) if f.name in object_columns else f for f in inferred], metadata=inferred.metadata)


def _wide_decimals(t: pa.DataType) -> pa.DataType:
    if pa.types.is_decimal(t):
        return pa.decimal128(INFERRED_DECIMAL_PRECISION, t.scale) if t.precision <= INFERRED_DECIMAL_PRECISION else t
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_wide_decimals(f.type)) for f in t])
    if pa.types.is_map(t):
        key = t.key_field.with_type(_wide_decimals(t.key_type))
        return pa.map_(key, t.item_field.with_type(_wide_decimals(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_wide_decimals(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_wide_decimals(t.value_type)))
    return t


def decoded(table: pa.Table) -> pa.Table:
    """`table` with dictionary-encoded columns decoded to their values, and string and binary
    views (polars' strings) as plain strings and binaries: Arrow's kernels, `take` among them,
    do not all take views. Nested views (in lists and structs) are converted too."""
    for i, field in enumerate(table.schema):
        plain = _plain_type(field.type)
        if plain != field.type:
            table = table.set_column(i, pa.field(field.name, plain, field.nullable), _plain_column(table.column(i), plain))
    return table


def _plain_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(t):
        return _plain_type(t.value_type)
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_plain_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain_type(f.type)) for f in t])
    return t


def _plain_column(column: pa.ChunkedArray, plain: pa.DataType) -> pa.ChunkedArray:
    if not pa.types.is_dictionary(column.type):
        return column.cast(plain)
    # The values first (a dictionary of views does not cast to plain strings in one step).
    chunks = [pa.DictionaryArray.from_arrays(c.indices, c.dictionary.cast(plain)) for c in column.chunks]
    return pa.chunked_array(chunks, pa.dictionary(column.type.index_type, plain)).cast(plain)


def _chunks(table: pa.Table) -> Iterator[pa.Table]:
    if table.num_rows == 0:
        yield table
        return
    for batch in table.to_batches(max_chunksize=CHUNK_ROWS):
        yield pa.Table.from_batches([batch])


def _read(reader: pa.RecordBatchReader) -> Iterator[pa.Table]:
    for batch in reader:
        yield decoded(pa.Table.from_batches([batch]))


def _from_iterable(items: Iterable[Any], what: str) -> Iterator[pa.Table]:
    for item in items:
        if isinstance(item, pa.RecordBatch):
            yield decoded(pa.Table.from_batches([item]))
        elif isinstance(item, pa.Table):
            yield decoded(item)
        else:
            raise SchemaMismatchError(f"{what}: an iterable must yield RecordBatches or Tables, got a {type(item).__name__}")


def _is_pandas_frame(data: Any) -> bool:
    """A pandas DataFrame (or a subclass, such as a GeoDataFrame), known without importing pandas."""
    return any(c.__name__ == "DataFrame" and c.__module__.startswith("pandas.") for c in type(data).__mro__)


def _is_arrow_stream(data: Any) -> bool:
    """Anything but a pandas DataFrame (converted by `_from_pandas`) that exports an Arrow stream."""
    return hasattr(type(data), "__arrow_c_stream__") and not _is_pandas_frame(data)


def _from_pandas(frame: Any, what: str) -> pa.Table:
    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise SchemaMismatchError(f"{what}: pyarrow cannot convert the pandas DataFrame: {e}") from None


def _stream_reader(data: Any, what: str) -> pa.RecordBatchReader:
    try:
        return pa.RecordBatchReader.from_stream(data)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise SchemaMismatchError(f"{what}: its Arrow stream (__arrow_c_stream__) is no stream of record batches: {e}") from None
