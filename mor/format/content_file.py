"""Content files: data files and delete files as described by manifest entries.

Values are frozen and picklable (Spark ships them to executors). Partition values are kept in
Iceberg's internal representation (dates as day ints, timestamps as microsecond ints) in
partition-spec field order, so planning compares them without conversions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, overload

from mor.format.spec import DELETE_FILE_PATH_ID, PUFFIN, FileContent, ManifestEntryStatus

PartitionValues = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
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


class DataFile(ContentFile):
    """A file of table rows (content 0)."""

    __slots__ = ()


class DeleteFile(ContentFile):
    """A position (content 1) or equality (content 2) delete file."""

    __slots__ = ()


@overload
def make_content_file(content: Literal[FileContent.DATA], **fields: Any) -> DataFile: ...
@overload
def make_content_file(content: FileContent, **fields: Any) -> ContentFile: ...


def make_content_file(content: FileContent, **fields: Any) -> ContentFile:
    cls = DataFile if content == FileContent.DATA else DeleteFile
    return cls(content=FileContent(content), **fields)


CONTENT_FILE_FIELDS = tuple(f.name for f in fields(ContentFile))


def content_file_from_values(content: FileContent, values: Sequence[Any]) -> ContentFile:
    """A content file from every field's value in declaration order (CONTENT_FILE_FIELDS),
    already of the right types: what the frozen dataclass __init__ does without its checks
    (manifest reading builds one per entry: a third of the time of the __init__). Slots, not a
    dict per file: a plan of a million files holds a million of them."""
    file = object.__new__(DataFile if content is FileContent.DATA else DeleteFile)
    for set_field, value in zip(_FIELD_SETTERS, values):
        set_field(file, value)
    return file


_FIELD_SETTERS = tuple(getattr(ContentFile, f.name).__set__ for f in fields(ContentFile))  # the slots' own setters
_set = object.__setattr__


@dataclass(frozen=True, slots=True)
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
    _set(entry, "status", status)
    _set(entry, "snapshot_id", snapshot_id)
    _set(entry, "data_sequence_number", data_sequence_number)
    _set(entry, "file_sequence_number", file_sequence_number)
    _set(entry, "file", file)
    return entry


def referenced_path(delete: DeleteFile) -> str | None:
    """The one data file a position delete file can touch, if it says so."""
    if delete.referenced_data_file is not None:
        return delete.referenced_data_file
    lower = (delete.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    upper = (delete.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    if lower is not None and lower == upper:
        return lower.decode("utf-8")
    return None
