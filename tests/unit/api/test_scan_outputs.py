"""Scans out to pandas, polars and DuckDB; `limit` reads only the files its rows need; `count()`
answers from the files' record counts when nothing needs the rows, and reads otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from unit_helpers import make_rows

import mor
from mor.io.fileio import FileIO

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

MakeTable = Callable[..., mor.Table]
FILES = 10
ROWS_PER_FILE = 100


class DataFileRecorder(FileIO):
    """Remembers the data files opened for reading (a fake file system, not a mock); with
    `refuse_data`, opening one fails, which proves an answer came from metadata alone."""

    def __init__(self, data_paths: set[str], refuse_data: bool = False) -> None:
        super().__init__()
        self.data_paths = data_paths
        self.refuse_data = refuse_data
        self.opened: list[str] = []

    def open_input(self, location: str, whole: bool = True) -> pa.NativeFile:
        if location in self.data_paths:
            if self.refuse_data:
                raise AssertionError(f"opened the data file {location}")
            self.opened.append(location)
        return super().open_input(location, whole)


@pytest.fixture
def table(make_table: MakeTable) -> mor.Table:
    """Ten files of a hundred rows each (ids 0..999, in file order)."""
    return make_table(*[range(i * ROWS_PER_FILE, (i + 1) * ROWS_PER_FILE) for i in range(FILES)])


def _data_paths(table: mor.Table) -> set[str]:
    return {t.data_file.file_path for t in table.scan().plan_files()}


def _record_reads(table: mor.Table, refuse_data: bool = False) -> DataFileRecorder:
    recorder = DataFileRecorder(_data_paths(table), refuse_data)
    table.io = recorder
    return recorder


# -- pandas, polars, DuckDB -----------------------------------------------------------------------


def test_to_pandas_gives_the_rows_of_to_arrow(table: mor.Table) -> None:
    scan = table.scan(filter="id < 250", columns=["id", "name", "value"])
    pd.testing.assert_frame_equal(scan.to_pandas(), scan.to_arrow().to_pandas())
    assert len(scan.to_pandas()) == 250


def test_to_pandas_passes_options_to_pyarrow(table: mor.Table) -> None:
    frame = table.scan(columns=["id"]).to_pandas(types_mapper=pd.ArrowDtype)
    assert str(frame["id"].dtype) == "int64[pyarrow]"


def test_to_polars_gives_the_rows_of_to_arrow(table: mor.Table) -> None:
    scan = table.scan(filter="category = 'a'")
    frame = scan.to_polars()
    assert isinstance(frame, pl.DataFrame)
    assert frame.columns == scan.to_arrow().column_names
    assert frame.to_dicts() == scan.to_arrow().to_pylist()


def test_to_duckdb_is_a_relation_over_the_rows(table: mor.Table) -> None:
    table.delete("id < 100")
    connection = duckdb.connect()
    relation = table.scan(columns=["id", "category"]).to_duckdb(connection, "events")
    assert sorted(relation.fetchall()) == sorted(
        (r["id"], r["category"]) for r in table.scan(columns=["id", "category"]).to_arrow().to_pylist()
    )
    assert connection.sql("select count(*), min(id) from events where category = 'a'").fetchall() == [(300, 120)]


def test_to_duckdb_names_the_view_after_the_table(table: mor.Table) -> None:
    connection = duckdb.connect()
    table.scan(limit=5).to_duckdb(connection)
    assert connection.sql("select count(*) from t").fetchall() == [(5,)]


# -- limit ----------------------------------------------------------------------------------------


def _ids_in_task_order(table: mor.Table, **scan_args: Any) -> list[int]:
    return table.scan(**scan_args).to_arrow().column("id").to_pylist()


@pytest.mark.parametrize("limit", [0, 1, 99, 100, 150, 1000, 5000])
def test_limit_gives_the_first_rows_and_reads_only_the_files_they_need(table: mor.Table, limit: int) -> None:
    everything = table.scan().to_arrow()
    recorder = _record_reads(table)
    got = table.scan(limit=limit).to_arrow()
    files_needed = -(-min(limit, FILES * ROWS_PER_FILE) // ROWS_PER_FILE)
    assert len(set(recorder.opened)) == files_needed
    assert got.column("id").to_pylist() == everything.column("id").to_pylist()[:limit]
    assert got.schema.equals(everything.schema)


def test_limit_reads_past_deleted_and_filtered_rows(table: mor.Table) -> None:
    """Every file keeps 40 rows after the delete and 39 match the filter, whatever the task
    order: 100 rows need three files."""
    table.delete("id in (" + ", ".join(str(i) for i in range(FILES * ROWS_PER_FILE) if i % ROWS_PER_FILE < 60) + ")")
    row_filter = "name not in (" + ", ".join(f"'n{f * ROWS_PER_FILE + 60}'" for f in range(FILES)) + ")"
    everything = _ids_in_task_order(table, filter=row_filter)
    recorder = _record_reads(table)
    got = table.scan(filter=row_filter).limit(100).to_arrow()
    assert len(set(recorder.opened)) == 3
    assert got.column("id").to_pylist() == everything[:100]


def test_limit_streams_batches_and_counts(table: mor.Table) -> None:
    scan = table.scan(columns=["id"]).limit(250)
    assert sum(b.num_rows for b in scan.to_batches()) == 250
    assert scan.count() == 250
    assert table.scan().limit(250).count() == 250  # from metadata, capped
    assert len(scan.to_pandas()) == 250


@pytest.mark.parametrize("limit", [-1, 1.5, "10", True])
def test_a_limit_that_is_no_row_count_is_refused(table: mor.Table, limit: Any) -> None:
    with pytest.raises(mor.InvalidArgumentError, match="limit"):
        table.scan(limit=limit)
    with pytest.raises(mor.InvalidArgumentError, match="limit"):
        table.scan().limit(limit)


def test_limit_leaves_the_scan_it_came_from_unlimited(table: mor.Table) -> None:
    scan = table.scan()
    assert scan.limit(3).to_arrow().num_rows == 3
    assert scan.to_arrow().num_rows == FILES * ROWS_PER_FILE


# -- count ----------------------------------------------------------------------------------------


def test_count_without_deletes_or_filter_opens_no_data_file(table: mor.Table) -> None:
    _record_reads(table, refuse_data=True)
    assert table.scan().count() == FILES * ROWS_PER_FILE
    assert table.scan(columns=["name"]).count() == FILES * ROWS_PER_FILE


def test_count_of_an_old_snapshot_comes_from_its_files(table: mor.Table) -> None:
    first = table.snapshots()[0].snapshot_id
    table.delete("id < 10")
    _record_reads(table, refuse_data=True)
    assert table.scan(snapshot_id=first).count() == ROWS_PER_FILE


@pytest.mark.parametrize(
    ("change", "scan_args", "expected"),
    [
        pytest.param(lambda t: t.delete("id < 150"), {}, 850, id="position-deletes"),
        pytest.param(lambda t: t.delete_rows(pa.table({"id": [1, 2, 3, 999]})), {}, 996, id="equality-deletes"),
        pytest.param(lambda t: t.delete("id < 150", mode="copy-on-write"), {}, 850, id="rewritten-files"),
        pytest.param(lambda t: None, {"filter": "id >= 990 or name = 'n5'"}, 11, id="filter"),
        pytest.param(lambda t: t.delete("id < 150"), {"filter": "id < 200"}, 50, id="filter-and-deletes"),
    ],
)
def test_count_is_right_with_deletes_and_filters(
    table: mor.Table, change: Callable[[mor.Table], Any], scan_args: dict[str, Any], expected: int
) -> None:
    change(table)
    assert table.scan(**scan_args).count() == expected == table.scan(**scan_args).to_arrow().num_rows


def test_count_from_metadata_matches_a_real_count_after_many_changes(table: mor.Table) -> None:
    table.append(make_rows(range(1000, 1010)))
    table.delete("id < 100", mode="copy-on-write")  # whole files go: no delete file is left
    table.compact(min_input_files=1)
    assert all(not t.delete_files for t in table.scan().plan_files())
    _record_reads(table, refuse_data=True)
    assert table.scan().count() == 910


def test_a_filter_that_selects_whole_files_counts_them_from_metadata(table: mor.Table) -> None:
    """Files 0-9 hold ids [100i, 100i+100): `id >= 300 and id < 700` matches files 3-6 whole
    (read none) and `id >= 250` half of file 2 (read that one only)."""
    recorder = _record_reads(table)
    assert table.scan(filter="id >= 300 and id < 700").count() == 400
    assert table.scan(filter="id >= 300 and id < 700").limit(150).count() == 150
    assert recorder.opened == []
    assert table.scan(filter="id >= 250").count() == 750
    assert len(set(recorder.opened)) == 1
    assert table.scan(filter="id >= 250").to_arrow().num_rows == 750


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        pytest.param("value != 7.5", 999 + 2, id="not-equal-with-a-nan"),  # NaN != 7.5 is true in SQL
        pytest.param("name != 'n5'", 999 + 1, id="not-equal-with-a-null"),  # NULL != 'n5' is not
        pytest.param("id % 2 = 0", 500 + 1, id="residual"),  # metrics cannot judge arithmetic
    ],
)
def test_a_filtered_count_reads_what_metrics_cannot_prove(table: mor.Table, filter: str, expected: int) -> None:
    """The two-valued metrics test must not count nulls, NaNs or residual predicates whole.
    Ids 2000 and 2001 are added, with a null name and a NaN value in one of them."""
    rows = make_rows(range(2000, 2002))
    rows = rows.set_column(2, "name", pa.array([None, "x"])).set_column(3, "value", pa.array([float("nan"), 1.0]))
    table.append(rows)
    assert table.scan(filter=filter).count() == expected
    assert table.scan(filter=filter).count() == table.scan(filter=filter).to_arrow().num_rows
