"""`compact` over random histories against a dict-of-rows model.

A history mixes appends, DELETE in both modes, delete_rows (equality deletes), UPDATE and
UPSERT (both strategies), on a table partitioned or not. Then `compact` runs with random
options (a partition filter, thresholds, a target size). Afterwards: the current snapshot reads
the model, every earlier snapshot reads what it read before, no live delete file applies to no
data file, the new data files carry the read snapshot's data sequence number, and pyiceberg
reads the same rows when no equality delete is live (it cannot read those).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
from examples import examples
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pyiceberg.table import StaticTable

import mor
from mor.format.spec import FileContent, ManifestContent
from mor.planning.planner import live_entries

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.string()), pa.field("n", pa.int64())])
PARTS = ["a", "b", "c"]

ids = st.integers(0, 40)
step = st.one_of(
    st.tuples(st.just("append"), st.lists(st.tuples(ids, st.sampled_from(PARTS)), min_size=1, max_size=12)),
    st.tuples(st.just("delete"), st.lists(ids, min_size=1, max_size=6), st.sampled_from(["merge-on-read", "copy-on-write"])),
    st.tuples(st.just("delete_rows"), st.lists(ids, min_size=1, max_size=4)),
    st.tuples(st.just("update"), st.lists(ids, min_size=1, max_size=4), st.sampled_from(["merge-on-read", "copy-on-write"])),
    st.tuples(
        st.just("upsert"),
        st.lists(st.tuples(ids, st.sampled_from(PARTS)), min_size=1, max_size=6),
        st.sampled_from(["position", "equality"]),
    ),
)
options = st.fixed_dictionaries(
    {
        "where": st.none() | st.sampled_from(PARTS).map(lambda p: f"part = '{p}'"),
        "min_delete_ratio": st.sampled_from([0.0, 0.1, 0.5]),
        "min_input_files": st.sampled_from([1, 2, 5]),
        "min_delete_files": st.none() | st.sampled_from([1, 2]),
        "target_file_size": st.none() | st.sampled_from([600, 5_000]),
    }
)

Model = dict[int, list[tuple[int, str, int]]]  # rows by id (ids may repeat after appends)


def rows_of(table: mor.Table, snapshot_id: int | None = None) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist())


def apply(table: mor.Table, model: list[tuple], op: tuple, counter: list[int]) -> list[tuple]:
    kind = op[0]
    counter[0] += 1
    if kind == "append":
        new = [(i, p, counter[0]) for i, p in op[1]]
        table.append(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in new], schema=SCHEMA))
        return model + new
    if kind == "delete":
        table.delete(mor.isin("id", op[1]), mode=op[2])
        return [r for r in model if r[0] not in op[1]]
    if kind == "delete_rows":
        table.delete_rows(pa.table({"id": pa.array(op[1], pa.int64())}))
        return [r for r in model if r[0] not in op[1]]
    if kind == "update":
        table.update({"n": -counter[0]}, where=mor.isin("id", op[1]), mode=op[2])
        return [(i, p, -counter[0]) if i in op[1] else (i, p, n) for i, p, n in model]
    source = {i: (i, p, counter[0]) for i, p in op[1]}  # upsert: one row per key
    table.upsert(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in source.values()], schema=SCHEMA), on=["id"], strategy=op[2])
    return [r for r in model if r[0] not in source] + list(source.values())


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitioned=st.booleans(), history=st.lists(step, min_size=1, max_size=8), compact_options=options)
def test_compact_keeps_every_snapshot_and_drops_only_dead_deletes(partitioned: bool, history: list[tuple], compact_options: dict) -> None:
    with tempfile.TemporaryDirectory() as folder:
        table = mor.load_catalog(Path(folder)).create_table("db.t", schema=SCHEMA, partition_by=["part"] if partitioned else None)
        model: list[tuple] = []
        counter = [0]
        for op in history:
            model = apply(table, model, op, counter)
        before = {s.snapshot_id: rows_of(table, s.snapshot_id) for s in table.snapshots()}
        read = table.current_snapshot()

        result = table.compact(**compact_options)
        event(f"compacted: {result.snapshot_id is not None}, rewrote {min(result.rewritten_data_files, 3)}+")

        assert rows_of(table) == sorted(model)
        for snapshot_id, rows in before.items():
            assert rows_of(table, snapshot_id) == rows
        snapshot = table.current_snapshot()
        if snapshot is None:
            return
        tasks = table.scan().plan_files()
        applied = {d.file_path for t in tasks for d in t.delete_files}
        live_deletes = live_entries(table.io, table.metadata, snapshot, ManifestContent.DELETES)
        assert {e.file.file_path for e in live_deletes} <= applied
        if result.snapshot_id is not None:
            assert snapshot.operation == "replace" and read is not None
            added = {
                e.file.file_path
                for e in live_entries(table.io, table.metadata, snapshot, ManifestContent.DATA)
                if e.snapshot_id == snapshot.snapshot_id
            }
            assert len(added) == result.added_data_files
            assert all(t.data_file.data_sequence_number == read.sequence_number for t in tasks if t.data_file.file_path in added)
        if not any(e.file.content == FileContent.EQUALITY_DELETES for e in live_deletes):
            theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
            assert sorted(tuple(r.values()) for r in theirs.to_pylist()) == sorted(model)
