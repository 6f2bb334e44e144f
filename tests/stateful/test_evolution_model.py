"""Random histories that interleave schema changes, partition spec changes and DML, against a model.

The model keeps rows as {field id: value} and the schema as an ordered list of columns (field
id, name, type). A column is therefore renamed by changing one name, and a dropped name that is
added again is a new id whose old rows read as null: the same resolution by field id that
readers must follow (spec/schema-evolution.md).

Schema changes: add an optional column (int, string, float), rename, drop (never `id`, never a
column some partition spec used), widen (int -> long, float -> double). Spec changes: add an
identity, bucket or truncate field, remove one. DML: append, delete (both modes), update of a
column by id, upsert on id (both strategies), delete_rows on id, compact.

Checked after every step: a plain scan reads the current schema's columns with the model's rows.
At the end, every snapshot reads with the schema it was written with (time travel).

    MOR_STATEFUL_EXAMPLES=500 .venv/bin/python -m pytest tests/stateful/test_evolution_model.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import mor

MOR, COW = "merge-on-read", "copy-on-write"
MODE = st.sampled_from([MOR, COW])
ARROW = {"int": pa.int32(), "long": pa.int64(), "string": pa.string(), "float": pa.float32(), "double": pa.float64()}
WIDER = {"int": "long", "float": "double"}
NAMES = ["a", "b", "c", "d", "e"]  # few names, so that dropped names come back
TERMS = {"bucket(4, id)": ("id", "bucket[4]"), "truncate(20, id)": ("id", "truncate[20]")}  # term: (source, transform)
Row = dict[int, Any]  # field id -> value


@dataclass
class Column:
    field_id: int
    name: str
    type: str


@dataclass
class Version:
    snapshot_id: int
    columns: list[Column]
    rows: list[Row]


def value_for(type_name: str, seed: int) -> Any:
    """Values every type holds exactly (floats in quarters: float32 keeps them when widened)."""
    if type_name in ("int", "long"):
        return seed % 50 - 10
    if type_name in ("float", "double"):
        return (seed % 40) / 4
    return f"s{seed % 7}"


@dataclass
class Model:
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)

    def render(self, columns: list[Column] | None = None, rows: list[Row] | None = None) -> list[tuple]:
        """Rows as sorted tuples of (name, value) under `columns` (default: the current ones)."""
        columns = self.columns if columns is None else columns
        rows = self.rows if rows is None else rows
        return sorted((tuple((c.name, r.get(c.field_id)) for c in columns) for r in rows), key=repr)


def render_table(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.items()) for r in table.to_pylist()), key=repr)


class EvolutionModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="mor-evolution-")
        self.versions: list[Version] = []
        self.ever_partitioned: set[str] = set()  # names of columns a spec used (never dropped)

    @initialize(partition_by=st.sampled_from([None, ["a"], ["bucket(3, id)"], ["truncate(10, id)", "b"]]))
    def create(self, partition_by: list[str] | None) -> None:
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int32())])
        self.table = mor.load_catalog(self.dir).create_table("db.t", schema=schema, partition_by=partition_by)
        ids = {f.name: f.field_id for f in self.table.schema().fields}
        self.model = Model([Column(ids["id"], "id", "long"), Column(ids["a"], "a", "string"), Column(ids["b"], "b", "int")])
        self.next_id = max(ids.values()) + 1
        self.ever_partitioned = {"a"} if partition_by == ["a"] else ({"b"} if partition_by and "b" in partition_by else set())
        self.partition_fields = [f.name for f in self.table.spec().fields]
        self.next_key = 0

    # -- schema changes --------------------------------------------------------------------
    @precondition(lambda self: len(self.model.columns) < 7)
    @rule(name=st.sampled_from(NAMES), type_name=st.sampled_from(["int", "string", "float"]))
    def add_column(self, name: str, type_name: str) -> None:
        if name in self._names():
            return
        with self.table.update_schema() as update:
            update.add_column(name, ARROW[type_name])
        self.model.columns.append(Column(self._new_field_id(name), name, type_name))

    @rule(data=st.data(), new_name=st.sampled_from(NAMES))
    def rename_column(self, data: st.DataObject, new_name: str) -> None:
        column = data.draw(st.sampled_from([c for c in self.model.columns if c.name != "id"] or [None]))
        if column is None or new_name in self._names() or column.name in self.ever_partitioned:
            return
        with self.table.update_schema() as update:
            update.rename_column(column.name, new_name)
        column.name = new_name

    @rule(data=st.data())
    def drop_column(self, data: st.DataObject) -> None:
        droppable = [c for c in self.model.columns if c.name != "id" and c.name not in self.ever_partitioned]
        if not droppable:
            return
        column = data.draw(st.sampled_from(droppable))
        with self.table.update_schema() as update:
            update.drop_column(column.name)
        self.model.columns.remove(column)

    @rule(data=st.data())
    def widen(self, data: st.DataObject) -> None:
        widenable = [c for c in self.model.columns if c.type in WIDER]
        if not widenable:
            return
        column = data.draw(st.sampled_from(widenable))
        with self.table.update_schema() as update:
            update.widen(column.name, ARROW[WIDER[column.type]])
        column.type = WIDER[column.type]

    # -- spec changes ----------------------------------------------------------------------
    @rule(data=st.data())
    def add_partition_field(self, data: st.DataObject) -> None:
        terms = ["bucket(4, id)", "truncate(20, id)"]
        terms += [c.name for c in self.model.columns if c.type in ("string", "int", "long") and c.name != "id"]
        term = data.draw(st.sampled_from(terms))
        source, transform = TERMS.get(term, (term, "identity"))
        source_id = next(c.field_id for c in self.model.columns if c.name == source)
        present = {(f.source_id, str(f.transform)) for f in self.table.spec().fields}
        if (source_id, transform) in present:
            with pytest.raises(mor.InvalidArgumentError):  # the spec has it already: nothing changes
                with self.table.update_spec() as update:
                    update.add_field(term)
            return
        with self.table.update_spec() as update:
            update.add_field(term)
        self.ever_partitioned.add(source)

    @rule(data=st.data())
    def remove_partition_field(self, data: st.DataObject) -> None:
        fields = [f.name for f in self.table.spec().fields]
        if not fields:
            return
        with self.table.update_spec() as update:
            update.remove_field(data.draw(st.sampled_from(fields)))

    # -- DML -------------------------------------------------------------------------------
    @rule(count=st.integers(1, 6))
    def append(self, count: int) -> None:
        rows = [self._new_row() for _ in range(count)]
        self._commit(self.table.append(self._arrow(rows)), self.model.rows + rows)

    @rule(data=st.data(), mode=MODE)
    def delete(self, data: st.DataObject, mode: str) -> None:
        ids = self._some_ids(data)
        snapshot = self.table.delete(f"id in ({', '.join(map(str, ids))})", mode=mode)
        kept = [r for r in self.model.rows if r[self._id()] not in ids]
        self._commit(snapshot, kept, changed=len(kept) != len(self.model.rows))

    @rule(data=st.data(), mode=MODE)
    def update(self, data: st.DataObject, mode: str) -> None:
        columns = [c for c in self.model.columns if c.name != "id"]
        if not columns:
            return
        column = data.draw(st.sampled_from(columns))
        ids = self._some_ids(data)
        value = value_for(column.type, seed=data.draw(st.integers(0, 100)))
        snapshot = self.table.update({column.name: mor.lit(value)}, where=f"id in ({', '.join(map(str, ids))})", mode=mode)
        hit = [r for r in self.model.rows if r[self._id()] in ids]
        rows = [{**r, column.field_id: value} if r[self._id()] in ids else r for r in self.model.rows]
        self._commit(snapshot, rows, changed=bool(hit))

    @rule(data=st.data(), strategy=st.sampled_from(["position", "equality"]), mode=MODE)
    def upsert(self, data: st.DataObject, strategy: str, mode: str) -> None:
        existing = [dict(r) for r in self.model.rows[:2]]
        for r in existing:
            for c in self.model.columns:
                if c.name != "id":
                    r[c.field_id] = value_for(c.type, seed=data.draw(st.integers(0, 100)))
        source = existing + [self._new_row()]
        mode = MOR if strategy == "equality" else mode  # the equality strategy is merge-on-read only
        snapshot = self.table.upsert(self._arrow(source), on=["id"], mode=mode, strategy=strategy)
        keys = {r[self._id()] for r in source}
        self._commit(snapshot, [r for r in self.model.rows if r[self._id()] not in keys] + source)

    @rule(data=st.data())
    def delete_rows(self, data: st.DataObject) -> None:
        ids = self._some_ids(data)
        snapshot = self.table.delete_rows(pa.table({"id": pa.array(ids, pa.int64())}))
        kept = [r for r in self.model.rows if r[self._id()] not in ids]
        if snapshot is not None:  # an equality delete commits even when no row has the key
            self._commit(snapshot, kept)

    @rule()
    def compact(self) -> None:
        result = self.table.compact(min_input_files=2)
        if result.snapshot_id is not None:
            self._commit(self.table.current_snapshot(), self.model.rows)

    # -- checks ----------------------------------------------------------------------------
    @invariant()
    def plain_scan_matches_model(self) -> None:
        if not hasattr(self, "table"):
            return
        result = self.table.scan().to_arrow()
        assert result.column_names == self._names()
        assert render_table(result) == self.model.render()
        reloaded = mor.load_catalog(self.dir).load_table("db.t")
        assert [f.name for f in reloaded.schema().fields] == self._names()

    def teardown(self) -> None:
        try:
            if hasattr(self, "table") and sys.exc_info()[0] is None:
                for v in self.versions:
                    result = self.table.scan(snapshot_id=v.snapshot_id).to_arrow()
                    assert render_table(result) == self.model.render(v.columns, v.rows), v.snapshot_id
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------
    def _names(self) -> list[str]:
        return [c.name for c in self.model.columns]

    def _id(self) -> int:
        return self.model.columns[0].field_id

    def _new_field_id(self, name: str) -> int:
        """The id the table gave the column just added (fresh: above every id ever used)."""
        field_id = self.table.schema().find_field(name).field_id
        assert field_id >= self.next_id, (name, field_id, self.next_id)
        self.next_id = field_id + 1
        return field_id

    def _new_row(self) -> Row:
        self.next_key += 1
        key = 1000 + self.next_key
        return {c.field_id: key if c.name == "id" else value_for(c.type, seed=key + i) for i, c in enumerate(self.model.columns)}

    def _some_ids(self, data: st.DataObject) -> list[int]:
        known = sorted({r[self._id()] for r in self.model.rows}) or [0]
        return data.draw(st.lists(st.sampled_from(known + [99999]), min_size=1, max_size=4, unique=True))

    def _arrow(self, rows: list[Row]) -> pa.Table:
        fields = [pa.field(c.name, ARROW[c.type], nullable=c.name != "id") for c in self.model.columns]
        return pa.Table.from_pylist([{c.name: r.get(c.field_id) for c in self.model.columns} for r in rows], schema=pa.schema(fields))

    def _commit(self, snapshot: Any, rows: list[Row], changed: bool = True) -> None:
        if not changed:
            assert snapshot is None
            return
        assert snapshot is not None and snapshot.snapshot_id == self.table.current_snapshot().snapshot_id
        self.model.rows = list(rows)
        columns = [Column(c.field_id, c.name, c.type) for c in self.model.columns]
        self.versions.append(Version(snapshot.snapshot_id, columns, list(rows)))


EvolutionModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("MOR_STATEFUL_EXAMPLES", "100")),
    stateful_step_count=int(os.environ.get("MOR_STATEFUL_STEPS", "14")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_evolution_matches_model = EvolutionModel.TestCase
