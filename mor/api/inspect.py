"""Metadata tables: what is in a table, as Arrow tables with the names and types of Iceberg
Java's metadata tables (`db.t.snapshots`, `db.t.files`, ...), so a query written for Spark's
works on these. `table.inspect.files()`; `mor inspect db.t files`.

- `snapshots`, `history`, `refs`, `metadata_log_entries`: from the table metadata;
- `manifests` (of a snapshot, default the current one), `all_manifests` (of every snapshot, with
  the snapshot that lists each as `reference_snapshot_id`);
- `entries` (every entry of a snapshot's manifests, deleted ones too), `files`, `data_files`,
  `delete_files` (the live files), and their `all_` forms over every manifest of every
  snapshot (a manifest listed by several snapshots counted once);
- `partitions`: per partition of the live files, counts and sizes, and the newest snapshot
  that added a file there;
- `position_deletes`: every position a position delete file or deletion vector deletes.

Partition columns are the union of the table's partition fields (sorted by field id, named as
the newest spec names them), as Iceberg Java shows them; an unpartitioned table's metadata
tables have no `partition` (nor, in `partitions`, `spec_id`) column. `readable_metrics`: per
primitive column, its metrics with bounds decoded to the column's type.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyiceberg.conversions import from_bytes
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import VoidTransform
from pyiceberg.types import (
    DateType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

from mor.errors import NoSuchSnapshotError
from mor.format.arrow_types import to_arrow_type
from mor.format.content_file import ContentFile
from mor.format.manifest import ManifestEntry, ManifestFile, read_manifests
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.spec import FileContent, ManifestContent, ManifestEntryStatus
from mor.io.fileio import FileIO

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle

UTC_TIME = pa.timestamp("us", tz="UTC")
_INT_MAP = pa.map_(pa.int32(), pa.int64())
_BOUND_MAP = pa.map_(pa.int32(), pa.binary())


def _time(ms: int | None) -> dt.datetime | None:
    return None if ms is None else dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


class InspectTable:
    """The metadata tables of one table (as its handle sees it: refresh the table first to see
    commits made since)."""

    def __init__(self, table: TableHandle):
        self._table = table

    @property
    def _m(self) -> TableMetadata:
        return self._table.metadata

    @property
    def _io(self) -> FileIO:
        return self._table.io

    # -- from the table metadata --------------------------------------------------------------
    def snapshots(self) -> pa.Table:
        rows = [
            {"committed_at": _time(s.timestamp_ms), "snapshot_id": s.snapshot_id, "parent_id": s.parent_snapshot_id,
             "operation": s.operation or None, "manifest_list": s.manifest_list,
             "summary": [(k, v) for k, v in s.summary.items() if k != "operation"]}
            for s in self._m.snapshots
        ]  # fmt: skip
        schema = pa.schema([
            ("committed_at", UTC_TIME), ("snapshot_id", pa.int64()), ("parent_id", pa.int64()), ("operation", pa.string()),
            ("manifest_list", pa.string()), ("summary", pa.map_(pa.string(), pa.string())),
        ])  # fmt: skip
        return pa.Table.from_pylist(rows, schema)

    def history(self) -> pa.Table:
        ancestors = {s.snapshot_id for s in self._m.ancestors(self._m.current_snapshot_id)}
        by_id = {s.snapshot_id: s for s in self._m.snapshots}
        rows = [
            {"made_current_at": _time(ts), "snapshot_id": sid,
             "parent_id": by_id[sid].parent_snapshot_id if sid in by_id else None, "is_current_ancestor": sid in ancestors}
            for ts, sid in self._m.snapshot_log
        ]  # fmt: skip
        schema = pa.schema(
            [("made_current_at", UTC_TIME), ("snapshot_id", pa.int64()), ("parent_id", pa.int64()), ("is_current_ancestor", pa.bool_())]
        )
        return pa.Table.from_pylist(rows, schema)

    def refs(self) -> pa.Table:
        rows = [
            {"name": name, "type": str(ref.get("type", "branch")).upper(), "snapshot_id": ref.get("snapshot-id"),
             "max_reference_age_in_ms": ref.get("max-ref-age-ms"), "min_snapshots_to_keep": ref.get("min-snapshots-to-keep"),
             "max_snapshot_age_in_ms": ref.get("max-snapshot-age-ms")}
            for name, ref in self._m.refs.items()
        ]  # fmt: skip
        schema = pa.schema([
            ("name", pa.string()), ("type", pa.string()), ("snapshot_id", pa.int64()), ("max_reference_age_in_ms", pa.int64()),
            ("min_snapshots_to_keep", pa.int32()), ("max_snapshot_age_in_ms", pa.int64()),
        ])  # fmt: skip
        return pa.Table.from_pylist(rows, schema)

    def metadata_log_entries(self) -> pa.Table:
        """Each metadata file the log keeps, and the current one, with the snapshot current then."""
        files = [*self._m.metadata_log, (self._m.last_updated_ms, self._table.metadata_location)]
        by_id = {s.snapshot_id: s for s in self._m.snapshots}
        rows = []
        for ts, location in files:
            current = [sid for stamp, sid in self._m.snapshot_log if stamp <= ts]
            snapshot = by_id.get(current[-1]) if current else None
            rows.append({
                "timestamp": _time(ts), "file": location, "latest_snapshot_id": current[-1] if current else None,
                "latest_schema_id": snapshot.schema_id if snapshot else None,
                "latest_sequence_number": snapshot.sequence_number if snapshot else None,
            })  # fmt: skip
        schema = pa.schema([
            ("timestamp", UTC_TIME), ("file", pa.string()), ("latest_snapshot_id", pa.int64()), ("latest_schema_id", pa.int32()),
            ("latest_sequence_number", pa.int64()),
        ])  # fmt: skip
        return pa.Table.from_pylist(rows, schema)

    # -- from manifest lists -----------------------------------------------------------------
    def manifests(self, snapshot_id: int | None = None) -> pa.Table:
        snapshot = self._snapshot(snapshot_id)
        manifests = [] if snapshot is None else read_manifest_list(self._io, snapshot.manifest_list)
        return pa.Table.from_pylist([self._manifest_row(m) for m in manifests], _manifests_schema())

    def all_manifests(self) -> pa.Table:
        rows = []
        for snapshot in self._m.snapshots:
            for m in read_manifest_list(self._io, snapshot.manifest_list):
                rows.append({**self._manifest_row(m), "reference_snapshot_id": snapshot.snapshot_id})
        return pa.Table.from_pylist(rows, _manifests_schema().append(pa.field("reference_snapshot_id", pa.int64())))

    def _manifest_row(self, m: ManifestFile) -> dict[str, Any]:
        deletes = m.content == ManifestContent.DELETES
        counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count)
        none = (0, 0, 0)
        data, delete = (none, counts) if deletes else (counts, none)
        spec = self._m.specs().get(m.partition_spec_id)
        return {
            "content": int(m.content), "path": m.manifest_path, "length": m.manifest_length, "partition_spec_id": m.partition_spec_id,
            "added_snapshot_id": m.added_snapshot_id, "added_data_files_count": data[0], "existing_data_files_count": data[1],
            "deleted_data_files_count": data[2], "added_delete_files_count": delete[0], "existing_delete_files_count": delete[1],
            "deleted_delete_files_count": delete[2], "partition_summaries": self._summaries(m, spec),
        }  # fmt: skip

    def _summaries(self, m: ManifestFile, spec: PartitionSpec | None) -> list[dict[str, Any]]:
        if spec is None or m.partitions is None:
            return []
        types = self._spec_types(spec)
        out = []
        for summary, (_, t), pf in zip(m.partitions, types, spec.fields):
            void = isinstance(pf.transform, VoidTransform)  # Java prints its bounds as "null", whatever they are
            out.append({
                "contains_null": summary.contains_null, "contains_nan": summary.contains_nan,
                "lower_bound": "null" if void else _human(t, summary.lower_bound),
                "upper_bound": "null" if void else _human(t, summary.upper_bound),
            })  # fmt: skip
        return out

    # -- from manifests -----------------------------------------------------------------------
    def entries(self, snapshot_id: int | None = None) -> pa.Table:
        return self._entries_table(self._entries(self._snapshot_manifests(snapshot_id)))

    def all_entries(self) -> pa.Table:
        return self._entries_table(self._entries(self._all_manifests()))

    def files(self, snapshot_id: int | None = None) -> pa.Table:
        return self._files_table(self._live(self._snapshot_manifests(snapshot_id)))

    def data_files(self, snapshot_id: int | None = None) -> pa.Table:
        return self._files_table(self._live(self._snapshot_manifests(snapshot_id), ManifestContent.DATA))

    def delete_files(self, snapshot_id: int | None = None) -> pa.Table:
        return self._files_table(self._live(self._snapshot_manifests(snapshot_id), ManifestContent.DELETES))

    def all_files(self) -> pa.Table:
        return self._files_table(self._live(self._all_manifests()))

    def all_data_files(self) -> pa.Table:
        return self._files_table(self._live(self._all_manifests(), ManifestContent.DATA))

    def all_delete_files(self) -> pa.Table:
        return self._files_table(self._live(self._all_manifests(), ManifestContent.DELETES))

    def partitions(self, snapshot_id: int | None = None) -> pa.Table:
        partition_type = self._partition_type()
        by_id = {s.snapshot_id: s for s in self._m.snapshots}
        groups: dict[tuple[int, tuple[Any, ...]], dict[str, Any]] = {}
        for e in self._live(self._snapshot_manifests(snapshot_id)):
            f = e.file
            values = self._partition_values(f, partition_type)
            key = (f.spec_id, tuple(values.values())) if partition_type else (0, ())
            g = groups.setdefault(key, {
                "partition": values, "spec_id": f.spec_id, "record_count": 0, "file_count": 0, "total_data_file_size_in_bytes": 0,
                "position_delete_record_count": 0, "position_delete_file_count": 0, "equality_delete_record_count": 0,
                "equality_delete_file_count": 0, "last_updated_at": None, "last_updated_snapshot_id": None,
            })  # fmt: skip
            if f.content == FileContent.DATA:
                g["record_count"] += f.record_count
                g["file_count"] += 1
                g["total_data_file_size_in_bytes"] += f.file_size_in_bytes
            elif f.content == FileContent.POSITION_DELETES:
                g["position_delete_record_count"] += f.record_count
                g["position_delete_file_count"] += 1
            else:
                g["equality_delete_record_count"] += f.record_count
                g["equality_delete_file_count"] += 1
            snapshot = by_id.get(e.snapshot_id)
            if snapshot is not None and (g["last_updated_at"] is None or snapshot.timestamp_ms > g["last_updated_at"]):
                g["last_updated_at"], g["last_updated_snapshot_id"] = snapshot.timestamp_ms, snapshot.snapshot_id
        rows = [{**g, "last_updated_at": _time(g["last_updated_at"])} for g in groups.values()]
        fields = [
            pa.field("record_count", pa.int64()), pa.field("file_count", pa.int32()),
            pa.field("total_data_file_size_in_bytes", pa.int64()), pa.field("position_delete_record_count", pa.int64()),
            pa.field("position_delete_file_count", pa.int32()), pa.field("equality_delete_record_count", pa.int64()),
            pa.field("equality_delete_file_count", pa.int32()), pa.field("last_updated_at", UTC_TIME),
            pa.field("last_updated_snapshot_id", pa.int64()),
        ]  # fmt: skip
        if partition_type:
            fields = [pa.field("partition", _partition_arrow(partition_type)), pa.field("spec_id", pa.int32()), *fields]
        else:
            rows = [{k: v for k, v in r.items() if k not in ("partition", "spec_id")} for r in rows]
        return pa.Table.from_pylist(rows, pa.schema(fields))

    def position_deletes(self, snapshot_id: int | None = None) -> pa.Table:
        """Every (data file, position) a live position delete file or deletion vector deletes,
        with the delete file it comes from (and, for a vector, its blob)."""
        from mor.read.position_deletes import read_position_delete_file  # imported on first use: most tables need none

        partition_type = self._partition_type()
        vectors = self._m.format_version >= 3
        row_type = pa.struct([pa.field(f.name, to_arrow_type(f.field_type)) for f in self._table.schema().fields])
        parts: list[pa.Table] = []
        for e in self._live(self._snapshot_manifests(snapshot_id), ManifestContent.DELETES):
            f = e.file
            if f.content != FileContent.POSITION_DELETES:
                continue
            by_path = read_position_delete_file(self._io, f)  # type: ignore[arg-type]  # a delete manifest's file
            n = sum(len(p) for p in by_path.values())
            columns: dict[str, pa.Array] = {
                "file_path": pa.array([path for path, p in by_path.items() for _ in range(len(p))], pa.string()),
                "pos": pa.array(np.concatenate([*by_path.values(), np.empty(0, np.int64)]), pa.int64()),
                "row": pa.nulls(n, row_type),
            }  # fmt: skip
            if partition_type:
                values = self._partition_values(f, partition_type)
                columns["partition"] = pa.array([values] * n, _partition_arrow(partition_type))
            columns["spec_id"] = pa.array([f.spec_id] * n, pa.int32())
            columns["delete_file_path"] = pa.array([f.file_path] * n, pa.string())
            if vectors:
                columns["content_offset"] = pa.array([f.content_offset] * n, pa.int64())
                columns["content_size_in_bytes"] = pa.array([f.content_size_in_bytes] * n, pa.int64())
            parts.append(pa.table(columns))
        if parts:
            return pa.concat_tables(parts)
        fields = [pa.field("file_path", pa.string()), pa.field("pos", pa.int64()), pa.field("row", row_type)]
        if partition_type:
            fields.append(pa.field("partition", _partition_arrow(partition_type)))
        fields += [pa.field("spec_id", pa.int32()), pa.field("delete_file_path", pa.string())]
        if vectors:
            fields += [pa.field("content_offset", pa.int64()), pa.field("content_size_in_bytes", pa.int64())]
        return pa.schema(fields).empty_table()

    # -- helpers ------------------------------------------------------------------------------
    def _snapshot(self, snapshot_id: int | None) -> Snapshot | None:
        if snapshot_id is None:
            return self._m.current_snapshot()
        try:
            return self._m.snapshot_by_id(snapshot_id)
        except KeyError:
            raise NoSuchSnapshotError(f"{self._table.identifier} has no snapshot {snapshot_id}") from None

    def _snapshot_manifests(self, snapshot_id: int | None) -> list[ManifestFile]:
        snapshot = self._snapshot(snapshot_id)
        return [] if snapshot is None else read_manifest_list(self._io, snapshot.manifest_list)

    def _all_manifests(self) -> list[ManifestFile]:
        seen: dict[str, ManifestFile] = {}
        for snapshot in self._m.snapshots:
            for m in read_manifest_list(self._io, snapshot.manifest_list):
                seen.setdefault(m.manifest_path, m)
        return list(seen.values())

    def _entries(self, manifests: list[ManifestFile]) -> list[ManifestEntry]:
        entries = read_manifests(self._io, manifests, self._m.specs(), self._table.schema())
        return [e for group in entries for e in group]

    def _live(self, manifests: list[ManifestFile], content: ManifestContent | None = None) -> list[ManifestEntry]:
        chosen = [m for m in manifests if content is None or m.content == content]
        return [e for e in self._entries(chosen) if e.status != ManifestEntryStatus.DELETED]

    def _spec_types(self, spec: PartitionSpec) -> list[tuple[str, IcebergType]]:
        schema = self._table.schema()
        out = []
        for pf in spec.fields:
            source = _find(schema, self._m.schemas, pf.source_id)
            out.append((pf.name, pf.transform.result_type(source.field_type) if source is not None else PrimitiveType()))
        return out

    def _partition_type(self) -> list[tuple[int, str, IcebergType]]:
        """The union of the partition fields whose source column the table still has, by field id."""
        schema = self._table.schema()
        found: dict[int, tuple[str, IcebergType]] = {}
        void: set[int] = set()  # v1 drops a field by making it void: an older spec's type is the real one
        for spec in sorted(self._m.specs().values(), key=lambda s: -s.spec_id):
            for pf in spec.fields:
                source = schema._lazy_id_to_field.get(pf.source_id)
                if source is None or (pf.field_id in found and pf.field_id not in void):
                    continue
                is_void = isinstance(pf.transform, VoidTransform)
                if pf.field_id in found and is_void:
                    continue
                name = found[pf.field_id][0] if pf.field_id in found else pf.name
                found[pf.field_id] = (name, pf.transform.result_type(source.field_type))
                (void.add if is_void else void.discard)(pf.field_id)
        return [(fid, name, t) for fid, (name, t) in sorted(found.items())]

    def _partition_values(self, f: ContentFile, partition_type: list[tuple[int, str, IcebergType]]) -> dict[str, Any]:
        spec = self._m.specs().get(f.spec_id)
        by_id = {pf.field_id: v for pf, v in zip(spec.fields, f.partition)} if spec is not None else {}
        return {name: _python_value(t, by_id.get(fid)) for fid, name, t in partition_type}

    def _files_table(self, entries: list[ManifestEntry]) -> pa.Table:
        partition_type = self._partition_type()
        metrics_columns = _metric_columns(self._table.schema())
        rows = [{**self._file_row(e.file, partition_type), "readable_metrics": _readable(e.file, metrics_columns)} for e in entries]
        schema = _file_schema(partition_type).append(pa.field("readable_metrics", _readable_type(metrics_columns)))
        return pa.Table.from_pylist(rows, schema)

    def _entries_table(self, entries: list[ManifestEntry]) -> pa.Table:
        partition_type = self._partition_type()
        metrics_columns = _metric_columns(self._table.schema())
        rows = [
            {"status": int(e.status), "snapshot_id": e.snapshot_id, "sequence_number": e.data_sequence_number,
             "file_sequence_number": e.file_sequence_number, "data_file": self._file_row(e.file, partition_type),
             "readable_metrics": _readable(e.file, metrics_columns)}
            for e in entries
        ]  # fmt: skip
        schema = pa.schema([
            ("status", pa.int32()), ("snapshot_id", pa.int64()), ("sequence_number", pa.int64()),
            ("file_sequence_number", pa.int64()), ("data_file", pa.struct(list(_file_schema(partition_type)))),
            ("readable_metrics", _readable_type(metrics_columns)),
        ])  # fmt: skip
        return pa.Table.from_pylist(rows, schema)

    def _file_row(self, f: ContentFile, partition_type: list[tuple[int, str, IcebergType]]) -> dict[str, Any]:
        row: dict[str, Any] = {
            "content": int(f.content),
            "file_path": f.file_path,
            "file_format": f.file_format.upper(),
            "spec_id": f.spec_id,
        }
        if partition_type:
            row["partition"] = self._partition_values(f, partition_type)
        row.update(
            record_count=f.record_count, file_size_in_bytes=f.file_size_in_bytes, column_sizes=_pairs(f.column_sizes),
            value_counts=_pairs(f.value_counts), null_value_counts=_pairs(f.null_value_counts),
            nan_value_counts=_pairs(f.nan_value_counts), lower_bounds=_pairs(f.lower_bounds), upper_bounds=_pairs(f.upper_bounds),
            key_metadata=f.key_metadata, split_offsets=list(f.split_offsets) if f.split_offsets is not None else None,
            equality_ids=list(f.equality_ids) if f.equality_ids is not None else None, sort_order_id=f.sort_order_id,
            first_row_id=f.first_row_id, referenced_data_file=f.referenced_data_file, content_offset=f.content_offset,
            content_size_in_bytes=f.content_size_in_bytes,
        )  # fmt: skip
        return row


def _pairs(values: dict[int, Any] | None) -> list[tuple[int, Any]] | None:
    return None if values is None else sorted(values.items())


def _find(schema: Schema, schemas: Iterable[Schema], field_id: int) -> NestedField | None:
    for s in [schema, *schemas]:
        found = s._lazy_id_to_field.get(field_id)
        if found is not None:
            return found
    return None


def _manifests_schema() -> pa.Schema:
    summary = pa.struct(
        [("contains_null", pa.bool_()), ("contains_nan", pa.bool_()), ("lower_bound", pa.string()), ("upper_bound", pa.string())]
    )
    return pa.schema([
        ("content", pa.int32()), ("path", pa.string()), ("length", pa.int64()), ("partition_spec_id", pa.int32()),
        ("added_snapshot_id", pa.int64()), ("added_data_files_count", pa.int32()), ("existing_data_files_count", pa.int32()),
        ("deleted_data_files_count", pa.int32()), ("added_delete_files_count", pa.int32()),
        ("existing_delete_files_count", pa.int32()), ("deleted_delete_files_count", pa.int32()),
        ("partition_summaries", pa.list_(summary)),
    ])  # fmt: skip


def _file_schema(partition_type: list[tuple[int, str, IcebergType]]) -> pa.Schema:
    fields = [pa.field("content", pa.int32()), pa.field("file_path", pa.string()), pa.field("file_format", pa.string()),
              pa.field("spec_id", pa.int32())]  # fmt: skip
    if partition_type:
        fields.append(pa.field("partition", _partition_arrow(partition_type)))
    fields += [
        pa.field("record_count", pa.int64()), pa.field("file_size_in_bytes", pa.int64()), pa.field("column_sizes", _INT_MAP),
        pa.field("value_counts", _INT_MAP), pa.field("null_value_counts", _INT_MAP), pa.field("nan_value_counts", _INT_MAP),
        pa.field("lower_bounds", _BOUND_MAP), pa.field("upper_bounds", _BOUND_MAP), pa.field("key_metadata", pa.binary()),
        pa.field("split_offsets", pa.list_(pa.int64())), pa.field("equality_ids", pa.list_(pa.int32())),
        pa.field("sort_order_id", pa.int32()), pa.field("first_row_id", pa.int64()), pa.field("referenced_data_file", pa.string()),
        pa.field("content_offset", pa.int64()), pa.field("content_size_in_bytes", pa.int64()),
    ]  # fmt: skip
    return pa.schema(fields)


def _partition_arrow(partition_type: list[tuple[int, str, IcebergType]]) -> pa.StructType:
    return pa.struct([pa.field(name, to_arrow_type(t)) for _, name, t in partition_type])


def _python_value(t: IcebergType, value: Any) -> Any:
    """A partition value (internal form: days, microseconds) as Arrow takes it for the type."""
    if value is None:
        return None
    if isinstance(t, DateType) and isinstance(value, int):
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if isinstance(t, TimestampType) and isinstance(value, int):
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
    if isinstance(t, TimestamptzType) and isinstance(value, int):
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=value)
    if isinstance(t, TimeType) and isinstance(value, int):
        return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)).time()
    return value


def _human(t: IcebergType, bound: bytes | None) -> str | None:
    """A partition bound as Iceberg Java prints it in `partition_summaries` (the type's string)."""
    if bound is None:
        return None
    value = _python_value(t, from_bytes(t, bound))
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return str(value)


def _metric_columns(schema: Schema) -> list[tuple[str, NestedField]]:
    """The primitive columns readable metrics are given for, by full name (a list's values as
    `name.element`, a map's as `name.key` and `name.value`), sorted by name, as Iceberg Java."""
    out: list[tuple[str, NestedField]] = []

    def visit(f: NestedField, name: str) -> None:
        t = f.field_type
        if isinstance(t, StructType):
            for child in t.fields:
                visit(child, f"{name}.{child.name}")
        elif isinstance(t, ListType):
            visit(t.element_field, f"{name}.element")
        elif isinstance(t, MapType):
            visit(t.key_field, f"{name}.key")
            visit(t.value_field, f"{name}.value")
        else:
            out.append((name, f))

    for f in schema.fields:
        visit(f, f.name)
    return sorted(out, key=lambda c: c[0])


def _readable_type(columns: list[tuple[str, NestedField]]) -> pa.StructType:
    return pa.struct([
        pa.field(name, pa.struct([
            ("column_size", pa.int64()), ("value_count", pa.int64()), ("null_value_count", pa.int64()),
            ("nan_value_count", pa.int64()), ("lower_bound", to_arrow_type(f.field_type)), ("upper_bound", to_arrow_type(f.field_type)),
        ]))
        for name, f in columns
    ])  # fmt: skip


def _readable(f: ContentFile, columns: list[tuple[str, NestedField]]) -> dict[str, Any]:
    def get(values: dict[int, Any] | None, field_id: int) -> Any:
        return None if values is None else values.get(field_id)

    def bound(values: dict[int, bytes] | None, field: NestedField) -> Any:
        raw = get(values, field.field_id)
        return None if raw is None else _python_value(field.field_type, from_bytes(field.field_type, raw))

    return {
        name: {
            "column_size": get(f.column_sizes, field.field_id), "value_count": get(f.value_counts, field.field_id),
            "null_value_count": get(f.null_value_counts, field.field_id), "nan_value_count": get(f.nan_value_counts, field.field_id),
            "lower_bound": bound(f.lower_bounds, field), "upper_bound": bound(f.upper_bounds, field),
        }
        for name, field in columns
    }  # fmt: skip


METADATA_TABLES: dict[str, Callable[[InspectTable], pa.Table]] = {
    name: getattr(InspectTable, name)
    for name in (
        "snapshots", "history", "refs", "metadata_log_entries", "manifests", "all_manifests", "entries", "all_entries", "files",
        "data_files", "delete_files", "all_files", "all_data_files", "all_delete_files", "partitions", "position_deletes",
    )
}  # fmt: skip
# The metadata tables of one snapshot (the current one unless given).
SNAPSHOT_TABLES = frozenset({"manifests", "entries", "files", "data_files", "delete_files", "partitions", "position_deletes"})
