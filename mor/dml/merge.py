"""MERGE INTO and UPSERT: match source rows to live table rows by key, then act per clause.

Keys match as SQL's `=` does: a key with a null in it matches no row, so a source row with one
is never matched (MERGE's not-matched clauses, UPSERT's insert) and a table row with one is
never replaced. Each key (without nulls) may appear once in the source; a table key may occur in
several rows, and each of them is matched. In expressions
and conditions, table columns are `pc.field("col")` and source columns `pc.field("source.col")`;
in SQL text values (mor/expr/values.py), `col` (or `target.col`) and `source.col`.
The clauses (mor/dml/merge_clauses.py) are tried in order: the first whose condition holds applies.

UPSERT replaces every live row holding one of the source keys with the source row for that key,
and inserts the source rows whose key is new. Merge-on-read offers two strategies: `position`
(a join on the key columns finds the old rows; position deletes) and `equality` (equality
deletes on the keys plus an append: no scan of the table at all). Both leave the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField

from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.constraints import check_rows
from mor.dml.delete_rows import write_key_deletes
from mor.dml.expressions import as_expression, evaluate_condition, project
from mor.dml.keys import key_fields, key_range, null_keyed, unique_key_set
from mor.dml.merge_clauses import UPDATE, Clause, MergeClauses
from mor.dml.row_changes import (
    FileMatch,
    WrittenFiles,
    build_changes,
    find_key_matches,
    rows_validator,
    with_row_ids,
)
from mor.errors import InvalidArgumentError, SchemaMismatchError
from mor.expr.values import is_null_value, merge_scope, text_condition
from mor.format.arrow_types import to_arrow_schema
from mor.format.properties import MERGE_ON_READ, equality_deletes_enabled
from mor.format.spec import ROW_ID_NAME, Operation
from mor.progress import Progress
from mor.read.equality_deletes import EqualityKeySet
from mor.write.arrow_schema import check_unique_names, conform
from mor.write.parquet_files import WriteOptions, write_data_files

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle

SOURCE = "source."
STRATEGIES = ("position", "equality")


@dataclass(frozen=True)
class MergeOutputs:
    """What each clause writes, as named expressions over the joined rows (table columns by
    name, source columns as "source.<name>"), in the clauses' order; None for a delete. And
    each clause's condition, as an expression over the same rows (None: always)."""

    matched: tuple[dict[str, pc.Expression] | None, ...]
    not_matched: tuple[dict[str, pc.Expression] | None, ...]
    matched_conditions: tuple[pc.Expression | None, ...]
    not_matched_conditions: tuple[pc.Expression | None, ...]


def merge_outputs(table: TableHandle, source: pa.Table, on: Sequence[str], clauses: MergeClauses) -> tuple[pa.Table, MergeOutputs]:
    """Check the clauses against the table and the source's columns (the source may be an
    empty table of its schema); the source with its keys in the table's types, and the outputs."""
    clauses.check()
    for clause in clauses:
        if clause.condition is not None and not isinstance(clause.condition, (str, pc.Expression)):
            raise InvalidArgumentError(
                f"a {clause.describe()} condition is SQL text or a pyarrow.compute expression, got {clause.condition!r}"
            )
    _check_is_table("MERGE source", source)
    check_unique_names(source.schema, "the MERGE source")
    source = _conform_keys(table.schema(), source, on)

    def output(clause: Clause) -> dict[str, pc.Expression] | None:
        return _assignments(table, source, clause, target_visible=clause.action == UPDATE) if clause.writes else None

    def condition(clause: Clause, matched: bool) -> pc.Expression | None:
        if not isinstance(clause.condition, str):
            return clause.condition
        return text_condition(clause.condition, merge_scope(table.schema(), source.schema, matched), clause.describe())

    return source, MergeOutputs(
        tuple(map(output, clauses.matched)),
        tuple(map(output, clauses.not_matched)),
        tuple(condition(c, True) for c in clauses.matched),
        tuple(condition(c, False) for c in clauses.not_matched),
    )


