"""When a DML commit conflicts with what others committed after the snapshot it read.

Isolation levels, per table property (`write.delete.isolation-level`,
`write.update.isolation-level`, `write.merge.isolation-level`), with Iceberg's meaning:
- `serializable` (default): no commit since may have added rows the operation's predicate (or,
  for MERGE/UPSERT, its keys) would have matched, and no rows it changed may have been changed;
- `snapshot`: only the second rule; rows added meanwhile are allowed.
Both levels: the data files the operation removes or writes deletes for must still be live.

Iceberg decides these from partitions and bounds alone, so two writers changing different rows
of the same file conflict. mor reads values where metadata cannot decide: a file added meanwhile
conflicts only if it holds a matching row, a delete added meanwhile only if it removes a row
this operation removed or rewrote (its positions, or its equality keys checked against those
rows' values). What remains is a true conflict: the operation's result would differ had it run
after the other commit. `Table` then re-plans the operation on the new state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema

from mor.commit.snapshot_producer import Validator
from mor.errors import InvalidArgumentError
from mor.expr.filters import FileFilter
from mor.format.content_file import DataFile
from mor.format.metadata import TableMetadata
from mor.format.properties import DELETE_ISOLATION_LEVEL, ISOLATION_LEVELS, MERGE_ISOLATION_LEVEL, UPDATE_ISOLATION_LEVEL
from mor.io.fileio import FileIO
from mor.planning.conflicts import commits_since, validate_files_still_live, validate_no_new_vectors
from mor.planning.delete_index import applies_to
from mor.planning.planner import unpartitioned_spec_ids
from mor.read.conflict_rows import DeleteReader, has_matching_rows, removes_rows
from mor.read.equality_deletes import EqualityKeySet

SERIALIZABLE, SNAPSHOT = LEVELS = ISOLATION_LEVELS
ISOLATION_PROPERTIES = {"delete": DELETE_ISOLATION_LEVEL, "update": UPDATE_ISOLATION_LEVEL, "merge": MERGE_ISOLATION_LEVEL}


def isolation_level(properties: Mapping[str, str], kind: str) -> str:
    name = ISOLATION_PROPERTIES[kind]
    level = properties.get(name, SERIALIZABLE).lower()
    if level not in LEVELS:
        raise InvalidArgumentError(f"table property {name} must be one of {LEVELS}, got {properties[name]!r}")
    return level


@dataclass(frozen=True)
class TouchedRows:
    """Rows of one data file that an operation removed: `positions` (sorted), or None when it
    rewrote the file (copy-on-write) and so depends on every row of it."""

    data_file: DataFile
    positions: np.ndarray | None


@dataclass(frozen=True)
class ReadScope:
    """What a DML operation read: the rows its predicate selects (`row_filter`; for MERGE and
    UPSERT a key range, with `keys` selecting rows exactly) and the rows it changed."""

    row_filter: BooleanExpression
    touched: Sequence[TouchedRows]
    keys: EqualityKeySet | None = None
    vectors: frozenset[str] = frozenset()  # data files the operation writes deletion vectors for (v3)


def dml_validator(io: FileIO, schema: Schema, scope: ReadScope, isolation: str) -> Validator:
    def validate(read_base: TableMetadata, current: TableMetadata) -> None:
        commits = commits_since(io, read_base, current)
        validate_files_still_live(commits, [t.data_file.file_path for t in scope.touched])
        validate_no_new_vectors(commits, scope.vectors)
        file_filter = FileFilter(schema, current.specs(), scope.row_filter)
        unpartitioned = unpartitioned_spec_ids(current)
        deletes = DeleteReader(io, schema)
        for c in commits:
            if isolation == SERIALIZABLE:
                for f in c.added_data:
                    if file_filter.file_may_match(f) and has_matching_rows(io, schema, f, scope.row_filter, scope.keys):
                        raise c.conflict("added rows this operation would have matched", [f.file_path])
            for d in c.added_deletes:
                for t in scope.touched:
                    if applies_to(d, t.data_file, unpartitioned) and removes_rows(deletes, d, t.data_file, t.positions):
                        raise c.conflict(f"deleted rows of {t.data_file.file_path} that this operation changed", [d.file_path])

    return validate
