"""Manifests: Avro files of manifest entries, one content kind and one partition spec each.

Sequence-number inheritance is resolved here, once: an ADDED entry written with null
sequence numbers or snapshot id takes them from its manifest's manifest-list row.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import fastavro
from pyiceberg.conversions import to_bytes
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.errors import CorruptMetadataError, MorError
from mor.format.avro_schemas import V1_BLOCK_SIZE_BYTES, manifest_entry_schema
from mor.format.content_file import ContentFile, ManifestEntry, content_file_from_values, manifest_entry
from mor.format.partition_values import avro_record_keys, to_avro_record, to_internal
from mor.format.spec import DELETE_FILE_PATH_ID, FileContent, ManifestContent, ManifestEntryStatus
from mor.io.avro_arrow import arrow_array
from mor.io.avro_columns import python_values, read_avro_columns, take_rows
from mor.io.fileio import FileIO, unreadable
from mor.io.threads import IO_POOL


@dataclass(frozen=True)
class PartitionFieldSummary:
    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True)
class ManifestFile:
    """A manifest-list row. `sequence_number`/`min_sequence_number` are None for a manifest
    written by a commit in progress: the commit assigns its sequence number when it wins."""

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent
    sequence_number: int | None
    min_sequence_number: int | None
    added_snapshot_id: int
    added_files_count: int
    existing_files_count: int
    deleted_files_count: int
    added_rows_count: int
    existing_rows_count: int
    deleted_rows_count: int
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None  # v3 data manifests: where inherited row ids start

    @property
    def has_live_files(self) -> bool:
        return self.added_files_count > 0 or self.existing_files_count > 0

    def with_sequence_number(self, sequence_number: int) -> ManifestFile:
        return replace(
            self,
            sequence_number=sequence_number,
            min_sequence_number=(sequence_number if self.min_sequence_number is None else min(self.min_sequence_number, sequence_number)),
        )


@dataclass(frozen=True)
class EntryToWrite:
    """An entry for a new manifest. ADDED entries leave sequence numbers None (inherited)."""

    status: ManifestEntryStatus
    snapshot_id: int
    file: ContentFile
    data_sequence_number: int | None = None
    file_sequence_number: int | None = None


def write_manifest(
    io_: FileIO,
    location: str,
    *,
    spec: PartitionSpec,
    schema: Schema,
    content: ManifestContent,
    snapshot_id: int,
    entries: Iterable[EntryToWrite],
    format_version: int = 2,
) -> ManifestFile:
    entries = list(entries)
    partition_type = spec.partition_type(schema)
    records = [_entry_to_avro(e, partition_type) for e in entries]
    if format_version == 1:
        for record in records:
            record["data_file"]["block_size_in_bytes"] = V1_BLOCK_SIZE_BYTES
    metadata = {
        "schema": schema.model_dump_json(),
        "schema-id": str(schema.schema_id),
        "partition-spec": json.dumps([json.loads(f.model_dump_json(by_alias=True)) for f in spec.fields]),
        "partition-spec-id": str(spec.spec_id),
        "format-version": str(format_version),
        "content": "deletes" if content == ManifestContent.DELETES else "data",
    }
    buffer = io.BytesIO()
    avro_schema = fastavro.parse_schema(manifest_entry_schema(spec, schema, format_version))
    fastavro.writer(buffer, avro_schema, records, codec="deflate", metadata=metadata)
    data = buffer.getvalue()
    io_.write_bytes_exclusive(location, data)

    counts = {status: [0, 0] for status in ManifestEntryStatus}
    for e in entries:
        counts[e.status][0] += 1
        counts[e.status][1] += e.file.record_count
    explicit = [e.data_sequence_number for e in entries if e.status != ManifestEntryStatus.DELETED and e.data_sequence_number is not None]
    return ManifestFile(
        manifest_path=location,
        manifest_length=len(data),
        partition_spec_id=spec.spec_id,
        content=content,
        sequence_number=None,
        min_sequence_number=min(explicit) if explicit else None,
        added_snapshot_id=snapshot_id,
        added_files_count=counts[ManifestEntryStatus.ADDED][0],
        existing_files_count=counts[ManifestEntryStatus.EXISTING][0],
        deleted_files_count=counts[ManifestEntryStatus.DELETED][0],
        added_rows_count=counts[ManifestEntryStatus.ADDED][1],
        existing_rows_count=counts[ManifestEntryStatus.EXISTING][1],
        deleted_rows_count=counts[ManifestEntryStatus.DELETED][1],
        partitions=_partition_summaries(entries, spec, schema),
    )


def read_manifest(io_: FileIO, manifest: ManifestFile, specs: dict[int, PartitionSpec], schema: Schema) -> list[ManifestEntry]:
    return decode_manifest(read_manifest_bytes(io_, manifest), manifest, specs, schema)


def read_manifests(
    io_: FileIO, manifests: list[ManifestFile], specs: dict[int, PartitionSpec], schema: Schema
) -> list[list[ManifestEntry]]:
    """`read_manifest` of each: the files fetched concurrently (on object storage each is a
    GET worth overlapping), decoded in this thread, in order (decoding holds the GIL)."""
    if len(manifests) < 2:
        return [read_manifest(io_, m, specs, schema) for m in manifests]
    data = IO_POOL.get().map(lambda m: read_manifest_bytes(io_, m), manifests)
    return [decode_manifest(d, m, specs, schema) for m, d in zip(manifests, data)]


def read_manifest_bytes(io_: FileIO, manifest: ManifestFile) -> bytes:
    """The manifest file's bytes; CorruptMetadataError naming it when it cannot be read."""
    try:
        return io_.read_bytes(manifest.manifest_path)
    except MorError:
        raise
    except Exception as e:
        raise unreadable("manifest", manifest.manifest_path, e) from e


