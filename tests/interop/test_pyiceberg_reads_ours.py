"""pyiceberg 0.12 reads the tables mor writes, at every snapshot, exactly as mor does.

Each scenario builds a table through mor's API and keeps an independent model: a list of dict
rows where a delete is applied by filtering with the same predicate written in Python. After
every commit, every snapshot so far is read by mor, by pyiceberg's ``StaticTable`` and by
pyiceberg's ``SqlCatalog`` over mor's ``catalog.db``, and all three must equal the model.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NoSuchTableError as PyIcebergNoSuchTableError
from pyiceberg.table import StaticTable as PyIcebergStaticTable

import mor

pytestmark = pytest.mark.interop

Row = dict[str, Any]

TABLE_NAME = "db.t"
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("category", pa.string()),
        ("name", pa.string()),
        ("value", pa.float64()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
COPY_ON_WRITE = "copy-on-write"

LAYOUTS = [
    pytest.param(None, id="unpartitioned"),
    pytest.param(["category", "day(ts)"], id="category-day"),
    pytest.param(["bucket(4, id)", "truncate(2, name)"], id="bucket-truncate"),
]


def make_row(i: int) -> Row:
    """Deterministic row i: 3 categories, 2 name prefixes, some NULL names and values, ~3 days."""
    return {
        "id": i,
        "category": "abc"[(i // 7) % 3],
        "name": None if i % 13 == 5 else f"{'xy'[i % 2]}-{i}",
        "value": None if i % 11 == 7 else (i * 37 % 1000) / 10,
        "ts": START + dt.timedelta(minutes=3 * i, microseconds=i),
    }


def arrow_table(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


# ---------------------------------------------------------------------------------------------
# Steps of a scenario, each with its effect on the model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Append:
    ids: range

    def apply(self, table: Any, model: list[Row]) -> list[Row]:
        rows = [make_row(i) for i in self.ids]
        table.append(arrow_table(rows))
        return model + rows


@dataclass(frozen=True)
class Delete:
    where: str
    matches: Callable[[Row], bool]  # the same predicate, in Python (NULL never matches)
    mode: str | None = None  # None: the default, merge-on-read

    def apply(self, table: Any, model: list[Row]) -> list[Row]:
        if self.mode is None:
            table.delete(self.where)
        else:
            table.delete(self.where, mode=self.mode)
        return [row for row in model if not self.matches(row)]


Step = Append | Delete


def gt(column: str, bound: float) -> Callable[[Row], bool]:
    return lambda row: row[column] is not None and row[column] > bound


SCENARIO: list[Step] = [
    Append(range(0, 400)),
    Append(range(400, 800)),
    Delete("id < 50", lambda r: r["id"] < 50),
    # Rewrites files that already carry position deletes: those rows must stay deleted.
    Delete("category = 'b' and id < 200", lambda r: r["category"] == "b" and r["id"] < 200, COPY_ON_WRITE),
    # Across partitions; rows with a NULL value never match.
    Delete("value > 90.0", gt("value", 90.0)),
    Append(range(800, 1000)),
    # Removes whole files (those of the append just before).
    Delete("id >= 800", lambda r: r["id"] >= 800),
    # Matches only rows that are already deleted, then nothing at all: no new snapshot.
    Delete("id < 10", lambda r: r["id"] < 10),
    Delete("id = 123456", lambda r: r["id"] == 123456, COPY_ON_WRITE),
    Delete("name is null", lambda r: r["name"] is None, COPY_ON_WRITE),
    # Across partitions, on files that already carry position deletes.
    Delete(
        "category in ('a', 'c') and id >= 600",
        lambda r: r["category"] in ("a", "c") and r["id"] >= 600,
    ),
]


# ---------------------------------------------------------------------------------------------
# Reading and comparing
# ---------------------------------------------------------------------------------------------


@contextmanager
def pyiceberg_catalog(warehouse: Path) -> Iterator[SqlCatalog]:
    catalog = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    try:
        yield catalog
    finally:
        catalog.engine.dispose()


def sorted_rows(result: pa.Table) -> list[Row]:
    """Rows sorted by id, with types normalized to SCHEMA (pyiceberg may return large_string)."""
    assert result.column_names == SCHEMA.names, "columns are not in schema order"
    return sorted(result.cast(SCHEMA).to_pylist(), key=lambda row: row["id"])


def describe_id_differences(expected: list[Row], actual: list[Row]) -> str:
    expected_by_id = {row["id"]: row for row in expected}
    actual_by_id = {row["id"]: row for row in actual}
    changed = [i for i in expected_by_id.keys() & actual_by_id.keys() if expected_by_id[i] != actual_by_id[i]]
    duplicated = [i for i, n in Counter(row["id"] for row in actual).items() if n > 1]
    return (
        f"expected {len(expected)} rows, got {len(actual)}; "
        f"missing ids {sorted(expected_by_id.keys() - actual_by_id.keys())[:40]}, "
        f"extra ids {sorted(actual_by_id.keys() - expected_by_id.keys())[:40]}, "
        f"changed ids {sorted(changed)[:40]}, duplicated ids {sorted(duplicated)[:40]}"
    )


def assert_reads_model(result: pa.Table, expected: list[Row], reader: str) -> None:
    rows = sorted_rows(result)
    assert rows == expected, f"{reader}: {describe_id_differences(expected, rows)}"


def snapshot_log_of_mor(table: Any) -> list[tuple[int, int | None, int, int, str]]:
    return [(s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.timestamp_ms, s.summary["operation"]) for s in table.snapshots()]


def snapshot_log_of_pyiceberg(table: Any) -> list[tuple[int, int | None, int, int, str]]:
    return [(s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.timestamp_ms, s.summary.operation.value) for s in table.snapshots()]


def check_every_snapshot(warehouse: Path, table: Any, model_at: dict[int, list[Row]]) -> None:
    """mor, pyiceberg's StaticTable and pyiceberg's SqlCatalog all read the model at every snapshot."""
    log = snapshot_log_of_mor(table)
    assert [entry[0] for entry in log] == list(model_at), "snapshots are not the commits, in order"
    assert [entry[1] for entry in log] == [None, *list(model_at)[:-1]], "parents do not chain"
    assert [entry[2] for entry in log] == sorted({entry[2] for entry in log}), "sequence numbers not increasing"

    static = PyIcebergStaticTable.from_metadata(table.metadata_location)
    assert snapshot_log_of_pyiceberg(static) == log
    with pyiceberg_catalog(warehouse) as catalog:
        via_catalog = catalog.load_table(TABLE_NAME)
    assert via_catalog.metadata_location == table.metadata_location

    for snapshot_id, expected in model_at.items():
        ours = table.scan(snapshot_id=snapshot_id).to_arrow()
        assert [(f.name, f.type) for f in ours.schema] == [(f.name, f.type) for f in SCHEMA]
        assert_reads_model(ours, expected, f"mor at {snapshot_id}")
        assert_reads_model(static.scan(snapshot_id=snapshot_id).to_arrow(), expected, f"pyiceberg StaticTable at {snapshot_id}")
        assert_reads_model(via_catalog.scan(snapshot_id=snapshot_id).to_arrow(), expected, f"pyiceberg SqlCatalog at {snapshot_id}")


def check_delete_files_written(table: Any, step: Delete) -> None:
    """Merge-on-read adds no data files, only position delete files; copy-on-write adds no
    delete files. (That the right rows went is checked against the model.)"""
    snapshot = table.current_snapshot()
    tasks = table.scan().plan_files()
    new_data = [t.data_file.file_path for t in tasks if t.data_file.data_sequence_number == snapshot.sequence_number]
    new_deletes = {(d.file_path, d.content) for t in tasks for d in t.delete_files if d.data_sequence_number == snapshot.sequence_number}
    if step.mode == COPY_ON_WRITE:
        assert not new_deletes, f"copy-on-write delete {step.where!r} wrote delete files"
    else:
        assert not new_data, f"merge-on-read delete {step.where!r} rewrote data files: {new_data}"
        assert all(content == mor.FileContent.POSITION_DELETES for _, content in new_deletes)


def run_step(table: Any, step: Step, model: list[Row], model_at: dict[int, list[Row]]) -> list[Row]:
    """Apply one step to the table and the model; record the model under any new snapshot."""
    before = table.current_snapshot()
    new_model = step.apply(table, model)
    after = table.current_snapshot()
    if isinstance(step, Delete) and new_model == model:
        assert after.snapshot_id == before.snapshot_id, f"{step.where!r} matched nothing but committed"
        assert len(table.snapshots()) == len(model_at)
        return model
    assert before is None or after.snapshot_id != before.snapshot_id, f"{step} committed no snapshot"
    model_at[after.snapshot_id] = sorted(new_model, key=lambda row: row["id"])
    if isinstance(step, Delete):
        check_delete_files_written(table, step)
    return new_model


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.mark.parametrize("partition_by", LAYOUTS)
def test_pyiceberg_reads_every_snapshot_like_mor(warehouse: Path, partition_by: list[str] | None) -> None:
    catalog = mor.load_catalog(str(warehouse))
    spec = {} if partition_by is None else {"partition_by": partition_by}
    table = catalog.create_table(TABLE_NAME, schema=SCHEMA, **spec)
    model: list[Row] = []
    model_at: dict[int, list[Row]] = {}
    for step in SCENARIO:
        model = run_step(table, step, model, model_at)
        check_every_snapshot(warehouse, table, model_at)
    # Two deletes matched nothing; the rest each committed one snapshot.
    assert len(model_at) == len(SCENARIO) - 2
    assert 0 < len(model) < 1100
    assert catalog.load_table(TABLE_NAME).metadata_location == table.metadata_location


def test_pyiceberg_sees_registered_and_dropped_tables(warehouse: Path) -> None:
    catalog = mor.load_catalog(str(warehouse))
    table = catalog.create_table(TABLE_NAME, schema=SCHEMA)
    model = [make_row(i) for i in range(100)]
    table.append(arrow_table(model))
    table.delete("id < 10")
    model = model[10:]
    catalog.register_table("db.t2", table.metadata_location, allow_shared=True)

    with pyiceberg_catalog(warehouse) as pyiceberg:
        assert set(pyiceberg.list_tables("db")) == {("db", "t"), ("db", "t2")}
        assert_reads_model(pyiceberg.load_table("db.t2").scan().to_arrow(), model, "pyiceberg db.t2")

    catalog.drop_table(TABLE_NAME)
    with pyiceberg_catalog(warehouse) as pyiceberg:
        with pytest.raises(PyIcebergNoSuchTableError):
            pyiceberg.load_table(TABLE_NAME)
        assert_reads_model(pyiceberg.load_table("db.t2").scan().to_arrow(), model, "pyiceberg db.t2")
    with pytest.raises(mor.NoSuchTableError):
        catalog.load_table(TABLE_NAME)


@pytest.mark.parametrize(
    ("operation", "error"),
    [
        pytest.param(lambda t: t.delete("no_such_column = 1"), mor.InvalidFilterError, id="unknown-column"),
        pytest.param(lambda t: t.delete("id <"), mor.InvalidFilterError, id="unparsable-filter"),
        pytest.param(
            lambda t: t.append(pa.table({"id": pa.array([1], pa.int64())})),
            mor.SchemaMismatchError,
            id="append-missing-columns",
        ),
    ],
)
def test_failed_operations_commit_nothing_pyiceberg_can_see(
    warehouse: Path, operation: Callable[[Any], Any], error: type[Exception]
) -> None:
    catalog = mor.load_catalog(str(warehouse))
    table = catalog.create_table(TABLE_NAME, schema=SCHEMA)
    model = [make_row(i) for i in range(50)]
    table.append(arrow_table(model))
    location = table.metadata_location

    with pytest.raises(error):
        operation(table)
    assert issubclass(error, mor.MorError)
    with pyiceberg_catalog(warehouse) as pyiceberg:
        loaded = pyiceberg.load_table(TABLE_NAME)
    assert loaded.metadata_location == location
    assert len(loaded.snapshots()) == 1
    assert_reads_model(loaded.scan().to_arrow(), model, "pyiceberg after the failed operation")
