"""Row lineage (v3): `_row_id` and `_last_updated_sequence_number`, from the manifest fields that
hand out row ids to what every write does to them.

The spec's sections "Row Lineage", "First Row ID Inheritance", "First Row ID Assignment" and
"Snapshot Row IDs". Metadata is checked in the files themselves (JSON, fastavro) where it is
what a commit wrote; lineage values through scans, at the current and at every past snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType
from unit_helpers import SCHEMA, avro_file, local, make_rows, rows_of

import mor
from mor.errors import InvalidFilterError
from mor.format.content_file import DataFile, DeleteFile
from mor.format.manifest import (
    EntryToWrite,
    ManifestFile,
    read_manifest,
    write_manifest,
)
from mor.format.manifest_list import (
    assign_first_row_ids,
    read_manifest_list,
    write_manifest_list,
)
from mor.format.spec import FileContent, ManifestContent, ManifestEntryStatus
from mor.io.fileio import FileIO

LINEAGE = ["_row_id", "_last_updated_sequence_number"]
ICEBERG_SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "category", StringType()), schema_id=0)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"), spec_id=0)
SNAPSHOT_ID = 42
ADDED, EXISTING, DELETED = ManifestEntryStatus.ADDED, ManifestEntryStatus.EXISTING, ManifestEntryStatus.DELETED


# -- first row id inheritance in a manifest -----------------------------------------------------
def _file(path: str, records: int, first_row_id: int | None = None) -> DataFile:
    return DataFile(
        content=FileContent.DATA, file_path=path, file_format="PARQUET", spec_id=0, partition=("a",),
        record_count=records, file_size_in_bytes=100, first_row_id=first_row_id,
    )  # fmt: skip


def _manifest(io: FileIO, metadata_dir: str, entries: list[tuple[ManifestEntryStatus, DataFile]], name: str = "m") -> ManifestFile:
    return write_manifest(
        io, f"{metadata_dir}/{name}.avro", spec=SPEC, schema=ICEBERG_SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, format_version=3,
        entries=[EntryToWrite(s, SNAPSHOT_ID, f, None if s is ADDED else 1, None if s is ADDED else 1) for s, f in entries],
    )  # fmt: skip


def _first_row_ids(io: FileIO, manifest: ManifestFile, first_row_id: int | None) -> dict[str, int | None]:
    listed = ManifestFile(**{**manifest.__dict__, "first_row_id": first_row_id}).with_sequence_number(3)
    return {e.file.file_path: e.file.first_row_id for e in read_manifest(io, listed, {0: SPEC}, ICEBERG_SCHEMA)}


ENTRIES = [
    (ADDED, _file("f1", 10)),
    (EXISTING, _file("f2", 5, first_row_id=800)),  # assigned by an earlier commit: kept
    (ADDED, _file("f3", 20)),
    (DELETED, _file("f4", 7)),  # a deleted entry does not take ids
    (EXISTING, _file("f5", 4)),  # an existing file without one (written before the upgrade) gets one
    (DELETED, _file("f6", 9, first_row_id=300)),
    (ADDED, _file("f7", 3)),
]


def test_null_first_row_ids_are_inherited_from_the_manifest(io: FileIO, metadata_dir: str) -> None:
    manifest = _manifest(io, metadata_dir, ENTRIES)
    assert _first_row_ids(io, manifest, 1000) == {
        "f1": 1000, "f2": 800, "f3": 1010, "f4": None, "f5": 1030, "f6": 300, "f7": 1034,
    }  # fmt: skip


def test_first_row_ids_are_written_as_given(io: FileIO, metadata_dir: str) -> None:
    """ADDED files are written with null (assigned on read); explicit values as they are."""
    manifest = _manifest(io, metadata_dir, ENTRIES)
    _, schema, records = avro_file(manifest.manifest_path)
    data_file = next(f for f in schema["fields"] if f["name"] == "data_file")["type"]
    field = next(f for f in data_file["fields"] if f["name"] == "first_row_id")
    assert field["field-id"] == 142 and field["type"] == ["null", "long"]
    assert {r["data_file"]["file_path"]: r["data_file"]["first_row_id"] for r in records} == {
        "f1": None, "f2": 800, "f3": None, "f4": None, "f5": None, "f6": 300, "f7": None,
    }  # fmt: skip


def test_a_manifest_without_a_first_row_id_gives_no_row_ids(io: FileIO, metadata_dir: str) -> None:
    """Snapshots from before the upgrade to v3: no row ids at all (and, as Iceberg Java's reader
    does for such a committed manifest, not even a value written into an entry)."""
    manifest = _manifest(io, metadata_dir, ENTRIES)
    assert set(_first_row_ids(io, manifest, None).values()) == {None}


def test_delete_files_never_have_a_first_row_id(io: FileIO, metadata_dir: str) -> None:
    delete = DeleteFile(
        content=FileContent.POSITION_DELETES, file_path="d1", file_format="PARQUET", spec_id=0, partition=("a",),
        record_count=2, file_size_in_bytes=10, referenced_data_file="f1",
    )  # fmt: skip
    m = write_manifest(
        io, f"{metadata_dir}/d.avro", spec=SPEC, schema=ICEBERG_SCHEMA, content=ManifestContent.DELETES,
        snapshot_id=SNAPSHOT_ID, format_version=3, entries=[EntryToWrite(ADDED, SNAPSHOT_ID, delete)],
    )  # fmt: skip
    listed = ManifestFile(**{**m.__dict__, "first_row_id": 50}).with_sequence_number(2)
    assert [e.file.first_row_id for e in read_manifest(io, listed, {0: SPEC}, ICEBERG_SCHEMA)] == [None]


def test_a_v2_manifest_has_no_first_row_id_field(io: FileIO, metadata_dir: str) -> None:
    m = write_manifest(
        io, f"{metadata_dir}/v2.avro", spec=SPEC, schema=ICEBERG_SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ADDED, SNAPSHOT_ID, _file("f1", 3, first_row_id=7))],
    )  # fmt: skip
    _, schema, _ = avro_file(m.manifest_path)
    data_file = next(f for f in schema["fields"] if f["name"] == "data_file")["type"]
    assert not {"first_row_id", "content_offset", "content_size_in_bytes"} & {f["name"] for f in data_file["fields"]}


# -- first row id assignment in a manifest list -------------------------------------------------
def _listed(
    name: str, added: int, existing: int, first_row_id: int | None = None, content: ManifestContent = ManifestContent.DATA
) -> ManifestFile:
    return ManifestFile(
        manifest_path=name, manifest_length=1, partition_spec_id=0, content=content, sequence_number=None,
        min_sequence_number=None, added_snapshot_id=SNAPSHOT_ID, added_files_count=1 if added else 0,
        existing_files_count=1 if existing else 0, deleted_files_count=0, added_rows_count=added,
        existing_rows_count=existing, deleted_rows_count=0, first_row_id=first_row_id,
    )  # fmt: skip


def test_assignment_follows_the_spec_example() -> None:
    """The spec's "Row lineage example": next-row-id 1000, an existing manifest at 925."""
    manifests = [
        _listed("existing", 75, 0, first_row_id=925),
        _listed("deletes", 10, 5, content=ManifestContent.DELETES),
        _listed("added1", 100, 25),
        _listed("added2", 0, 100),  # no added rows, yet it may hold files without ids
        _listed("added3", 125, 25),
    ]
    out, reserved = assign_first_row_ids(manifests, 1000)
    assert [(m.manifest_path, m.first_row_id) for m in out] == [
        ("existing", 925), ("deletes", None), ("added1", 1000), ("added2", 1125), ("added3", 1225),
    ]  # fmt: skip
    assert reserved == 375  # next-row-id becomes 1375
    assert [m.manifest_path for m in out] == [m.manifest_path for m in manifests]


