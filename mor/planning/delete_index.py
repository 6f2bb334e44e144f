"""When a delete file applies to a data file: the spec's rules, and nothing else.

From the Iceberg spec, "Scan Planning":
  "A position delete file must be applied to a data file when all of the following are true:
   - The data file's data sequence number is less than or equal to the delete file's data
     sequence number
   - The data file's partition (both spec and partition values) is equal to the delete file's
     partition"
  "An equality delete file must be applied to a data file when all of the following are true:
   - The data file's data sequence number is strictly less than the delete's data sequence number
   - The data file's partition (both spec id and partition values) is equal to the delete
     file's partition or the delete file's partition spec is unpartitioned"
  "A deletion vector must be applied to a data file when all of the following are true:
   - The data file's file_path is equal to the deletion vector's referenced_data_file
   - The data file's data sequence number is less than or equal to the deletion vector's data
     sequence number
   - The data file's partition (both spec and partition values) is equal to the deletion
     vector's partition"
  and a position delete file applies only if "there is no deletion vector that must be applied
  to the data file" (a vector holds every earlier position delete of its file).
A position delete that names its data file (`referenced_data_file`, or `file_path` bounds)
can only apply to that file. `applies_to` states the rules for one pair; `DeleteFileIndex`
answers the same question fast for many data files and is tested against `applies_to`.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from mor.errors import CorruptMetadataError
from mor.format.content_file import DataFile, DeleteFile, referenced_path
from mor.format.spec import DELETE_FILE_PATH_ID, FileContent

if TYPE_CHECKING:
    from mor.planning.referenced_deletes import ReferencedDeletes


def applies_to(delete: DeleteFile, data: DataFile, unpartitioned_spec_ids: frozenset[int]) -> bool:
    assert data.data_sequence_number is not None and delete.data_sequence_number is not None
    if delete.content == FileContent.POSITION_DELETES:
        return (
            data.data_sequence_number <= delete.data_sequence_number
            and _same_partition(delete, data)
            and _may_reference(delete, data.file_path)
        )
    if delete.content == FileContent.EQUALITY_DELETES:
        return data.data_sequence_number < delete.data_sequence_number and (
            delete.spec_id in unpartitioned_spec_ids or _same_partition(delete, data)
        )
    raise ValueError(f"{delete.file_path} is not a delete file")


def _same_partition(delete: DeleteFile, data: DataFile) -> bool:
    return delete.spec_id == data.spec_id and partition_key(delete.partition) == partition_key(data.partition)


_NAN = object()  # NaN != NaN, yet two files in the NaN partition share a partition


def partition_key(values: tuple) -> tuple:
    """Partition values as a key that compares (and hashes) equal for equal partitions."""
    for v in values:
        if v != v:  # NaN is the one value not equal to itself
            return tuple(_NAN if isinstance(v, float) and math.isnan(v) else v for v in values)
    return values


def _may_reference(delete: DeleteFile, data_path: str) -> bool:
    if delete.referenced_data_file is not None:
        return delete.referenced_data_file == data_path
    lower = (delete.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    upper = (delete.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    path = data_path.encode("utf-8")
    return (lower is None or lower <= path) and (upper is None or path <= upper)


class _BySequence:
    """Delete files ordered by data sequence number, for 'every delete at seq >= s'."""

    def __init__(self, files: Iterable[DeleteFile]):
        self.files = sorted(files, key=lambda f: f.data_sequence_number or 0)
        self.seqs = [f.data_sequence_number or 0 for f in self.files]

    def at_or_after(self, seq: int) -> list[DeleteFile]:
        return self.files[bisect_left(self.seqs, seq) :]


class DeleteFileIndex:
    """`referenced`: more position delete files that name their data file, kept as columns
    (mor/planning/referenced_deletes.py) and made into files a chunk of data files at a time."""

    def __init__(
        self, delete_files: Iterable[DeleteFile], unpartitioned_spec_ids: frozenset[int], referenced: ReferencedDeletes | None = None
    ):
        self.unpartitioned_spec_ids = unpartitioned_spec_ids
        by_path: dict[str, list[DeleteFile]] = defaultdict(list)
        by_partition: dict[tuple[int, tuple], list[DeleteFile]] = defaultdict(list)
        global_eq: list[DeleteFile] = []
        for f in delete_files:
            if f.content == FileContent.POSITION_DELETES and (path := referenced_path(f)) is not None:
                by_path[path].append(f)
            elif f.content == FileContent.EQUALITY_DELETES and f.spec_id in unpartitioned_spec_ids:
                global_eq.append(f)
            else:
                by_partition[(f.spec_id, partition_key(f.partition))].append(f)
        self._by_path = {k: _BySequence(v) for k, v in by_path.items()}
        self._by_partition = {k: _BySequence(v) for k, v in by_partition.items()}
        self._global = _BySequence(global_eq)
        self._referenced = referenced if referenced else None

    def __bool__(self) -> bool:
        return bool(self._by_path or self._by_partition or self._global.files or self._referenced)

    def for_data_file(self, data: DataFile) -> tuple[DeleteFile, ...]:
        """The delete files that apply to `data`, ordered by (sequence number, path)."""
        return self.for_data_files([data])[0]

    def for_data_files(self, data_files: Sequence[DataFile]) -> list[tuple[DeleteFile, ...]]:
        """`for_data_file` of each; the referenced delete files they may need made at once."""
        referenced = self._referenced
        if referenced is None:
            return [self._for(data, ()) for data in data_files]
        ids = [referenced.candidates(data.file_path) for data in data_files]
        made = referenced.resolve({i for found in ids for i in found})
        return [self._for(data, [made[i] for i in found]) for data, found in zip(data_files, ids)]

    def _for(self, data: DataFile, more: Sequence[DeleteFile]) -> tuple[DeleteFile, ...]:
        seq = data.data_sequence_number
        assert seq is not None
        candidates: list[DeleteFile] = list(more)
        if self._by_path and (group := self._by_path.get(data.file_path)) is not None:
            candidates += group.at_or_after(seq)
        if self._by_partition and (group := self._by_partition.get((data.spec_id, partition_key(data.partition)))) is not None:
            candidates += group.at_or_after(seq)
        if self._global.files:
            candidates += self._global.at_or_after(seq + 1)
        if not candidates:
            return ()
        matched = [f for f in candidates if applies_to(f, data, self.unpartitioned_spec_ids)]
        if len(matched) > 1:
            matched = _vector_replaces_position_files(matched, data)
            matched.sort(key=_order)
        return tuple(matched)


def _vector_replaces_position_files(matched: list[DeleteFile], data: DataFile) -> list[DeleteFile]:
    vectors = [f for f in matched if f.is_deletion_vector]
    if not vectors:
        return matched
    if len(vectors) > 1:
        raise CorruptMetadataError(f"{len(vectors)} deletion vectors apply to data file {data.file_path}; the spec allows at most one")
    return [f for f in matched if f.content != FileContent.POSITION_DELETES or f.is_deletion_vector]


def _order(f: DeleteFile) -> tuple[int, str]:
    return (f.data_sequence_number or 0, f.file_path)
