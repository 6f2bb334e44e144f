"""Manifests: what goes into the Avro files, what comes back out, and Iceberg Java's."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, DayTransform, HourTransform, IdentityTransform, MonthTransform
from pyiceberg.types import DateType, LongType, NestedField, StringType, TimestamptzType
from unit_helpers import JAVA_FIXTURES, V2_FIXTURE_TABLES, RelocatingFileIO, avro_fields_without_ids, avro_file

import mor
from mor.format.avro_schemas import MANIFEST_FILE_SCHEMA_V2, manifest_entry_schema
from mor.format.content_file import DataFile, DeleteFile
from mor.format.manifest import (
    EntryToWrite,
    ManifestFile,
    PartitionFieldSummary,
    read_manifest,
    write_manifest,
)
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import TableMetadata
from mor.format.spec import FileContent, ManifestContent, ManifestEntryStatus
from mor.io.fileio import FileIO

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "d", DateType()),
    schema_id=0,
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"), spec_id=0)
UNPARTITIONED = PartitionSpec(spec_id=0)
SNAPSHOT_ID = 1234567890123
DAY_2024_01_02 = (dt.date(2024, 1, 2) - dt.date(1970, 1, 1)).days


def data_file(path: str, partition: tuple[Any, ...] = ("a",), records: int = 10, spec_id: int = 0) -> DataFile:
    return DataFile(
        content=FileContent.DATA,
        file_path=path,
        file_format="PARQUET",
        spec_id=spec_id,
        partition=partition,
        record_count=records,
        file_size_in_bytes=1000 + records,
        column_sizes={1: 80, 2: 40},
        value_counts={1: records, 2: records},
        null_value_counts={1: 0, 2: 1},
        nan_value_counts={},
        lower_bounds={1: (0).to_bytes(8, "little"), 2: b"a"},
        upper_bounds={1: (records - 1).to_bytes(8, "little"), 2: b"z"},
        split_offsets=(4,),
        sort_order_id=0,
    )


def position_delete_file(path: str, target: str, partition: tuple[Any, ...] = ("a",)) -> DeleteFile:
    return DeleteFile(
        content=FileContent.POSITION_DELETES,
        file_path=path,
        file_format="PARQUET",
        spec_id=0,
        partition=partition,
        record_count=2,
        file_size_in_bytes=500,
        column_sizes={2147483546: 30, 2147483545: 20},
        value_counts={2147483546: 2, 2147483545: 2},
        null_value_counts={2147483546: 0, 2147483545: 0},
        lower_bounds={2147483546: target.encode(), 2147483545: (3).to_bytes(8, "little")},
        upper_bounds={2147483546: target.encode(), 2147483545: (7).to_bytes(8, "little")},
        referenced_data_file=target,
    )


def equality_delete_file(path: str, equality_ids: tuple[int, ...]) -> DeleteFile:
    return DeleteFile(
        content=FileContent.EQUALITY_DELETES,
        file_path=path,
        file_format="PARQUET",
        spec_id=0,
        partition=("b",),
        record_count=3,
        file_size_in_bytes=400,
        column_sizes={1: 30},
        equality_ids=equality_ids,
    )


def _in_list(m: ManifestFile, sequence_number: int) -> ManifestFile:
    """The manifest as a manifest list names it once its commit got `sequence_number`."""
    return m.with_sequence_number(sequence_number)


# -- manifests ------------------------------------------------------------------------------


def test_data_manifestavro_file(io: FileIO, metadata_dir: str) -> None:
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, data_file("file:///d/1.parquet"))],
    )  # fmt: skip
    meta, _, _ = avro_file(m.manifest_path)
    assert meta["format-version"] == "2"
    assert meta["content"] == "data"
    assert meta["schema-id"] == "0"
    assert meta["partition-spec-id"] == "0"
    assert json.loads(meta["partition-spec"]) == [{"source-id": 2, "field-id": 1000, "transform": "identity", "name": "category"}]
    schema = json.loads(meta["schema"])
    assert schema["type"] == "struct"
    assert schema["schema-id"] == 0
    assert [(f["id"], f["name"], f["type"], f["required"]) for f in schema["fields"]] == [
        (1, "id", "long", True),
        (2, "category", "string", False),
        (3, "ts", "timestamptz", False),
        (4, "d", "date", False),
    ]


def test_delete_manifest_header_says_deletes(io: FileIO, metadata_dir: str) -> None:
    delete = position_delete_file("file:///d/1-deletes.parquet", "file:///d/1.parquet")
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DELETES,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, delete)],
    )  # fmt: skip
    meta, _, records = avro_file(m.manifest_path)
    assert meta["content"] == "deletes"
    assert records[0]["data_file"]["content"] == 1
    assert m.content == ManifestContent.DELETES


def test_every_avro_field_carries_its_field_id(io: FileIO, metadata_dir: str) -> None:
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DELETES,
        snapshot_id=SNAPSHOT_ID,
        entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, equality_delete_file("file:///e.parquet", (1,)))],
    )  # fmt: skip
    _, avro_schema, _ = avro_file(m.manifest_path)
    assert avro_fields_without_ids(avro_schema) == []
    assert avro_fields_without_ids(MANIFEST_FILE_SCHEMA_V2) == []
    data_file_fields = {f["name"]: f for f in avro_schema["fields"][-1]["type"]["fields"]}
    assert avro_schema["fields"][-1]["field-id"] == 2
    assert {name: f["field-id"] for name, f in data_file_fields.items()} == {
        "content": 134, "file_path": 100, "file_format": 101, "partition": 102, "record_count": 103,
        "file_size_in_bytes": 104, "column_sizes": 108, "value_counts": 109, "null_value_counts": 110,
        "nan_value_counts": 137, "lower_bounds": 125, "upper_bounds": 128, "key_metadata": 131,
        "split_offsets": 132, "equality_ids": 135, "sort_order_id": 140, "referenced_data_file": 143,
    }  # fmt: skip
    partition = data_file_fields["partition"]["type"]
    assert partition["name"] == "r102"
    assert [f["field-id"] for f in partition["fields"]] == [1000]
    # equality_ids is list<int> (Java rejects long), element id 136.
    eq_ids = data_file_fields["equality_ids"]["type"][1]
    assert eq_ids == {"type": "array", "items": "int", "element-id": 136}


def test_entry_schema_names_map_records_by_key_and_value_ids() -> None:
    schema = manifest_entry_schema(SPEC, SCHEMA)
    data_file_fields = {f["name"]: f for f in schema["fields"][-1]["type"]["fields"]}
    lower = data_file_fields["lower_bounds"]["type"][1]
    assert lower["logicalType"] == "map"
    assert lower["items"]["name"] == "k126_v127"
    assert [(f["name"], f["field-id"]) for f in lower["items"]["fields"]] == [("key", 126), ("value", 127)]


def test_added_entries_are_written_without_sequence_numbers_and_inherit_them(io: FileIO, metadata_dir: str) -> None:
    files = [data_file("file:///d/1.parquet"), data_file("file:///d/2.parquet", ("b",), 5)]
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, f) for f in files],
    )  # fmt: skip
    _, _, records = avro_file(m.manifest_path)
    assert [(r["status"], r["sequence_number"], r["file_sequence_number"]) for r in records] == [(1, None, None)] * 2
    assert m.sequence_number is None and m.min_sequence_number is None

    entries = read_manifest(io, _in_list(m, 7), {0: SPEC}, SCHEMA)
    assert [(e.status, e.snapshot_id, e.data_sequence_number, e.file_sequence_number) for e in entries] == [
        (ManifestEntryStatus.ADDED, SNAPSHOT_ID, 7, 7)
    ] * 2
    assert [e.file.data_sequence_number for e in entries] == [7, 7]
    assert [e.file.file_sequence_number for e in entries] == [7, 7]
    # The file round trips whole (sequence numbers are not part of equality).
    assert [e.file for e in entries] == files
    assert all(isinstance(e.file, DataFile) for e in entries)


def test_existing_and_deleted_entries_keep_their_sequence_numbers(io: FileIO, metadata_dir: str) -> None:
    entries_in = [
        EntryToWrite(ManifestEntryStatus.EXISTING, 11, data_file("file:///d/1.parquet"), 3, 4),
        EntryToWrite(ManifestEntryStatus.DELETED, SNAPSHOT_ID, data_file("file:///d/2.parquet"), 2, 2),
        EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, data_file("file:///d/3.parquet")),
    ]
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, entries=entries_in,
    )  # fmt: skip
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (1, 1, 1)
    assert (m.added_rows_count, m.existing_rows_count, m.deleted_rows_count) == (10, 10, 10)
    assert m.min_sequence_number == 3  # the lowest live data sequence number written explicitly
    entries = read_manifest(io, _in_list(m, 9), {0: SPEC}, SCHEMA)
    assert [(e.status, e.snapshot_id, e.data_sequence_number, e.file_sequence_number) for e in entries] == [
        (ManifestEntryStatus.EXISTING, 11, 3, 4),
        (ManifestEntryStatus.DELETED, SNAPSHOT_ID, 2, 2),
        (ManifestEntryStatus.ADDED, SNAPSHOT_ID, 9, 9),
    ]
    assert [e.is_live for e in entries] == [True, False, True]
    assert _in_list(m, 9).min_sequence_number == 3


def test_added_entry_with_explicit_sequence_numbers_keeps_them(io: FileIO, metadata_dir: str) -> None:
    """A rewrite may add a file at its old data sequence number: only null numbers inherit."""
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA, snapshot_id=SNAPSHOT_ID,
        entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, data_file("file:///d/1.parquet"), 3, None)],
    )  # fmt: skip
    (entry,) = read_manifest(io, _in_list(m, 9), {0: SPEC}, SCHEMA)
    assert (entry.data_sequence_number, entry.file_sequence_number) == (3, 9)
    assert (entry.file.data_sequence_number, entry.file.file_sequence_number) == (3, 9)
    assert _in_list(m, 9).min_sequence_number == 3


def test_added_entry_without_snapshot_id_inherits_the_manifests(io: FileIO, tmp_path: Path) -> None:
    """Written by hand: an ADDED entry may leave snapshot_id null as well."""
    location = tmp_path / "m.avro"
    record = {
        "status": 1, "snapshot_id": None, "sequence_number": None, "file_sequence_number": None,
        "data_file": {
            "content": 0, "file_path": "file:///d/1.parquet", "file_format": "parquet", "partition": {"category": "a"},
            "record_count": 3, "file_size_in_bytes": 10,
        },
    }  # fmt: skip
    with open(location, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(manifest_entry_schema(SPEC, SCHEMA)), [record])
    m = ManifestFile(str(location), 1, 0, ManifestContent.DATA, 5, 5, 77, 1, 0, 0, 3, 0, 0)
    (entry,) = read_manifest(io, m, {0: SPEC}, SCHEMA)
    assert (entry.snapshot_id, entry.data_sequence_number, entry.file_sequence_number) == (77, 5, 5)
    assert entry.file.file_format == "PARQUET"  # normalized to the spec's upper case
    assert entry.file.partition == ("a",)


def test_existing_entry_without_sequence_numbers_is_corrupt(io: FileIO, metadata_dir: str) -> None:
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA, snapshot_id=SNAPSHOT_ID,
        entries=[EntryToWrite(ManifestEntryStatus.EXISTING, SNAPSHOT_ID, data_file("file:///d/1.parquet"))],
    )  # fmt: skip
    with pytest.raises(mor.CorruptMetadataError):
        read_manifest(io, _in_list(m, 2), {0: SPEC}, SCHEMA)


def test_delete_entry_in_a_data_manifest_is_corrupt(io: FileIO, metadata_dir: str) -> None:
    delete = position_delete_file("file:///d/1-deletes.parquet", "file:///d/1.parquet")
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA, snapshot_id=SNAPSHOT_ID,
        entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, delete)],
    )  # fmt: skip
    with pytest.raises(mor.CorruptMetadataError):
        read_manifest(io, _in_list(m, 2), {0: SPEC}, SCHEMA)


def test_manifest_without_sequence_number_cannot_be_read(io: FileIO, metadata_dir: str) -> None:
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA, snapshot_id=SNAPSHOT_ID,
        entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, data_file("file:///d/1.parquet"))],
    )  # fmt: skip
    with pytest.raises(mor.CorruptMetadataError):
        read_manifest(io, m, {0: SPEC}, SCHEMA)


def test_delete_files_round_trip(io: FileIO, metadata_dir: str) -> None:
    files = [
        position_delete_file("file:///d/1-deletes.parquet", "file:///d/1.parquet"),
        equality_delete_file("file:///d/eq-1.parquet", (1,)),
        equality_delete_file("file:///d/eq-2.parquet", (1, 2)),
    ]
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DELETES,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, f) for f in files],
    )  # fmt: skip
    _, _, records = avro_file(m.manifest_path)
    assert [r["data_file"]["equality_ids"] for r in records] == [None, [1], [1, 2]]
    assert records[0]["data_file"]["referenced_data_file"] == "file:///d/1.parquet"
    entries = read_manifest(io, _in_list(m, 4), {0: SPEC}, SCHEMA)
    assert [e.file for e in entries] == files
    assert all(isinstance(e.file, DeleteFile) for e in entries)
    assert [e.file.content for e in entries] == [
        FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES, FileContent.EQUALITY_DELETES
    ]  # fmt: skip
    assert entries[1].file.equality_ids == (1,)


def test_null_column_sizes_are_written_as_an_empty_map(io: FileIO, metadata_dir: str) -> None:
    """pyiceberg's inspect.entries() crashes on a null column_sizes."""
    f = DataFile(FileContent.DATA, "file:///d/1.parquet", "PARQUET", 0, ("a",), 1, 10)
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, f)],
    )  # fmt: skip
    _, _, records = avro_file(m.manifest_path)
    assert records[0]["data_file"]["column_sizes"] == []


