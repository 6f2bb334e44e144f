"""The change feed against a model: random histories of every writing operation, and for
snapshots of the history, the feed turns the rows at one into the rows at the other.

Rows have a unique `id` (appends and MERGE/UPSERT sources draw ids no live row holds, or ids
of live rows to match them), so the model knows what each commit did to each key:
  - a key gone is a DELETE, a new key an INSERT, a key whose row changed an UPDATE_BEFORE /
    UPDATE_AFTER pair, an untouched key nothing (also when a copy-on-write rewrite or an
    UPSERT rewrote its row with the same values);
checked after every commit on the feed of that one snapshot (`on=["id"]`). At the end of each
example, for pairs of recorded snapshots (from, to): applying the feed (no keys: on format v3
row lineage pairs updates) in order to the rows at `from` gives the rows at `to` as a multiset,
and the net feed (`net_changes=True, on=["id"]`) is the model's diff of the two ends.

Operations: append, DELETE and UPDATE (merge-on-read and copy-on-write), UPSERT (position and
equality), MERGE (matched delete or update, not matched insert), delete_rows, compaction and
truncate, on format v2 and v3 tables, unpartitioned or partitioned.

    MOR_STATEFUL_EXAMPLES=300 .venv/bin/python -m pytest tests/stateful/test_change_feed_model.py
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import mor

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("category", pa.string()), ("n", pa.int64())])
COLUMNS = SCHEMA.names
MOR, COW = "merge-on-read", "copy-on-write"
MODE = st.sampled_from([MOR, COW])
CATEGORY = st.sampled_from(["a", "b", None])
N = st.none() | st.integers(-3, 3)
Row = dict[str, Any]


def as_tuple(row: Row) -> tuple:
    return tuple(row[c] for c in COLUMNS)


def expected_changes(before: dict[int, Row], after: dict[int, Row]) -> Counter[tuple]:
    out: Counter[tuple] = Counter()
    for key, row in before.items():
        if key not in after:
            out[("DELETE", *as_tuple(row))] += 1
        elif after[key] != row:
            out[("UPDATE_BEFORE", *as_tuple(row))] += 1
            out[("UPDATE_AFTER", *as_tuple(after[key]))] += 1
    for key, row in after.items():
        if key not in before:
            out[("INSERT", *as_tuple(row))] += 1
    return out


def feed_counter(changes: pa.Table) -> Counter[tuple]:
    return Counter((r["_change_type"], *as_tuple(r)) for r in changes.to_pylist())


def apply_feed(rows: Counter[tuple], changes: pa.Table) -> Counter[tuple]:
    """The feed applied in `_change_ordinal` order: a removed row removes one equal row."""
    out = Counter(rows)
    ordered = changes.sort_by([("_change_ordinal", "ascending")]).to_pylist()
    for r in ordered:
        value = as_tuple(r)
        if r["_change_type"] in ("DELETE", "UPDATE_BEFORE"):
            assert out[value] > 0, f"the feed removes {value}, which is not live"
            out[value] -= 1
        else:
            out[value] += 1
    return +out


class ChangeFeedModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="mor-changes-")
        self.rows: dict[int, Row] = {}
        self.versions: list[tuple[int, dict[int, Row]]] = []  # (snapshot id, rows), in order
        self.next_id = 0
        self.checked = -1  # index in versions of the last snapshot whose feed was checked

    @initialize(format_version=st.sampled_from([2, 3]), partition_by=st.sampled_from([None, ["category"], ["bucket(2, id)"]]))
    def create(self, format_version: int, partition_by: list[str] | None) -> None:
        catalog = mor.load_catalog(self.dir)
        self.table = catalog.create_table("db.t", schema=SCHEMA, partition_by=partition_by, format_version=format_version)

    def teardown(self) -> None:
        try:
            if hasattr(self, "table"):
                self._check_pairs()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- rows ------------------------------------------------------------------------------
    def _fresh(self, data: st.DataObject, count: int) -> list[Row]:
        rows = []
        for _ in range(count):
            rows.append({"id": self.next_id, "category": data.draw(CATEGORY), "n": data.draw(N)})
            self.next_id += 1
        return rows

    def _source(self, data: st.DataObject) -> list[Row]:
        """Rows for UPSERT/MERGE: some with live ids (changed or not), some new."""
        live = sorted(self.rows)
        matched = data.draw(st.lists(st.sampled_from(live), unique=True, max_size=4), label="matched") if live else []
        rows = []
        for key in matched:
            same = data.draw(st.booleans(), label="same values")
            rows.append(dict(self.rows[key]) if same else {"id": key, "category": data.draw(CATEGORY), "n": data.draw(N)})
        return rows + self._fresh(data, data.draw(st.integers(0, 3), label="new rows"))

    def _commit(self, snapshot: object, rows: dict[int, Row]) -> None:
        """Record the rows after an operation (`snapshot`: what it returned, unused: a commit
        that changed nothing returns None, compaction a result object)."""
        self.rows = rows
        current = self.table.current_snapshot()
        if current is not None and (not self.versions or self.versions[-1][0] != current.snapshot_id):
            self.versions.append((current.snapshot_id, dict(rows)))

    # -- operations ------------------------------------------------------------------------
    @rule(data=st.data(), count=st.integers(1, 6))
    def append(self, data: st.DataObject, count: int) -> None:
        rows = self._fresh(data, count)
        snapshot = self.table.append(pa.Table.from_pylist(rows, schema=SCHEMA))
        self._commit(snapshot, {**self.rows, **{r["id"]: r for r in rows}})

    @precondition(lambda self: self.rows)
    @rule(data=st.data(), mode=MODE)
    def delete(self, data: st.DataObject, mode: str) -> None:
        keys = data.draw(st.lists(st.sampled_from(sorted(self.rows)), min_size=1, unique=True), label="delete ids")
        snapshot = self.table.delete(mor.isin("id", keys), mode=mode)
        self._commit(snapshot, {k: r for k, r in self.rows.items() if k not in keys})

    @precondition(lambda self: self.rows)
    @rule(data=st.data(), mode=MODE, value=N)
    def update(self, data: st.DataObject, mode: str, value: int | None) -> None:
        keys = data.draw(st.lists(st.sampled_from(sorted(self.rows)), min_size=1, unique=True), label="update ids")
        snapshot = self.table.update({"n": value}, where=mor.isin("id", keys), mode=mode)
        self._commit(snapshot, {k: ({**r, "n": value} if k in keys else r) for k, r in self.rows.items()})

    @rule(data=st.data(), mode=MODE, strategy=st.sampled_from(["position", "equality"]))
    def upsert(self, data: st.DataObject, mode: str, strategy: str) -> None:
        source = self._source(data)
        if not source:
            return
        if mode == COW:
            strategy = "position"  # the equality strategy is merge-on-read only
        snapshot = self.table.upsert(pa.Table.from_pylist(source, schema=SCHEMA), on=["id"], mode=mode, strategy=strategy)
        self._commit(snapshot, {**self.rows, **{r["id"]: r for r in source}})

    @rule(data=st.data(), mode=MODE, matched=st.sampled_from(["delete", "update", "both"]), insert=st.booleans())
    def merge(self, data: st.DataObject, mode: str, matched: str, insert: bool) -> None:
        source = self._source(data)
        if not source:
            return
        ops = [data.draw(st.sampled_from(["D", "U"]), label="op") for _ in source]
        rows = dict(self.rows)
        for s, op in zip(source, ops):
            if s["id"] in rows:
                if matched in ("delete", "both") and (op == "D" or matched == "delete"):
                    del rows[s["id"]]
                elif matched in ("update", "both"):
                    rows[s["id"]] = {**rows[s["id"]], "n": s["n"]}
            elif insert:
                rows[s["id"]] = s
        delete_if = {"delete": True, "both": pc.field("source.op") == "D", "update": False}[matched]
        snapshot = self.table.merge(
            pa.Table.from_pylist([{**s, "op": op} for s, op in zip(source, ops)], schema=SCHEMA.append(pa.field("op", pa.string()))),
            on=["id"],
            when_matched_delete=delete_if,
            when_matched_update={"n": pc.field("source.n")} if matched != "delete" else None,
            when_not_matched_insert={c: pc.field(f"source.{c}") for c in COLUMNS} if insert else None,
            mode=mode,
        )
        self._commit(snapshot, rows)

    @rule(data=st.data())
    def delete_rows(self, data: st.DataObject) -> None:
        keys = data.draw(st.lists(st.integers(0, max(self.next_id, 1)), min_size=1, max_size=4, unique=True), label="keys")
        snapshot = self.table.delete_rows(pa.table({"id": pa.array(keys, pa.int64())}))
        self._commit(snapshot, {k: r for k, r in self.rows.items() if k not in keys})

    @rule()
    def compact(self) -> None:
        self._commit(self.table.compact(min_input_files=1), self.rows)

    @rule()
    def truncate(self) -> None:
        self._commit(self.table.truncate(), {})

    # -- checks ----------------------------------------------------------------------------
    @invariant()
    def last_commit_feed(self) -> None:
        """The feed of the newest snapshot, keyed by id, is what the model says it did."""
        if len(self.versions) - 1 == self.checked or not self.versions:
            return
        i = len(self.versions) - 1
        snapshot_id, after = self.versions[i]
        parent = self.versions[i - 1] if i else None
        changes = self.table.changes(from_snapshot_id=parent[0] if parent else None, to_snapshot_id=snapshot_id, on=["id"]).to_arrow()
        assert feed_counter(changes) == expected_changes(parent[1] if parent else {}, after)
        assert set(changes.column("_commit_snapshot_id").to_pylist()) <= {snapshot_id}
        self.checked = i

    def _check_pairs(self) -> None:
        states = [(None, {})] + self.versions  # None: before the first snapshot
        for i, (first, before) in enumerate(states):
            for last, after in states[i + 1 :]:
                if last is None:
                    continue
                feed = self.table.changes(from_snapshot_id=first, to_snapshot_id=last).to_arrow()
                start = Counter(as_tuple(r) for r in before.values())
                assert apply_feed(start, feed) == Counter(as_tuple(r) for r in after.values())
                net = self.table.changes(from_snapshot_id=first, to_snapshot_id=last, on=["id"], net_changes=True).to_arrow()
                assert feed_counter(net) == expected_changes(before, after)


ChangeFeedModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("MOR_STATEFUL_EXAMPLES_CHANGES", "40")),
    stateful_step_count=int(os.environ.get("MOR_STATEFUL_STEPS", "8")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestChangeFeedModel = ChangeFeedModel.TestCase
