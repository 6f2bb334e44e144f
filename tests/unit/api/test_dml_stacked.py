"""DML on a table whose deletes have stacked up (issue 9): many position delete files, many
equality delete files, each data file seeing a different subset of them. UPSERT (both
strategies), UPDATE, MERGE and DELETE must leave what a list-of-rows model says, and the
shared equality delete index must answer for any subset of its files as a set built from
that subset would."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.expressions import In
from unit_helpers import RecordingFileIO, make_rows, rows_of, sorted_rows, table_rows

import mor
from mor.io.fileio import to_local_path
from mor.read.equality_deletes import EqualityDeleteCache, EqualityKeySet

MakeTable = Callable[..., mor.Table]
Row = dict[str, Any]


def _stacked(make_table: MakeTable, partition_by: list[str] | None, eq_on: list[str]) -> tuple[mor.Table, dict[tuple, Row]]:
    """A table after a stack of DELETEs, delete_rows and UPSERTs of both strategies, and its
    model (key -> row). Keys are (id, category): ids repeat across categories only for
    UPSERTs with the two-column key."""
    rng = random.Random(3)
    table = make_table(range(0, 60), range(60, 120), partition_by=partition_by)
    model = {(r["id"], r["category"]): r for r in make_rows(range(0, 120)).to_pylist()}
    next_id = 1000
    for step in range(24):
        live = sorted(model)
        kind = step % 4
        if kind == 0:  # merge-on-read DELETE: position deletes
            gone = rng.sample(live, 3)
            table.delete(In("id", [k[0] for k in gone]))
            gone_ids = {k[0] for k in gone}
            model = {k: r for k, r in model.items() if k[0] not in gone_ids}
        elif kind == 1:  # delete_rows: equality deletes (one key may be absent)
            gone = rng.sample(live, 3)
            keys = rows_of([model[k] for k in gone]).select(eq_on)
            table.delete_rows(keys)
            gone_keys = {tuple(model[k][c] for c in eq_on) for k in gone}
            model = {k: r for k, r in model.items() if tuple(r[c] for c in eq_on) not in gone_keys}
        else:  # UPSERTs: equality then position strategy; each adds a data file
            strategy = "equality" if kind == 2 else "position"
            old = [dict(model[k], name=f"u{step}") for k in rng.sample(live, 4)]
            new = [dict(r, name=f"u{step}") for r in make_rows(range(next_id, next_id + 3)).to_pylist()]
            next_id += 3
            source = rows_of(old + new)
            table.upsert(source, on=eq_on, strategy=strategy)
            model = _upserted(model, source, eq_on)
    assert table_rows(table) == sorted_rows(list(model.values()))
    return table, model


def _upserted(model: dict[tuple, Row], source: pa.Table, on: list[str]) -> dict[tuple, Row]:
    rows = source.to_pylist()
    keys = {tuple(r[c] for c in on) for r in rows}
    kept = {k: r for k, r in model.items() if tuple(r[c] for c in on) not in keys}
    return {**kept, **{(r["id"], r["category"]): r for r in rows}}


STACKS = [
    pytest.param(None, ["id"], id="unpartitioned"),
    pytest.param(["category"], ["id"], id="partitioned-global-deletes"),
    pytest.param(["category"], ["id", "category"], id="partitioned-scoped-deletes"),
]


@pytest.mark.parametrize(("partition_by", "on"), STACKS)
def test_dml_after_stacked_deletes(make_table: MakeTable, partition_by: list[str] | None, on: list[str]) -> None:
    """UPSERT (both strategies), MERGE, UPDATE and DELETE in turn, each checked."""
    table, model = _stacked(make_table, partition_by, on)
    tasks = table.scan().plan_files()
    assert max(len(t.position_deletes) for t in tasks) >= 3 and max(len(t.equality_deletes) for t in tasks) >= 6
    assert len({t.equality_deletes for t in tasks}) >= 3  # data files see different subsets

    for strategy, start in (("position", 5000), ("equality", 6000)):
        live = sorted(model)
        old = [dict(model[k], name=strategy, value=-1.0) for k in live[::7]]
        source = rows_of(old + make_rows(range(start, start + 4)).to_pylist())
        table.upsert(source, on=on, strategy=strategy)
        model = _upserted(model, source, on)
        assert table_rows(table) == sorted_rows(list(model.values())), strategy

    live = sorted(model)
    source = rows_of([dict(model[k], value=model[k]["value"] + 100) for k in live[::5]] + make_rows(range(7000, 7003)).to_pylist())
    # Matched rows with an even id go, the others take the source's value; new keys come in.
    table.merge(
        source,
        on=on,
        when_matched_delete=pc.equal(pc.bit_wise_and(pc.field("id"), 1), 0),
        when_matched_update={"value": pc.field("source.value")},
        when_not_matched_insert="*",
    )
    by_key = {tuple(r[c] for c in on): r for r in source.to_pylist()}
    merged = {}
    for key, row in model.items():
        hit = by_key.pop(tuple(row[c] for c in on), None)
        if hit is None or row["id"] % 2:
            merged[key] = row if hit is None else dict(row, value=hit["value"])
    model = {**merged, **{(r["id"], r["category"]): r for r in by_key.values()}}  # not matched: inserted
    assert table_rows(table) == sorted_rows(list(model.values())), "merge"

    ids = sorted({k[0] for k in model})
    changed, gone = set(ids[::3]), set(ids[1::4])
    table.update({"name": "'changed'"}, where=In("id", sorted(changed)))
    table.delete(In("id", sorted(gone)))
    expected = [dict(r, name="changed") if r["id"] in changed else r for r in model.values() if r["id"] not in gone]
    assert table_rows(table) == sorted_rows(expected), "update, delete"


def test_one_index_answers_for_every_subset_of_delete_files(make_table: MakeTable) -> None:
    """Each delete file is read once; a task's key set holds exactly its files' keys."""
    table = make_table(range(0, 100))
    for step in range(8):
        table.delete_rows(pa.table({"id": pa.array([step * 7, step * 7 + 1, 99 - step], pa.int64())}))
        table.append(make_rows(range(200 + step * 10, 210 + step * 10)))
    tasks = table.scan().plan_files()
    subsets = {t.equality_deletes for t in tasks}
    assert len(subsets) == 9  # the first data file sees all 8 files, the last none
    io = RecordingFileIO()
    cache = EqualityDeleteCache(io, table.schema())
    probe = pa.table({"id": pa.array(range(0, 300), pa.int64())})
    for files in sorted(subsets, key=len):  # smallest first: the index grows, then is reused
        keys = set()
        for f in files:
            keys |= set(pq.read_table(to_local_path(f.file_path)).column(0).to_pylist())
        got = np.zeros(probe.num_rows, dtype=bool)
        for key_set in cache.key_sets(files):
            got |= key_set.deleted_mask(probe)
        assert [i for i, hit in enumerate(got) if hit] == sorted(keys)
    assert sorted(io.opened) == sorted({f.file_path for files in subsets for f in files})
    # Files that turned up one at a time were merged into a few indexes (8 files: 1).
    assert len(cache.key_sets(max(subsets, key=len))) == 1
    # Announced files of one column set and partition make one index.
    announced = EqualityDeleteCache(table.io, table.schema())
    announced.prepare(f for files in subsets for f in files)
    assert [len(announced.key_sets(files)) for files in sorted(subsets, key=len) if files] == [1] * 8


@pytest.mark.parametrize("eq_columns", [["id"], ["id", "name"], ["name"]])
def test_a_dml_index_keeps_only_deleted_keys_among_its_own(make_table: MakeTable, eq_columns: list[str]) -> None:
    """With `within`, a task's set answers like the full one for rows holding a DML key."""
    table = make_table(range(0, 50))
    for step in range(5):
        table.delete_rows(make_rows(range(step * 9, step * 9 + 4)).select(eq_columns))
        table.append(make_rows(range(100 + step, 101 + step)))
    tasks = table.scan().plan_files()
    within = EqualityKeySet(["id"], pa.table({"id": pa.array([0, 1, 9, 19, 20, 30, 49, 100], pa.int64())}))
    full = EqualityDeleteCache(table.io, table.schema())
    restricted = EqualityDeleteCache(table.io, table.schema(), within=within)
    restricted.prepare(d for t in tasks for d in t.equality_deletes)
    probe = make_rows(range(0, 110))
    of_dml = within.deleted_mask(probe)
    for task in tasks:
        expected = np.zeros(probe.num_rows, dtype=bool)
        got = np.zeros(probe.num_rows, dtype=bool)
        for key_set in full.key_sets(task.equality_deletes):
            expected |= key_set.deleted_mask(probe)
        for key_set in restricted.key_sets(task.equality_deletes):
            got |= key_set.deleted_mask(probe)
        assert (got & of_dml).tolist() == (expected & of_dml).tolist()