def decode_manifest(
    data: bytes, manifest: ManifestFile, specs: dict[int, PartitionSpec], schema: Schema, metrics: Metrics = True
) -> list[ManifestEntry]:
    """The entries of a manifest read as `data`, sequence numbers and snapshot ids resolved.
    `metrics`: which column metrics of data files to decode (`Metrics`)."""
    return manifest_entries(manifest_columns(data, manifest, metrics), manifest, specs, schema)


Metrics = bool | frozenset[int]
"""Which column metrics (sizes, counts, bounds) of data files a reader decodes: all (True),
none (False: a plan that prunes nothing needs none, and they are most of an entry's decoding
and memory), or the counts and bounds of some field ids (a plan pruning by a filter on those
columns: what the metrics evaluators read). A
position delete file keeps only the bound that names its data file, and only when it has no
`referenced_data_file` (the planner's one use of its bounds), unless `metrics` is True."""


@dataclass(frozen=True)
class ManifestColumns:
    """A manifest's entries as Arrow columns (mor/io/avro_columns.py), not yet entries:
    decoding a large manifest this far holds no GIL, so manifests get here in parallel, and a
    cache of them is bounded by their exact size."""

    columns: dict[str, Any]  # field path -> pyarrow array
    count: int
    size: int  # bytes read
    metrics: Metrics

    @property
    def nbytes(self) -> int:
        # The buffers held (a column taken from a wider one keeps all of it alive), not the
        # bytes its values span: a cache's weight, and a tenth of `nbytes`'s cost to compute.
        return sum(c.get_total_buffer_size() for c in self.columns.values())