def test_assignment_of_nothing_reserves_nothing() -> None:
    assert assign_first_row_ids([], 7) == ([], 0)
    out, reserved = assign_first_row_ids([_listed("old", 5, 0, first_row_id=0), _listed("del", 3, 0, content=ManifestContent.DELETES)], 7)
    assert reserved == 0 and [m.first_row_id for m in out] == [0, None]


def test_a_v3_manifest_list_stores_the_assigned_ids(io: FileIO, metadata_dir: str) -> None:
    location = f"{metadata_dir}/snap-1.avro"
    final, reserved = write_manifest_list(
        io, location, snapshot_id=1, parent_snapshot_id=None, sequence_number=4, format_version=3, first_row_id=40,
        manifests=[_listed("a", 10, 0), _listed("d", 2, 0, content=ManifestContent.DELETES), _listed("b", 3, 4)],
    )  # fmt: skip
    assert reserved == 17
    meta, _, records = avro_file(location)
    assert meta["first-row-id"] == "40"
    assert [r["first_row_id"] for r in records] == [40, None, 50]
    assert [m.first_row_id for m in read_manifest_list(io, location)] == [40, None, 50]
    assert [m.first_row_id for m in final] == [40, None, 50]


def test_a_v2_manifest_list_assigns_nothing(io: FileIO, metadata_dir: str) -> None:
    location = f"{metadata_dir}/snap-2.avro"
    _, reserved = write_manifest_list(
        io, location, snapshot_id=1, parent_snapshot_id=None, sequence_number=4, manifests=[_listed("a", 10, 0)]
    )
    meta, _, records = avro_file(location)
    assert reserved == 0 and "first-row-id" not in meta and "first_row_id" not in records[0]


