"""Reading row lineage (v3): the `_row_id` and `_last_updated_sequence_number` metadata columns.

A row carries them in its data file only when it was moved there from another file (UPDATE,
compaction); otherwise, or where the stored value is null, they are inherited on read:
`_row_id` = the file's first_row_id + the row's position, `_last_updated_sequence_number` = the
file's data sequence number. A file with no first_row_id (written before the table's upgrade to
v3) has neither: both read as null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mor.format.content_file import DataFile
from mor.format.spec import ROW_ID_FIELD_ID


def inherited(field_id: int, stored: pa.Array, data_file: DataFile, positions: np.ndarray) -> pa.Array:
    """The column's values for rows at `positions`: `stored` where it is not null, else the
    value inherited from the file."""
    if data_file.first_row_id is None:
        return pa.nulls(len(positions), pa.int64())
    if field_id == ROW_ID_FIELD_ID:
        fallback = pa.array(positions + data_file.first_row_id, pa.int64())
    else:
        fallback = pa.array(np.full(len(positions), data_file.data_sequence_number, dtype=np.int64))
    stored = stored.cast(pa.int64())
    if stored.null_count == len(stored):
        return fallback
    return pc.coalesce(stored, fallback) if stored.null_count else stored
