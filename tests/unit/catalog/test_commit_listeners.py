"""Commit listeners (mor/catalog/listeners.py): told of every commit this process makes, by any
verb, with the metadata the table then has; a failing listener never fails the commit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from unit_helpers import SCHEMA, make_rows

import mor
from mor.catalog import listeners
from mor.format.metadata import TableMetadata


@pytest.fixture
def heard() -> Iterator[list[TableMetadata]]:
    seen: list[TableMetadata] = []
    listeners.listen(seen.append)
    yield seen
    listeners._LISTENERS.remove(seen.append)


def test_every_commit_is_heard_with_the_tables_new_metadata(warehouse: Path, heard: list[TableMetadata]) -> None:
    table = mor.load_catalog(warehouse).create_table("db.t", schema=SCHEMA)
    verbs: list[Callable[[], object]] = [
        lambda: table.append(make_rows(range(10))),
        lambda: table.delete("id < 3"),
        lambda: table.update({"id": "id + 100"}, "id = 5"),
        lambda: table.set_properties(k="v"),
        lambda: table.rollback_to(table.snapshots()[0].snapshot_id),
    ]
    for verb in verbs:
        before = len(heard)
        verb()
        assert len(heard) == before + 1
        assert heard[-1].current_snapshot_id == table.metadata.current_snapshot_id
        assert heard[-1].location == table.location
    assert heard[-2].properties["k"] == "v"


def test_a_failing_listener_leaves_the_commit_standing(warehouse: Path, caplog: pytest.LogCaptureFixture) -> None:
    def broken(metadata: TableMetadata) -> None:
        raise RuntimeError("listener broke")

    listeners.listen(broken)
    try:
        table = mor.load_catalog(warehouse).create_table("db.t", schema=SCHEMA)
        with caplog.at_level("WARNING", logger="mor.catalog"):
            table.append(make_rows(range(4)))
    finally:
        listeners._LISTENERS.remove(broken)
    assert "a commit listener failed" in caplog.text
    assert mor.load_catalog(warehouse).load_table("db.t").scan().count() == 4