# -- next-row-id and added-rows over commits ----------------------------------------------------
def _metadata_json(table: mor.Table) -> dict[str, Any]:
    return json.loads(Path(local(table.metadata_location)).read_text())


def _snapshot_json(table: mor.Table) -> dict[str, Any]:
    raw = _metadata_json(table)
    return next(s for s in raw["snapshots"] if s["snapshot-id"] == raw["current-snapshot-id"])


def lineage(table: mor.Table, **scan_args: Any) -> dict[int, tuple[int | None, int | None]]:
    """{id: (_row_id, _last_updated_sequence_number)} of the live rows."""
    rows = table.scan(columns=["id", *LINEAGE], **scan_args).to_arrow().to_pylist()
    out = {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in rows}
    assert len(out) == len(rows), "the tests keep ids unique"
    return out


def assert_row_ids_unique(table: mor.Table, **scan_args: Any) -> None:
    ids = table.scan(columns=["_row_id"], **scan_args).to_arrow().column("_row_id").to_pylist()
    assert None not in ids
    assert len(set(ids)) == len(ids), sorted(ids)
    assert all(0 <= i < table.metadata.next_row_id for i in ids)  # type: ignore[operator]


@pytest.fixture
def v3(catalog: mor.Catalog) -> mor.Table:
    return catalog.create_table("db.t", schema=SCHEMA, format_version=3)


def test_appends_reserve_their_rows(v3: mor.Table) -> None:
    assert v3.metadata.next_row_id == 0 and _metadata_json(v3)["next-row-id"] == 0
    s1 = v3.append(make_rows(range(5)))
    assert (s1.first_row_id, s1.added_rows, v3.metadata.next_row_id) == (0, 5, 5)
    s2 = v3.append(make_rows(range(5, 8)))
    assert (s2.first_row_id, s2.added_rows, v3.metadata.next_row_id) == (5, 3, 8)
    raw = _metadata_json(v3)
    assert raw["next-row-id"] == 8
    assert [(s["first-row-id"], s["added-rows"]) for s in raw["snapshots"]] == [(0, 5), (5, 3)]
    assert lineage(v3) == {**{i: (i, 1) for i in range(5)}, **{i: (i, 2) for i in range(5, 8)}}


def test_a_delete_reserves_no_row_ids_but_records_the_fields(v3: mor.Table) -> None:
    v3.append(make_rows(range(5)))
    s = v3.delete("id = 1")
    assert (s.first_row_id, s.added_rows, v3.metadata.next_row_id) == (5, 0, 5)
    assert (_snapshot_json(v3)["first-row-id"], _snapshot_json(v3)["added-rows"]) == (5, 0)  # required even when 0
    assert lineage(v3) == {i: (i, 1) for i in (0, 2, 3, 4)}


