"""DELETE by predicate: find the live matching rows' positions, then remove them.

Only the predicate's columns are read; files and partitions are skipped by metadata, and a
file whose metrics prove every row matches is dropped without being read. An overwrite is
such a delete that also adds the data files written for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from pyiceberg.expressions import BooleanExpression

from mor.api.row_changes import build_changes, find_matches, rows_validator
from mor.commit.snapshot_producer import Changes, Validator
from mor.format.content_file import DataFile
from mor.progress import Progress

if TYPE_CHECKING:
    from mor.api.table import Table


def delete_where(table: Table, row_filter: BooleanExpression, mode: str, progress: Progress) -> tuple[Changes, Validator] | None:
    """Write the files for a DELETE; None when no live row matches."""
    matches = find_matches(table, row_filter, progress)
    if not matches:
        return None
    changes, removals = build_changes(table, matches, None, mode, progress)
    return changes, rows_validator(table, "delete", row_filter, removals)


def overwrite_where(
    table: Table, row_filter: BooleanExpression, mode: str, added: Sequence[DataFile], progress: Progress
) -> tuple[Changes, Validator] | None:
    """Remove the rows matching `row_filter` and add the data files `added`, in one commit;
    None when no row matches and nothing is added."""
    matches = find_matches(table, row_filter, progress)
    if not matches and not added:
        return None
    changes, removals = build_changes(table, matches, None, mode, progress, added)
    return changes, rows_validator(table, "delete", row_filter, removals)