def check_keyword_clauses(
    when_matched_delete: object,
    when_matched_update: object,
    when_matched_update_if: object,
    when_not_matched_insert: object,
    when_not_matched_insert_if: object,
) -> None:
    """`Table.merge`'s keyword clauses in the local API's terms: InvalidArgumentError naming the
    keyword that is not (`MergeClauses.of_keywords` checks the rest)."""
    if not isinstance(when_matched_delete, (bool, str, pc.Expression)):
        raise InvalidArgumentError(
            f"when_matched_delete is True, False, SQL text or a pyarrow.compute expression, got {when_matched_delete!r}"
        )
    for name, condition in (("when_matched_update_if", when_matched_update_if), ("when_not_matched_insert_if", when_not_matched_insert_if)):
        if condition is not None and not isinstance(condition, (str, pc.Expression)):
            raise InvalidArgumentError(f"{name} is SQL text or a pyarrow.compute expression, got {condition!r}")
    for name, clause in (("when_matched_update", when_matched_update), ("when_not_matched_insert", when_not_matched_insert)):
        if isinstance(clause, Mapping) and (not_names := [c for c in clause if not isinstance(c, str)]):
            raise InvalidArgumentError(f"{name} sets columns by name (strings), got {not_names}")


def with_source_prefix(source: pa.Table) -> pa.Table:
    return source.rename_columns([SOURCE + c for c in source.column_names])


def matched_changes(joined: pa.Table, clauses: MergeClauses, outputs: MergeOutputs, schema: Schema) -> tuple[pa.Array, pa.Table | None]:
    """For matched pairs (table columns, "source." columns): which table rows go (deleted or
    updated: the first clause whose condition holds applies), and the updated rows (None when
    no clause updates)."""
    gone = np.zeros(joined.num_rows, dtype=bool)
    parts = []
    for output, hit in zip(outputs.matched, _first_applicable(joined, outputs.matched_conditions)):
        gone |= hit
        if output is not None:
            chosen = joined.filter(pa.array(hit))
            parts.append(with_row_ids(conform(project(chosen, output), schema), chosen))
    updated = pa.concat_tables(parts) if parts else None
    return pa.array(gone), updated


def inserted_rows(unmatched: pa.Table, clauses: MergeClauses, outputs: MergeOutputs, schema: Schema) -> pa.Table | None:
    """The rows the insert clauses add for source rows (with the "source." prefix) that match
    no table row; None without an insert clause."""
    if not clauses.not_matched:
        return None
    parts = []
    for output, hit in zip(outputs.not_matched, _first_applicable(unmatched, outputs.not_matched_conditions)):
        assert output is not None  # every not-matched clause inserts
        parts.append(conform(project(unmatched.filter(pa.array(hit)), output), schema))
    return pa.concat_tables(parts)


def _first_applicable(rows: pa.Table, conditions: Sequence[pc.Expression | None]) -> Iterator[np.ndarray]:
    """Per clause, the rows it applies to: its condition holds and no earlier clause applied."""
    free = np.ones(rows.num_rows, dtype=bool)
    for condition in conditions:
        hit = free & evaluate_condition(rows, condition).to_numpy(zero_copy_only=False)
        free &= ~hit
        yield hit


