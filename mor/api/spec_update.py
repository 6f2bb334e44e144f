"""Partition spec evolution: `table.update_spec()` adds, removes and renames partition fields.

    with table.update_spec() as update:          # commits when the block exits cleanly
        update.add_field("ts", "day")            # or add_field("day(ts)"), add_field("id", "bucket[16]")
        update.remove_field("category")          # by field name (or by term: "bucket(16, id)")
        update.rename_field("ts_day", "day")

The rules are Iceberg's for format v2 (its UpdatePartitionSpec):
  - a field keeps its id while it stays; a field added with the (source column, transform) of a
    field some older spec had takes that field's id again (and its name, unless one is given),
    so partition values of old and new files line up by id; any other new field takes
    last-partition-id + 1;
  - a removed field simply leaves the spec (v2 needs no void placeholder);
  - the result, if some spec of the table already has exactly these fields (source, transform,
    name, in order), becomes the default again under its own id; otherwise it is a new spec
    with id max + 1;
  - invalid: adding a field the spec has (or adding one twice), two time transforms (year,
    month, day, hour) of one column added at once, removing or renaming a field the spec lacks,
    removing or renaming a field added in the same update, renaming a removed field, duplicate
    field names, a name that is a schema column unless it is the identity field of that
    column, a transform the column's type does not take. Each raises PartitionEvolutionError at
    the call, and the call is not recorded (the update stays usable).

Each call is checked at once; `commit()` writes new table metadata only (no snapshot: data
files keep the spec they were written with; writers use the new default spec from then on).
A lost race is retried on the new table state unless the default spec changed meanwhile
(CommitConflictError: the update was planned against another spec).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform, MonthTransform, Transform, YearTransform

from mor.catalog.table_operations import TableOperations, refresh_same_table
from mor.commit.retry import RetryPolicy, commit_with_retry
from mor.commit.table_commits import spec_commit
from mor.errors import CommitConflictError, InvalidArgumentError, PartitionEvolutionError
from mor.format.metadata import TableMetadata
from mor.write.partitioning import partition_term, resolve_partition_term, split_transform

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle

_TIME_TRANSFORMS = (YearTransform, MonthTransform, DayTransform, HourTransform)


@dataclass(frozen=True)
class _Add:
    source_id: int
    transform: Transform[Any, Any]
    name: str | None  # None: the historical field's name, or the default one
    default_name: str
    term: str  # as the caller wrote it, for messages


@dataclass(frozen=True)
class _Remove:
    field_id: int


@dataclass(frozen=True)
class _Rename:
    field_id: int
    new_name: str


_Change = _Add | _Remove | _Rename


class UpdateSpec:
    """Builder of one partition spec change; see the module docstring for the rules."""

    def __init__(self, table: TableHandle, ops: TableOperations):
        self._table = table
        self._ops = ops
        self._base = table.metadata
        self._base_location = table.metadata_location
        self._changes: list[_Change] = []
        self._done = False

    # -- the verbs -------------------------------------------------------------------------
    def add_field(self, source_column: str, transform: str | Transform[Any, Any] = "identity", name: str | None = None) -> UpdateSpec:
        """Partition by `transform` of `source_column`: "identity", "year", "month", "day",
        "hour", "void", "bucket[16]" (or "bucket(16)"), "truncate[4]". `source_column` may be
        a whole term instead, as `create_table(partition_by=...)` takes it: "bucket(16, id)"."""
        self._open()
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise PartitionEvolutionError(f"a partition field name is a non-empty string, got {name!r}")
        schema = self._base.schema()
        with _as_evolution_error():
            if not isinstance(source_column, str) or not source_column.strip():
                raise InvalidArgumentError(f"add_field takes a column name or a term like 'day(ts)', got {source_column!r}")
            if "(" in source_column and _is_default(transform):
                text = source_column
                source, parsed, default_name = partition_term(schema, text)
            else:
                transform_text = str(transform) if isinstance(transform, Transform) else transform
                if not isinstance(transform_text, str):
                    raise InvalidArgumentError(f"transform is a string like 'day' or 'bucket[16]', got {transform!r}")
                transform_name, number = split_transform(transform_text)
                text = _term_text(source_column, transform_name, number)
                source, parsed, default_name = resolve_partition_term(schema, source_column, transform_name, number, text)
        return self._record(_Add(source.field_id, parsed, name, default_name, text))

    def remove_field(self, name: str) -> UpdateSpec:
        """Stop partitioning by the field named `name` (or by a term: "day(ts)")."""
        self._open()
        field = self._current_field(name, "remove")
        return self._record(_Remove(field.field_id))

    def rename_field(self, name: str, new_name: str) -> UpdateSpec:
        """Give the field named `name` the name `new_name` (only the name changes)."""
        self._open()
        if not isinstance(new_name, str) or not new_name.strip():
            raise PartitionEvolutionError(f"a partition field name is a non-empty string, got {new_name!r}")
        field = self._current_field(name, "rename")
        return self._record(_Rename(field.field_id, new_name))

    # -- result and commit -----------------------------------------------------------------
    def apply(self) -> PartitionSpec:
        """The spec the commit would make the default (on the table state the update read)."""
        return evolve_spec(self._base, self._changes)

    def commit(self) -> PartitionSpec:
        """Make the new spec the default in one metadata-only commit (nothing when the spec
        would not change); returns the table's default spec."""
        self._open()
        self._done = True
        table, ops = self._table, self._ops
        base, location = self._base, self._base_location

        def attempt(_: int) -> PartitionSpec:
            try:
                spec = evolve_spec(base, self._changes)
            except PartitionEvolutionError as e:
                if base is self._base:
                    raise
                raise CommitConflictError(f"the table changed meanwhile and the partition spec change no longer applies: {e}") from None
            if spec.spec_id == base.default_spec_id:
                table.metadata, table.metadata_location = base, location
                return spec
            table.metadata, table.metadata_location = ops.commit(base, location, spec_commit(base, spec))
            return table.metadata.spec()

        def refresh() -> None:
            nonlocal base, location
            base, location = refresh_same_table(ops, self._base)
            if _spec_key(base.spec()) != _spec_key(self._base.spec()) or base.spec().spec_id != self._base.spec().spec_id:
                raise CommitConflictError(
                    f"the default partition spec changed meanwhile (now spec {base.default_spec_id}: {_describe(base.spec())}); "
                    "load the table and make the change again"
                )

        return commit_with_retry(RetryPolicy.of(base.properties), attempt, "change the partition spec", before_retry=refresh)

    def __enter__(self) -> UpdateSpec:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()

    # -- helpers ---------------------------------------------------------------------------
    def _open(self) -> None:
        if self._done:
            raise InvalidArgumentError("this partition spec update was committed already: call table.update_spec() again")

    def _record(self, change: _Change) -> UpdateSpec:
        evolve_spec(self._base, [*self._changes, change])  # raises, and records nothing, when invalid
        self._changes.append(change)
        return self

    def _current_field(self, name: str, verb: str) -> PartitionField:
        """The field of the current spec named `name`, or else the one `name` as a term
        (`day(ts)`, `category`) denotes."""
        spec = self._base.spec()
        if not isinstance(name, str) or not name.strip():
            raise PartitionEvolutionError(f"cannot {verb} partition field {name!r}: give the field's name")
        added = {c.name or c.default_name for c in self._changes if isinstance(c, _Add)}
        if name in added and all(f.name != name for f in spec.fields):
            raise PartitionEvolutionError(f"cannot {verb} partition field {name!r}: it is added by this same update")
        for f in spec.fields:
            if f.name == name:
                return f
        try:
            source, transform, _ = partition_term(self._base.schema(), name)
        except (InvalidArgumentError, ValueError):
            source = None
        if source is not None:
            for f in spec.fields:
                if f.source_id == source.field_id and str(f.transform) == str(transform):
                    return f
        raise PartitionEvolutionError(f"cannot {verb} partition field {name!r}: the partition spec has no such field ({_describe(spec)})")


