"""CHECK constraints: a named predicate every row written by mor must satisfy, as Delta Lake's.

    table.add_constraint("positive_amount", "amount > 0")
    table.drop_constraint("positive_amount")

A constraint is stored as the table property `mor.constraint.<name>` = its predicate, in mor's
filter syntax (mor/expr/parse.py: comparisons, `in`, `between`, `is null`,
arithmetic and functions). Other engines keep the property and ignore it: they still read and
write the table, and rows they write are not checked.

A row satisfies the constraint when the predicate is TRUE for it; FALSE and NULL break it (as
Delta Lake's "must be true for each row"; allow nulls explicitly: `amount is null or amount > 0`).
Every mor write of new rows checks them before a file is written: append, overwrite, UPDATE's
new values, UPSERT and MERGE rows, Spark writes and Spark DML; the error names the constraint
and the first row that breaks it, and nothing is committed. Rows that only move (compaction,
copy-on-write rewrites of untouched rows) are not checked again. NOT NULL is the schema's
required flag (`table.set_not_null("col")`, refused while a live row holds a null).

A constraint binds to field ids, not names: `mor.constraint-columns.<name>` records the field id
of every part of each column path its text names, so after `rename_column` (by mor or any other
engine) the text's old name still means the same column; dropping a column a constraint uses is
refused (SchemaEvolutionError naming the constraint). Constraints added before mor recorded the
ids bind by name.

Adding a constraint reads the live rows it could fail on (files whose metrics prove it true for
every row are skipped) and refuses it, naming a row, when one breaks it; the commit asserts the
snapshot it checked, so rows committed meanwhile are checked again. A write checks its rows
against the handle's schema and constraints; its commit compares them with the table's at the
moment it commits, and when they differ (a constraint added, a column made NOT NULL since) the
files it wrote are read back and checked again (`check_files`), and the commit is refused with
ConstraintViolationError when a row breaks the new rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, NestedField, StructType

from mor.commit.row_rules import RowRules, rules_of
from mor.dml.handle import live_tasks
from mor.errors import ConstraintViolationError, InvalidArgumentError, InvalidFilterError
from mor.expr.arrow_rows import to_arrow_filter
from mor.expr.filters import FileFilter, bind_filter, filter_field_ids, parse_filter
from mor.format.content_file import DataFile
from mor.format.metadata import TableMetadata
from mor.format.properties import CONSTRAINT_COLUMNS_PREFIX, CONSTRAINT_PREFIX, NAME_MAPPING_PROPERTY
from mor.io.fileio import FileIO
from mor.planning.task import FileScanTask
from mor.read.scan_reader import read_batches

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle

PREFIX = CONSTRAINT_PREFIX
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

# A column path as the constraint's text names it, and the field id of each part of the path.
ColumnIds = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, order=True)
class Constraint:
    name: str
    expression: str
    columns: ColumnIds = ()  # empty: added before mor recorded field ids, bound by name

    @property
    def columns_property(self) -> str:
        return CONSTRAINT_COLUMNS_PREFIX + self.name

    @property  # last: the name `property` hides the builtin below it in the class body
    def property(self) -> str:
        return PREFIX + self.name

    def properties(self) -> dict[str, str]:
        """The table properties that store the constraint."""
        columns = {path: list(ids) for path, ids in self.columns}
        return {self.property: self.expression, self.columns_property: json.dumps(columns, sort_keys=True)}

    def bound_schema(self, schema: Schema) -> Schema:
        """`schema` with its fields named as the constraint's text names them (found by field
        id), for binding the text; the ids, types and shape are `schema`'s. InvalidFilterError
        naming the constraint when a column it uses is gone."""
        aliases: dict[int, str] = {}
        for path, ids in self.columns:
            if any(schema.find_column_name(i) is None for i in ids):
                raise InvalidFilterError(
                    f"constraint {self.name!r} ({self.expression}) uses column {path!r}, which the table no longer has "
                    f"(field id {ids[-1]}, dropped by another engine?): drop the constraint (drop_constraint({self.name!r}))"
                )
            parts = path.split(".")
            aliases.update(zip(ids, parts) if len(parts) == len(ids) else [(ids[-1], path)])
        if not aliases or all(schema.find_field(i).name == n for i, n in aliases.items()):
            return schema
        fields = _aliased_fields(tuple(schema.fields), aliases)
        return Schema(*fields, schema_id=schema.schema_id, identifier_field_ids=list(schema.identifier_field_ids))

    def field_ids(self, schema: Schema) -> set[int]:
        """The ids of the columns the constraint reads (and of the structs that hold them)."""
        if self.columns:
            return {i for _, ids in self.columns for i in ids}
        try:
            return filter_field_ids(schema, parse_filter(self.expression))
        except InvalidFilterError:
            return set()

    def described(self, schema: Schema) -> str:
        """The expression, with the columns' current names where they were renamed since."""
        renamed = []
        for path, ids in self.columns:
            now = schema.find_column_name(ids[-1])
            if now is not None and now != path:
                renamed.append(f"{path} is now {now}")
        return self.expression + (f" [{', '.join(renamed)}]" if renamed else "")