def merge_rows(
    table: TableHandle, source: pa.Table, on: Sequence[str], clauses: MergeClauses, mode: str, progress: Progress
) -> tuple[Changes, Validator | None] | None:
    schema = table.schema()
    source, outputs = merge_outputs(table, source, on, clauses)
    source, never_matched = _split_null_keys(source, on)
    keys = unique_key_set(source, on)
    prefixed = with_source_prefix(source)
    key_filter = key_range(schema, source.select(list(on)))

    matches = find_key_matches(table, keys, key_filter, progress, clauses.reads_target_columns) if source.num_rows else []
    removed: list[FileMatch] = []
    new_parts: list[pa.Table] = []
    matched_source = np.zeros(source.num_rows, dtype=bool)
    for m in matches:
        assert m.rows is not None
        codes = keys.row_codes(m.rows)
        matched_source[codes.to_numpy(zero_copy_only=False)] = True
        joined = m.rows
        for c in prefixed.column_names:
            joined = joined.append_column(c, prefixed.column(c).take(codes))
        gone, updated = matched_changes(joined, clauses, outputs, schema)
        positions = m.positions[pc.fill_null(gone, False).to_numpy(zero_copy_only=False)]
        if positions.size:
            removed.append(FileMatch(m.task, positions, m.live_rows))
        if updated is not None:
            new_parts.append(updated)
    unmatched = prefixed.filter(pa.array(~matched_source))
    if never_matched is not None:
        unmatched = pa.concat_tables([unmatched, with_source_prefix(never_matched)])
    inserted = inserted_rows(unmatched, clauses, outputs, schema)
    if inserted is not None:
        new_parts.append(inserted)
    new_rows = pa.concat_tables(new_parts, promote_options="default") if new_parts else None
    if not removed and (new_rows is None or new_rows.num_rows == 0):
        return None
    changes, removals = build_changes(table, removed, new_rows, mode, progress)
    return changes, rows_validator(table, "merge", key_filter, removals, keys)


def upsert_rows(
    table: TableHandle, rows: pa.Table, on: Sequence[str], mode: str, strategy: str, progress: Progress
) -> tuple[Changes, Validator | None] | None:
    if strategy not in STRATEGIES:
        raise InvalidArgumentError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if strategy == "equality" and (table.metadata.format_version == 1 or not equality_deletes_enabled(table.metadata.properties)):
        strategy = "position"  # the table asks for (or, on v1, has) no equality deletes: same rows, found by a join
    _check_is_table("UPSERT rows", rows)
    key_fields(table.schema(), on)
    check_unique_names(rows.schema, "the data")
    rows = conform(_conform_keys(table.schema(), rows, on), table.schema())  # keys exactly, then the rest as stored
    if rows.num_rows == 0:
        return None
    schema = table.schema()
    keyed, never_matched = _split_null_keys(rows, on)
    keys = unique_key_set(keyed, on)
    if strategy == "position" or mode != MERGE_ON_READ:
        if strategy == "equality":
            raise InvalidArgumentError("the equality strategy is merge-on-read only")
        # Every live row with one of the keys goes (a key may be held by several rows), and
        # each source row is added once: the same rows the equality strategy leaves.
        rows_range = key_range(schema, keyed.select(list(on)))
        matches = find_key_matches(table, keys, rows_range, progress, all_columns=False) if keyed.num_rows else []
        new_rows = _keeping_row_ids(keyed, keys, matches)
        if never_matched is not None:
            new_rows = pa.concat_tables([new_rows, never_matched], promote_options="default")
        changes, removals = build_changes(table, matches, new_rows, mode, progress)
        return changes, rows_validator(table, "merge", rows_range, removals, keys)
    # Blind: no scan; progress is the rows written (equality deletes of their keys, then the rows).
    with progress.stage("write rows", rows.num_rows, "rows", with_bytes=True) as step:
        deletes, added_spec = write_key_deletes(table, keyed.select(list(on)))
        metadata = table.metadata
        written = WrittenFiles()
        written.paths += [d.file_path for d in deletes]
        with written.deleted_on_error(table.io):
            check_rows(rows, metadata.properties, metadata.schema())
            options = WriteOptions(metadata.properties)
            data = write_data_files(
                table.io, metadata.location, metadata.schema(), metadata.spec(), rows, options, sort_order=metadata.sort_order
            )
        step.advance(rows.num_rows, bytes=sum(f.file_size_in_bytes for f in [*deletes, *data]))
    # Blind: no rows were read, so there is nothing a concurrent commit could invalidate.
    return Changes(Operation.OVERWRITE, added_data=data, added_deletes=deletes, added_spec=added_spec), None