def test_one_append_of_several_partitions_hands_out_distinct_ids(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.p", schema=SCHEMA, partition_by=["category"], format_version=3)
    t.append(make_rows(range(60)))  # three partitions, three data files, one manifest
    assert t.metadata.next_row_id == 60
    assert sorted(r for r, _ in lineage(t).values()) == list(range(60))


def test_an_upgrade_starts_row_ids_at_zero_and_the_next_commit_assigns_the_old_files(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(10)))
    t.append(make_rows(range(10, 15)))
    t.delete("id = 3")
    before = t.current_snapshot()
    assert before is not None and before.first_row_id is None
    with pytest.raises(InvalidFilterError):
        t.scan(columns=["_row_id"]).to_arrow()

    t.upgrade()
    assert (t.metadata.format_version, t.metadata.next_row_id) == (3, 0)
    assert t.current_snapshot() == before  # metadata only: no snapshot
    raw = _metadata_json(t)
    assert (raw["format-version"], raw["next-row-id"]) == (3, 0)
    assert all("first-row-id" not in s for s in raw["snapshots"])
    # No snapshot assigned ids yet: both columns read as null.
    assert set(lineage(t).values()) == {(None, None)}

    s = t.append(make_rows([100, 101]))
    # Every live data file gets ids: the 15 rows written before the upgrade (the deleted one
    # too, since a file's ids cover all its positions) and the 2 new ones.
    assert (s.first_row_id, s.added_rows, t.metadata.next_row_id) == (0, 17, 17)
    got = lineage(t)
    assert_row_ids_unique(t)
    assert {i: seq for i, (_, seq) in got.items()} == {
        **{i: 1 for i in range(10) if i != 3},
        **{i: 2 for i in range(10, 15)},
        100: s.sequence_number,
        101: s.sequence_number,
    }
    # The first file's rows keep their positions' order in their ids.
    first = [got[i][0] for i in range(10) if i != 3]
    assert first == sorted(first) and first[-1] - first[0] == 9  # type: ignore[operator]
    # Time travel: the snapshot from before the upgrade still has no row ids.
    assert set(lineage(t, snapshot_id=before.snapshot_id).values()) == {(None, None)}
    # Later commits keep the ids.
    t.append(make_rows([200]))
    assert {i: v for i, v in lineage(t).items() if i != 200} == got
    assert t.metadata.next_row_id == 18


def test_the_first_commit_after_an_upgrade_may_be_a_delete(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(10)))
    t.set_properties(**{"format-version": "3"})
    assert t.metadata.format_version == 3 and "format-version" not in t.properties
    s = t.delete("id = 0")
    assert (s.first_row_id, s.added_rows, t.metadata.next_row_id) == (0, 10, 10)
    assert lineage(t) == {i: (i, 1) for i in range(1, 10)}
    s = t.delete("id = 1")
    assert (s.first_row_id, s.added_rows) == (10, 0)


def test_a_v2_table_has_no_lineage_columns(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(3)))
    for columns in (["_row_id"], ["id", "_last_updated_sequence_number"], LINEAGE):
        with pytest.raises(InvalidFilterError, match="_row_id|_last_updated_sequence_number"):
            t.scan(columns=columns).to_arrow()
    assert t.metadata.next_row_id is None and "next-row-id" not in _metadata_json(t)


