"""CHECK constraints and NOT NULL: every mor write of new rows is checked before anything is
committed, the error names the constraint and a row, and a constraint that existing rows break
is refused. Other engines read the table as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.table import StaticTable as PyIcebergStaticTable
from unit_helpers import SCHEMA, files_under, make_rows, scan_ids

import mor


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    """Ids 0..29, value = id / 2, in partitions by category."""
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    t.append(make_rows(range(30)))
    return t


def _bad(ids: list[int], value: float | None = -1.0) -> pa.Table:
    rows = make_rows(ids)
    return rows.set_column(3, "value", pa.array([value] * len(ids), pa.float64()))


WRITES: dict[str, Callable[[mor.Table], Any]] = {
    "append": lambda t: t.append(pa.concat_tables([make_rows([100]), _bad([101])])),
    "append-null": lambda t: t.append(_bad([101], None)),
    "append-stream": lambda t: t.append(iter([make_rows([100]).to_batches()[0], _bad([101]).to_batches()[0]])),
    "overwrite": lambda t: t.overwrite(_bad([1]), where="id = 1"),
    "update": lambda t: t.update({"value": pc.field("value") - 10}, where="id = 4"),
    "update-cow": lambda t: t.update({"value": pc.field("value") - 10}, where="id = 4", mode="copy-on-write"),
    "upsert": lambda t: t.upsert(_bad([2, 200]), on=["id"]),
    "upsert-equality": lambda t: t.upsert(_bad([2]), on=["id"], strategy="equality"),
    "merge": lambda t: t.merge(_bad([3]), on=["id"], when_matched_update={"value": pc.field("source.value")}),
    "merge-insert": lambda t: t.merge(_bad([300]), on=["id"], when_not_matched_insert="*"),
}


@pytest.mark.parametrize("write", WRITES)
def test_a_write_breaking_a_constraint_is_refused_naming_it_and_a_row(table: mor.Table, write: str) -> None:
    table.add_constraint("non_negative", "value >= 0")
    location, files = table.metadata_location, files_under(table.location)
    with pytest.raises(mor.ConstraintViolationError) as info:
        WRITES[write](table)
    message = str(info.value)
    assert "'non_negative'" in message and "value >= 0" in message and "value=" in message
    assert table.metadata_location == location
    assert files_under(table.location) == files
    assert scan_ids(table) == list(range(30))


def test_writes_that_keep_the_constraint_commit(table: mor.Table) -> None:
    table.add_constraint("non_negative", "value is null or value >= 0")  # nulls allowed explicitly
    table.add_constraint("even_or_small", "id % 2 = 0 or id < 1000")  # a residual predicate
    table.append(_bad([100], None))
    table.update({"value": pc.field("value") + 1}, where="id < 5")
    table.upsert(make_rows([5, 500]), on=["id"])
    table.delete("id = 6")  # removing rows writes no new rows: nothing to check
    table.append(make_rows([1002]))
    with pytest.raises(mor.ConstraintViolationError, match="even_or_small"):
        table.append(make_rows([1001]))
    assert table.constraints() == {"even_or_small": "id % 2 = 0 or id < 1000", "non_negative": "value is null or value >= 0"}
    assert table.properties["mor.constraint.non_negative"] == "value is null or value >= 0"


def test_a_constraint_existing_rows_break_is_refused(table: mor.Table) -> None:
    location = table.metadata_location
    with pytest.raises(mor.ConstraintViolationError, match="existing rows") as info:
        table.add_constraint("small", "id < 29")
    assert "id=29" in str(info.value)
    table.delete("id = 29")  # a deleted row no longer counts
    table.add_constraint("small", "id < 29")
    assert table.constraints() == {"small": "id < 29"}
    assert table.metadata_location != location


def test_a_null_breaks_a_constraint(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.n", schema=SCHEMA)
    t.append(_bad([1], None))
    with pytest.raises(mor.ConstraintViolationError, match="value=None"):
        t.add_constraint("positive", "value > 0")


def test_a_constraint_checked_on_a_stale_handle_is_checked_again(catalog: mor.Catalog, table: mor.Table) -> None:
    """The constraint's commit asserts the snapshot it checked: rows committed meanwhile are
    checked before it lands."""
    stale = catalog.load_table("db.t")
    table.append(_bad([100]))
    with pytest.raises(mor.ConstraintViolationError, match="value=-1.0"):
        stale.add_constraint("non_negative", "value >= 0")
    assert catalog.load_table("db.t").constraints() == {}


@pytest.mark.parametrize(
    ("name", "expression", "error"),
    [
        pytest.param("has space", "id > 0", mor.InvalidArgumentError, id="bad-name"),
        pytest.param("1st", "id > 0", mor.InvalidArgumentError, id="digit-first"),
        pytest.param(None, "id > 0", mor.InvalidArgumentError, id="no-name"),
        pytest.param("c", "", mor.InvalidArgumentError, id="empty"),
        pytest.param("c", 5, mor.InvalidArgumentError, id="not-text"),
        pytest.param("c", "nope > 0", mor.InvalidFilterError, id="unknown-column"),
        pytest.param("c", "id >", mor.InvalidFilterError, id="syntax"),
    ],
)
def test_a_bad_constraint_is_refused_and_the_table_unchanged(table: mor.Table, name: Any, expression: Any, error: type) -> None:
    location = table.metadata_location
    with pytest.raises(error):
        table.add_constraint(name, expression)
    assert table.metadata_location == location


def test_dropping_a_constraint_and_adding_one_twice(table: mor.Table) -> None:
    table.add_constraint("non_negative", "value >= 0")
    with pytest.raises(mor.InvalidArgumentError, match="already has"):
        table.add_constraint("non_negative", "value >= 1")
    with pytest.raises(mor.InvalidArgumentError, match="no constraint"):
        table.drop_constraint("other")
    table.drop_constraint("non_negative")
    table.append(_bad([100]))
    assert 100 in scan_ids(table)


def test_rows_that_only_move_are_not_checked_again(table: mor.Table) -> None:
    """Compaction and copy-on-write rewrites keep rows another engine wrote, even if they break a
    constraint mor was told about later (set as a plain property, as another engine may)."""
    table.append(_bad([100]))
    table.set_properties(**{"mor.constraint.non_negative": "value >= 0"})
    table.delete("id = 1", mode="copy-on-write")
    table.compact(min_input_files=1)
    assert 100 in scan_ids(table) and 1 not in scan_ids(table)
    with pytest.raises(mor.ConstraintViolationError):
        table.update({"name": "'x'"}, where="id = 100")  # a new version of the row is a new row


def test_set_not_null_makes_the_column_required_once_no_row_is_null(table: mor.Table) -> None:
    table.append(_bad([100], None))
    with pytest.raises(mor.ConstraintViolationError, match="1 live rows"):
        table.set_not_null("value")
    assert not table.schema().find_field("value").required
    table.delete("id = 100")
    schema = table.set_not_null("value")
    assert schema.find_field("value").required and table.schema().find_field("value").required
    with pytest.raises(mor.SchemaMismatchError, match="value"):
        table.append(_bad([101], None))
    with pytest.raises(mor.MorError):
        table.set_not_null("nope")
    assert table.set_not_null("value") == schema  # already required: no commit


def test_other_engines_read_a_table_with_constraints(table: mor.Table) -> None:
    table.add_constraint("non_negative", "value >= 0")
    table.set_not_null("name")
    table.update({"value": pc.field("value") + 1}, where="id < 3")
    theirs = PyIcebergStaticTable.from_metadata(table.metadata_location).scan().to_arrow()
    assert theirs.sort_by("id").to_pylist() == table.scan().to_arrow().sort_by("id").to_pylist()
