"""Commits as data: requirements and updates round-trip through their REST JSON, pyiceberg's
models parse what we send, and `apply_updates` makes the metadata pyiceberg's own
`update_table_metadata` makes from the same updates (the judge: an implementation no one here
wrote)."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pytest
from foreign_writes import commit_as_another_engine
from pydantic import TypeAdapter
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.table.update import TableRequirement, TableUpdate, update_table_metadata
from pyiceberg.transforms import BucketTransform

import mor
from mor.commit.table_commits import expire_commit, properties_commit, schema_commit, snapshot_commit, spec_commit
from mor.format.apply import apply_updates
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertRefSnapshotId,
    AssertTableUuid,
    CommitFailedError,
    check_requirements,
    requirement_from_dict,
)
from mor.format.updates import (
    AddSnapshot,
    RemoveSnapshotRef,
    SetSnapshotRef,
    SetStatistics,
    TableCommit,
    update_from_dict,
)

UPDATES = TypeAdapter(TableUpdate)
REQUIREMENTS = TypeAdapter(TableRequirement)


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.append(pa.table({"id": [4], "v": ["d"]}))
    return t


def _judge(base: TableMetadata, commit: TableCommit) -> dict:
    """pyiceberg's metadata after the same updates, parsed from our JSON."""
    theirs = TableMetadataUtil.parse_raw(base.to_json())
    updates = tuple(UPDATES.validate_python(u.to_dict()) for u in commit.updates)
    return json.loads(update_table_metadata(theirs, updates).model_dump_json(by_alias=True, exclude_none=True))


def _comparable(d: dict) -> dict:
    keys = ("current-schema-id", "default-spec-id", "last-partition-id", "last-column-id", "current-snapshot-id",
            "last-sequence-number", "properties", "format-version")  # fmt: skip
    out = {k: d.get(k) for k in keys}
    out["refs"] = {name: (r["snapshot-id"], r["type"]) for name, r in (d.get("refs") or {}).items()}
    out["snapshots"] = sorted(s["snapshot-id"] for s in d.get("snapshots") or [])
    out["schemas"] = sorted(s["schema-id"] for s in d["schemas"])
    out["specs"] = sorted((s["spec-id"], len(s["fields"])) for s in d["partition-specs"])
    out["snapshot-log"] = [e["snapshot-id"] for e in d.get("snapshot-log") or []]
    return out


def _same_as_pyiceberg(base: TableMetadata, commit: TableCommit) -> TableMetadata:
    ours = apply_updates(base, commit.updates)
    assert _comparable(json.loads(ours.to_json())) == _comparable(_judge(base, commit))
    return ours


def test_every_kind_of_writer_commit_is_valid_rest_json_and_applies_as_pyiceberg_does(table: mor.Table) -> None:
    base = table.metadata
    parent = base.current_snapshot()
    assert parent is not None
    snapshot = dataclasses.replace(parent, snapshot_id=parent.snapshot_id + 1, parent_snapshot_id=parent.snapshot_id,
                                   sequence_number=base.last_sequence_number + 1, timestamp_ms=parent.timestamp_ms + 1)  # fmt: skip
    schema = table.update_schema().add_column("w", pa.int32()).apply()
    spec = PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "id_bucket"), spec_id=1)
    commits = [
        snapshot_commit(base, snapshot),
        schema_commit(base, schema),
        spec_commit(base, spec),
        properties_commit(base, {"a": "1"}, ("write.delete.mode",)),
        properties_commit(base, {}, format_version=3),
        expire_commit(base, {s.snapshot_id for s in base.snapshots if s.snapshot_id != parent.snapshot_id}, set()),
    ]
    for commit in commits:
        body = commit.to_dict()
        for r in body["requirements"]:
            REQUIREMENTS.validate_python(r)  # pyiceberg parses what we send
        assert TableCommit.from_dict(json.loads(json.dumps(body))).to_dict() == body
        check_requirements(commit.requirements, base)
        if any(u["action"] == "upgrade-format-version" for u in body["updates"]):
            assert apply_updates(base, commit.updates).format_version == 3  # pyiceberg 0.12 asks more of a v3 upgrade
            continue
        _same_as_pyiceberg(base, commit)


