"""Content files: data files and delete files as described by manifest entries.

Values are frozen and picklable (Spark ships them to executors). Partition values are kept in
Iceberg's internal representation (dates as day ints, timestamps as microsecond ints) in
partition-spec field order, so planning compares them without conversions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from mor.format.spec import PUFFIN, FileContent, ManifestEntryStatus

PartitionValues = tuple[Any, ...]


@dataclass(frozen=True)
class ContentFile:
    content: FileContent
    file_path: str
    file_format: str
    spec_id: int
    partition: PartitionValues
    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    referenced_data_file: str | None = None
    # v3. A data file's first row id, resolved on read by inheritance (None before the table's
    # upgrade, and for files being written). A deletion vector's blob inside its Puffin file.
    first_row_id: int | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    # Resolved on read from the manifest entry (sequence-number inheritance applied); None only
    # for files that are being written and have no sequence number yet.
    data_sequence_number: int | None = field(default=None, compare=False)
    file_sequence_number: int | None = field(default=None, compare=False)

    def __hash__(self) -> int:
        return hash(self.file_path)

    def __getattr__(self, name: str) -> Any:
        """Called only for a missing attribute: a file decoded from a manifest keeps its column
        metrics as Avro decoded them (lists of key/value records) until one is asked for. A plan
        reads no metric of most files, and building the dicts cost a tenth of a cold plan."""
        pending = self.__dict__.get(_PENDING)
        if pending is None or name not in _METRIC_INDEX:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = metric_from_avro(pending[_METRIC_INDEX[name]])
        self.__dict__[name] = value
        return value

    def __getstate__(self) -> dict[str, Any]:
        """Every field, metrics as dicts: what is pickled (Spark ships files to executors) and copied."""
        if _PENDING not in self.__dict__:
            return self.__dict__
        state = {k: v for k, v in self.__dict__.items() if k != _PENDING}
        for name in METRIC_FIELDS:
            state[name] = getattr(self, name)
        return state

    @property
    def is_delete(self) -> bool:
        return self.content != FileContent.DATA

    @property
    def is_deletion_vector(self) -> bool:
        return self.file_format == PUFFIN

    @property
    def key(self) -> tuple[str, int | None]:
        """What names this file's manifest entry: its path, and for a deletion vector the
        blob's offset too (one Puffin file may hold the vectors of several data files)."""
        return (self.file_path, self.content_offset)


METRIC_FIELDS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds")
_METRIC_INDEX = {name: i for i, name in enumerate(METRIC_FIELDS)}
_PENDING = "_avro_metrics"  # the metrics not yet asked for, in METRIC_FIELDS order
for _name in METRIC_FIELDS:
    delattr(ContentFile, _name)  # the dataclass default (None) would hide a pending metric from __getattr__


def metric_from_avro(items: list[dict[str, Any]] | None) -> dict[int, Any] | None:
    """An Iceberg int-keyed map as Avro holds it (a list of key/value records) -> a dict."""
    if items is None:
        return None
    return {item["key"]: item["value"] for item in items}


class DataFile(ContentFile):
    """A file of table rows (content 0)."""


class DeleteFile(ContentFile):
    """A position (content 1) or equality (content 2) delete file."""


def make_content_file(content: FileContent, **fields: Any) -> ContentFile:
    cls = DataFile if content == FileContent.DATA else DeleteFile
    return cls(content=FileContent(content), **fields)


CONTENT_FILE_FIELDS = frozenset(f.name for f in fields(ContentFile))


def content_file_from_fields(
    content: FileContent, values: dict[str, Any], avro_metrics: tuple[list[dict[str, Any]] | None, ...]
) -> ContentFile:
    """A content file from a dict holding every field (CONTENT_FILE_FIELDS) but the metrics,
    already of the right types, and the metrics as Avro decoded them (METRIC_FIELDS order,
    turned into dicts when asked for): what the frozen dataclass __init__ does, 8x faster
    (manifest reading builds one per entry). The caller hands `values` over and must not keep it."""
    file = object.__new__(DataFile if content is FileContent.DATA else DeleteFile)
    values[_PENDING] = avro_metrics
    file.__dict__.update(values)
    return file


@dataclass(frozen=True)
class ManifestEntry:
    """One row of a manifest, with sequence numbers and snapshot id always resolved."""

    status: ManifestEntryStatus
    snapshot_id: int
    data_sequence_number: int
    file_sequence_number: int
    file: ContentFile

    @property
    def is_live(self) -> bool:
        return self.status != ManifestEntryStatus.DELETED


def manifest_entry(
    status: ManifestEntryStatus, snapshot_id: int, data_sequence_number: int, file_sequence_number: int, file: ContentFile
) -> ManifestEntry:
    """ManifestEntry(...) without the frozen dataclass __init__'s cost."""
    entry = object.__new__(ManifestEntry)
    entry.__dict__.update(
        status=status,
        snapshot_id=snapshot_id,
        data_sequence_number=data_sequence_number,
        file_sequence_number=file_sequence_number,
        file=file,
    )
    return entry
