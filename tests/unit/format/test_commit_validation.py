"""The validator every commit passes before its metadata is written (mor/format/commit_validation.py):
what Iceberg Java's metadata builder refuses is refused, naming the field, with Java's exception
type; what Iceberg Java writes passes, as a new table and as each step of its history."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType, TimestampType

import mor
from mor.errors import InvalidMetadataError
from mor.format.apply import apply_updates
from mor.format.commit_validation import validate_change
from mor.format.metadata import Snapshot, TableMetadata, new_table_metadata
from mor.format.updates import (
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AddSpec,
    SetCurrentSchema,
    SetDefaultSpec,
    SetSnapshotRef,
    update_from_dict,
)

FIXTURES = [
    Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "iceberg-java",
    Path(__file__).resolve().parents[2] / "fixtures" / "iceberg-java",
]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType(), required=False),
    NestedField(3, "s", StringType(), required=False),
    schema_id=0,
    identifier_field_ids=[1],
)


def base() -> TableMetadata:
    spec = PartitionSpec(PartitionField(2, 1000, DayTransform(), "ts_day"), spec_id=0)
    return new_table_metadata(SCHEMA, spec, None, "file:///wh/db.db/t", {})


def refused(updates: list[Any], match: str, java_type: str = "ValidationException", start: TableMetadata | None = None) -> None:
    before = start or base()
    with pytest.raises(InvalidMetadataError, match=match) as caught:
        validate_change(before, apply_updates(before, updates))
    assert caught.value.java_type == java_type


def schema(*fields: NestedField, identifiers: tuple[int, ...] = ()) -> Schema:
    return Schema(*fields, schema_id=1, identifier_field_ids=list(identifiers))


def snapshot(**fields: Any) -> Snapshot:
    values: dict[str, Any] = dict(
        snapshot_id=7, parent_snapshot_id=None, sequence_number=1, timestamp_ms=1_700_000_000_000,
        manifest_list="file:///wh/db.db/t/metadata/snap-7.avro", summary={"operation": "append"}, schema_id=0,
    )  # fmt: skip
    values.update(fields)
    return Snapshot(**values)


def test_a_valid_change_passes() -> None:
    before = base()
    wider = schema(*SCHEMA.fields, NestedField(4, "n", LongType(), required=False), identifiers=(1,))
    after = apply_updates(before, [AddSchema(wider), SetCurrentSchema(), AddSnapshot(snapshot())])
    validate_change(before, after)
    validate_change(None, before)


def field(field_id: int, name: str, type_: Any, required: bool = False) -> dict[str, Any]:
    return {"id": field_id, "name": name, "type": type_, "required": required}


def schema_update(*fields: dict[str, Any], identifiers: tuple[int, ...] = ()) -> Any:
    """An add-schema update as a client sends it: parsed as the server parses it."""
    body = {"type": "struct", "schema-id": 1, "fields": list(fields), "identifier-field-ids": list(identifiers)}
    return update_from_dict({"action": "add-schema", "schema": body})


@pytest.mark.parametrize(
    ("fields", "identifiers", "match"),
    [
        ((field(1, "id", "long", True), field(1, "other", "string")), (), "field id 1 is used twice"),
        ((field(1, "id", "long", True), field(2147483546, "x", "long")), (), "reserved for metadata columns"),
        ((field(1, "id", "long", True), field(2, "id", "string")), (), "multiple fields for name id"),
        (
            (field(1, "a", {"type": "struct", "fields": [field(2, "b", "long")]}), field(3, "a.b", "long")),
            (),
            "multiple fields for name a.b",
        ),
        ((field(1, "id", "long"),), (1,), "not a required field"),
        ((field(1, "id", "long", True), field(2, "d", "double", True)), (2,), "float or double"),
        ((field(1, "st", {"type": "struct", "fields": [field(2, "x", "long", True)]}),), (2,), "nested in an optional field"),
        ((field(1, "id", "long", True),), (9,), "id: 9"),
    ],
)
def test_a_schema_breaking_the_spec_is_refused_naming_the_field(
    fields: tuple[dict[str, Any], ...], identifiers: tuple[int, ...], match: str
) -> None:
    before = base()
    with pytest.raises(mor.InvalidArgumentError, match=match):  # pyiceberg's parser refuses some, the validator the rest
        validate_change(before, apply_updates(before, [schema_update(*fields, identifiers=identifiers)]))


def test_a_spec_on_a_missing_column_or_with_a_wrong_transform_is_refused() -> None:
    refused([AddSpec(PartitionSpec(PartitionField(9, 1001, IdentityTransform(), "nine"), spec_id=1))], "cannot find source column 9")
    refused([AddSpec(PartitionSpec(PartitionField(3, 1001, DayTransform(), "s_day"), spec_id=1))], "invalid source type string")
    twice = PartitionSpec(PartitionField(1, 1001, BucketTransform(4), "b"), PartitionField(3, 1002, IdentityTransform(), "b"), spec_id=1)
    refused([AddSpec(twice)], "partition name 'b' is used more than once", "IllegalArgumentException")
    shadow = PartitionSpec(PartitionField(1, 1001, BucketTransform(4), "s"), spec_id=1)
    refused([AddSpec(shadow)], "partition name 's' is a column", "IllegalArgumentException")


def test_a_sort_order_on_a_missing_column_is_refused() -> None:
    from pyiceberg.table.sorting import SortField, SortOrder

    refused(
        [AddSortOrder(SortOrder(SortField(source_id=9, transform=IdentityTransform()), order_id=1))],
        "sort order 1: cannot find source column 9",
    )


def test_a_schema_that_drops_the_partition_source_is_refused() -> None:
    without_ts = schema(NestedField(1, "id", LongType(), required=True), NestedField(3, "s", StringType()))
    refused([AddSchema(without_ts), SetCurrentSchema()], "default partition spec 0: cannot find source column 2")
    # the same drop is fine once the table no longer partitions by it
    before = base()
    after = apply_updates(before, [AddSpec(PartitionSpec(spec_id=1)), SetDefaultSpec(), AddSchema(without_ts), SetCurrentSchema()])
    validate_change(before, after)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"last_column_id": 2}, "last-column-id cannot go back: 3 -> 2"),
        ({"last_partition_id": 999}, "last-partition-id cannot go back"),
        ({"format_version": 1}, "format-version cannot go down"),
        ({"table_uuid": "00000000-0000-0000-0000-000000000000"}, "table-uuid cannot change"),
        ({"location": ""}, "location must be a non-empty string"),
    ],
)
def test_counters_never_go_back(change: dict[str, Any], match: str) -> None:
    before = base()
    with pytest.raises(InvalidMetadataError, match=match) as caught:
        validate_change(before, replace(before, **change))
    assert caught.value.java_type == "IllegalArgumentException"


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"snapshot_id": "7"}, "snapshot-id must be a long, got '7'"),
        ({"snapshot_id": 2**63}, "snapshot-id must be a long"),
        ({"manifest_list": 5}, "manifest-list must be a non-empty string, got 5"),
        ({"timestamp_ms": 1.5}, "timestamp-ms must be a long"),
        ({"sequence_number": True}, "sequence-number must be a long"),
        ({"summary": {"operation": "append", "added-records": 5}}, "summary must be an object of strings"),
        ({"summary": {"operation": "upsert"}}, "summary operation must be one of"),
        ({"schema_id": 5}, "schema-id 5 names no schema"),
        ({"added_rows": -1, "first_row_id": 0}, "added-rows must not be negative"),
    ],
)
def test_snapshot_fields_have_their_spec_types(fields: dict[str, Any], match: str) -> None:
    before = base()
    after = replace(before, snapshots=(snapshot(**fields),), last_sequence_number=1)
    with pytest.raises(InvalidMetadataError, match=match):
        validate_change(before, after)


def test_an_add_snapshot_update_is_checked_as_it_is_parsed() -> None:
    good = snapshot().to_dict()
    assert isinstance(update_from_dict({"action": "add-snapshot", "snapshot": good}), AddSnapshot)
    for bad, match in [
        ({**good, "snapshot-id": "7"}, "snapshot-id must be a long"),
        ({**good, "manifest-list": 12}, "manifest-list must be a non-empty string"),
        ({k: v for k, v in good.items() if k != "summary"}, "no summary with an operation"),
    ]:
        with pytest.raises(InvalidMetadataError, match=match):
            update_from_dict({"action": "add-snapshot", "snapshot": bad})


def test_refs_name_snapshots_and_keep_retention_where_the_spec_allows() -> None:
    before = apply_updates(base(), [AddSnapshot(snapshot())])
    with pytest.raises(mor.InvalidArgumentError, match="no such snapshot"):
        apply_updates(before, [SetSnapshotRef("b", {"snapshot-id": 8, "type": "branch"})])
    refused(
        [SetSnapshotRef("t", {"snapshot-id": 7, "type": "tag", "min-snapshots-to-keep": 2})],
        "a tag does not support",
        "IllegalArgumentException",
        before,
    )
    refused(
        [SetSnapshotRef("b", {"snapshot-id": 7, "type": "branch", "max-ref-age-ms": 0})],
        "must be greater than 0",
        "IllegalArgumentException",
        before,
    )
    refused(
        [SetSnapshotRef("b", {"snapshot-id": 7, "type": "branch", "max-ref-age-ms": "1"})],
        "max-ref-age-ms must be a long",
        "IllegalArgumentException",
        before,
    )


def test_invariants_of_any_metadata_file_hold_too() -> None:
    before = base()
    with pytest.raises(InvalidMetadataError, match="current-snapshot-id"):
        validate_change(before, replace(before, current_snapshot_id=12))


def _versions() -> list[list[Path]]:
    tables: dict[Path, list[Path]] = {}
    for root in FIXTURES:
        for f in root.rglob("*.metadata.json"):
            tables.setdefault(f.parent, []).append(f)
    version = re.compile(r"(\d+)[^/]*\.metadata\.json$")
    return [sorted(files, key=lambda f: int(version.search(f.name).group(1))) for files in tables.values()]  # type: ignore[union-attr]


@pytest.mark.parametrize("files", _versions(), ids=lambda files: files[0].parent.parent.name)
def test_what_iceberg_java_writes_passes_as_a_new_table_and_as_each_commit(files: list[Path]) -> None:
    previous = None
    for f in files:
        metadata = TableMetadata.from_json(f.read_text())
        validate_change(None, metadata)
        if previous is not None:
            validate_change(previous, metadata)
        previous = metadata


def test_every_local_commit_is_validated_before_it_is_written(tmp_path: Path) -> None:
    catalog = mor.load_catalog(tmp_path / "wh", create=True)
    table = catalog.create_table("db.t", schema=pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    location = table.metadata_location
    before = json.loads((tmp_path / "wh" / location.split("/wh/", 1)[1]).read_text())
    files = sorted(p.name for p in (tmp_path / "wh").rglob("*.metadata.json"))
    duplicate = Schema(NestedField(1, "id", LongType(), required=True), NestedField(1, "x", LongType()), schema_id=1)
    with pytest.raises(InvalidMetadataError, match="field id 1 is used twice"):
        table.operations().commit(table.metadata, location, _change([AddSchema(duplicate), SetCurrentSchema()]))
    assert catalog.load_table("db.t").metadata_location == location
    assert sorted(p.name for p in (tmp_path / "wh").rglob("*.metadata.json")) == files  # nothing written
    assert json.loads((tmp_path / "wh" / location.split("/wh/", 1)[1]).read_text()) == before


def _change(updates: list[Any]) -> Any:
    from mor.format.updates import TableCommit

    return TableCommit([], updates)


def test_statistics_a_commit_adds_have_their_spec_types() -> None:
    before = apply_updates(base(), [AddSnapshot(snapshot())])
    good = {"snapshot-id": 7, "statistics-path": "file:///wh/db.db/t/metadata/7.stats", "file-size-in-bytes": 10}
    validate_change(before, replace(before, extra={**before.extra, "statistics": [good]}))
    for bad, match in [
        ({**good, "statistics-path": 5}, "statistics-path must be a string"),
        ({**good, "snapshot-id": "7"}, "snapshot-id must be a long"),
    ]:
        with pytest.raises(InvalidMetadataError, match=match):
            validate_change(before, replace(before, extra={**before.extra, "statistics": [bad]}))
