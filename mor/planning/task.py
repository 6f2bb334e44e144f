"""FileScanTask: the one contract between the planner and the readers."""

from __future__ import annotations

from dataclasses import dataclass

from pyiceberg.expressions import BooleanExpression

from mor.format.content_file import DataFile, DeleteFile
from mor.format.spec import FileContent


@dataclass(frozen=True)
class FileScanTask:
    """A data file, exactly the delete files that apply to it, and the row filter still to
    apply to its rows. Frozen and picklable: Spark ships tasks to executors."""

    data_file: DataFile
    delete_files: tuple[DeleteFile, ...]
    residual: BooleanExpression
    # The table's schema.name-mapping.default (JSON): field ids for files written without them.
    name_mapping: str | None = None

    @property
    def position_deletes(self) -> tuple[DeleteFile, ...]:
        return tuple(f for f in self.delete_files if f.content == FileContent.POSITION_DELETES)

    @property
    def equality_deletes(self) -> tuple[DeleteFile, ...]:
        return tuple(f for f in self.delete_files if f.content == FileContent.EQUALITY_DELETES)