def manifest_columns(data: bytes, manifest: ManifestFile, metrics: Metrics = True) -> ManifestColumns:
    deletes = manifest.content == ManifestContent.DELETES
    keep_keys: dict[str, frozenset[int]] = {}
    if metrics is True:
        paths = _ENTRY_PATHS + _METRIC_PATHS
    elif deletes:
        paths = _ENTRY_PATHS + BOUND_PATHS
        keep_keys = dict.fromkeys(BOUND_PATHS, _DELETE_PATH_KEY)
    elif metrics:
        paths = _ENTRY_PATHS + _PRUNING_PATHS
        keep_keys = dict.fromkeys(_PRUNING_PATHS, metrics)
    else:
        paths = _ENTRY_PATHS
    try:
        columns, count = read_avro_columns(data, paths, keep_keys)
    except Exception as e:  # fastavro and polars fail on bad bytes in many ways
        raise unreadable("manifest", manifest.manifest_path, e) from e
    referenced = columns.get("data_file.referenced_data_file")
    if deletes and metrics is not True and referenced is not None and referenced.null_count == 0:
        columns = {p: c for p, c in columns.items() if p not in BOUND_PATHS}  # every file named: no bound needed (`Metrics`)
    return ManifestColumns(columns, count, len(data), metrics)


def manifest_entries(
    decoded: ManifestColumns, manifest: ManifestFile, specs: dict[int, PartitionSpec], schema: Schema
) -> list[ManifestEntry]:
    """The entries of a manifest decoded into columns, sequence numbers and snapshot ids resolved."""
    return [e for chunk in iter_manifest_entries(decoded, manifest, specs, schema) for e in chunk]


def live_keys(decoded: ManifestColumns) -> list[tuple[str, int | None]]:
    """`ContentFile.key` of each live entry, from the columns alone."""
    return [key for chunk in iter_live_keys(decoded) for key in chunk]


def iter_live_keys(decoded: ManifestColumns, chunk: int = 8192) -> Iterator[list[tuple[str, int | None]]]:
    """`live_keys`, a chunk of rows at a time."""
    deleted = ManifestEntryStatus.DELETED.value
    offsets = decoded.columns.get("data_file.content_offset")
    for start in range(0, decoded.count, chunk):
        statuses = decoded.columns["status"].slice(start, chunk).to_pylist()
        paths = decoded.columns["data_file.file_path"].slice(start, chunk).to_pylist()
        some = offsets.slice(start, chunk).to_pylist() if offsets is not None else [None] * len(paths)
        yield [(p, o) for s, p, o in zip(statuses, paths, some) if s != deleted]


def take_entries(decoded: ManifestColumns, rows: list[int]) -> ManifestColumns:
    """The columns of some rows of a manifest of delete files (a data manifest's rows inherit
    first row ids from the rows before them: never taken apart)."""
    return ManifestColumns(take_rows(decoded.columns, rows), len(rows), decoded.size, decoded.metrics)


def iter_manifest_entries(
    decoded: ManifestColumns, manifest: ManifestFile, specs: dict[int, PartitionSpec], schema: Schema, chunk: int = 8192
) -> Iterator[list[ManifestEntry]]:
    """`manifest_entries`, a chunk of rows at a time: only one chunk's Python values exist at
    once besides the entries kept."""
    for rows in _decoded_rows(decoded, manifest, specs, schema, chunk):
        yield [manifest_entry(*row) for row in rows]


def iter_live_files(
    decoded: ManifestColumns,
    manifest: ManifestFile,
    specs: dict[int, PartitionSpec],
    schema: Schema,
    chunk: int = 8192,
    rows: Sequence[int] | None = None,
) -> Iterator[list[ContentFile]]:
    """The files of the live entries, a chunk of rows at a time (what a plan reads). `rows`:
    only the entries at these (ascending) rows become files; their first row ids are the ones
    they inherit among every row."""
    deleted = ManifestEntryStatus.DELETED
    if rows is not None:
        decoded = _rows_taken(decoded, manifest, rows)
    for decoded_rows in _decoded_rows(decoded, manifest, specs, schema, chunk):
        yield [row[4] for row in decoded_rows if row[0] is not deleted]


def live_rows(decoded: ManifestColumns, among: list[bool] | None = None) -> list[int]:
    """The rows of the live entries (`among`: of those where it is True)."""
    deleted = ManifestEntryStatus.DELETED.value
    statuses = decoded.columns["status"].to_pylist()
    if among is None:
        return [i for i, s in enumerate(statuses) if s != deleted]
    return [i for i, (s, keep) in enumerate(zip(statuses, among, strict=True)) if keep and s != deleted]