def table_constraints(properties: Mapping[str, str]) -> tuple[Constraint, ...]:
    """The table's constraints, by name."""
    out = []
    for key, expression in properties.items():
        if key.startswith(PREFIX):
            name = key[len(PREFIX) :]
            out.append(Constraint(name, expression, _columns(properties.get(CONSTRAINT_COLUMNS_PREFIX + name))))
    return tuple(sorted(out))


def new_constraint(name: object, expression: object, schema: Schema, existing: Mapping[str, str]) -> Constraint:
    """A constraint to add, checked: a name of letters, digits and `_` the table does not use
    yet, and a predicate over the table's columns (InvalidFilterError otherwise)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidArgumentError(f"a constraint name is letters, digits and '_' (not first a digit), got {name!r}")
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidArgumentError(f"a constraint is a predicate in filter text, e.g. 'amount > 0', got {expression!r}")
    if PREFIX + name in existing:
        raise InvalidArgumentError(f"the table already has a constraint {name!r}: {existing[PREFIX + name]!r}")
    used = filter_field_ids(schema, parse_filter(expression))  # a bad predicate fails now
    parents = _parent_ids(tuple(schema.fields))
    columns = []
    for field_id in sorted(used):
        path = [field_id]
        while path[0] in parents:
            path.insert(0, parents[path[0]])
        columns.append((schema.find_column_name(field_id) or str(field_id), tuple(path)))
    constraint = Constraint(name, expression, tuple(columns))
    _compiled(constraint, schema)
    return constraint


class ConstraintCheck:
    """The table's constraints compiled once for a write of rows of `schema`."""

    def __init__(self, constraints: Iterable[Constraint], schema: Schema):
        self.schema = schema
        self.checks = [(c, _compiled(c, schema)) for c in constraints]

    def __bool__(self) -> bool:
        return bool(self.checks)

    def check(self, rows: pa.Table | pa.RecordBatch, where: str = "") -> None:
        """ConstraintViolationError naming the constraint and the first row that breaks it."""
        for constraint, broken in self.checks:
            bad = rows.filter(broken)
            if bad.num_rows:
                row = bad.slice(0, 1).to_pylist()[0]
                raise ConstraintViolationError(
                    f"constraint {constraint.name!r} ({constraint.described(self.schema)}) is violated by "
                    f"{bad.num_rows} of {rows.num_rows} rows{where}, e.g. {_shown(row)}; nothing was committed"
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


def check_live_rows(table: TableHandle, constraint: Constraint) -> None:
    """ConstraintViolationError when a live row of the table's current snapshot breaks
    `constraint`; reads only its columns (the row named shows those), and only files whose
    metrics cannot prove it."""
    metadata = table.metadata
    schema = metadata.schema()
    proof = _proof(constraint, schema, metadata)
    tasks = [t for t in live_tasks(table, AlwaysTrue()) if t.delete_files or not proof.every_row_matches(t.data_file)]
    columns = schema.select(*_column_names(schema, constraint.field_ids(schema)))
    check = ConstraintCheck([constraint], columns)
    try:
        for batch in read_batches(table.io, tasks, schema, columns, AlwaysTrue()):
            check.check(batch)
    except ConstraintViolationError as e:
        raise ConstraintViolationError(f"cannot add it: existing rows break it. {e}") from None


def check_files(io: FileIO, metadata: TableMetadata, files: Sequence[DataFile], what: str = "", name_mapping: str | None = None) -> None:
    """ConstraintViolationError when a row of the data files `files` (about to be added to the
    table) holds a null in a column `metadata`'s schema makes required, or breaks one of its
    constraints. A file's metrics settle what they prove (no nulls; every row in bounds); the
    rest is read, only the columns needed. `what`: how the error names the files' origin;
    `name_mapping`: for files without field ids (default: the table's)."""
    schema = metadata.schema()
    name_mapping = name_mapping or metadata.properties.get(NAME_MAPPING_PROPERTY)
    proofs = [(c, _proof(c, schema, metadata)) for c in table_constraints(metadata.properties)]
    required = [f for f in schema.fields if f.required]  # top-level: a null struct hides its fields
    for file in files:
        nulls = file.null_value_counts or {}
        unproven_required = [f for f in required if not (f.field_type.is_primitive and nulls.get(f.field_id) == 0)]
        unproven = [c for c, proof in proofs if not proof.every_row_matches(file)]
        if not unproven_required and not unproven:
            continue
        ids = {f.field_id for f in unproven_required} | {i for c in unproven for i in c.field_ids(schema)}
        columns = _optional(schema.select(*_column_names(schema, ids)))
        task = FileScanTask(file, (), AlwaysTrue(), name_mapping)
        check = ConstraintCheck(unproven, columns)
        where = f" of {what or 'file'} {file.file_path}"
        for batch in read_batches(io, [task], schema, columns, AlwaysTrue()):
            for f in unproven_required:
                column = batch.column(f.name)
                if column.null_count:
                    raise ConstraintViolationError(
                        f"column {f.name!r} is NOT NULL (required) in schema {schema.schema_id}, but {column.null_count} rows"
                        f"{where} hold a null there; nothing was committed"
                    )
            check.check(batch, where)


def added_rows_rules(io: FileIO, schema_id: int, properties: Mapping[str, str], files: Sequence[DataFile]) -> RowRules:
    """What a commit adding `files` asserts: their rows were checked against schema `schema_id`
    and the constraints in `properties`; on a base where those changed, the files are read back
    and checked against its rules (`check_files`)."""
    return RowRules(rules_of(schema_id, properties), lambda base: check_files(io, base, files, "a file this commit adds"))


def _proof(constraint: Constraint, schema: Schema, metadata: TableMetadata) -> FileFilter:
    """What decides from a file's metrics whether every row satisfies `constraint`
    (`every_row_matches`), made once for all the files checked."""
    return FileFilter(constraint.bound_schema(schema), metadata.specs(), parse_filter(constraint.expression))


def _compiled(constraint: Constraint, schema: Schema) -> pc.Expression:
    """An Arrow expression selecting the rows that break `constraint` (predicate not TRUE):
    bound by field id, evaluated on rows named as `schema` names its columns."""
    bound = bind_filter(constraint.bound_schema(schema), parse_filter(constraint.expression))
    holds = to_arrow_filter(bound, schema)
    return ~(holds.is_valid() & holds)


def _columns(text: str | None) -> ColumnIds:
    """The column ids stored for a constraint; () when missing or unreadable (bound by name)."""
    if not text:
        return ()
    try:
        raw = json.loads(text)
        return tuple(sorted((str(path), tuple(int(i) for i in ids)) for path, ids in raw.items() if ids))
    except (ValueError, TypeError, AttributeError):
        return ()


def _aliased_fields(fields: tuple[NestedField, ...], aliases: dict[int, str]) -> list[NestedField]:
    """`fields` renamed by `aliases`; a field not renamed whose name an alias takes is renamed
    out of the way (its id in its name), so no two siblings share a name."""
    taken = {aliases[f.field_id] for f in fields if f.field_id in aliases}
    out = []
    for f in fields:
        name = aliases.get(f.field_id, f.name)
        if f.field_id not in aliases and name in taken:
            name = f"{name}#{f.field_id}"
        out.append(NestedField(f.field_id, name, _aliased_type(f.field_type, aliases), f.required, f.doc))
    return out


def _aliased_type(t: IcebergType, aliases: dict[int, str]) -> IcebergType:
    if isinstance(t, StructType):
        return StructType(*_aliased_fields(tuple(t.fields), aliases))
    return t  # list and map element names are fixed; constraints do not reach inside them


def _parent_ids(fields: tuple[NestedField, ...], parent: int | None = None) -> dict[int, int]:
    """Field id -> the id of the struct field holding it, for fields inside structs."""
    out: dict[int, int] = {}
    for f in fields:
        if parent is not None:
            out[f.field_id] = parent
        if isinstance(f.field_type, StructType):
            out.update(_parent_ids(tuple(f.field_type.fields), f.field_id))
    return out


def _column_names(schema: Schema, ids: Iterable[int]) -> list[str]:
    """The top-level columns holding the fields `ids` (a struct is read whole)."""
    parents = _parent_ids(tuple(schema.fields))
    tops = set()
    for field_id in ids:
        while field_id in parents:
            field_id = parents[field_id]
        tops.add(field_id)
    return [f.name for f in schema.fields if f.field_id in tops]


def _optional(schema: Schema) -> Schema:
    """`schema` with its top-level columns optional: the rows read are checked, not trusted."""
    fields = [NestedField(f.field_id, f.name, f.field_type, False, f.doc) for f in schema.fields]
    return Schema(*fields, schema_id=schema.schema_id)


def _shown(row: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in row.items())
    return "{" + (text if len(text) <= 300 else text[:300] + "...") + "}"
