"""Scan results: the same rows however they are asked for."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import In
from unit_helpers import assert_rows_are, local, make_rows

import mor

MakeTable = Callable[..., mor.Table]


@pytest.fixture
def table(make_table: MakeTable) -> mor.Table:
    t = make_table(range(0, 300), range(300, 500), properties={"write.parquet.row-group-limit": "100"})
    t.delete("id < 10 or id in (150, 250, 499)")
    return t


LIVE = [i for i in range(500) if not (i < 10 or i in (150, 250, 499))]


def test_to_batches_and_to_arrow_agree(table: mor.Table) -> None:
    batches = list(table.scan(filter="id >= 100").to_batches())
    assert_rows_are(pa.Table.from_batches(batches), [i for i in LIVE if i >= 100])
    assert_rows_are(table.scan(filter="id >= 100").to_arrow(), [i for i in LIVE if i >= 100])


def test_count(table: mor.Table) -> None:
    assert table.scan().count() == len(LIVE)
    assert table.scan(filter="id >= 100", columns=["name"]).count() == len([i for i in LIVE if i >= 100])


def test_projection_keeps_the_table_types(table: mor.Table) -> None:
    got = table.scan(columns=["value", "id"]).to_arrow()
    assert set(got.column_names) == {"id", "value"}
    assert got.schema.field("id").type == pa.int64()
    assert not got.schema.field("id").nullable
    assert got.schema.field("value").type == pa.float64()
    assert got.num_rows == len(LIVE)


def test_a_projection_of_no_columns_keeps_the_row_count(table: mor.Table) -> None:
    got = table.scan(columns=[]).to_arrow()
    assert got.column_names == []
    assert got.num_rows == len(LIVE)


def test_case_insensitive_scan(table: mor.Table) -> None:
    got = table.scan(filter="ID < 20", columns=["NAME"], case_sensitive=False).to_arrow()
    assert sorted(got.column("name").to_pylist()) == sorted(f"n{i}" for i in range(10, 20))


def test_one_file_is_read_in_parts_with_its_deletes(catalog: mor.Catalog) -> None:
    """Fewer files than cores: to_arrow reads a file's row groups in parallel; rows, order and
    deletes (positions across row groups, equality keys) are those of the streamed read."""
    table = catalog.create_table("db.parts", schema=make_rows([]).schema, properties={"write.parquet.row-group-limit": "100"})
    table.append(make_rows(range(1000)))
    table.delete(In("id", [0, 99, 100, 101, 550, 999]))
    table.delete_rows(pa.table({"id": pa.array([300, 301], pa.int64())}))
    (task,) = table.scan().plan_files()
    assert pq.ParquetFile(local(task.data_file.file_path)).metadata.num_row_groups == 10
    streamed = pa.Table.from_batches(list(table.scan().to_batches()))
    whole = table.scan().to_arrow()
    assert whole.to_pylist() == streamed.to_pylist()
    assert sorted(whole["id"].to_pylist()) == [i for i in range(1000) if i not in (0, 99, 100, 101, 550, 999, 300, 301)]
    assert table.scan(filter="id >= 500").count() == 498


def test_a_plan_of_more_files_than_a_group_is_read_as_it_is_planned(make_table: MakeTable, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads consume the plan as a stream, a group of tasks at a time: the same rows, limits
    and counts across groups; progress knows no total until planning ends."""
    from mor.api import scan as scan_module
    from mor.progress import ProgressEvent

    monkeypatch.setattr(scan_module, "STREAM_GROUP", 2)
    table = make_table(*[range(i * 10, i * 10 + 10) for i in range(5)])
    table.delete("id % 10 = 3")
    live = [i for i in range(50) if i % 10 != 3]
    planned = table.scan().plan_tasks()
    assert not isinstance(planned, list) and len(list(planned)) == 5
    events: list[ProgressEvent] = []
    assert_rows_are(pa.Table.from_batches(list(table.scan(progress=events.append).to_batches())), live)
    assert events[-1].done == 5 and events[-1].total is None
    assert table.scan().count() == len(live) and table.scan(filter="id >= 25").count() == len([i for i in live if i >= 25])
    for limit in (0, 7, 9, 20, 45, 100):
        assert sum(b.num_rows for b in table.scan(limit=limit).to_batches()) == min(limit, len(live))
        assert table.scan(limit=limit).count() == min(limit, len(live))
