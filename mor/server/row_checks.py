"""The rows a REST commit adds, checked against the table's rules where the server can; and
the columns the table's CHECK constraints use, kept from being dropped by any client.

Other engines (pyiceberg, DuckDB, Iceberg Java) know nothing of mor's CHECK constraints, and a
client whose loaded metadata predates a `set_not_null` writes against a schema where the column
was still optional: its `add-snapshot` passes every requirement it sends (nothing asserts the
schema or the properties), and would put rows in the table that its current rules forbid. So
before a commit is swapped in, the data files each added snapshot adds are checked against the
metadata it produces (mor/dml/constraints.py's `check_files`: file metrics settle what they
prove, the rest is read), when that can differ from what the writer checked: the table has
constraints, or the snapshot was written against another schema than the current one (or does
not say which). `replace` snapshots move rows and are not checked. A violation refuses the
commit with ConstraintViolationError (400): nothing is applied; so does a file that cannot be read
(400: the client named it).

A schema change that drops a column a CHECK constraint uses (by field id) is refused with
SchemaEvolutionError (400) naming the constraint, as `update_schema().drop_column` refuses it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mor.commit.row_rules import table_rules
from mor.dml.constraints import check_files, table_constraints
from mor.errors import CorruptMetadataError, SchemaEvolutionError, StorageError
from mor.format.metadata import TableMetadata
from mor.format.spec import Operation
from mor.format.updates import AddSnapshot, Update
from mor.io.fileio import FileIO
from mor.planning.planner import added_data_files
from mor.server.errors import BadRequestError

log = logging.getLogger("mor.server")


def check_added_rows(io: FileIO, new: TableMetadata, updates: Sequence[Update], checked: set[object]) -> None:
    """ConstraintViolationError when a snapshot the updates add holds rows `new`'s rules forbid.
    `checked`: the (snapshot, rules) pairs found good by earlier attempts of the same commit,
    which a lost swap makes again: their files are not read twice."""
    constrained = bool(table_constraints(new.properties))
    for update in updates:
        if not isinstance(update, AddSnapshot) or update.snapshot.operation == Operation.REPLACE:
            continue
        snapshot = update.snapshot
        key = (snapshot.snapshot_id, table_rules(new))
        if (constrained or snapshot.schema_id != new.current_schema_id) and key not in checked:
            try:
                check_files(io, new, added_data_files(io, new, snapshot), f"a data file snapshot {snapshot.snapshot_id} adds")
            except (CorruptMetadataError, StorageError, OSError) as e:
                # The client named these files: its error (a 500 would tell it "state unknown").
                # The reason stays in the log: it may describe files outside the table.
                log.info("snapshot %s: cannot read the files it adds: %s", snapshot.snapshot_id, e)
                raise BadRequestError(
                    f"snapshot {snapshot.snapshot_id}: cannot read the files it adds to check them against the table's "
                    "constraints (missing, unreadable, or not what the manifest says)"
                ) from None
            checked.add(key)


def check_constraint_columns(base: TableMetadata | None, new: TableMetadata) -> None:
    """SchemaEvolutionError when `new`'s current schema lacks a column that a CHECK constraint
    uses and `base`'s current schema has (a drop this commit makes)."""
    if base is None or base.current_schema_id == new.current_schema_id:
        return
    before, after = base.schema(), new.schema()
    for constraint in table_constraints(new.properties):
        for field_id in sorted(constraint.field_ids(before)):
            if before.find_column_name(field_id) is not None and after.find_column_name(field_id) is None:
                raise SchemaEvolutionError(
                    f"cannot drop {before.find_column_name(field_id)!r}: field {field_id} is used by constraint "
                    f"{constraint.name!r} ({constraint.expression}); drop the constraint first"
                )
