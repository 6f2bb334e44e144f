"""CHECK constraints: a named predicate every row written by mor must satisfy, as Delta Lake's.

    table.add_constraint("positive_amount", "amount > 0")
    table.drop_constraint("positive_amount")

A constraint is stored as the table property `mor.constraint.<name>` = its predicate, in mor's
filter syntax (mor/planning/filter_text.py: comparisons, `in`, `between`, `is null`,
arithmetic and functions). Other engines keep the property and ignore it: they still read and
write the table, and rows they write are not checked.

A row satisfies the constraint when the predicate is TRUE for it; FALSE and NULL break it (as
Delta Lake's "must be true for each row"; allow nulls explicitly: `amount is null or amount > 0`).
Every mor write of new rows checks them before a file is written: append, overwrite, UPDATE's
new values, UPSERT and MERGE rows, Spark writes and Spark DML; the error names the constraint
and the first row that breaks it, and nothing is committed. Rows that only move (compaction,
copy-on-write rewrites of untouched rows) are not checked again. NOT NULL is the schema's
required flag (`table.set_not_null("col")`, refused while a live row holds a null).

Adding a constraint reads the live rows it could fail on (files whose metrics prove it true for
every row are skipped) and refuses it, naming a row, when one breaks it; the commit asserts the
snapshot it checked, so rows committed meanwhile are checked again. A write that started before
the constraint was added and commits after it is not checked against it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.schema import Schema

from mor.errors import ConstraintViolationError, InvalidArgumentError
from mor.planning.filters import FileFilter, bind_filter, filter_field_ids, parse_filter
from mor.read.row_filter import to_arrow_filter
from mor.read.scan_reader import read_batches

if TYPE_CHECKING:
    from mor.api.table import Table

PREFIX = "mor.constraint."
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


@dataclass(frozen=True, order=True)
class Constraint:
    name: str
    expression: str

    @property
    def property(self) -> str:
        return PREFIX + self.name


def table_constraints(properties: Mapping[str, str]) -> tuple[Constraint, ...]:
    """The table's constraints, by name."""
    return tuple(sorted(Constraint(k[len(PREFIX) :], v) for k, v in properties.items() if k.startswith(PREFIX)))


def new_constraint(name: object, expression: object, schema: Schema, existing: Mapping[str, str]) -> Constraint:
    """A constraint to add, checked: a name of letters, digits and `_` the table does not use
    yet, and a predicate over the table's columns (InvalidFilterError otherwise)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidArgumentError(f"a constraint name is letters, digits and '_' (not first a digit), got {name!r}")
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidArgumentError(f"a constraint is a predicate in filter text, e.g. 'amount > 0', got {expression!r}")
    constraint = Constraint(name, expression)
    if constraint.property in existing:
        raise InvalidArgumentError(f"the table already has a constraint {name!r}: {existing[constraint.property]!r}")
    _compiled(constraint, schema)  # a bad predicate fails now
    return constraint


class ConstraintCheck:
    """The table's constraints compiled once for a write of rows of `schema`."""

    def __init__(self, constraints: Iterable[Constraint], schema: Schema):
        self.checks = [(c, _compiled(c, schema)) for c in constraints]

    def __bool__(self) -> bool:
        return bool(self.checks)

    def check(self, rows: pa.Table | pa.RecordBatch) -> None:
        """ConstraintViolationError naming the constraint and the first row that breaks it."""
        for constraint, broken in self.checks:
            bad = rows.filter(broken)
            if bad.num_rows:
                row = bad.slice(0, 1).to_pylist()[0]
                raise ConstraintViolationError(
                    f"constraint {constraint.name!r} ({constraint.expression}) is violated by "
                    f"{bad.num_rows} of {rows.num_rows} rows, e.g. {_shown(row)}; nothing was committed"
                )

    def checked(self, batches: Iterable[Any]) -> Iterator[Any]:
        """`batches`, each checked before it is passed on."""
        for batch in batches:
            self.check(batch)
            yield batch


def check_rows(rows: pa.Table | pa.RecordBatch, properties: Mapping[str, str], schema: Schema) -> None:
    """Check `rows` (of `schema`'s columns) against the constraints in `properties`."""
    constraints = table_constraints(properties)
    if constraints:
        ConstraintCheck(constraints, schema).check(rows)


def check_live_rows(table: Table, constraint: Constraint) -> None:
    """ConstraintViolationError when a live row of the table's current snapshot breaks
    `constraint`; reads only its columns (the row named shows those), and only files whose
    metrics cannot prove it."""
    metadata = table.metadata
    schema = metadata.schema()
    predicate = parse_filter(constraint.expression)
    names = [schema.find_column_name(i) for i in sorted(filter_field_ids(schema, predicate))]
    proven = FileFilter(schema, metadata.specs(), predicate)
    tasks = [t for t in table.scan().plan_files() if t.delete_files or not proven.every_row_matches(t.data_file)]
    columns = schema.select(*names)
    check = ConstraintCheck([constraint], columns)
    try:
        for batch in read_batches(table.io, tasks, schema, columns, AlwaysTrue()):
            check.check(batch)
    except ConstraintViolationError as e:
        raise ConstraintViolationError(f"cannot add it: existing rows break it. {e}") from None


def _compiled(constraint: Constraint, schema: Schema) -> pc.Expression:
    """An Arrow expression selecting the rows that break `constraint` (predicate not TRUE)."""
    holds = to_arrow_filter(bind_filter(schema, parse_filter(constraint.expression)), schema)
    return ~(holds.is_valid() & holds)


def _shown(row: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in row.items())
    return "{" + (text if len(text) <= 300 else text[:300] + "...") + "}"
