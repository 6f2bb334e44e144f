"""`expire_snapshots` over random histories (the steps of test_compact_property, with
compactions mixed in, and random tags and branches): no file a retained snapshot reads is
deleted, every retained snapshot reads what it read before, nothing that only expired snapshots
read is left behind, and a dry run first says exactly what the real run then deletes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import tempfile
from pathlib import Path

import fastavro
from examples import examples
from foreign_writes import commit_as_another_engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compact_property import SCHEMA, apply, rows_of, step

import mor
from mor.io.fileio import to_local_path

history_step = step | st.just(("compact",))


def files_read_by(table: mor.Table, snapshot_id: int) -> set[str]:
    """Manifest list, manifests and live content files, read with fastavro (not mor)."""
    manifest_list = table.metadata.snapshot_by_id(snapshot_id).manifest_list
    out = {to_local_path(manifest_list)}
    with open(to_local_path(manifest_list), "rb") as f:
        manifests = [m["manifest_path"] for m in fastavro.reader(f)]
    for m in manifests:
        out.add(to_local_path(m))
        with open(to_local_path(m), "rb") as f:
            out |= {to_local_path(e["data_file"]["file_path"]) for e in fastavro.reader(f) if e["status"] != 2}
    return out


def add_refs(table: mor.Table, refs: list[tuple]) -> set[int]:
    """Tag or branch (with its own min-snapshots-to-keep) the chosen snapshots; their ids."""
    snapshots = table.snapshots()
    chosen = {}
    for k, (index, kind, keep) in enumerate(refs):
        if index < len(snapshots):
            ref = {"snapshot-id": snapshots[index].snapshot_id, "type": kind}
            if kind == "branch" and keep is not None:
                ref["min-snapshots-to-keep"] = keep
            chosen[f"ref{k}"] = ref
    if chosen:
        commit_as_another_engine(table, dataclasses.replace(table.metadata, refs={**table.metadata.refs, **chosen}))
        table.refresh()
    return {r["snapshot-id"] for r in chosen.values()}


def files_under(location: str) -> set[str]:
    root = to_local_path(location)
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    partitioned=st.booleans(),
    history=st.lists(history_step, min_size=1, max_size=8),
    retain_last=st.integers(1, 4),
    cut=st.integers(0, 8),
    refs=st.lists(st.tuples(st.integers(0, 8), st.sampled_from(["tag", "branch"]), st.sampled_from([None, 1, 2])), max_size=2),
)
def test_expire_never_deletes_what_a_retained_snapshot_reads(
    partitioned: bool, history: list[tuple], retain_last: int, cut: int, refs: list[tuple]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        table = mor.load_catalog(Path(folder)).create_table("db.t", schema=SCHEMA, partition_by=["part"] if partitioned else None)
        model: list[tuple] = []
        counter = [0]
        for op in history:
            if op[0] == "compact":
                table.compact()
            else:
                model = apply(table, model, op, counter)
        snapshots = table.snapshots()
        named = add_refs(table, refs)
        before = {s.snapshot_id: rows_of(table, s.snapshot_id) for s in snapshots}
        reads = {s.snapshot_id: files_read_by(table, s.snapshot_id) for s in snapshots}
        on_disk = files_under(table.location)
        # Expire before the `cut`-th snapshot (a time between two commits), keeping `retain_last`.
        cutoff = (
            dt.datetime.fromtimestamp(snapshots[cut].timestamp_ms / 1000, dt.UTC)
            if cut < len(snapshots)
            else dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
        )

        dry = table.expire_snapshots(older_than=cutoff, retain_last=retain_last, allow_short_retention=True, dry_run=True)
        assert files_under(table.location) == on_disk
        result = table.expire_snapshots(older_than=cutoff, retain_last=retain_last, allow_short_retention=True)
        assert dataclasses.replace(dry, dry_run=False) == result

        kept = [s.snapshot_id for s in table.snapshots()]
        assert set(kept) | set(result.expired_snapshot_ids) == set(before)
        if snapshots:
            assert table.current_snapshot().snapshot_id == snapshots[-1].snapshot_id
            newest = [s.snapshot_id for s in snapshots][-retain_last:]
            younger = [s.snapshot_id for s in snapshots[cut:]]
            assert set(newest) | set(younger) | named <= set(kept)
        deleted = on_disk - files_under(table.location)
        assert deleted == set(result.deleted_paths)
        needed = set().union(*(reads[s] for s in kept)) if kept else set()
        assert not deleted & needed
        only_expired = set().union(*(reads[s] for s in result.expired_snapshot_ids)) - needed if result.expired_snapshot_ids else set()
        assert only_expired <= deleted
        for snapshot_id in kept:
            assert rows_of(table, snapshot_id) == before[snapshot_id]
        assert rows_of(table) == sorted(model)