@pytest.mark.parametrize(
    ("field", "partition"),
    [
        pytest.param(PartitionField(2, 1000, IdentityTransform(), "category"), (None,), id="identity-null"),
        pytest.param(PartitionField(3, 1000, DayTransform(), "ts_day"), (DAY_2024_01_02,), id="day"),
        pytest.param(PartitionField(3, 1000, HourTransform(), "ts_hour"), (473_000,), id="hour"),
        pytest.param(PartitionField(3, 1000, IdentityTransform(), "ts"), (1_704_153_600_123_456,), id="timestamptz"),
        pytest.param(PartitionField(4, 1000, IdentityTransform(), "d"), (DAY_2024_01_02,), id="date"),
        pytest.param(PartitionField(4, 1000, MonthTransform(), "d_month"), (648,), id="month"),
        pytest.param(PartitionField(1, 1000, BucketTransform(4), "id_bucket"), (3,), id="bucket"),
    ],
)
def test_partition_values_round_trip_in_internal_form(
    io: FileIO, metadata_dir: str, field: PartitionField, partition: tuple[Any, ...]
) -> None:
    spec = PartitionSpec(field, spec_id=0)
    f = data_file("file:///d/1.parquet", partition)
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=spec, schema=SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, f)],
    )  # fmt: skip
    (entry,) = read_manifest(io, _in_list(m, 1), {0: spec}, SCHEMA)
    assert entry.file.partition == partition
    assert entry.file == f


