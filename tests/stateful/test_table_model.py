"""Random DML (append, DELETE, UPDATE, UPSERT, MERGE, delete_rows; every mode and strategy)
against a list-of-rows model, checked at every snapshot."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import mor

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("category", pa.string()), ("value", pa.float64())])
CATEGORIES = ["a", "b", "c", None]
MODES = ["merge-on-read", "copy-on-write"]
IDS = st.lists(st.integers(0, 70), min_size=1, max_size=8, unique=True)
VALUES = st.one_of(st.none(), st.floats(0, 100, allow_nan=False))
Row = dict[str, Any]

# Each predicate: (filter text, the same test in Python).
PREDICATES: list[tuple[str, Callable[[Row], bool]]] = [
    ("id < 15", lambda r: r["id"] < 15),
    ("id >= 40", lambda r: r["id"] >= 40),
    ("id in (3, 17, 29, 41, 58)", lambda r: r["id"] in (3, 17, 29, 41, 58)),
    ("category = 'a'", lambda r: r["category"] == "a"),
    ("category is null", lambda r: r["category"] is None),
    ("category = 'b' and id > 20", lambda r: r["category"] == "b" and r["id"] > 20),
    ("value < 10.0 or id = 33", lambda r: (r["value"] is not None and r["value"] < 10.0) or r["id"] == 33),
    ("value is null", lambda r: r["value"] is None),
    ("id < 0", lambda r: False),
]


class TableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="mor-stateful-")
        self.ids = itertools.count()
        self.model: list[Row] = []
        self.history: list[tuple[int, list[Row]]] = []

    @initialize(partition_by=st.sampled_from([None, ["category"], ["bucket(3, id)"], ["truncate(10, id)", "category"]]))
    def create(self, partition_by: list[str] | None) -> None:
        self.table = mor.load_catalog(self.dir).create_table("db.t", schema=SCHEMA, partition_by=partition_by)

    @rule(n=st.integers(1, 25), data=st.data())
    def append(self, n: int, data: st.DataObject) -> None:
        rows = [
            {
                "id": next(self.ids) % 64,  # ids repeat across appends: the same key in several files
                "category": data.draw(st.sampled_from(CATEGORIES)),
                "value": data.draw(st.one_of(st.none(), st.floats(0, 100, allow_nan=False))),
            }
            for _ in range(n)
        ]
        snapshot = self.table.append(pa.Table.from_pylist(rows, schema=SCHEMA))
        self.model += rows
        self.history.append((snapshot.snapshot_id, list(self.model)))

    @rule(predicate=st.sampled_from(PREDICATES), mode=st.sampled_from(MODES))
    def delete(self, predicate: tuple[str, Callable[[Row], bool]], mode: str) -> None:
        text, matches = predicate
        self._expect(self.table.delete(text, mode=mode), [r for r in self.model if not matches(r)])

    @rule(predicate=st.sampled_from(PREDICATES), mode=st.sampled_from(MODES))
    def update(self, predicate: tuple[str, Callable[[Row], bool]], mode: str) -> None:
        text, matches = predicate
        new = [
            {**r, "category": "z", "value": None if r["value"] is None else r["value"] * 2} if matches(r) else r
            for r in self.model
        ]
        snapshot = self.table.update({"category": "z", "value": pc.field("value") * 2}, where=text, mode=mode)
        self._expect(snapshot, new, changed=any(matches(r) for r in self.model))

    @rule(ids=IDS, data=st.data(), mode=st.sampled_from(MODES), strategy=st.sampled_from(["position", "equality"]))
    def upsert(self, ids: list[int], data: st.DataObject, mode: str, strategy: str) -> None:
        if mode == "copy-on-write":
            strategy = "position"  # the equality strategy is merge-on-read only
        rows = [{"id": i, "category": data.draw(st.sampled_from(CATEGORIES)), "value": data.draw(VALUES)} for i in ids]
        snapshot = self.table.upsert(pa.Table.from_pylist(rows, schema=SCHEMA), on=["id"], mode=mode, strategy=strategy)
        self._expect(snapshot, [r for r in self.model if r["id"] not in ids] + rows, changed=True)

    @rule(ids=IDS, data=st.data(), mode=st.sampled_from(MODES))
    def merge(self, ids: list[int], data: st.DataObject, mode: str) -> None:
        ops = {i: data.draw(st.sampled_from("DUI")) for i in ids}
        values = {i: data.draw(VALUES) for i in ids}
        source = pa.table({"id": ids, "op": [ops[i] for i in ids], "value": [values[i] for i in ids]},
                          schema=pa.schema([("id", pa.int64()), ("op", pa.string()), ("value", pa.float64())]))
        snapshot = self.table.merge(
            source, on=["id"], mode=mode,
            when_matched_delete=pc.field("source.op") == "D",
            when_matched_update={"value": pc.field("source.value")},
            when_not_matched_insert={"id": pc.field("source.id"), "value": pc.field("source.value"), "category": "new"},
            when_not_matched_insert_if=pc.field("source.op") != "D",
        )  # fmt: skip
        present = {r["id"] for r in self.model}
        new = [
            {**r, "value": values[r["id"]]} if r["id"] in ops else r
            for r in self.model
            if ops.get(r["id"]) != "D"
        ]
        new += [{"id": i, "category": "new", "value": values[i]} for i in ids if i not in present and ops[i] != "D"]
        changed = any(i in present for i in ids) or any(ops[i] != "D" for i in ids if i not in present)
        self._expect(snapshot, new, changed=changed)

    @rule(categories=st.lists(st.sampled_from(CATEGORIES), min_size=1, max_size=3, unique=True))
    def delete_rows(self, categories: list[str | None]) -> None:
        keys = pa.table({"category": pa.array(categories, pa.string())})
        snapshot = self.table.delete_rows(keys)  # blind: commits even if nothing matches
        self._expect(snapshot, [r for r in self.model if r["category"] not in categories], changed=True)

    def _expect(self, snapshot: Any, rows: list[Row], changed: bool | None = None) -> None:
        """Record the snapshot an operation made (or check it made none) and the new model."""
        if changed is None:
            changed = _sorted(rows) != _sorted(self.model)
        if not changed:
            assert snapshot is None
            return
        assert snapshot is not None and snapshot.snapshot_id == self.table.current_snapshot().snapshot_id
        self.model = rows
        self.history.append((snapshot.snapshot_id, list(self.model)))

    @rule(predicate=st.sampled_from(PREDICATES))
    def filtered_read(self, predicate: tuple[str, Callable[[Row], bool]]) -> None:
        text, matches = predicate
        assert _sorted(self.table.scan(filter=text).to_arrow().to_pylist()) == _sorted(r for r in self.model if matches(r))

    @invariant()
    def every_snapshot_reads_its_rows(self) -> None:
        if not hasattr(self, "table"):
            return
        for snapshot_id, rows in self.history:
            assert _sorted(self.table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()) == _sorted(rows)

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _sorted(rows: Any) -> list[tuple]:
    return sorted((r["id"], r["category"] or "", r["value"] if r["value"] is not None else -1.0) for r in rows)


TableMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=10, deadline=None)
test_table_matches_model = TableMachine.TestCase