def evolve_spec(base: TableMetadata, changes: list[_Change]) -> PartitionSpec:
    """The spec `changes` make of `base`'s default spec, with its field ids and spec id
    assigned (an existing spec's id when one has the same fields). PartitionEvolutionError
    when the changes are invalid."""
    spec, schema = base.spec(), base.schema()
    names = {f.field_id: f.name for f in spec.fields}
    removed: set[int] = set()
    renamed: set[int] = set()
    adds: list[PartitionField] = []
    last_id = base.last_partition_id
    for change in changes:
        if isinstance(change, _Remove):
            if change.field_id in removed:
                raise PartitionEvolutionError(f"partition field {names[change.field_id]!r} is removed already")
            if change.field_id in renamed:
                raise PartitionEvolutionError(f"cannot rename and remove partition field {names[change.field_id]!r} in one update")
            removed.add(change.field_id)
        elif isinstance(change, _Rename):
            if change.field_id in removed:
                raise PartitionEvolutionError(f"cannot remove and rename partition field {names[change.field_id]!r} in one update")
            names[change.field_id] = change.new_name
            renamed.add(change.field_id)
        else:
            key = (change.source_id, str(change.transform))
            if any((f.source_id, str(f.transform)) == key for f in adds):
                raise PartitionEvolutionError(f"partition field {change.term!r} is added twice")
            existing = next((f for f in spec.fields if (f.source_id, str(f.transform)) == key), None)
            if existing is not None and existing.field_id in removed:
                # Removed and added back in one update: the field simply stays (Iceberg's rule).
                removed.discard(existing.field_id)
                if change.name is not None:
                    names[existing.field_id] = change.name
                    renamed.add(existing.field_id)
                continue
            if existing is not None:
                raise PartitionEvolutionError(
                    f"cannot add partition field {change.term!r}: the spec has it already, as {names[existing.field_id]!r}"
                )
            if isinstance(change.transform, _TIME_TRANSFORMS):
                for f in adds:
                    if f.source_id == change.source_id and isinstance(f.transform, _TIME_TRANSFORMS):
                        raise PartitionEvolutionError(
                            f"cannot add partition field {change.term!r}: redundant with {f.name!r} added in the same update"
                        )
            taken = {f.field_id for f in spec.fields} | {f.field_id for f in adds}
            reused = _historical_field(base, change, taken)
            if reused is not None:
                field_id, name = reused.field_id, change.name or reused.name
            else:
                last_id += 1
                field_id, name = last_id, change.name or change.default_name
            adds.append(PartitionField(change.source_id, field_id, change.transform, name))
    kept = [PartitionField(f.source_id, f.field_id, f.transform, names[f.field_id]) for f in spec.fields if f.field_id not in removed]
    fields = kept + adds
    changed = renamed | {f.field_id for f in adds}
    _check_names(schema, fields, changed)
    for existing_spec in base.partition_specs:
        if _spec_key(existing_spec) == _spec_key_of(fields):
            return existing_spec
    return PartitionSpec(*fields, spec_id=max(s.spec_id for s in base.partition_specs) + 1)


