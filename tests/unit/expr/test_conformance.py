"""The predicate conformance table (tests/predicate_cases.py) on every local evaluator, judged
by DuckDB: evaluation on Arrow rows, metrics pruning (one data file per row: a file is kept
whenever its row matches, and proven all-matching only when it does), and the whole scan."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from predicate_cases import CASES, ROWS, SCHEMA, Case

import mor
from mor.expr.arrow_rows import to_arrow_filter
from mor.expr.filters import FileFilter, bind_filter, parse_filter


def _ids(rows: pa.Table) -> tuple[int, ...]:
    return tuple(sorted(rows.column("id").to_pylist()))


@pytest.fixture(scope="module")
def one_file_per_row(tmp_path_factory: pytest.TempPathFactory) -> mor.Table:
    table = mor.load_catalog(tmp_path_factory.mktemp("conformance"), create=True).create_table("db.rows", schema=SCHEMA)
    for i in range(ROWS.num_rows):
        table.append(ROWS.slice(i, 1))
    return table


@pytest.fixture(scope="module")
def judge() -> duckdb.DuckDBPyConnection:
    """DuckDB holding the rows in a table of its own: a filter on a scan of the Arrow table is
    pushed into Arrow's kernels, where NaN > 1.0 is false."""
    con = duckdb.connect()
    con.register("arrow_rows", ROWS)
    con.execute("create table rows as select * from arrow_rows")
    return con


@pytest.mark.parametrize("case", [c for c in CASES if c.duckdb_agrees], ids=lambda c: c.text)
def test_duckdb_agrees_with_the_table(case: Case, judge: duckdb.DuckDBPyConnection) -> None:
    found = judge.execute(f"select id from rows where {case.duckdb}").fetchall()
    assert tuple(sorted(r[0] for r in found)) == case.expected


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_arrow_row_evaluation(case: Case, one_file_per_row: mor.Table) -> None:
    schema = one_file_per_row.schema()
    expression = to_arrow_filter(bind_filter(schema, parse_filter(case.text)), schema)
    assert _ids(ROWS.filter(expression)) == case.expected


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_metrics_pruning_keeps_every_matching_file_and_proves_only_those(case: Case, one_file_per_row: mor.Table) -> None:
    table = one_file_per_row
    files = {t.data_file.record_count and _only_id(table, t.data_file.file_path): t.data_file for t in table.scan().plan_files()}
    file_filter = FileFilter(table.schema(), table.metadata.specs(), parse_filter(case.text))
    for row_id, data_file in files.items():
        if row_id in case.expected:
            assert file_filter.file_may_match(data_file), f"the file of row {row_id} was pruned"
        else:
            assert not file_filter.every_row_matches(data_file), f"the file of row {row_id} was proven to match"
    kept = {_only_id(table, t.data_file.file_path) for t in table.scan(filter=case.text).plan_files()}
    assert set(case.expected) <= kept


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_the_scan(case: Case, one_file_per_row: mor.Table) -> None:
    assert _ids(one_file_per_row.scan(filter=case.text).to_arrow()) == case.expected
    assert one_file_per_row.scan(filter=case.text).count() == len(case.expected)


_ROW_OF_FILE: dict[str, int] = {}


def _only_id(table: mor.Table, path: str) -> int:
    if path not in _ROW_OF_FILE:
        import pyarrow.parquet as pq

        from mor.io.fileio import to_local_path

        (_ROW_OF_FILE[path],) = pq.read_table(to_local_path(path), columns=["id"]).column("id").to_pylist()
    return _ROW_OF_FILE[path]
