"""`expire_snapshots`: retained snapshots read as before (mor and pyiceberg), expired ones are
gone, files only they read are deleted and no file a retained snapshot reads is; the retention
check, defaults from properties, refs, dry runs, races and the metadata log."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os

import pytest
from foreign_writes import commit_as_another_engine
from pyiceberg.expressions import EqualTo, In
from pyiceberg.table import StaticTable
from unit_helpers import assert_no_orphans, files_under, local, make_rows, raw_entries, read_avro, scan_ids

import mor
from mor.maintenance import expire as expire_module
from mor.maintenance.expire import ExpireResult

NOW = dt.timedelta(0)


def pyiceberg_ids(table: mor.Table, snapshot_id: int) -> list[int]:
    return sorted(StaticTable.from_metadata(table.metadata_location).scan(snapshot_id=snapshot_id).to_arrow()["id"].to_pylist())


def read_by(table: mor.Table, snapshot_id: int) -> set[str]:
    """Files a snapshot reads: its manifest list, manifests and live content files."""
    s = table.metadata.snapshot_by_id(snapshot_id)
    entries = raw_entries(s.manifest_list)
    return (
        {local(s.manifest_list)} | {local(e.manifest["manifest_path"]) for e in entries} | {local(e.path) for e in entries if e.status != 2}
    )


def busy_table(catalog: mor.Catalog, partition_by: list[str] | None = None) -> mor.Table:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=partition_by)
    table.append(make_rows(range(0, 100)))
    table.delete(In("id", [1, 2]))
    table.append(make_rows(range(100, 200)))
    table.delete("id >= 190", mode="copy-on-write")
    table.update({"value": -1.0}, where="id = 5")
    table.upsert(make_rows([7, 300]), on=["id"])
    table.delete(EqualTo("id", 150))
    table.compact()
    table.delete(In("id", [160, 161]))
    return table


@pytest.mark.parametrize("partition_by", [None, ["category"]])
@pytest.mark.parametrize("retain_last", [1, 3])
def test_retained_snapshots_read_as_before_and_only_dead_files_go(
    catalog: mor.Catalog, partition_by: list[str] | None, retain_last: int
) -> None:
    table = busy_table(catalog, partition_by)
    before = {s.snapshot_id: scan_ids(table, snapshot_id=s.snapshot_id) for s in table.snapshots()}
    needed_by = {s.snapshot_id: read_by(table, s.snapshot_id) for s in table.snapshots()}
    on_disk = files_under(table.location)

    result = table.expire_snapshots(older_than=NOW, retain_last=retain_last, allow_short_retention=True)

    kept = [s.snapshot_id for s in table.snapshots()]
    assert kept == list(before)[-retain_last:]
    assert set(result.expired_snapshot_ids) == set(before) - set(kept) and result.expired_snapshots == len(before) - retain_last
    for snapshot_id in kept:
        assert scan_ids(table, snapshot_id=snapshot_id) == before[snapshot_id] == pyiceberg_ids(table, snapshot_id)
    for snapshot_id in result.expired_snapshot_ids:
        with pytest.raises(mor.NoSuchSnapshotError):
            table.scan(snapshot_id=snapshot_id).to_arrow()
    still_needed = set().union(*(needed_by[s] for s in kept))
    deleted = on_disk - files_under(table.location)
    assert deleted and not deleted & still_needed
    assert {local(p) for p in result.deleted_paths} == deleted
    assert result.deleted_data_files > 0
    if retain_last == 1:  # the compaction dropped every position delete file
        assert result.deleted_position_delete_files > 0
    assert result.deleted_manifest_lists == len(before) - retain_last
    content_bytes = result.deleted_data_bytes + result.deleted_position_delete_bytes + result.deleted_equality_delete_bytes
    assert result.deleted_bytes > content_bytes > 0
    only_expired = set().union(*(needed_by[s] for s in result.expired_snapshot_ids)) - still_needed
    assert only_expired <= deleted  # nothing an expired snapshot alone read is left
    assert_no_orphans(table)
    assert table.remove_orphan_files(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)) == []


def test_a_short_retention_is_refused_without_the_override(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    before, files = table.metadata_location, files_under(table.location)
    with pytest.raises(mor.RetentionTooShortError, match="history.expire.max-snapshot-age-ms"):
        table.expire_snapshots(older_than=dt.timedelta(hours=1))
    with pytest.raises(mor.InvalidArgumentError):  # it is also an InvalidArgumentError
        table.expire_snapshots(older_than=dt.datetime.now(dt.UTC))
    assert table.refresh().metadata_location == before and files_under(table.location) == files


def test_defaults_come_from_the_table_properties(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    count = len(table.snapshots())
    assert table.expire_snapshots().expired_snapshots == 0  # everything is younger than 5 days
    table.set_properties(**{"history.expire.max-snapshot-age-ms": "0", "history.expire.min-snapshots-to-keep": "4"})
    result = table.expire_snapshots()  # a cutoff of now is the configured retention: allowed
    assert result.expired_snapshots == count - 4 and len(table.snapshots()) == 4


@pytest.mark.parametrize("arguments", [{"retain_last": 0}, {"retain_last": True}, {"retain_last": "2"}, {"older_than": 5}])
def test_bad_arguments_change_nothing(catalog: mor.Catalog, arguments: dict) -> None:
    table = busy_table(catalog)
    before = table.metadata_location
    with pytest.raises(mor.InvalidArgumentError):
        table.expire_snapshots(allow_short_retention=True, **arguments)
    assert table.refresh().metadata_location == before


def test_dry_run_says_what_would_go_and_changes_nothing(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    before, files = table.metadata_location, files_under(table.location)
    dry = table.expire_snapshots(older_than=NOW, retain_last=2, allow_short_retention=True, dry_run=True)
    assert dry.dry_run and dry.expired_snapshots == len(table.snapshots()) - 2
    assert table.refresh().metadata_location == before and files_under(table.location) == files
    real = table.expire_snapshots(older_than=NOW, retain_last=2, allow_short_retention=True)
    assert real.expired_snapshot_ids == dry.expired_snapshot_ids
    assert set(dry.deleted_paths) <= set(real.deleted_paths)  # the real one also drops the metadata files it outdated


def test_refs_keep_their_snapshots(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    tagged, branch_head = table.snapshots()[1], table.snapshots()[3]
    refs = {
        **table.metadata.refs,
        "v1": {"snapshot-id": tagged.snapshot_id, "type": "tag"},
        "audit": {"snapshot-id": branch_head.snapshot_id, "type": "branch", "min-snapshots-to-keep": 2},
    }
    commit_as_another_engine(table, dataclasses.replace(table.metadata, refs=refs))
    table.refresh()
    rows = {s: scan_ids(table, snapshot_id=s) for s in (tagged.snapshot_id, branch_head.snapshot_id)}

    table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)

    kept = {s.snapshot_id for s in table.snapshots()}
    branch_parent = branch_head.parent_snapshot_id
    assert kept == {tagged.snapshot_id, branch_head.snapshot_id, branch_parent, table.current_snapshot().snapshot_id}
    for snapshot_id, ids in rows.items():
        assert scan_ids(table, snapshot_id=snapshot_id) == ids == pyiceberg_ids(table, snapshot_id)
    assert_no_orphans(table)


def test_snapshot_log_and_time_travel_by_time(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    last_two = table.snapshots()[-2:]
    table.expire_snapshots(older_than=NOW, retain_last=2, allow_short_retention=True)
    assert [sid for _, sid in table.metadata.snapshot_log] == [s.snapshot_id for s in last_two]
    assert scan_ids(table, as_of=last_two[0].timestamp_ms) == scan_ids(table, snapshot_id=last_two[0].snapshot_id)
    with pytest.raises(mor.NoSuchSnapshotError):
        table.scan(as_of=last_two[0].timestamp_ms - 1).to_arrow()
    assert [h.snapshot_id for h in table.history()] == [s.snapshot_id for s in last_two]


def test_statistics_of_expired_snapshots_leave(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    first, current = table.snapshots()[0], table.current_snapshot()
    folder = local(table.location) + "/metadata"
    stats = []
    for s in (first, current):
        path = f"{folder}/stats-{s.snapshot_id}.puffin"
        with open(path, "wb") as f:
            f.write(b"PFA1" + b"\0" * 12)
        stats.append({"snapshot-id": s.snapshot_id, "statistics-path": path, "file-size-in-bytes": 16,
                      "file-footer-size-in-bytes": 8, "blob-metadata": []})  # fmt: skip
    extra = {**table.metadata.extra, "statistics": stats}
    commit_as_another_engine(table, dataclasses.replace(table.metadata, extra=extra))
    table.refresh()

    result = table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)

    assert result.deleted_statistics_files == 1 and not os.path.exists(stats[0]["statistics-path"])
    assert os.path.exists(stats[1]["statistics-path"])
    assert [s["snapshot-id"] for s in table.refresh().metadata.extra["statistics"]] == [current.snapshot_id]


def test_metadata_files_beyond_the_log_are_deleted(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties={"write.metadata.previous-versions-max": "3"})
    for k in range(6):
        table.append(make_rows([k]))
    folder = local(table.location) + "/metadata"
    json_files = lambda: sorted(n for n in os.listdir(folder) if n.endswith(".metadata.json"))  # noqa: E731
    assert len(json_files()) == 7

    result = table.expire_snapshots(older_than=NOW, retain_last=6, allow_short_retention=True)  # expires nothing
    assert result.expired_snapshots == 0 and len(json_files()) == 7

    result = table.expire_snapshots(older_than=NOW, retain_last=5, allow_short_retention=True)
    logged = {os.path.basename(local(p)) for _, p in table.metadata.metadata_log} | {os.path.basename(local(table.metadata_location))}
    assert set(json_files()) == logged and len(logged) == 4
    assert result.deleted_metadata_files == 4
    assert scan_ids(table) == list(range(6))


def test_a_commit_that_lands_first_is_kept(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = busy_table(catalog)
    real = expire_module.files_only_expired_read
    pending = [lambda: catalog.load_table("db.t").append(make_rows([999]))]

    def raced(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        while pending:
            pending.pop()()
        return out

    monkeypatch.setattr(expire_module, "files_only_expired_read", raced)
    expected = sorted([*scan_ids(table), 999])

    result = table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)

    assert scan_ids(table) == expected and len(table.snapshots()) == 1
    assert table.current_snapshot().snapshot_id not in result.expired_snapshot_ids
    assert_no_orphans(table)


def test_an_unreadable_manifest_stops_it_before_anything_changes(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    before, files = table.metadata_location, files_under(table.location)
    manifest = raw_entries(table.current_snapshot().manifest_list)[0].manifest["manifest_path"]
    with open(local(manifest), "r+b") as f:
        f.truncate(10)
    with pytest.raises(mor.MorError):
        table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)
    assert table.refresh().metadata_location == before and files_under(table.location) == files


def test_progress_reports_each_stage(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    events: list = []
    table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True, progress=events.append)
    stages = [e.stage for e in events if e.done == 0]
    assert stages == ["read manifests", "delete files"]
    last = {e.stage: e for e in events}
    assert all(e.done == e.total for e in last.values())


# -- checks added with the review of expire.py (paths, refs, dry runs, unknown outcomes) --------


def commit_metadata(table: mor.Table, **changes: object) -> mor.Table:
    """Commit metadata edited by hand (refs, properties, statistics) and reload the table."""
    commit_as_another_engine(table, dataclasses.replace(table.metadata, **changes))
    return table.refresh()


def small_history(catalog: mor.Catalog, appends: int = 4) -> mor.Table:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    for k in range(appends):
        table.append(make_rows(range(10 * k, 10 * k + 10)))
    return table


def test_a_dry_run_lists_exactly_what_the_real_run_deletes(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    table.set_properties(**{"write.metadata.previous-versions-max": "2"})
    dry = table.expire_snapshots(older_than=NOW, retain_last=2, allow_short_retention=True, dry_run=True)
    real = table.expire_snapshots(older_than=NOW, retain_last=2, allow_short_retention=True)
    assert dry.deleted_metadata_files > 0 and not real.dry_run
    assert dataclasses.replace(dry, dry_run=False) == real


def test_nothing_to_expire_commits_nothing(catalog: mor.Catalog) -> None:
    table = small_history(catalog)
    before, files = table.metadata_location, files_under(table.location)
    result = table.expire_snapshots(older_than=NOW, retain_last=10, allow_short_retention=True)
    assert result == ExpireResult()
    assert result.expired_snapshots == 0 and result.deleted_bytes == 0 and result.deleted_paths == ()
    assert table.refresh().metadata_location == before and files_under(table.location) == files


def test_the_result_is_json(catalog: mor.Catalog) -> None:
    import json

    table = busy_table(catalog)
    result = table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)
    out = json.loads(json.dumps(result.to_dict()))
    assert out["expired_snapshots"] == result.expired_snapshots == len(out["expired_snapshot_ids"])
    assert out["deleted_paths"] == list(result.deleted_paths) and out["dry_run"] is False


@pytest.mark.parametrize(
    "name, value",
    [("history.expire.max-snapshot-age-ms", "five days"), ("history.expire.max-snapshot-age-ms", "-1"),
     ("history.expire.min-snapshots-to-keep", "0"), ("history.expire.max-ref-age-ms", "1.5")],
)  # fmt: skip
def test_a_bad_property_value_is_named(catalog: mor.Catalog, name: str, value: str) -> None:
    table = small_history(catalog)
    table = commit_metadata(table, properties={**table.properties, name: value})  # as another engine might write
    before = table.metadata_location
    with pytest.raises(mor.InvalidArgumentError, match=name):
        table.expire_snapshots(allow_short_retention=True)
    assert table.refresh().metadata_location == before


def test_a_naive_datetime_is_local_time(catalog: mor.Catalog) -> None:
    table = small_history(catalog)
    with pytest.raises(mor.RetentionTooShortError, match="allow_short_retention=True"):
        table.expire_snapshots(older_than=dt.datetime.now() - dt.timedelta(days=4))
    kept = table.snapshots()[-2]
    cutoff = dt.datetime.fromtimestamp(kept.timestamp_ms / 1000)  # naive, local
    result = table.expire_snapshots(older_than=cutoff, allow_short_retention=True)
    assert kept.snapshot_id in {s.snapshot_id for s in table.snapshots()} and result.expired_snapshots == 2


def test_an_old_ref_is_removed_and_main_never_is(catalog: mor.Catalog) -> None:
    table = small_history(catalog)
    first, second = table.snapshots()[0], table.snapshots()[1]
    refs = {
        **table.metadata.refs,
        "old-tag": {"snapshot-id": first.snapshot_id, "type": "tag", "max-ref-age-ms": 0},
        "young-tag": {"snapshot-id": second.snapshot_id, "type": "tag", "max-ref-age-ms": 3_600_000},
        "plain": {"snapshot-id": second.snapshot_id, "type": "branch", "min-snapshots-to-keep": None, "max-snapshot-age-ms": None},
    }
    main = {**refs["main"], "max-ref-age-ms": 0}
    table = commit_metadata(table, refs={**refs, "main": main})
    result = table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)
    assert result.removed_refs == ("old-tag",) and first.snapshot_id in result.expired_snapshot_ids
    assert set(table.metadata.refs) == {"main", "young-tag", "plain"}
    assert {s.snapshot_id for s in table.snapshots()} == {second.snapshot_id, table.current_snapshot().snapshot_id}
    # The table's own maximum ref age applies to refs without one.
    table = commit_metadata(table, properties={**table.properties, "history.expire.max-ref-age-ms": "0"})
    result = table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)
    assert result.removed_refs == ("plain",) and set(table.metadata.refs) == {"main", "young-tag"}
    assert scan_ids(table, snapshot_id=second.snapshot_id) == list(range(20))
    assert_no_orphans(table)


def test_a_damaged_ref_stops_it_before_anything_changes(catalog: mor.Catalog) -> None:
    table = small_history(catalog)
    refs = {**table.metadata.refs, "b": {"snapshot-id": table.snapshots()[0].snapshot_id, "type": "branch", "min-snapshots-to-keep": "x"}}
    table = commit_metadata(table, refs=refs)
    before = table.metadata_location
    with pytest.raises(mor.CorruptMetadataError, match="min-snapshots-to-keep"):
        table.expire_snapshots(older_than=NOW, allow_short_retention=True)
    assert table.refresh().metadata_location == before


def test_snapshots_on_no_branch_go_by_age_only(catalog: mor.Catalog) -> None:
    table = small_history(catalog)
    s = table.snapshots()
    rolled_back = dict(table.metadata.refs, main={"snapshot-id": s[1].snapshot_id, "type": "branch"})
    table = commit_metadata(table, current_snapshot_id=s[1].snapshot_id, refs=rolled_back)
    cutoff = dt.datetime.fromtimestamp(s[3].timestamp_ms / 1000, dt.UTC)
    result = table.expire_snapshots(older_than=cutoff, retain_last=1, allow_short_retention=True)
    assert set(result.expired_snapshot_ids) == {s[0].snapshot_id, s[2].snapshot_id}  # s[3] is young, s[1] is main
    assert scan_ids(table, snapshot_id=s[3].snapshot_id) == list(range(40)) and scan_ids(table) == list(range(20))
    result = table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)
    assert result.expired_snapshot_ids == (s[3].snapshot_id,) and result.deleted_data_files == 2
    assert scan_ids(table) == list(range(20))
    assert_no_orphans(table)


def test_partition_statistics_of_expired_snapshots_leave(catalog: mor.Catalog) -> None:
    table = small_history(catalog)
    folder = local(table.location) + "/metadata"
    entries = []
    for s in table.snapshots():
        path = f"{folder}/partition-stats-{s.snapshot_id}.parquet"
        with open(path, "wb") as f:
            f.write(b"x" * 7)
        entries.append({"snapshot-id": s.snapshot_id, "statistics-path": "file://" + path, "file-size-in-bytes": 7})
    table = commit_metadata(table, extra={**table.metadata.extra, "partition-statistics": entries})
    result = table.expire_snapshots(older_than=NOW, retain_last=2, allow_short_retention=True)
    assert result.deleted_statistics_files == 2 and set(result.deleted_paths) >= {local(e["statistics-path"]) for e in entries[:2]}
    assert [e["snapshot-id"] for e in table.refresh().metadata.extra["partition-statistics"]] == [s.snapshot_id for s in table.snapshots()]
    assert all(os.path.exists(local(e["statistics-path"])) for e in entries[2:])
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)
    assert table.remove_orphan_files(older_than=soon, dry_run=True) == []  # it counts statistics files


class UnknownOutcome:
    """Table operations whose commit lands and then reports an unknown outcome."""

    def __init__(self, ops):  # type: ignore[no-untyped-def]
        self.ops = ops

    def refresh(self):  # type: ignore[no-untyped-def]
        return self.ops.refresh()

    def commit(self, base, base_location, new):  # type: ignore[no-untyped-def]
        self.ops.commit(base, base_location, new)
        raise mor.CommitStateUnknownError("the catalog did not answer")


def test_nothing_is_deleted_after_an_unknown_outcome(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    files = files_under(table.location)
    table._ops = UnknownOutcome(table._ops)
    with pytest.raises(mor.CommitStateUnknownError):
        table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)
    assert files <= files_under(table.location)
    table = catalog.load_table("db.t")
    assert len(table.snapshots()) == 1  # it did land: what it would have deleted is now orphaned
    assert table.remove_orphan_files(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5))
    assert_no_orphans(table)


class CommitsFirst:
    """Table operations where another writer commits just before each of our first `times` swaps."""

    def __init__(self, ops, other, times: int = 1):  # type: ignore[no-untyped-def]
        self.ops, self.other, self.times, self.calls = ops, other, times, 0

    def refresh(self):  # type: ignore[no-untyped-def]
        return self.ops.refresh()

    def commit(self, base, base_location, new):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls <= self.times:
            self.other()
        return self.ops.commit(base, base_location, new)


def test_a_lost_race_is_worked_out_again_and_keeps_the_winners_files(catalog: mor.Catalog) -> None:
    table = busy_table(catalog)
    added: list[int] = []

    def other() -> None:
        writer = catalog.load_table("db.t")
        writer.append(make_rows([1000 + len(added)]))
        added.append(writer.current_snapshot().snapshot_id)

    table._ops = wrapper = CommitsFirst(table._ops, other, times=2)
    expected = sorted([*scan_ids(table), 1000, 1001])
    result = table.expire_snapshots(older_than=NOW, retain_last=2, allow_short_retention=True)
    assert wrapper.calls == 3
    assert [s.snapshot_id for s in table.snapshots()] == added  # the winners are the newest two
    assert not set(added) & set(result.expired_snapshot_ids)
    assert scan_ids(table) == expected and table.refresh().current_snapshot().snapshot_id == added[-1]
    for snapshot_id in added:
        assert read_by(table, snapshot_id) <= files_under(table.location)
    assert_no_orphans(table)


def test_a_table_that_spells_paths_two_ways_keeps_its_files(catalog: mor.Catalog) -> None:
    """Writers spell one file `file:///a`, `file:/a` or `/a`: a retained snapshot that names a
    file one way while an expired one names it another still keeps it."""
    import fastavro

    from mor.format.metadata import Snapshot, with_snapshot

    table = small_history(catalog, appends=3)
    current = table.current_snapshot()
    folder = local(table.location) + "/metadata"

    def rewrite(src: str, dst: str, change) -> None:  # type: ignore[no-untyped-def]
        with open(local(src), "rb") as f:
            reader = fastavro.reader(f)
            schema, meta, records = reader.writer_schema, dict(reader.metadata), [change(r) for r in reader]
        meta = {k: v for k, v in meta.items() if not k.startswith("avro.")}
        with open(dst, "wb") as f:
            fastavro.writer(f, schema, records, metadata=meta)

    def hadoop(location: str) -> str:
        return "file:" + local(location)

    manifests = read_avro(current.manifest_list)[1]
    newest = max(manifests, key=lambda m: m["sequence_number"])
    respelled = f"{folder}/respelled-manifest.avro"
    rewrite(
        newest["manifest_path"],
        respelled,
        lambda e: {**e, "data_file": {**e["data_file"], "file_path": hadoop(e["data_file"]["file_path"])}},
    )

    def respell_list_row(m: dict) -> dict:  # type: ignore[type-arg]
        if m["manifest_path"] == newest["manifest_path"]:
            return {**m, "manifest_path": "file:" + respelled, "manifest_length": os.path.getsize(respelled)}
        return {**m, "manifest_path": hadoop(m["manifest_path"])}

    new_list = f"{folder}/snap-respelled.avro"
    rewrite(current.manifest_list, new_list, respell_list_row)
    snapshot = Snapshot(
        snapshot_id=current.snapshot_id + 1, parent_snapshot_id=current.snapshot_id,
        sequence_number=table.metadata.last_sequence_number + 1, timestamp_ms=current.timestamp_ms + 1,
        manifest_list="file:" + new_list, summary={"operation": "replace"}, schema_id=current.schema_id,
    )  # fmt: skip
    commit_as_another_engine(table, with_snapshot(table.metadata, snapshot))
    table.refresh()
    assert scan_ids(table) == list(range(30))

    result = table.expire_snapshots(older_than=NOW, retain_last=1, allow_short_retention=True)

    assert result.expired_snapshots == 3 and result.deleted_data_files == 0
    assert result.deleted_manifests == 1  # the newest append's manifest, which the respelled copy replaced
    assert scan_ids(table) == list(range(30)) == pyiceberg_ids(table, snapshot.snapshot_id)
    assert_no_orphans(table)


def test_an_expired_snapshot_whose_files_were_lost_can_still_expire(catalog: mor.Catalog) -> None:
    table = small_history(catalog)
    lost = table.snapshots()[0].manifest_list
    os.remove(local(lost))
    with pytest.raises(mor.CorruptMetadataError):  # time travel to it fails: the way out is to expire it
        table.scan(snapshot_id=table.snapshots()[0].snapshot_id).to_arrow()
    result = table.expire_snapshots(older_than=NOW, retain_last=3, allow_short_retention=True)
    assert result.expired_snapshots == 1 and result.missing_paths == (local(lost),)
    assert local(lost) not in result.deleted_paths and result.deleted_manifest_lists == 0
    assert scan_ids(table) == list(range(40))
    assert_no_orphans(table)  # its manifest was not shared, so nothing is left behind


def test_an_unreadable_manifest_list_of_a_retained_snapshot_stops_it(catalog: mor.Catalog) -> None:
    table = small_history(catalog)
    before, files = table.metadata_location, files_under(table.location)
    os.remove(local(table.snapshots()[-2].manifest_list))
    with pytest.raises(mor.CorruptMetadataError):
        table.expire_snapshots(older_than=NOW, retain_last=2, allow_short_retention=True)
    assert table.refresh().metadata_location == before and files_under(table.location) == files - {
        local(table.snapshots()[-2].manifest_list)
    }