def _keeping_row_ids(rows: pa.Table, keys: EqualityKeySet, matches: list[FileMatch]) -> pa.Table:
    """UPSERT rows, each with the `_row_id` of the live row it replaces (v3: the row is updated,
    not deleted and added); a new key, or one held by several rows, starts a new row."""
    found = [m.rows for m in matches if m.rows is not None and ROW_ID_NAME in m.rows.column_names]
    if not found or ROW_ID_NAME in rows.column_names:  # no lineage, or a (v2) table column of that name
        return rows
    replaced = pa.concat_tables(found)
    codes = keys.row_codes(replaced).to_numpy(zero_copy_only=False)
    # A row of a file written before the table was upgraded to v3 has no id (null): -1, a new row.
    row_ids = pc.fill_null(replaced.column(ROW_ID_NAME), -1).to_numpy(zero_copy_only=False)
    held = np.bincount(codes, minlength=rows.num_rows)
    by_source = np.full(rows.num_rows, -1, dtype=np.int64)
    by_source[codes] = row_ids
    keep = (held == 1) & (by_source >= 0)
    return rows.append_column(pa.field(ROW_ID_NAME, pa.int64()), pa.array(by_source, mask=~keep))


def _split_null_keys(rows: pa.Table, on: Sequence[str]) -> tuple[pa.Table, pa.Table | None]:
    """(the rows whose keys may match, the rows with a null in their key: they match nothing)."""
    nulls = null_keyed(rows, on)
    if nulls is None:
        return rows, None
    return rows.filter(pc.invert(nulls)), rows.filter(nulls)


def _check_is_table(what: str, data: object) -> None:
    if not isinstance(data, pa.Table):
        raise SchemaMismatchError(f"{what} must be a pyarrow Table, got {type(data).__name__}")


def _conform_keys(schema: Schema, source: pa.Table, on: Sequence[str]) -> pa.Table:
    """The source with its key columns cast to the table's key types (never silently by
    value: "3" does not match 3). A null key is allowed; it matches no row."""
    fields = key_fields(schema, on)
    missing = [k for k in on if k not in source.column_names]
    if missing:
        raise SchemaMismatchError(f"source lacks key columns {missing}")
    optional = Schema(*[NestedField(f.field_id, f.name, f.field_type, required=False) for f in fields])
    converted = conform(source.select(list(on)), optional, exact=True)
    for name in on:
        source = source.set_column(source.schema.get_field_index(name), name, converted.column(name))
    return source


def _assignments(table: TableHandle, source: pa.Table, clause: Clause, target_visible: bool) -> dict[str, pc.Expression]:
    """Output columns of an update/insert clause, as expressions over the joined rows."""
    arrow_schema = to_arrow_schema(table.schema())
    values = clause.values
    if values is None:
        absent = [f.name for f in arrow_schema if f.name not in source.column_names]
        if absent:
            raise SchemaMismatchError(f"'*' needs every table column in the source; missing {absent}")
        return {f.name: pc.field(SOURCE + f.name) for f in arrow_schema}
    unknown = [c for c in values if arrow_schema.get_field_index(c) < 0]
    if unknown:
        raise SchemaMismatchError(f"clause sets columns the table does not have: {unknown}")
    out: dict[str, Any] = {}
    scope = merge_scope(table.schema(), source.schema, target_visible)
    for f in arrow_schema:
        set_to_null = f.name in values and is_null_value(values[f.name])
        left_out_of_insert = f.name not in values and not target_visible
        if not f.nullable and (set_to_null or left_out_of_insert):
            # Checked here, before any row is seen, so the error does not depend on the data.
            raise SchemaMismatchError(f"clause leaves required column {f.name!r} null")
        if f.name in values:
            out[f.name] = as_expression(values[f.name], f.type, scope, f.name)
        elif target_visible:
            out[f.name] = pc.field(f.name)  # UPDATE keeps what it does not set
        else:
            out[f.name] = pc.scalar(pa.scalar(None, type=f.type))  # INSERT leaves it null
    return out