def _historical_field(base: TableMetadata, change: _Add, taken: set[int]) -> PartitionField | None:
    """A field of some spec of the table with the same source and transform (and the name,
    when one is given): its id comes back."""
    for old_spec in base.partition_specs:
        for f in old_spec.fields:
            if (f.source_id, str(f.transform)) != (change.source_id, str(change.transform)):
                continue
            if (change.name is None or f.name == change.name) and f.field_id not in taken:
                return f
    return None


def _check_names(schema: Schema, fields: list[PartitionField], changed: set[int]) -> None:
    seen: set[str] = set()
    for f in fields:
        if f.name in seen:
            raise PartitionEvolutionError(f"partition field name {f.name!r} is used twice")
        seen.add(f.name)
        if f.field_id not in changed:
            continue  # a field that stays as it was is not judged again
        try:
            column = schema.find_field(f.name)
        except ValueError:
            continue
        if not (isinstance(f.transform, IdentityTransform) and column.field_id == f.source_id):
            raise PartitionEvolutionError(
                f"partition field name {f.name!r} is a column of the table: only the identity field of that column may take it"
            )


def _spec_key(spec: PartitionSpec) -> list[tuple[int, str, str]]:
    return _spec_key_of(list(spec.fields))


def _spec_key_of(fields: list[PartitionField]) -> list[tuple[int, str, str]]:
    """What makes two specs the same spec (Iceberg's `compatibleWith`): source, transform and
    name of each field, in order."""
    return [(f.source_id, str(f.transform), f.name) for f in fields]


def _describe(spec: PartitionSpec) -> str:
    return ", ".join(f"{f.name} ({f.transform})" for f in spec.fields) or "unpartitioned"


def _term_text(column: str, transform_name: str, number: str) -> str:
    if transform_name == "identity":
        return column
    return f"{transform_name}({number}, {column})" if number else f"{transform_name}({column})"


def _is_default(transform: object) -> bool:
    return transform == "identity" or isinstance(transform, IdentityTransform)


@contextmanager
def _as_evolution_error() -> Iterator[None]:
    """Parser errors (InvalidArgumentError) re-raised as PartitionEvolutionError."""
    try:
        yield
    except PartitionEvolutionError:
        raise
    except InvalidArgumentError as e:
        raise PartitionEvolutionError(str(e)) from None
