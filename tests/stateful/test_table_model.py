"""Random appends and deletes (both modes) against a list-of-rows model, at every snapshot."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from typing import Any, Callable

import pyarrow as pa
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import mor

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("category", pa.string()), ("value", pa.float64())])
CATEGORIES = ["a", "b", "c", None]
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

    @rule(predicate=st.sampled_from(PREDICATES), mode=st.sampled_from(["merge-on-read", "copy-on-write"]))
    def delete(self, predicate: tuple[str, Callable[[Row], bool]], mode: str) -> None:
        text, matches = predicate
        before = self.table.metadata_location
        snapshot = self.table.delete(text, mode=mode)
        remaining = [r for r in self.model if not matches(r)]
        if len(remaining) == len(self.model):
            assert snapshot is None and self.table.metadata_location == before
            return
        assert snapshot is not None
        self.model = remaining
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


TableMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=8, deadline=None)
test_table_matches_model = TableMachine.TestCase
