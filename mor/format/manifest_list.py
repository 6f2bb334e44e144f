"""Manifest lists: one Avro file per snapshot naming its manifests."""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import fastavro

from mor.errors import CorruptMetadataError
from mor.format.avro_schemas import MANIFEST_FILE_SCHEMA_V1, MANIFEST_FILE_SCHEMA_V2, MANIFEST_FILE_SCHEMA_V3
from mor.format.manifest import ManifestFile, PartitionFieldSummary, read_avro_records
from mor.format.spec import INITIAL_SEQUENCE_NUMBER, ManifestContent
from mor.io.fileio import FileIO

_PARSED_SCHEMAS = {
    version: fastavro.parse_schema(schema)
    for version, schema in ((1, MANIFEST_FILE_SCHEMA_V1), (2, MANIFEST_FILE_SCHEMA_V2), (3, MANIFEST_FILE_SCHEMA_V3))
}


def write_manifest_list(
    io_: FileIO,
    location: str,
    *,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int,
    manifests: Iterable[ManifestFile],
    format_version: int = 2,
    first_row_id: int | None = None,
) -> tuple[list[ManifestFile], int]:
    """Write the list; manifests written by this commit get its sequence number here. In v3,
    data manifests without a first row id get one from `first_row_id` on: returns the manifests
    as written and how many row ids they reserved (the snapshot's `added-rows`)."""
    final = [m if m.sequence_number is not None else m.with_sequence_number(sequence_number) for m in manifests]
    reserved = 0
    if format_version >= 3:
        final, reserved = assign_first_row_ids(final, first_row_id or 0)
    metadata = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        "sequence-number": str(sequence_number),
        "format-version": str(format_version),
    }
    if format_version == 1:
        del metadata["sequence-number"]
    if format_version >= 3:
        metadata["first-row-id"] = str(first_row_id or 0)
    buffer = io.BytesIO()
    schema = _PARSED_SCHEMAS[min(format_version, 3)]
    fastavro.writer(buffer, schema, [_to_avro(m) for m in final], codec="deflate", metadata=metadata)
    io_.write_bytes_exclusive(location, buffer.getvalue())
    return final, reserved


def assign_first_row_ids(manifests: list[ManifestFile], first_row_id: int) -> tuple[list[ManifestFile], int]:
    """The spec's first row id assignment: each data manifest that has none gets the next free
    id, and reserves room for all its live rows, existing ones too (a manifest carried from
    before the upgrade to v3 holds files that never had row ids)."""
    out, next_id = [], first_row_id
    for m in manifests:
        if m.content == ManifestContent.DATA and m.first_row_id is None:
            m = replace(m, first_row_id=next_id)
            next_id += m.added_rows_count + m.existing_rows_count
        out.append(m)
    return out, next_id - first_row_id


def read_manifest_list(io_: FileIO, location: str) -> list[ManifestFile]:
    records = read_avro_records(io_, location, "manifest list")
    try:
        return [_from_avro(r) for r in records]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorruptMetadataError(f"manifest list {location} holds a row that is not a manifest-list row: {e!r}") from e


def _to_avro(m: ManifestFile) -> dict[str, Any]:
    return {
        "manifest_path": m.manifest_path,
        "manifest_length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "content": int(m.content),
        "sequence_number": m.sequence_number,
        "min_sequence_number": m.min_sequence_number,
        "added_snapshot_id": m.added_snapshot_id,
        "added_files_count": m.added_files_count,
        "existing_files_count": m.existing_files_count,
        "deleted_files_count": m.deleted_files_count,
        "added_rows_count": m.added_rows_count,
        "existing_rows_count": m.existing_rows_count,
        "deleted_rows_count": m.deleted_rows_count,
        "partitions": (
            None
            if m.partitions is None
            else [
                {
                    "contains_null": p.contains_null,
                    "contains_nan": p.contains_nan,
                    "lower_bound": p.lower_bound,
                    "upper_bound": p.upper_bound,
                }
                for p in m.partitions
            ]
        ),
        "key_metadata": m.key_metadata,
        "first_row_id": m.first_row_id,
    }


def _from_avro(r: dict[str, Any]) -> ManifestFile:
    # v1 lists lack the sequence-number fields: everything in them is at the initial number.
    seq = r.get("sequence_number", INITIAL_SEQUENCE_NUMBER)
    partitions = r.get("partitions")
    return ManifestFile(
        manifest_path=r["manifest_path"],
        manifest_length=r["manifest_length"],
        partition_spec_id=r["partition_spec_id"],
        content=ManifestContent(r.get("content", 0)),
        sequence_number=seq,
        min_sequence_number=r.get("min_sequence_number", seq),
        added_snapshot_id=r["added_snapshot_id"],
        added_files_count=r.get("added_files_count") or 0,
        existing_files_count=r.get("existing_files_count") or 0,
        deleted_files_count=r.get("deleted_files_count") or 0,
        added_rows_count=r.get("added_rows_count") or 0,
        existing_rows_count=r.get("existing_rows_count") or 0,
        deleted_rows_count=r.get("deleted_rows_count") or 0,
        partitions=(
            None
            if partitions is None
            else tuple(
                PartitionFieldSummary(p["contains_null"], p.get("contains_nan"), p.get("lower_bound"), p.get("upper_bound"))
                for p in partitions
            )
        ),
        key_metadata=r.get("key_metadata"),
        first_row_id=r.get("first_row_id"),
    )
