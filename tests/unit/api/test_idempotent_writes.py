"""Idempotent writes: a write tagged (app_id, version) commits at most once per version and
app id. A repeat, or an older version, commits nothing and returns the snapshot that holds it;
the check runs inside the commit, so a stale handle or a retry after CommitStateUnknownError
lands once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from unit_helpers import SCHEMA, assert_no_orphans, files_under, make_rows, scan_ids

import mor
from mor.catalog.sql import SqlCatalogStore
from mor.io.fileio import to_uri

Verb = Callable[..., Any]

# Each verb changes something on the table of ids 0..29 (so a repeat would show).
VERBS: dict[str, Verb] = {
    "append": lambda t, **k: t.append(make_rows([100, 101]), **k),
    "overwrite": lambda t, **k: t.overwrite(make_rows([0, 2]), where="id < 3", **k),
    "delete": lambda t, **k: t.delete("id < 3", **k),
    "delete-cow": lambda t, **k: t.delete("id < 3", mode="copy-on-write", **k),
    "truncate": lambda t, **k: t.truncate(**k),
    "delete_rows": lambda t, **k: t.delete_rows(pa.table({"id": pa.array([1, 2], pa.int64())}), **k),
    "update": lambda t, **k: t.update({"value": pc.field("value") + 1}, where="id < 3", **k),
    "upsert": lambda t, **k: t.upsert(make_rows([1, 103]), on=["id"], **k),
    "merge": lambda t, **k: t.merge(make_rows([1, 104]), on=["id"], when_matched_delete=True, when_not_matched_insert="*", **k),
}


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    t.append(make_rows(range(30)))
    return t


def rows(table: mor.Table) -> list[dict[str, Any]]:
    return table.scan().to_arrow().sort_by("id").to_pylist()


@pytest.mark.parametrize("verb", VERBS)
def test_a_repeated_write_commits_nothing_and_returns_the_earlier_snapshot(catalog: mor.Catalog, table: mor.Table, verb: str) -> None:
    first = VERBS[verb](table, idempotency=("job", 7))
    assert first is not None
    assert first.summary["mor.txn-app-id"] == "job" and first.summary["mor.txn-version"] == "7"
    location, files, after = table.metadata_location, files_under(table.location), rows(table)

    again = VERBS[verb](table, idempotency=("job", 7))
    older = VERBS[verb](table, idempotency=("job", 3))  # an older version: also done
    assert again == first and older == first
    assert table.metadata_location == location == catalog.load_table("db.t").metadata_location
    assert files_under(table.location) == files
    assert rows(table) == after

    newer = VERBS[verb](table, idempotency=("job", 8))  # the next version is a new write
    other = VERBS[verb](table, idempotency=("other-job", 7))  # app ids are independent
    for snapshot in (newer, other):
        assert snapshot is None or snapshot.snapshot_id != first.snapshot_id


@pytest.mark.parametrize("verb", ["append", "overwrite", "delete", "upsert", "merge"])
def test_a_stale_handle_is_stopped_by_the_check_inside_the_commit(catalog: mor.Catalog, table: mor.Table, verb: str) -> None:
    stale = catalog.load_table("db.t")
    done = VERBS[verb](table, idempotency=("job", 1))
    location, files, after = table.metadata_location, files_under(table.location), rows(table)
    assert VERBS[verb](stale, idempotency=("job", 1)) == done  # wrote its files, then found the commit
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table.location) == files  # and removed what it wrote
    assert rows(catalog.load_table("db.t")) == after
    assert stale.metadata_location == location  # the handle now sees the table as it is


class LostAcknowledgementStore(SqlCatalogStore):
    """`swap_lands`: the swap is applied, or not; either way the writer hears nothing."""

    fail_next = False
    swap_lands = True

    def swap(self, namespace: str, name: str, expected: str, new: str) -> bool:
        if not self.fail_next:
            return super().swap(namespace, name, expected, new)
        self.fail_next = False
        if self.swap_lands:
            super().swap(namespace, name, expected, new)
        raise mor.CommitStateUnknownError("connection lost around the UPDATE")


@pytest.mark.parametrize("landed", [True, False], ids=["commit-landed", "commit-lost"])
@pytest.mark.parametrize("verb", ["append", "delete", "upsert"])
def test_a_retry_after_an_unknown_commit_state_lands_exactly_once(tmp_path: Path, verb: str, landed: bool) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    store = LostAcknowledgementStore(f"sqlite:///{warehouse}/catalog.db")
    catalog = mor.SqlCatalog(store, to_uri(warehouse))
    expected = catalog.create_table("db.expected", schema=SCHEMA)
    expected.append(make_rows(range(30)))
    VERBS[verb](expected)  # what one application of the verb gives
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(30)))

    store.fail_next, store.swap_lands = True, landed
    with pytest.raises(mor.CommitStateUnknownError):
        VERBS[verb](table, idempotency=("job", 1))
    retried = VERBS[verb](table, idempotency=("job", 1))  # the same handle, as a retry loop has it
    current = catalog.load_table("db.t")
    assert retried is not None and current.current_snapshot() == retried
    assert retried.summary["mor.txn-version"] == "1"
    assert rows(current) == rows(expected)
    if landed:  # a lost commit's files stay, as after any unknown outcome (orphan removal takes them)
        assert_no_orphans(current)


@pytest.mark.parametrize(
    "bad",
    [("job",), ("job", 1, 2), ("", 1), (None, 1), ("job", -1), ("job", 1.5), ("job", True), ("job", "1"), "job", 3],
)
def test_a_bad_idempotency_is_refused_before_anything_is_written(table: mor.Table, bad: Any) -> None:
    location, files = table.metadata_location, files_under(table.location)
    for verb in VERBS.values():
        with pytest.raises(mor.InvalidArgumentError, match="idempotency"):
            verb(table, idempotency=bad)
    assert table.metadata_location == location and files_under(table.location) == files
    assert scan_ids(table) == list(range(30))