def _rows_taken(decoded: ManifestColumns, manifest: ManifestFile, rows: Sequence[int]) -> ManifestColumns:
    """Some rows of a manifest, their first row ids inherited among every row first."""
    decoded = _with_inherited_row_ids(decoded, manifest)
    return ManifestColumns(take_rows(decoded.columns, list(rows)), len(rows), decoded.size, decoded.metrics)


def _with_inherited_row_ids(decoded: ManifestColumns, manifest: ManifestFile) -> ManifestColumns:
    """A data manifest's columns with each data file's first row id as inherited (v3): a live
    file without one takes the next ids of its manifest's range, in entry order; a manifest with
    no range (written before the upgrade to v3) gives its files none. Done once per manifest
    (idempotent: a file that has an id keeps it), so rows may then be taken apart."""
    if manifest.content != ManifestContent.DATA or "data_file.first_row_id" not in decoded.columns and manifest.first_row_id is None:
        return decoded
    columns = dict(decoded.columns)
    next_row_id = manifest.first_row_id
    if next_row_id is None:
        del columns["data_file.first_row_id"]  # no range: no file has an id
        return ManifestColumns(columns, decoded.count, decoded.size, decoded.metrics)
    deleted = ManifestEntryStatus.DELETED.value
    column = columns.get("data_file.first_row_id")
    ids = column.to_pylist() if column is not None else [None] * decoded.count
    statuses = columns["status"].to_pylist()
    counts = columns["data_file.record_count"].to_pylist()
    for i, (first, status, count) in enumerate(zip(ids, statuses, counts)):
        if first is None and status != deleted:
            ids[i] = next_row_id
            next_row_id += count
    columns["data_file.first_row_id"] = arrow_array(ids, "long")
    return ManifestColumns(columns, decoded.count, decoded.size, decoded.metrics)


_Row = tuple[ManifestEntryStatus, int, int, int, ContentFile]  # a ManifestEntry's fields


def _decoded_rows(
    decoded: ManifestColumns, manifest: ManifestFile, specs: dict[int, PartitionSpec], schema: Schema, chunk: int
) -> Iterator[list[_Row]]:
    if manifest.sequence_number is None:
        raise CorruptMetadataError(f"manifest {manifest.manifest_path} has no sequence number")
    spec = specs.get(manifest.partition_spec_id)
    if spec is None:
        raise CorruptMetadataError(f"manifest {manifest.manifest_path} uses unknown spec {manifest.partition_spec_id}")
    decoder: _EntryDecoder | None = None
    decoded = _with_inherited_row_ids(decoded, manifest)
    for start in range(0, decoded.count, chunk):
        try:
            columns = {path: python_values(c.slice(start, chunk), path in _MAP_PATHS) for path, c in decoded.columns.items()}
            if decoder is None:
                partitions = columns.get("data_file.partition") or [None]
                names = avro_record_keys(spec.partition_type(schema), partitions[0])
                decoder = _EntryDecoder(manifest, names, decoded.metrics is not True)
            rows = decoder.rows(columns, min(chunk, decoded.count - start))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise CorruptMetadataError(f"manifest {manifest.manifest_path} holds an entry that is not a manifest entry: {e!r}") from e
        yield rows


_FILE_FIELDS = (
    "content", "file_path", "file_format", "partition", "record_count", "file_size_in_bytes", "key_metadata", "equality_ids",
    "sort_order_id", "referenced_data_file", "first_row_id", "content_offset", "content_size_in_bytes",
)  # fmt: skip
# Left out with metrics=False: column metrics, and split offsets (only `inspect` shows them).
_METRICS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds", "split_offsets")
_ENTRY_PATHS = ("status", "snapshot_id", "sequence_number", "file_sequence_number") + tuple(f"data_file.{f}" for f in _FILE_FIELDS)
_METRIC_PATHS = tuple(f"data_file.{f}" for f in _METRICS)
_MAP_PATHS = frozenset(_METRIC_PATHS[:-1])  # decoded as dicts
_PRUNING_PATHS = _METRIC_PATHS[1:-1]  # what metrics evaluators read: counts and bounds, not sizes
BOUND_PATHS = ("data_file.lower_bounds", "data_file.upper_bounds")
_DELETE_PATH_KEY = frozenset({DELETE_FILE_PATH_ID})
_FORMATS: dict[str, str] = {}  # "parquet" -> "PARQUET", one string for every entry