def test_unpartitioned_manifest_round_trips(io: FileIO, metadata_dir: str) -> None:
    f = data_file("file:///d/1.parquet", ())
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=UNPARTITIONED, schema=SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, f)],
    )  # fmt: skip
    meta, _, _ = avro_file(m.manifest_path)
    assert json.loads(meta["partition-spec"]) == []
    assert m.partitions == ()
    (entry,) = read_manifest(io, _in_list(m, 1), {0: UNPARTITIONED}, SCHEMA)
    assert entry.file == f


def test_manifest_partition_summaries(io: FileIO, metadata_dir: str) -> None:
    files = [data_file(f"file:///d/{i}.parquet", (p,)) for i, p in enumerate(["m", "c", None, "x"])]
    m = write_manifest(
        io, f"{metadata_dir}/m0.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA,
        snapshot_id=SNAPSHOT_ID, entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, f) for f in files],
    )  # fmt: skip
    assert m.partitions == (PartitionFieldSummary(contains_null=True, contains_nan=False, lower_bound=b"c", upper_bound=b"x"),)


def test_manifests_are_never_overwritten(io: FileIO, metadata_dir: str) -> None:
    args: dict[str, Any] = dict(
        spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA, snapshot_id=SNAPSHOT_ID,
        entries=[EntryToWrite(ManifestEntryStatus.ADDED, SNAPSHOT_ID, data_file("file:///d/1.parquet"))],
    )  # fmt: skip
    write_manifest(io, f"{metadata_dir}/m0.avro", **args)
    before = Path(f"{metadata_dir}/m0.avro".removeprefix("file://")).read_bytes()
    with pytest.raises(FileExistsError):
        write_manifest(io, f"{metadata_dir}/m0.avro", **args)
    assert Path(f"{metadata_dir}/m0.avro".removeprefix("file://")).read_bytes() == before
    assert [p.name for p in Path(metadata_dir.removeprefix("file://")).iterdir()] == ["m0.avro"]


