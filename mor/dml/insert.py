"""New rows into a table: `append`, `overwrite` and a new table's first rows. Each fits the rows to
the table (mor/dml/append_schema.py), checks its CHECK constraints, streams them through the
rolling writer (files roll at `write.target-file-size-bytes`, one open file per partition) and
commits; a failed write or commit leaves none of its files behind."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema

from mor.commit.idempotency import Idempotency
from mor.commit.snapshot_producer import Changes
from mor.dml.append_schema import APPEND_WIDEN_HINT, prepare_append
from mor.dml.constraints import ConstraintCheck, table_constraints
from mor.dml.delete import overwrite_where, rows_within
from mor.dml.handle import TableHandle
from mor.dml.runner import commit, committed_before, run_dml
from mor.errors import CommitStateUnknownError
from mor.format.content_file import DataFile
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.spec import Operation
from mor.io.fileio import FileIO
from mor.progress import Progress
from mor.write.options import WriteOptions
from mor.write.rolling import RollingDataWriter, write_rows


def write_table_rows(
    io: FileIO, metadata: TableMetadata, schema: Schema, rows: Iterator[pa.Table], progress: Progress, row_count: int | None
) -> list[DataFile]:
    """`rows`, fitted to `schema` already, checked against the table's CHECK constraints and
    written as the table's data files (stage "write rows"); nothing left behind on an error."""
    checked = ConstraintCheck(table_constraints(metadata.properties), schema).checked(rows)
    writer = RollingDataWriter(
        io, metadata.location, schema, metadata.spec(), WriteOptions(metadata.properties), sort_order=metadata.sort_order
    )
    with progress.stage("write rows", row_count, "rows", with_bytes=True) as step:
        return write_rows(writer, checked, step)


def append_rows(
    table: TableHandle,
    tables: Iterator[pa.Table],
    schema_mode: str | None,
    progress: Progress,
    idempotency: Idempotency | None,
    row_count: int | None = None,
) -> Snapshot | None:
    """One `append` snapshot of `tables`' rows (and, with schema_mode "merge", the schema they
    add); the earlier snapshot when `idempotency` was committed before."""
    if (earlier := committed_before(table, idempotency)) is not None:
        return earlier
    schema, rows, new_schema = prepare_append(table.metadata, tables, schema_mode, APPEND_WIDEN_HINT)
    files = write_table_rows(table.io, table.metadata, schema, rows, progress, row_count)
    return commit(table, Changes(Operation.APPEND, added_data=files, schema=new_schema, idempotency=idempotency))


def overwrite_rows(
    table: TableHandle,
    tables: Iterator[pa.Table],
    row_filter: BooleanExpression,
    where: object,
    mode: str,
    progress: Progress,
    idempotency: Idempotency | None,
    allow_rows_outside_where: bool,
    row_count: int | None = None,
) -> Snapshot | None:
    """One `overwrite` snapshot: the rows matching `row_filter` go (as `delete` removes them, by
    `mode`), `tables`' rows come in. Unless `allow_rows_outside_where`, every new row must match
    `where` (RowsOutsideWhereError, nothing written)."""
    if (earlier := committed_before(table, idempotency)) is not None:
        return earlier
    checked_on = table.metadata
    schema, rows, _ = prepare_append(checked_on, tables, None)
    if not allow_rows_outside_where:
        rows = rows_within(rows, row_filter, schema, where)
    files = write_table_rows(table.io, checked_on, schema, rows, progress, row_count)
    try:
        plan = lambda: overwrite_where(table, row_filter, mode, files, progress)  # noqa: E731
        return run_dml(table, "delete", plan, kept=files, idempotency=idempotency, rows_checked_on=checked_on)
    except CommitStateUnknownError:
        raise  # the files may be referenced by a commit that landed: leave them
    except BaseException:
        for f in files:
            table.io.delete_quietly(f.file_path)
        raise
