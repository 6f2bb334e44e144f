"""Safer defaults and readable objects: `update` needs an explicit `where`; tables, scans,
snapshots and catalogs print on one line with what identifies them; every maintenance result
has `to_dict()`."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest
from unit_helpers import TableState, make_rows, table_rows

import mor

MakeTable = Callable[..., mor.Table]


# -- update needs where ---------------------------------------------------------------------------


def test_update_without_where_is_refused_and_changes_nothing(make_table: MakeTable) -> None:
    table = make_table(range(10))
    state = TableState(table)
    with pytest.raises(mor.InvalidArgumentError, match="where"):
        table.update({"name": "'x'"})
    state.assert_unchanged()


@pytest.mark.parametrize("where", ["true", True])
def test_update_of_every_row_says_so(make_table: MakeTable, where: Any) -> None:
    table = make_table(range(10))
    table.update({"name": "'x'"}, where=where)
    assert [r["name"] for r in table_rows(table)] == ["x"] * 10


# -- reprs ----------------------------------------------------------------------------------------


def _one_line(value: object) -> str:
    text = repr(value)
    assert "\n" not in text
    return text


def test_table_repr_names_the_table_its_format_and_snapshot(make_table: MakeTable) -> None:
    table = make_table()
    assert _one_line(table) == "Table('db.t', format_version=2, current_snapshot_id=None)"
    table.append(make_rows([1]))
    assert _one_line(table) == f"Table('db.t', format_version=2, current_snapshot_id={table.current_snapshot().snapshot_id})"


def test_scan_repr_says_what_it_reads(make_table: MakeTable) -> None:
    table = make_table(range(3))
    snapshot_id = table.current_snapshot().snapshot_id
    scan = table.scan(filter="id < 2", columns=["id", "name"])
    assert _one_line(scan) == f"Scan('db.t', filter='id < 2', columns=['id', 'name'], snapshot_id={snapshot_id})"
    assert _one_line(table.scan().limit(5)) == f"Scan('db.t', filter='true', columns=None, snapshot_id={snapshot_id}, limit=5)"


def test_snapshot_repr_has_id_operation_sequence_number_and_time(make_table: MakeTable) -> None:
    table = make_table(range(3))
    snapshot = table.current_snapshot()
    made = dt.datetime.fromtimestamp(snapshot.timestamp_ms / 1000, dt.UTC).isoformat(timespec="milliseconds")
    assert _one_line(snapshot) == f"Snapshot(id={snapshot.snapshot_id}, operation='append', sequence_number=1, timestamp='{made}')"


def test_catalog_repr_names_the_warehouse(catalog: mor.Catalog) -> None:
    text = _one_line(catalog)
    assert text.startswith("Catalog(") and catalog.warehouse in text


# -- maintenance results --------------------------------------------------------------------------


def test_every_maintenance_result_has_to_dict(make_table: MakeTable) -> None:
    table = make_table(range(0, 10), range(10, 20))
    table.delete("id < 3")
    table.delete("id = 5")
    results = {
        "rewrite_position_deletes": table.rewrite_position_deletes(),
        "compact": table.compact(min_input_files=1),
        "expire_snapshots": table.expire_snapshots(older_than=dt.timedelta(0), allow_short_retention=True, dry_run=True),
        "remove_orphan_files": table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True),
        "maintain": table.maintain(dry_run=True),
    }
    for name, result in results.items():
        as_dict = result.to_dict()
        assert isinstance(as_dict, dict) and as_dict, name
        json.dumps(as_dict, default=str)
    orphans = results["remove_orphan_files"]
    assert len(orphans) == orphans.to_dict()["removed_files"] and list(orphans) == orphans.to_dict()["paths"]


def test_a_purging_drop_says_what_it_deleted(catalog: mor.Catalog, make_table: MakeTable) -> None:
    make_table(range(3))
    result = catalog.drop_table("db.t", purge=True)
    assert result is not None
    as_dict = result.to_dict()
    assert as_dict["deleted_paths"] and all(isinstance(p, str) for p in as_dict["deleted_paths"])