# -- Iceberg Java's manifests -----------------------------------------------------------------


def _plan_cases() -> list[Any]:
    cases = []
    for table in V2_FIXTURE_TABLES:
        for plan in sorted((JAVA_FIXTURES / "expected" / table / "plan").glob("*.json")):
            cases.append(pytest.param(table, plan, id=f"{table}-{plan.stem}"))
    return cases


def _final_metadata(table: str) -> TableMetadata:
    info = json.loads((JAVA_FIXTURES / "expected" / table / "snapshots.json").read_text())
    return TableMetadata.from_json((JAVA_FIXTURES / info["final_metadata_file"]).read_text())


def _partition_as_java_prints_it(partition: tuple[Any, ...], names: list[str], types: list[str]) -> str | None:
    if not partition:
        return None
    values = {}
    for name, value, kind in zip(names, partition, types, strict=True):
        values[name] = (dt.date(1970, 1, 1) + dt.timedelta(days=value)).isoformat() if kind == "date" else value
    return json.dumps(values, separators=(",", ":"))


@pytest.mark.parametrize(("table", "plan_path"), _plan_cases())
def test_java_manifests_resolve_to_javas_sequence_numbers(table: str, plan_path: Path) -> None:
    plan = json.loads(plan_path.read_text())
    metadata = _final_metadata(table)
    snapshot = metadata.snapshot_by_id(plan["snapshot_id"])
    io = RelocatingFileIO()
    live = {}
    for manifest in read_manifest_list(io, snapshot.manifest_list):
        for e in read_manifest(io, manifest, metadata.specs(), metadata.schema()):
            if e.is_live:
                assert e.file.file_path not in live  # a file is live once
                live[e.file.file_path] = e
    expected = {f["file_path"]: f for f in plan["data_files"] + plan["delete_files"]}
    assert set(live) == set(expected)
    partition_type = metadata.spec().partition_type(metadata.schema())
    names = [f.name for f in partition_type.fields]
    types = [str(f.field_type) for f in partition_type.fields]
    for path, e in live.items():
        want = expected[path]
        assert (int(e.status), e.snapshot_id, e.data_sequence_number, e.file_sequence_number) == (
            want["status"], want["added_snapshot_id"], want["sequence_number"], want["file_sequence_number"]
        ), path  # fmt: skip
        assert (e.file.data_sequence_number, e.file.file_sequence_number) == (
            want["sequence_number"], want["file_sequence_number"]
        )  # fmt: skip
        assert int(e.file.content) == want["content"]
        assert e.file.record_count == want["record_count"]
        assert e.file.file_size_in_bytes == want["file_size_in_bytes"]
        assert e.file.file_format == want["file_format"]
        assert _partition_as_java_prints_it(e.file.partition, names, types) == want["partition"]
        if e.file.content != FileContent.DATA:
            assert e.file.equality_ids == (tuple(want["equality_ids"]) if want["equality_ids"] is not None else None)
            assert e.file.referenced_data_file == want["referenced_data_file"]
        if e.file.content == FileContent.POSITION_DELETES and want.get("file_path_bounds"):
            assert (e.file.lower_bounds or {})[2147483546].decode() == want["file_path_lower"]
            assert (e.file.upper_bounds or {})[2147483546].decode() == want["file_path_upper"]