def test_only_lineage_columns_with_and_without_a_filter(v3: mor.Table) -> None:
    v3.append(make_rows(range(10)))
    v3.append(make_rows(range(10, 20)))
    result = v3.scan(columns=["_row_id"]).to_arrow()
    assert result.column_names == ["_row_id"]
    assert result.schema.field("_row_id").type == pa.int64()
    assert sorted(result.column("_row_id").to_pylist()) == list(range(20))
    filtered = v3.scan(columns=LINEAGE, filter="id >= 8 and id < 12").to_arrow()
    assert filtered.column_names == LINEAGE
    assert sorted(filtered.to_pylist(), key=lambda r: r["_row_id"]) == [
        {"_row_id": 8, "_last_updated_sequence_number": 1}, {"_row_id": 9, "_last_updated_sequence_number": 1},
        {"_row_id": 10, "_last_updated_sequence_number": 2}, {"_row_id": 11, "_last_updated_sequence_number": 2},
    ]  # fmt: skip
    streamed = [r for b in v3.scan(columns=["_last_updated_sequence_number"], filter="id < 3").to_batches() for r in b.to_pylist()]
    assert streamed == [{"_last_updated_sequence_number": 1}] * 3
    assert v3.scan(columns=["_row_id"], filter="id > 100").to_arrow().num_rows == 0


# -- lineage across writes ----------------------------------------------------------------------
@pytest.fixture
def ten(v3: mor.Table) -> mor.Table:
    """Rows 0..9 with row ids 0..9 at sequence number 1."""
    v3.append(make_rows(range(10)))
    return v3


def test_update_keeps_row_ids_and_takes_the_new_sequence_number(ten: mor.Table) -> None:
    for mode in ("merge-on-read", "copy-on-write"):
        before = lineage(ten)
        s = ten.update({"category": mor.lit(mode)}, where="id in (2, 7)", mode=mode)
        after = lineage(ten)
        assert after == {**before, 2: (2, s.sequence_number), 7: (7, s.sequence_number)}, mode
        assert_row_ids_unique(ten)
    assert ten.scan(filter="id = 2").to_arrow().column("category").to_pylist() == ["copy-on-write"]


def test_an_update_that_changes_the_key_keeps_the_row_id(ten: mor.Table) -> None:
    s = ten.update({"id": 50}, where="id = 4")
    got = lineage(ten)
    assert got[50] == (4, s.sequence_number) and 4 not in got


def test_copy_on_write_delete_keeps_both_columns_of_the_surviving_rows(ten: mor.Table) -> None:
    ten.update({"category": "'u'"}, where="id = 5")  # seq 2: row 5 is now in a file of its own
    before = lineage(ten)
    ten.delete("id in (1, 8)", mode="copy-on-write")  # rewrites the first file
    assert lineage(ten) == {k: v for k, v in before.items() if k not in (1, 8)}
    assert_row_ids_unique(ten)


def test_merge_keeps_ids_of_updated_rows_and_gives_inserted_rows_new_ones(ten: mor.Table) -> None:
    for mode in ("merge-on-read", "copy-on-write"):
        before = lineage(ten)
        next_id = ten.metadata.next_row_id
        base = 100 if mode == "merge-on-read" else 200
        source = pa.table({"id": [1, 2, base, base + 1], "op": ["U", "D", "I", "I"]})
        s = ten.merge(
            source, on=["id"], when_matched_delete=pc.field("source.op") == "D",
            when_matched_update={"category": "'m'"}, when_not_matched_insert={"id": pc.field("source.id")}, mode=mode,
        )  # fmt: skip
        after = lineage(ten)
        assert 2 not in after
        assert after[1] == (before[1][0], s.sequence_number)
        new_ids = {after[base][0], after[base + 1][0]}
        assert all(i >= next_id for i in new_ids)  # type: ignore[operator]
        assert {after[base][1], after[base + 1][1]} == {s.sequence_number}
        assert {k: v for k, v in after.items() if k not in (1, base, base + 1)} == {k: v for k, v in before.items() if k not in (1, 2)}
        assert_row_ids_unique(ten)
        ten.append(make_rows([2]))  # back for the next round


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_position_upsert_keeps_row_ids(ten: mor.Table, mode: str) -> None:
    before = lineage(ten)
    s = ten.upsert(make_rows([3, 4, 30]), on=["id"], strategy="position", mode=mode)
    after = lineage(ten)
    assert after[3] == (3, s.sequence_number) and after[4] == (4, s.sequence_number)
    assert after[30][0] >= 10 and after[30][1] == s.sequence_number  # type: ignore[operator]
    assert {k: v for k, v in after.items() if k not in (3, 4, 30)} == {k: v for k, v in before.items() if k not in (3, 4)}
    assert_row_ids_unique(ten)