def test_a_snapshot_commit_moves_main_and_keeps_what_others_wrote(table: mor.Table) -> None:
    refs = {**table.metadata.refs, "main": {**table.metadata.refs["main"], "max-ref-age-ms": 86_400_000},
            "audit": {"snapshot-id": table.metadata.current_snapshot_id, "type": "tag"}}  # fmt: skip
    extra = {"statistics": [{"snapshot-id": table.metadata.current_snapshot_id, "statistics-path": "s.puffin",
                             "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []}],
             "some-future-key": {"x": 1}}  # fmt: skip
    commit_as_another_engine(table, dataclasses.replace(table.metadata, refs=refs, extra=extra))
    table.delete("id = 2")
    after = table.metadata
    assert after.refs["main"]["max-ref-age-ms"] == 86_400_000 and after.refs["audit"] == refs["audit"]
    assert after.extra["statistics"] == extra["statistics"] and after.extra["some-future-key"] == {"x": 1}
    assert after.snapshot_log[-1][1] == after.current_snapshot_id


def test_requirements_fail_on_a_table_that_moved(table: mor.Table) -> None:
    base = table.metadata
    commit = snapshot_commit(base, base.current_snapshot())  # type: ignore[arg-type]
    table.append(pa.table({"id": [9], "v": ["z"]}))
    with pytest.raises(CommitFailedError, match="^Requirement failed: branch main has changed: expected id"):
        check_requirements(commit.requirements, table.metadata)
    with pytest.raises(CommitFailedError, match="^Requirement failed: UUID does not match: expected .* != not-this-table$"):
        AssertTableUuid("not-this-table").check(table.metadata)
    AssertTableUuid(table.metadata.table_uuid.upper()).check(table.metadata)  # compared as Java compares them
    with pytest.raises(CommitFailedError, match="^Requirement failed: table already exists$"):
        AssertCreate().check(table.metadata)
    with pytest.raises(CommitFailedError, match="^Requirement failed: current schema changed: expected id 7 != 0$"):
        AssertCurrentSchemaId(7).check(table.metadata)
    with pytest.raises(CommitFailedError, match="does not exist"):
        AssertRefSnapshotId("main", 1).check(None)
    AssertRefSnapshotId("no-such-branch", None).check(table.metadata)


def test_a_snapshot_behind_the_table_is_a_conflict_not_corruption(table: mor.Table) -> None:
    base = table.metadata
    parent = base.current_snapshot()
    assert parent is not None
    stale = Snapshot(parent.snapshot_id + 7, parent.snapshot_id, base.last_sequence_number, parent.timestamp_ms + 1,
                     parent.manifest_list, {"operation": "append"})  # fmt: skip
    with pytest.raises(CommitFailedError, match="sequence number"):
        apply_updates(base, [AddSnapshot(stale)])


@pytest.mark.parametrize(
    "bad",
    [
        {"action": "set-snapshot-ref", "ref-name": "b", "type": "branch", "snapshot-id": 12345},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "upgrade-format-version", "format-version": 1},
        {"action": "remove-partition-specs", "spec-ids": [0]},
    ],
)
def test_updates_that_cannot_apply_are_invalid_arguments(table: mor.Table, bad: dict) -> None:
    with pytest.raises(mor.InvalidArgumentError):
        apply_updates(table.metadata, [update_from_dict(bad)])


@pytest.mark.parametrize(
    "bad",
    [None, [], {"action": 3}, {"action": "no-such-update"}, {"action": "set-properties", "updates": {"a": 1}},
     {"action": "add-schema", "schema": {"type": "struct", "fields": "x"}}, {"action": "remove-snapshots", "snapshot-ids": "1"},
     {"action": "add-snapshot", "snapshot": []}, {"action": "set-snapshot-ref", "ref-name": "x", "snapshot-id": 1, "type": "label"}],
)  # fmt: skip
def test_malformed_updates_are_invalid_arguments(bad: object) -> None:
    with pytest.raises(mor.InvalidArgumentError):
        update_from_dict(bad)


@pytest.mark.parametrize(
    "bad", [None, {"type": "assert-nothing"}, {"type": "assert-table-uuid"}, {"type": "assert-current-schema-id", "current-schema-id": "1"}]
)
def test_malformed_requirements_are_invalid_arguments(bad: object) -> None:
    with pytest.raises(mor.InvalidArgumentError):
        requirement_from_dict(bad)


def test_refs_and_statistics_updates(table: mor.Table) -> None:
    base = table.metadata
    head = base.current_snapshot_id
    assert head is not None
    tagged = apply_updates(base, [SetSnapshotRef("v1", {"snapshot-id": head, "type": "tag", "max-ref-age-ms": 5})])
    assert tagged.refs["v1"] == {"snapshot-id": head, "type": "tag", "max-ref-age-ms": 5}
    assert tagged.current_snapshot_id == head and tagged.snapshot_log == base.snapshot_log
    stats = {"snapshot-id": head, "statistics-path": "p", "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []}
    with_stats = apply_updates(tagged, [SetStatistics("statistics", stats), RemoveSnapshotRef("v1")])
    assert with_stats.extra["statistics"] == [stats] and "v1" not in with_stats.refs
    older = base.snapshots[0].snapshot_id
    rolled_back = apply_updates(base, [SetSnapshotRef("main", {"snapshot-id": older, "type": "branch"})])
    assert rolled_back.current_snapshot_id == older and rolled_back.snapshot_log[-1][1] == older
