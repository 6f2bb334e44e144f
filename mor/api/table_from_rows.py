"""`catalog.create_table(name, data)`: a new table whose schema is the data's, holding the data.

The schema is the data's Arrow schema (its first batch), mapped to Iceberg types as
`create_table(schema=...)` maps one, except that decimals pyarrow infers from Python Decimal
objects in a pandas column become decimal(38, S) (mor/api/inputs.py `new_table_schema`), so
that later appends of larger values fit. With `schema=` too, that schema is the table's and
the data must fit it, as an append's must (mor/write/arrow_schema.py `conform`).

The table appears with its first snapshot in one catalog operation or not at all: the data
files are written first and the commit that creates the table adds them
(`Catalog.new_table_operations`, as `create_table_from_files` and Spark's create-on-write do);
data that does not fit leaves no table and no file. A REST catalog's server creates tables
itself: the table is created empty, the rows appended, and the table dropped again if the
append fails (a reader may see the empty table meanwhile).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyiceberg.schema import Schema

from mor.api.inputs import as_tables, new_table_schema
from mor.errors import CommitStateUnknownError, SchemaMismatchError, TableAlreadyExistsError

if TYPE_CHECKING:
    from mor.api.catalog import Catalog
    from mor.api.table import Table
    from mor.format.metadata import TableMetadata


def create_with_rows(
    catalog: Catalog,
    identifier: str,
    schema: pa.Schema | Schema | None,
    data: Any,
    partition_by: list[str] | None,
    properties: dict[str, str] | None,
    location: str | None,
    format_version: int | None,
) -> Table:
    """A new table `identifier` holding `data` (see the module docstring)."""
    from mor.api.catalog import new_identifier, new_table_parts

    new_identifier(identifier)
    if catalog.table_exists(identifier):
        raise TableAlreadyExistsError(f"table {identifier} already exists")
    tables = as_tables(data, "the data of the new table")
    first = next(tables, None)
    if schema is None:
        if first is None:
            raise SchemaMismatchError("the data of the new table holds no batches, so it has no schema: pass schema= too")
        schema = new_table_schema(data, first.schema)
    rows: Iterator[pa.Table] = iter(()) if first is None else chain([first], tables)
    iceberg_schema, spec, table_properties, version = new_table_parts(schema, partition_by, properties, format_version)
    if not catalog.creates_tables_with_first_commit:  # a REST server creates tables (and chooses where)
        table = catalog.create_table(identifier, iceberg_schema, partition_by, properties, location, version)
        try:
            table.append(rows)
        except BaseException:
            catalog.drop_table(identifier)
            raise
        return table
    metadata = catalog.metadata_for_new_table(identifier, iceberg_schema, spec, table_properties, location, version)
    return _created_by_first_commit(catalog, identifier, metadata, rows)


def _created_by_first_commit(catalog: Catalog, identifier: str, metadata: TableMetadata, rows: Iterator[pa.Table]) -> Table:
    """The data files written against the new table's metadata, then one commit that creates
    the table with them (nothing left behind when the rows do not fit or the commit fails)."""
    from mor.api.schema_update import prepare_append
    from mor.commit.snapshot_producer import Changes, commit_changes
    from mor.dml.constraints import ConstraintCheck, table_constraints
    from mor.format.spec import Operation
    from mor.write.parquet_files import WriteOptions
    from mor.write.rolling import RollingDataWriter, write_rows

    table_schema, conformed, _ = prepare_append(metadata, rows, None)
    checked = ConstraintCheck(table_constraints(metadata.properties), table_schema).checked(conformed)
    writer = RollingDataWriter(
        catalog.io, metadata.location, table_schema, metadata.spec(), WriteOptions(metadata.properties), sort_order=metadata.sort_order
    )
    files = write_rows(writer, checked)  # removes what it wrote when a batch does not fit
    try:  # no rows: an append snapshot of no files, as append() commits for them
        changes = Changes(Operation.APPEND, added_data=files)
        commit_changes(catalog.io, catalog.new_table_operations(identifier), metadata, "", changes)
    except CommitStateUnknownError:
        raise  # the table may exist with these files: never delete them
    except BaseException:
        for f in files:
            catalog.io.delete_quietly(f.file_path)
        raise
    return catalog.load_table(identifier)