def test_equality_upsert_gives_replaced_rows_new_ids(ten: mor.Table) -> None:
    """The spec: lineage is not tracked through equality deletes (a writer that does not read
    the old row cannot know its id): the new version is a new row."""
    before = lineage(ten)
    s = ten.upsert(make_rows([3, 4, 30]), on=["id"], strategy="equality")
    after = lineage(ten)
    assert {after[i][0] for i in (3, 4, 30)} == {10, 11, 12}
    assert {after[i][1] for i in (3, 4, 30)} == {s.sequence_number}
    assert {k: v for k, v in after.items() if k not in (3, 4, 30)} == {k: v for k, v in before.items() if k not in (3, 4)}
    assert_row_ids_unique(ten)


def test_delete_rows_removes_lineage_with_the_row(ten: mor.Table) -> None:
    before = lineage(ten)
    ten.delete_rows(pa.table({"id": pa.array([6], pa.int64())}))
    assert lineage(ten) == {k: v for k, v in before.items() if k != 6}


def test_compaction_keeps_both_columns(ten: mor.Table) -> None:
    ten.append(make_rows(range(10, 14)))
    ten.update({"category": "'u'"}, where="id in (1, 11)")
    ten.delete("id in (2, 12)")
    ten.upsert(make_rows([13]), on=["id"], strategy="equality")  # an equality delete to apply too
    before = lineage(ten)
    result = ten.compact(min_input_files=1)
    assert result.rewritten_data_files >= 3 and result.removed_equality_delete_files == 1
    assert lineage(ten) == before
    assert_row_ids_unique(ten)
    # A later update of a compacted row keeps its id.
    s = ten.update({"category": "'v'"}, where="id = 0")
    assert lineage(ten)[0] == (0, s.sequence_number)


# -- every snapshot, later ----------------------------------------------------------------------
def test_lineage_of_every_snapshot_reads_the_same_later_and_row_ids_stay_unique(catalog: mor.Catalog, ten: mor.Table) -> None:
    steps: list[Callable[[mor.Table], object]] = [
        lambda t: t.append(make_rows(range(10, 15))),
        lambda t: t.delete("id in (0, 11)"),
        lambda t: t.update({"category": "'u'"}, where="id in (1, 12)"),
        lambda t: t.update({"category": "'w'"}, where="id = 1", mode="copy-on-write"),
        lambda t: t.upsert(make_rows([2, 40]), on=["id"]),
        lambda t: t.upsert(make_rows([3, 41]), on=["id"], strategy="equality"),
        lambda t: t.merge(rows_of([{"id": 4}, {"id": 42}]), on=["id"], when_matched_update={"name": "'m'"}, when_not_matched_insert="*"),
        lambda t: t.delete("id = 5", mode="copy-on-write"),
        lambda t: t.compact(min_input_files=1),
        lambda t: t.update({"category": "'x'"}, where="id = 6"),
    ]
    seen: dict[int, dict[int, tuple[int | None, int | None]]] = {ten.current_snapshot().snapshot_id: lineage(ten)}  # type: ignore[union-attr]
    for step in steps:
        step(ten)
        assert_row_ids_unique(ten)
        seen[ten.current_snapshot().snapshot_id] = lineage(ten)  # type: ignore[union-attr]
    assert len(seen) == len(steps) + 1
    reloaded = catalog.load_table("db.t")
    for snapshot_id, expected in seen.items():
        assert lineage(reloaded, snapshot_id=snapshot_id) == expected
        assert_row_ids_unique(reloaded, snapshot_id=snapshot_id)
    # An id once given to a row is never given to another: a row that left does not come back.
    owners: dict[int, int] = {}
    for state in seen.values():
        for key, (row_id, _) in state.items():
            assert owners.setdefault(row_id, key) == key, (row_id, key, owners[row_id])  # type: ignore[arg-type]
