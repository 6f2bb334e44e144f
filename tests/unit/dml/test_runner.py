"""The row-level engine's seam itself (mor/dml/runner.py), driven with hand-made plans rather than
through `Table`'s verbs: which write mode a table asks for, a plan with nothing to change, the
re-plan after a real conflict (and its limit), idempotency, and which files a failed commit
removes."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from unit_helpers import make_rows, scan_ids

import mor
from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.runner import commit, run_dml, write_mode
from mor.errors import CommitConflictError, InvalidArgumentError, UnsupportedFeatureError
from mor.format.content_file import DataFile
from mor.format.properties import COPY_ON_WRITE, DML_REPLAN_RETRIES, MERGE_ON_READ
from mor.format.spec import Operation
from mor.io.fileio import to_local_path
from mor.write.options import WriteOptions
from mor.write.rolling import RollingDataWriter, write_rows


def written(table: mor.Table, ids: range) -> list[DataFile]:
    """Data files of rows `ids`, written for `table` and not committed."""
    m = table.metadata
    writer = RollingDataWriter(table.io, m.location, m.schema(), m.spec(), WriteOptions(m.properties), sort_order=m.sort_order)
    return write_rows(writer, [make_rows(ids)])


def exists(f: DataFile) -> bool:
    return os.path.exists(to_local_path(f.file_path))


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.t", make_rows(range(3)).schema)
    t.append(make_rows(range(3)))
    return t


def test_write_mode_is_the_argument_else_the_property_else_merge_on_read(catalog: mor.Catalog, table: mor.Table) -> None:
    assert write_mode(table, None, "write.delete.mode") == MERGE_ON_READ
    assert write_mode(table, COPY_ON_WRITE, "write.delete.mode") == COPY_ON_WRITE
    table.set_properties(**{"write.update.mode": COPY_ON_WRITE})
    assert write_mode(table, None, "write.update.mode") == COPY_ON_WRITE
    with pytest.raises(InvalidArgumentError, match="mode must be"):
        write_mode(table, "merge-on-write", "write.delete.mode")
    v1 = catalog.create_table("db.v1", make_rows(range(1)).schema, format_version=1)
    assert write_mode(v1, None, "write.delete.mode") == COPY_ON_WRITE
    with pytest.raises(UnsupportedFeatureError, match="format v1"):
        write_mode(v1, MERGE_ON_READ, "write.delete.mode")


def test_a_plan_with_nothing_to_change_commits_nothing(table: mor.Table) -> None:
    before = table.metadata_location
    assert run_dml(table, "delete", lambda: None) is None
    assert table.metadata_location == before


def conflicting_once(table: mor.Table, other: mor.Table, plans: list[list[DataFile]]) -> Callable[[], tuple[Changes, Validator | None]]:
    """A plan that adds rows; on its first run another writer commits meanwhile and the plan's
    validator finds that commit a conflict, so the engine must plan again."""

    def plan() -> tuple[Changes, Validator | None]:
        first = not plans
        files = written(table, range(100 + len(plans), 101 + len(plans)))
        plans.append(files)
        if first:
            other.append(make_rows(range(50, 51)))

        def validate(read_base: object, current: object) -> None:
            if first:
                raise CommitConflictError("the other writer's rows make this plan wrong")

        return Changes(Operation.APPEND, added_data=files), validate

    return plan


def test_a_real_conflict_plans_again_on_the_new_state_and_cleans_up_the_first_attempt(catalog: mor.Catalog, table: mor.Table) -> None:
    other = catalog.load_table("db.t")
    plans: list[list[DataFile]] = []
    snapshot = run_dml(table, "delete", conflicting_once(table, other, plans))
    assert snapshot is not None and len(plans) == 2
    assert not any(exists(f) for f in plans[0])  # the abandoned plan's files are gone
    assert all(exists(f) for f in plans[1])
    assert scan_ids(catalog.load_table("db.t")) == [0, 1, 2, 50, 101]


def test_re_planning_stops_at_the_tables_limit(catalog: mor.Catalog, table: mor.Table) -> None:
    table.set_properties(**{DML_REPLAN_RETRIES: "0"})
    other = catalog.load_table("db.t")
    plans: list[list[DataFile]] = []
    with pytest.raises(CommitConflictError, match="other writer"):
        run_dml(table, "delete", conflicting_once(table, other, plans))
    assert len(plans) == 1 and not any(exists(f) for f in plans[0])
    assert scan_ids(catalog.load_table("db.t")) == [0, 1, 2, 50]


def test_an_idempotent_run_commits_once(table: mor.Table) -> None:
    calls: list[int] = []

    def plan() -> tuple[Changes, Validator | None]:
        calls.append(1)
        return Changes(Operation.APPEND, added_data=written(table, range(7, 8))), None

    first = run_dml(table, "delete", plan, idempotency=("job", 3))
    again = run_dml(table, "delete", plan, idempotency=("job", 3))
    assert first is not None and again is not None and again.snapshot_id == first.snapshot_id
    assert len(calls) == 1
    assert scan_ids(table) == [0, 1, 2, 7]


def test_a_failed_commit_removes_the_files_it_added_but_the_kept_ones(catalog: mor.Catalog, table: mor.Table) -> None:
    kept, added = written(table, range(10, 11)), written(table, range(11, 12))
    catalog.load_table("db.t").append(make_rows(range(20, 21)))  # the base moves on: the validator runs

    def refuse(read_base: object, current: object) -> None:
        raise CommitConflictError("refused")

    with pytest.raises(CommitConflictError):
        commit(table, Changes(Operation.APPEND, added_data=[*kept, *added]), refuse, kept=kept)
    assert all(exists(f) for f in kept) and not any(exists(f) for f in added)
