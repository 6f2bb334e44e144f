"""The interop scenarios' tables (tests/interop/test_readers_matrix.py: every DML verb, both
delete modes, position and equality deletes and deletion vectors, three partitionings, v2 and
v3), built for other engines' tests to read at every snapshot."""

from __future__ import annotations

import sys
from pathlib import Path

import mor

sys.path.insert(0, str(Path(__file__).resolve().parent / "interop"))
import test_readers_matrix as matrix
from test_pyiceberg_reads_ours import LAYOUTS


def scenario_tables(catalog: mor.Catalog, layouts: tuple[str, ...] | None = None) -> list[mor.Table]:
    """Every scenario on every layout (or those of `layouts`, by id), one table each (9 tables
    for all three layouts, 4 to 15 snapshots each)."""
    scenarios = [("dml", matrix.SCENARIO, {}), ("keys_off", matrix.KEYS_OFF_SCENARIO, matrix.NO_EQUALITY_DELETES),
                 ("v3", matrix.V3_SCENARIO, matrix.V3)]  # fmt: skip
    tables = []
    for layout in LAYOUTS:
        if layouts is not None and layout.id not in layouts:
            continue
        (partition_by,) = layout.values
        for name, steps, properties in scenarios:
            table, _ = matrix.build(catalog, f"db.{name}_{layout.id.replace('-', '_')}", partition_by, steps, **properties)
            tables.append(table)
    return tables
