"""Manifest lists: one Avro file per snapshot naming its manifests, with sequence numbers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import fastavro
import pytest
from unit_helpers import avro_fields_without_ids, avro_file, make_rows

import mor
from mor.format.avro_schemas import MANIFEST_FILE_SCHEMA_V2
from mor.format.manifest import ManifestFile, PartitionFieldSummary
from mor.format.manifest_list import read_manifest_list, write_manifest_list
from mor.format.spec import ManifestContent
from mor.io.fileio import FileIO


def _manifest_file(path: str, seq: int | None, min_seq: int | None, content: ManifestContent = ManifestContent.DATA) -> ManifestFile:
    return ManifestFile(
        manifest_path=path, manifest_length=1234, partition_spec_id=0, content=content,
        sequence_number=seq, min_sequence_number=min_seq, added_snapshot_id=42,
        added_files_count=2, existing_files_count=1, deleted_files_count=0,
        added_rows_count=20, existing_rows_count=10, deleted_rows_count=0,
        partitions=(PartitionFieldSummary(False, False, b"a", b"b"),),
    )  # fmt: skip


def test_manifest_list_round_trip(io: FileIO, metadata_dir: str) -> None:
    new_data = _manifest_file("file:///m/new-data.avro", None, None)
    new_deletes = _manifest_file("file:///m/new-deletes.avro", None, None, ManifestContent.DELETES)
    with_existing = _manifest_file("file:///m/rewritten.avro", None, 2)
    carried = _manifest_file("file:///m/old.avro", 3, 1)
    location = f"{metadata_dir}/snap-1.avro"
    final, _ = write_manifest_list(
        io, location, snapshot_id=99, parent_snapshot_id=98, sequence_number=5,
        manifests=[new_data, new_deletes, with_existing, carried],
    )  # fmt: skip
    assert [(m.sequence_number, m.min_sequence_number) for m in final] == [(5, 5), (5, 5), (5, 2), (3, 1)]
    assert read_manifest_list(io, location) == final

    meta, avro_schema, records = avro_file(location)
    assert {k: meta[k] for k in ("snapshot-id", "parent-snapshot-id", "sequence-number", "format-version")} == {
        "snapshot-id": "99", "parent-snapshot-id": "98", "sequence-number": "5", "format-version": "2",
    }  # fmt: skip
    assert avro_fields_without_ids(avro_schema) == []
    assert [r["content"] for r in records] == [0, 1, 0, 0]
    ids = {f["name"]: f["field-id"] for f in avro_schema["fields"]}
    assert ids == {
        "manifest_path": 500, "manifest_length": 501, "partition_spec_id": 502, "content": 517,
        "sequence_number": 515, "min_sequence_number": 516, "added_snapshot_id": 503,
        "added_files_count": 504, "existing_files_count": 505, "deleted_files_count": 506,
        "added_rows_count": 512, "existing_rows_count": 513, "deleted_rows_count": 514,
        "partitions": 507, "key_metadata": 519,
    }  # fmt: skip


def test_first_manifest_list_has_null_parent(io: FileIO, metadata_dir: str) -> None:
    location = f"{metadata_dir}/snap-1.avro"
    write_manifest_list(io, location, snapshot_id=1, parent_snapshot_id=None, sequence_number=1, manifests=[])
    meta, _, records = avro_file(location)
    assert meta["parent-snapshot-id"] == "null"
    assert records == []
    assert read_manifest_list(io, location) == []


def test_v1_manifest_list_reads_at_the_initial_sequence_number(tmp_path: Path) -> None:
    v1_schema = {
        "type": "record", "name": "manifest_file",
        "fields": [f for f in MANIFEST_FILE_SCHEMA_V2["fields"] if f["field-id"] not in (515, 516, 517)],
    }  # fmt: skip
    record = {
        "manifest_path": "file:///m/1.avro", "manifest_length": 1, "partition_spec_id": 0, "added_snapshot_id": 5,
        "added_files_count": 1, "existing_files_count": 0, "deleted_files_count": 0,
        "added_rows_count": 1, "existing_rows_count": 0, "deleted_rows_count": 0,
    }  # fmt: skip
    with open(tmp_path / "list.avro", "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(v1_schema), [record])
    (m,) = read_manifest_list(FileIO(), str(tmp_path / "list.avro"))
    assert (m.sequence_number, m.min_sequence_number, m.content) == (0, 0, ManifestContent.DATA)


def test_unreadable_manifest_list_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / "list.avro").write_bytes(b"not avro at all")
    with pytest.raises(mor.CorruptMetadataError):
        read_manifest_list(FileIO(), str(tmp_path / "list.avro"))


def test_commits_carry_manifests_with_their_sequence_numbers(make_table: Callable[..., mor.Table]) -> None:
    table = make_table(range(0, 10))  # seq 1
    table.delete("id = 3")  # seq 2
    table.append(make_rows(range(10, 20)))  # seq 3
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.sequence_number == 3
    header, _, rows = avro_file(snapshot.manifest_list)
    assert header["sequence-number"] == "3"
    assert header["snapshot-id"] == str(snapshot.snapshot_id)
    assert header["parent-snapshot-id"] == str(snapshot.parent_snapshot_id)
    by_seq = sorted((r["sequence_number"], r["min_sequence_number"], r["content"], r["added_snapshot_id"]) for r in rows)
    snapshots = {s.sequence_number: s.snapshot_id for s in table.snapshots()}
    assert by_seq == [(1, 1, 0, snapshots[1]), (2, 2, 1, snapshots[2]), (3, 3, 0, snapshots[3])]
    assert {r["manifest_path"] for r in rows} >= {
        r["manifest_path"] for r in avro_file(table.snapshots()[1].manifest_list)[2]
    }  # earlier manifests are reused, not rewritten