def read_avro_records(io_: FileIO, location: str, what: str) -> list[dict[str, Any]]:
    """Every record of an Avro file. CorruptMetadataError naming the file when it is missing
    or damaged: fastavro fails on bad bytes in many ways (ValueError, EOFError, zlib.error,
    IndexError, SystemError...), so anything it raises means the file is not readable Avro."""
    try:
        with io_.open_input(location) as f:
            return cast(list[dict[str, Any]], list(fastavro.reader(f)))  # a record schema's datums are dicts
    except MorError:
        raise
    except Exception as e:
        raise unreadable(what, location, e) from e


def _entry_to_avro(entry: EntryToWrite, partition_type: Any) -> dict[str, Any]:
    f = entry.file
    return {
        "status": int(entry.status),
        "snapshot_id": entry.snapshot_id,
        "sequence_number": entry.data_sequence_number,
        "file_sequence_number": entry.file_sequence_number,
        "data_file": {
            "content": int(f.content),
            "file_path": f.file_path,
            "file_format": f.file_format,
            "partition": to_avro_record(f.partition, partition_type),
            "record_count": f.record_count,
            "file_size_in_bytes": f.file_size_in_bytes,
            "column_sizes": _map_to_avro(f.column_sizes if f.column_sizes is not None else {}),
            "value_counts": _map_to_avro(f.value_counts),
            "null_value_counts": _map_to_avro(f.null_value_counts),
            "nan_value_counts": _map_to_avro(f.nan_value_counts),
            "lower_bounds": _map_to_avro(f.lower_bounds),
            "upper_bounds": _map_to_avro(f.upper_bounds),
            "key_metadata": f.key_metadata,
            "split_offsets": list(f.split_offsets) if f.split_offsets is not None else None,
            "equality_ids": list(f.equality_ids) if f.equality_ids is not None else None,
            "sort_order_id": f.sort_order_id,
            "referenced_data_file": f.referenced_data_file,
            # v3 (a v2 manifest's schema has no such fields, and the writer skips them)
            "first_row_id": f.first_row_id,
            "content_offset": f.content_offset,
            "content_size_in_bytes": f.content_size_in_bytes,
        },
    }


_STATUSES = {s.value: s for s in ManifestEntryStatus}
_CONTENTS = {c.value: c for c in FileContent}


