"""The value conformance table (tests/value_cases.py) stored by mor's UPDATE: the column holds
what Spark's store assignment gives (judged in tests/spark/test_spark_judges_values.py), or the
update is refused and the table left as it was."""

from __future__ import annotations

import pyarrow as pa
import pytest
from value_cases import CASES, ROWS, SCHEMA, TYPES, Case

import mor


def _table(catalog: mor.Catalog, case: Case) -> mor.Table:
    schema = SCHEMA.append(pa.field("v", TYPES[case.target][0]))
    table = catalog.create_table("db.values", schema=schema)
    table.append(ROWS.append_column("v", pa.nulls(ROWS.num_rows, TYPES[case.target][0])))
    return table


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.target}: {c.text}")
def test_update_stores_what_spark_stores(case: Case, catalog: mor.Catalog) -> None:
    table = _table(catalog, case)
    before = table.current_snapshot()
    if case.expected is None:
        with pytest.raises(mor.MorError, match=case.error):
            table.update({"v": case.text}, where="true")
        assert table.refresh().current_snapshot() == before
        return
    table.update({"v": case.text}, where="true")
    assert table.refresh().scan().to_arrow().sort_by("id").column("v").to_pylist() == case.expected
