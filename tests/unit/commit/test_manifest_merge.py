"""Commits merge small manifests once there are many: the manifest count stays bounded, and
every snapshot still reads the same rows, with the same sequence numbers, in mor and pyiceberg."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo, In
from pyiceberg.table import StaticTable
from unit_helpers import make_rows, scan_ids

import mor
from mor.errors import InvalidArgumentError
from mor.format.manifest import read_manifest
from mor.format.manifest_list import read_manifest_list
from mor.format.spec import ManifestContent, ManifestEntryStatus
from mor.planning.conflicts import commits_since

MERGE_AT_5 = {"commit.manifest.min-count-to-merge": "5"}


def manifests(table: mor.Table, content: ManifestContent | None = None) -> list:
    found = read_manifest_list(table.io, table.current_snapshot().manifest_list)
    return [m for m in found if content is None or m.content == content]


def pyiceberg_ids(table: mor.Table, snapshot_id: int | None = None) -> list[int]:
    static = StaticTable.from_metadata(table.metadata_location)
    return sorted(static.scan(snapshot_id=snapshot_id).to_arrow()["id"].to_pylist())


def file_sequence_numbers(table: mor.Table) -> dict[str, tuple[int, int]]:
    return {t.data_file.file_path: (t.data_file.data_sequence_number, t.data_file.file_sequence_number) for t in table.scan().plan_files()}


def test_appends_keep_the_manifest_count_bounded(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties=MERGE_AT_5)
    history = []
    for i in range(23):
        table.append(make_rows(range(i * 10, i * 10 + 10)))
        history.append(table.current_snapshot().snapshot_id)
        assert len(manifests(table)) < 5 + 1
    assert scan_ids(table) == list(range(230))
    assert pyiceberg_ids(table) == list(range(230))
    for i, snapshot_id in enumerate(history):  # older snapshots read as they did
        assert scan_ids(table, snapshot_id=snapshot_id) == list(range(i * 10 + 10))


def test_merged_entries_keep_their_sequence_numbers_and_snapshot_ids(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    for i in range(4):
        table.append(make_rows([i]))
    appends = {s.snapshot_id for s in table.snapshots()}
    before = file_sequence_numbers(table)
    table.set_properties(**{"commit.manifest.min-count-to-merge": "2"})
    table.append(make_rows([4]))
    new, merged = sorted(manifests(table), key=lambda m: m.existing_files_count)
    assert (new.added_files_count, new.existing_files_count) == (1, 0)
    assert (merged.added_files_count, merged.existing_files_count) == (0, 4)
    entries = read_manifest(table.io, merged, table.metadata.specs(), table.schema())
    assert {e.status for e in entries} == {ManifestEntryStatus.EXISTING}
    assert {e.snapshot_id for e in entries} == appends
    assert {e.file.file_path for e in entries} == set(before)
    assert {p: v for p, v in file_sequence_numbers(table).items() if p in before} == before
    # The merging commit itself added one file and removed none.
    (commit,) = commits_since(table.io, _parent(table), table.metadata)
    assert [f.file_path for f in commit.added_data] == [p for p in file_sequence_numbers(table) if p not in before]
    assert commit.removed_paths == set()


def _parent(table: mor.Table):
    """The table's metadata as of the parent snapshot (for commits_since)."""
    from dataclasses import replace

    return replace(table.metadata, current_snapshot_id=table.current_snapshot().parent_snapshot_id)


def test_equality_deletes_still_apply_only_to_older_data_after_a_merge(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties=MERGE_AT_5)
    table.append(make_rows([1, 2, 3]))
    table.delete_rows(pa.table({"id": pa.array([2], pa.int64())}))  # applies to the file before it
    table.append(make_rows([2]))  # a newer row with the deleted key stays
    for i in range(10, 20):
        table.append(make_rows([i]))
    assert len(manifests(table, ManifestContent.DATA)) < 5
    assert scan_ids(table) == [1, 2, 3, *range(10, 20)]  # (pyiceberg cannot read equality deletes)


def test_position_deletes_and_their_manifests_merge_too(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties=MERGE_AT_5)
    table.append(make_rows(range(100)))
    deleted: set[int] = set()
    for i in range(12):
        table.delete(In("id", [i, 50 + i]))
        deleted |= {i, 50 + i}
    assert len(manifests(table, ManifestContent.DELETES)) < 5
    expected = sorted(set(range(100)) - deleted)
    assert scan_ids(table) == expected
    assert pyiceberg_ids(table) == expected
    table.delete(EqualTo("id", 99))
    assert scan_ids(table) == expected[:-1]


def test_merging_can_be_turned_off(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties={**MERGE_AT_5, "commit.manifest-merge.enabled": "false"})
    for i in range(8):
        table.append(make_rows([i]))
    assert len(manifests(table)) == 8


@pytest.mark.parametrize(
    "name, value",
    [("commit.manifest-merge.enabled", "yes"), ("commit.manifest.min-count-to-merge", "-1"), ("commit.manifest.target-size-bytes", "0")],
)
def test_unusable_merge_properties_are_refused(catalog: mor.Catalog, name: str, value: str) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    with pytest.raises(InvalidArgumentError, match=name):
        table.set_properties(**{name: value})
