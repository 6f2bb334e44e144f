"""Helpers for the unit tests: deterministic rows, and an independent look at a table on disk.

The on-disk readers here use fastavro and pyarrow directly, not mor's format layer, so a test
that checks what mor wrote does not trust mor to read it back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

import mor
from mor.io.fileio import FileIO, to_local_path

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("name", pa.string()),
        pa.field("value", pa.float64()),
    ]
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
JAVA_FIXTURES = SHARED / "fixtures" / "iceberg-java"
JAVA_PREFIX = "/tmp/mor-fixtures/iceberg-java"
V2_FIXTURE_TABLES = ["unpart_v2_mor", "part_v2_mor", "cow_v2", "eq_v2", "eq_v2_part"]

# Reserved field ids of the position delete schema (spelled out, not imported from mor).
FILE_PATH_ID = 2147483546
POS_ID = 2147483545


def make_rows(ids: Iterable[int]) -> pa.Table:
    """Row i: category from i, a name that spells i (so misaligned deletes show), value i/2."""
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "category": ["abc"[(i // 10) % 3] for i in ids],
            "name": [f"n{i}" for i in ids],
            "value": [i / 2 for i in ids],
        },
        schema=SCHEMA,
    )


def ids_of(data: pa.Table) -> list[int]:
    return sorted(data.column("id").to_pylist())


def scan_ids(table: mor.Table, **scan_args: Any) -> list[int]:
    return ids_of(table.scan(**scan_args).to_arrow())


def assert_rows_are(data: pa.Table, ids: Iterable[int]) -> None:
    """Exactly the rows `make_rows(ids)` makes, whole (not only their ids)."""
    expected = make_rows(sorted(ids))
    got = data.select(expected.column_names).sort_by("id")
    assert got.to_pylist() == expected.to_pylist()


def local(location: str) -> str:
    return to_local_path(location)


def files_under(location: str) -> set[str]:
    """Every file below a table's folder, as local paths."""
    root = local(location)
    out = set()
    for folder, _, names in os.walk(root):
        out.update(os.path.join(folder, n) for n in names)
    return out


def read_avro(location: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header metadata, records) of an Avro file."""
    header, _, records = avro_file(location)
    return header, records


def avro_file(location: str) -> tuple[dict[str, str], dict[str, Any], list[dict[str, Any]]]:
    """(header metadata, Avro schema, records) of an Avro file."""
    with open(local(location), "rb") as f:
        reader = fastavro.reader(f)
        meta = dict(reader.metadata)
        return meta, json.loads(meta["avro.schema"]), list(reader)


def avro_fields_without_ids(avro_type: Any, path: str = "") -> list[str]:
    """Paths of record fields lacking `field-id` and of non-map arrays lacking `element-id`."""
    missing: list[str] = []
    if isinstance(avro_type, list):
        for t in avro_type:
            missing += avro_fields_without_ids(t, path)
    elif isinstance(avro_type, dict):
        if avro_type.get("type") == "record":
            for f in avro_type["fields"]:
                if "field-id" not in f:
                    missing.append(f"{path}/{f['name']}")
                missing += avro_fields_without_ids(f["type"], f"{path}/{f['name']}")
        elif avro_type.get("type") == "array":
            if avro_type.get("logicalType") != "map" and "element-id" not in avro_type:
                missing.append(f"{path}[]")
            missing += avro_fields_without_ids(avro_type["items"], f"{path}[]")
    return missing


@dataclass(frozen=True)
class RawEntry:
    """A manifest entry read straight from Avro, with inheritance resolved here."""

    manifest: dict[str, Any]  # the manifest-list row
    status: int
    snapshot_id: int
    data_sequence_number: int
    file_sequence_number: int
    data_file: dict[str, Any]

    @property
    def path(self) -> str:
        return self.data_file["file_path"]

    @property
    def content(self) -> int:
        return self.data_file["content"]

    def bounds(self, which: str) -> dict[int, bytes]:
        return {kv["key"]: kv["value"] for kv in self.data_file[which] or []}


def raw_entries(manifest_list: str) -> list[RawEntry]:
    out = []
    _, manifests = read_avro(manifest_list)
    for m in manifests:
        _, records = read_avro(m["manifest_path"])
        for r in records:
            inherit = r["status"] == 1
            out.append(
                RawEntry(
                    manifest=m,
                    status=r["status"],
                    snapshot_id=r["snapshot_id"] if r["snapshot_id"] is not None else m["added_snapshot_id"],
                    data_sequence_number=(m["sequence_number"] if inherit and r["sequence_number"] is None else r["sequence_number"]),
                    file_sequence_number=(
                        m["sequence_number"] if inherit and r["file_sequence_number"] is None else r["file_sequence_number"]
                    ),
                    data_file=r["data_file"],
                )
            )
    return out


def live_raw_entries(table: mor.Table, snapshot_id: int | None = None) -> list[RawEntry]:
    snapshot = table.current_snapshot() if snapshot_id is None else table.metadata.snapshot_by_id(snapshot_id)
    if snapshot is None:
        return []
    return [e for e in raw_entries(snapshot.manifest_list) if e.status != 2]


def live_data_paths(table: mor.Table, snapshot_id: int | None = None) -> set[str]:
    return {e.path for e in live_raw_entries(table, snapshot_id) if e.content == 0}


def live_delete_entries(table: mor.Table, snapshot_id: int | None = None) -> list[RawEntry]:
    return [e for e in live_raw_entries(table, snapshot_id) if e.content != 0]


def reachable_files(table: mor.Table) -> set[str]:
    """Every file the table's metadata (and its history) can reach, as local paths."""
    md = table.metadata
    out = set()
    pending = [table.metadata_location]
    while pending:  # the metadata-log, followed from file to file
        location = pending.pop()
        if local(location) in out or not os.path.exists(local(location)):
            continue
        out.add(local(location))
        with open(local(location)) as f:
            pending += [e["metadata-file"] for e in json.load(f).get("metadata-log", [])]
    for s in md.snapshots:
        out.add(local(s.manifest_list))
        _, manifests = read_avro(s.manifest_list)
        for m in manifests:
            out.add(local(m["manifest_path"]))
        out |= {local(e.path) for e in raw_entries(s.manifest_list)}
    return out