class _EntryDecoder:
    """Turns the columns of one manifest (mor/io/avro_columns.py) into entries. Planning
    decodes every entry of every manifest it reads, so this avoids per-entry overhead: enum
    lookups by index, and content files built from every field's value in order
    (`content_file_from_values`)."""

    def __init__(self, manifest: ManifestFile, partition_names: tuple[str, ...], lean: bool = False):
        self.manifest = manifest
        # A lean read of position deletes: bounds only where no referenced_data_file names the data file.
        self.bounds_only_unreferenced = lean and manifest.content == ManifestContent.DELETES
        self.names = partition_names
        self.data_manifest = manifest.content == ManifestContent.DATA

    def rows(self, columns: dict[str, list[Any]], count: int) -> list[_Row]:
        absent = [None] * count
        v1 = "sequence_number" not in columns  # no sequence numbers at all: every file is at its manifest's (0)
        column = [columns.get(p, absent) for p in _ENTRY_PATHS]
        metrics = [columns.get(f"data_file.{m}", absent) for m in _METRICS[:-1]]
        if self.bounds_only_unreferenced and "data_file.referenced_data_file" in columns:
            referenced = columns["data_file.referenced_data_file"]
            for i in (4, 5):  # lower_bounds, upper_bounds
                metrics[i] = [None if r is not None else b for r, b in zip(referenced, metrics[i])]
        metrics.append(columns.get("data_file.split_offsets", absent))
        return [self.row(v1, *values) for values in zip(*column, *metrics)]

    def row(
        self, v1: bool, status_value: int, snapshot_id: int | None, data_seq: int | None, file_seq: int | None,
        content_value: int | None, file_path: str, file_format: str, partition: dict[str, Any] | None, record_count: int,
        file_size: int, key_metadata: bytes | None, equality_ids: list[int] | None,
        sort_order_id: int | None, referenced_data_file: str | None, first_row_id: int | None, content_offset: int | None,
        content_size: int | None, column_sizes: dict[int, int] | None, value_counts: dict[int, int] | None,
        null_value_counts: dict[int, int] | None, nan_value_counts: dict[int, int] | None,
        lower_bounds: dict[int, bytes] | None, upper_bounds: dict[int, bytes] | None, split_offsets: list[int] | None,
    ) -> _Row:  # fmt: skip
        manifest = self.manifest
        status = _STATUSES[status_value]
        if snapshot_id is None:  # inherited in every status, as Iceberg Java does (DuckDB writes DELETED entries so)
            snapshot_id = manifest.added_snapshot_id
        if v1:
            data_seq = file_seq = manifest.sequence_number
        if status is ManifestEntryStatus.ADDED:
            if data_seq is None:
                data_seq = manifest.sequence_number
            if file_seq is None:
                file_seq = manifest.sequence_number
        if snapshot_id is None or data_seq is None or file_seq is None:
            raise CorruptMetadataError(f"{manifest.manifest_path}: a non-added entry lacks its snapshot id or sequence numbers")
        content = _CONTENTS[content_value or 0]
        if (content is FileContent.DATA) != self.data_manifest:
            raise CorruptMetadataError(f"{manifest.manifest_path}: {content.name} entry in a {manifest.content.name} manifest")
        partition = partition or {}
        if content is not FileContent.DATA:
            first_row_id = None  # data files' ids are inherited in the columns (`_with_inherited_row_ids`)
        file = content_file_from_values(
            content,
            (
                content,
                file_path,
                _FORMATS.get(file_format) or _FORMATS.setdefault(file_format, file_format.upper()),
                manifest.partition_spec_id,
                tuple([to_internal(partition.get(name)) for name in self.names]),
                record_count,
                file_size,
                column_sizes,
                value_counts,
                null_value_counts,
                nan_value_counts,
                lower_bounds,
                upper_bounds,
                key_metadata,
                tuple(split_offsets) if split_offsets is not None else None,
                tuple(equality_ids) if equality_ids is not None else None,
                sort_order_id,
                referenced_data_file,
                first_row_id,
                content_offset,
                content_size,
                data_seq,
                file_seq,
            ),  # in CONTENT_FILE_FIELDS order
        )
        return status, snapshot_id, data_seq, file_seq, file


def _map_to_avro(values: dict[int, Any] | None) -> list[dict[str, Any]] | None:
    if values is None:
        return None
    return [{"key": k, "value": v} for k, v in sorted(values.items())]


def _partition_summaries(entries: list[EntryToWrite], spec: PartitionSpec, schema: Schema) -> tuple[PartitionFieldSummary, ...]:
    partition_type = spec.partition_type(schema)
    summaries = []
    for i, pfield in enumerate(partition_type.fields):
        values = [e.file.partition[i] for e in entries]
        present = [v for v in values if v is not None]
        nan = any(isinstance(v, float) and v != v for v in present)
        ordered = [v for v in present if not (isinstance(v, float) and v != v)]
        summaries.append(
            PartitionFieldSummary(
                contains_null=len(present) < len(values),
                contains_nan=nan,
                lower_bound=to_bytes(pfield.field_type, min(ordered)) if ordered else None,
                upper_bound=to_bytes(pfield.field_type, max(ordered)) if ordered else None,
            )
        )
    return tuple(summaries)