_ints = st.one_of(st.none(), st.integers(-4, 4))
_texts = st.one_of(st.none(), st.sampled_from(["", "a", "b"]))
_pairs = st.lists(st.tuples(_ints, _texts), max_size=12)


def _pair_table(pairs: list[tuple]) -> pa.Table:
    return pa.table({"i": pa.array([p[0] for p in pairs], pa.int64()), "s": pa.array([p[1] for p in pairs], pa.string())})


@settings(max_examples=examples(100), deadline=None)
@given(files=st.lists(_pairs, min_size=1, max_size=4), chosen=st.lists(st.booleans(), min_size=4, max_size=4), probe=_pairs, dml=_pairs)
def test_subsets_and_dml_views_are_null_safe_tuple_sets(
    files: list[list[tuple]], chosen: list[bool], probe: list[tuple], dml: list[tuple]
) -> None:
    """A subset of an index's files, and an index among a DML's keys, against Python sets."""
    for names, project in ((["i", "s"], lambda p: p), (["i"], lambda p: p[:1])):
        key_set = EqualityKeySet(names, _pair_table([p for f in files for p in f]).select(names))
        ranges, start = [], 0
        for keys, pick in zip(files, chosen):
            if pick:
                ranges.append((start, start + len(keys)))
            start += len(keys)
        subset = key_set.subset(ranges)
        wanted = {project(p) for f, pick in zip(files, chosen) if pick for p in f}
        assert subset.deleted_mask(_pair_table(probe)).tolist() == [project(p) in wanted for p in probe]
        view = EqualityKeySet(names, _pair_table(dml).select(names)) if dml else None
        if view is not None:
            among = view.among(_pair_table([p for f in files for p in f]).select(names))
            held = {project(p) for p in dml} & {project(p) for f in files for p in f}
            assert among.deleted_mask(_pair_table(probe)).tolist() == [project(p) in held for p in probe]
