"""`create_table(name, data)` through a REST catalog, whose server creates tables itself: the
table is created, the rows appended, and the table dropped again when the rows do not fit."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest
from servers.inprocess_rest import RestServer

from mor.errors import SchemaMismatchError

pd = pytest.importorskip("pandas")


def test_a_rest_table_made_from_a_dataframe_holds_its_rows(rest_server: RestServer) -> None:
    catalog = rest_server.client()
    table = catalog.create_table("db.t", pd.DataFrame({"id": [1, 2], "amount": [Decimal("1.50"), Decimal("2.25")]}))
    assert table.arrow_schema().field("amount").type == pa.decimal128(38, 2)
    assert sorted(catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2]


def test_rows_that_do_not_fit_leave_no_rest_table(rest_server: RestServer) -> None:
    catalog = rest_server.client()
    schema = pa.schema([("amount", pa.decimal128(5, 2))])
    with pytest.raises(SchemaMismatchError, match="value 123456.00"):
        catalog.create_table("db.t", schema=schema, data=pa.table({"amount": [Decimal("123456.00")]}))
    assert not catalog.table_exists("db.t")