def assert_no_orphans(table: mor.Table) -> None:
    """Nothing under the table folder that its metadata cannot reach."""
    orphans = files_under(table.location) - reachable_files(table)
    assert orphans == set(), sorted(orphans)


class RelocatingFileIO(FileIO):
    """Reads the Iceberg Java fixtures where they are checked in, though their metadata says
    /tmp/mor-fixtures/iceberg-java (a fake file system, not a copy)."""

    def path(self, location: str) -> str:
        p = super().path(location)
        if p.startswith(JAVA_PREFIX):
            return str(JAVA_FIXTURES) + p[len(JAVA_PREFIX) :]
        return p


# -- shared by the value-based DML tests (delete_rows, update, upsert, merge) ------------------


class RecordingFileIO(FileIO):
    """Remembers every location opened for reading: proves a blind write reads no data file
    (a fake file system, not a mock). Install it with `table.io = RecordingFileIO()`."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def open_input(self, location: str) -> pa.NativeFile:
        self.opened.append(location)
        return super().open_input(location)


def rows_of(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows given as dicts, in the helpers' schema (missing keys are null)."""
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in SCHEMA} for r in rows], schema=SCHEMA)


def _null_first(row: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is not None, v) for v in row.values())


def sorted_rows(data: pa.Table | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Whole rows in the helpers' column order, sorted (nulls first), for exact comparisons."""
    rows = data.select(SCHEMA.names).to_pylist() if isinstance(data, pa.Table) else data
    return sorted(({n: r.get(n) for n in SCHEMA.names} for r in rows), key=_null_first)


def table_rows(table: mor.Table, **scan_args: Any) -> list[dict[str, Any]]:
    return sorted_rows(table.scan(**scan_args).to_arrow())


class TableState:
    """What an operation that fails (or does nothing) must leave as it was."""

    def __init__(self, table: mor.Table):
        self.table = table
        self.metadata_location = table.metadata_location
        self.files = files_under(table.location)
        self.snapshots = len(table.snapshots())

    def assert_unchanged(self) -> None:
        assert self.table.metadata_location == self.metadata_location
        assert len(self.table.snapshots()) == self.snapshots
        assert files_under(self.table.location) == self.files
        self.table.refresh()
        assert self.table.metadata_location == self.metadata_location


def data_file_holding(table: mor.Table, row_id: int) -> str:
    """The live data file whose rows include `row_id` (read straight from Parquet)."""
    for path in live_data_paths(table):
        if row_id in pq.read_table(local(path), columns=["id"]).column("id").to_pylist():
            return path
    raise AssertionError(f"no live data file holds id {row_id}")
