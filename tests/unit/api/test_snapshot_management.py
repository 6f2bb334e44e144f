"""Undo and refs (mor/api/snapshot_management.py): rollback, set-current, restore, cherry-pick,
branches and tags, each one commit that leaves the table as it was when refused."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from unit_helpers import make_rows, scan_ids

import mor
from mor.errors import InvalidArgumentError, NoSuchRefError, NoSuchSnapshotError, RefAlreadyExistsError

MakeTable = Callable[..., mor.Table]


def unchanged(table: mor.Table) -> Callable[[], None]:
    """A check that the table's metadata file is still the one it is now."""
    before = table.refresh().metadata_location

    def check() -> None:
        assert table.refresh().metadata_location == before

    return check


@pytest.fixture
def three(make_table: MakeTable) -> tuple[mor.Table, list[int]]:
    """Appends of ids 0-9, 10-19, then a delete of id 3: the three snapshot ids."""
    table = make_table(range(0, 10), range(10, 20))
    table.delete("id = 3")
    return table, [s.snapshot_id for s in table.snapshots()]


def test_rollback_to_an_ancestor_and_back(three: tuple[mor.Table, list[int]], catalog: mor.Catalog) -> None:
    table, (s1, s2, s3) = three
    assert table.rollback_to(s1).snapshot_id == s1
    assert scan_ids(table) == list(range(10))
    assert scan_ids(catalog.load_table("db.t")) == list(range(10))
    assert table.history()[-1].snapshot_id == s1
    # Undo the undo: s3 is no ancestor of s1 any more, but set_current_snapshot takes any snapshot.
    with pytest.raises(InvalidArgumentError, match="not an ancestor"):
        table.rollback_to(s3)
    table.set_current_snapshot(s3)
    assert scan_ids(table) == [i for i in range(20) if i != 3]
    # Writes go on from the current snapshot.
    table.rollback_to(s2)
    appended = table.append(make_rows([50]))
    assert appended is not None and appended.parent_snapshot_id == s2
    assert scan_ids(table) == [*range(20), 50]


def test_refused_undo_leaves_the_table_as_it_was(three: tuple[mor.Table, list[int]]) -> None:
    table, (s1, _, _) = three
    check = unchanged(table)
    with pytest.raises(NoSuchSnapshotError):
        table.rollback_to(12345)
    with pytest.raises(NoSuchSnapshotError):
        table.set_current_snapshot(12345)
    with pytest.raises(InvalidArgumentError):
        table.rollback_to("1")  # type: ignore[arg-type]
    with pytest.raises(NoSuchSnapshotError, match="before"):
        table.rollback_to_time(table.snapshots()[0].timestamp_ms)  # strictly before the first: none
    check()
    assert table.rollback_to(s1).snapshot_id == s1


def test_rollback_to_time_takes_the_newest_ancestor_before_it(three: tuple[mor.Table, list[int]]) -> None:
    table, (s1, s2, s3) = three
    stamps = {s.snapshot_id: s.timestamp_ms for s in table.snapshots()}
    assert table.rollback_to_time(stamps[s3]).snapshot_id == s2
    assert table.rollback_to_time(dt.datetime.fromtimestamp(stamps[s2] / 1000, dt.UTC)).snapshot_id == s1


def test_restore_by_version_or_time(three: tuple[mor.Table, list[int]]) -> None:
    table, (s1, s2, s3) = three
    assert table.restore(s1).snapshot_id == s1
    at_s2 = dt.datetime.fromtimestamp(table.metadata.snapshot_by_id(s2).timestamp_ms / 1000, dt.UTC)
    assert table.restore(at_s2).snapshot_id == s2
    assert scan_ids(table) == list(range(20))


def test_branches_and_tags(three: tuple[mor.Table, list[int]]) -> None:
    table, (s1, s2, s3) = three
    table.create_tag("v1", s1, max_ref_age_ms=86_400_000)
    table.create_branch("audit", s2, min_snapshots_to_keep=3, max_snapshot_age_ms=3_600_000)
    refs = table.refresh().refs()
    assert refs["v1"] == {"snapshot-id": s1, "type": "tag", "max-ref-age-ms": 86_400_000}
    assert refs["audit"] == {"snapshot-id": s2, "type": "branch", "min-snapshots-to-keep": 3, "max-snapshot-age-ms": 3_600_000}
    assert refs["main"]["snapshot-id"] == s3
    table.replace_branch("audit", s1)
    table.fast_forward("audit", "main")
    assert table.refs()["audit"] == {**refs["audit"], "snapshot-id": s3}  # retention kept
    table.rename_branch("audit", "audit-2")
    table.replace_tag("v1", s2)
    assert set(table.refs()) == {"main", "audit-2", "v1"} and table.refs()["v1"]["snapshot-id"] == s2
    table.remove_tag("v1")
    table.remove_branch("audit-2")
    assert set(table.refresh().refs()) == {"main"}
    assert scan_ids(table, snapshot_id=s1) == list(range(10))


def test_bad_ref_changes_are_refused_and_commit_nothing(three: tuple[mor.Table, list[int]]) -> None:
    table, (s1, s2, _) = three
    table.create_tag("t", s1)
    table.create_branch("b", s1)
    check = unchanged(table)
    cases: list[tuple[type[Exception], Callable[[], object]]] = [
        (RefAlreadyExistsError, lambda: table.create_branch("t")),
        (RefAlreadyExistsError, lambda: table.create_tag("main")),
        (RefAlreadyExistsError, lambda: table.rename_branch("b", "t")),
        (InvalidArgumentError, lambda: table.remove_branch("main")),
        (InvalidArgumentError, lambda: table.rename_branch("main", "x")),
        (InvalidArgumentError, lambda: table.remove_branch("t")),  # a tag
        (InvalidArgumentError, lambda: table.remove_tag("b")),  # a branch
        (InvalidArgumentError, lambda: table.create_branch("")),
        (InvalidArgumentError, lambda: table.manage_snapshots().set_retention("t", min_snapshots_to_keep=2)),
        (InvalidArgumentError, lambda: table.manage_snapshots().set_retention("b", min_snapshots_to_keep=0)),
        (NoSuchRefError, lambda: table.remove_tag("nope")),
        (NoSuchRefError, lambda: table.fast_forward("nope", "main")),
        (NoSuchSnapshotError, lambda: table.create_tag("x", 12345)),
        (NoSuchSnapshotError, lambda: table.replace_branch("b", 12345)),
    ]
    for error, change in cases:
        with pytest.raises(error):
            change()
    check()
    # Diverged lines do not fast-forward.
    table.rollback_to(s1)
    table.append(make_rows([70]))
    table.replace_branch("b", s2)
    with pytest.raises(InvalidArgumentError, match="not an ancestor"):
        table.fast_forward("b", "main")


def test_a_branch_on_an_empty_table_is_refused(make_table: MakeTable) -> None:
    table = make_table()
    with pytest.raises(InvalidArgumentError, match="no snapshot"):
        table.create_branch("b")


def test_changes_made_together_are_one_commit(three: tuple[mor.Table, list[int]]) -> None:
    table, (s1, s2, _) = three
    versions = len(table.metadata.metadata_log)
    with table.manage_snapshots() as refs:
        refs.create_tag("before", s1).create_branch("dev", s2).rollback_to(s2)
        with pytest.raises(RefAlreadyExistsError):
            refs.create_tag("before")  # checked when asked, against the changes before it
    assert len(table.refresh().metadata.metadata_log) == versions + 1
    assert {k: v["snapshot-id"] for k, v in table.refs().items()} == {"before": s1, "dev": s2, "main": s2}
    with pytest.raises(ZeroDivisionError):
        with table.manage_snapshots() as refs:
            refs.remove_tag("before")
            raise ZeroDivisionError  # an error in the block commits nothing
    assert "before" in table.refresh().refs()


def test_a_concurrent_ref_change_is_checked_again_not_overwritten(three: tuple[mor.Table, list[int]], catalog: mor.Catalog) -> None:
    table, (s1, s2, _) = three
    other = catalog.load_table("db.t")
    other.create_branch("b", s1)
    with pytest.raises(RefAlreadyExistsError):
        table.create_branch("b", s2)  # planned on metadata without "b": the retry sees it
    assert table.refresh().refs()["b"]["snapshot-id"] == s1
    other.rollback_to(s1)
    table.create_tag("t")  # at the current snapshot of the table as it is by now
    assert table.refs()["t"]["snapshot-id"] == s1


def test_expiry_keeps_what_refs_need(three: tuple[mor.Table, list[int]]) -> None:
    table, (s1, s2, s3) = three
    table.create_tag("keep", s1)
    result = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    assert set(result.expired_snapshot_ids) == {s2}
    assert scan_ids(table, snapshot_id=s1) == list(range(10))
    assert scan_ids(table) == [i for i in range(20) if i != 3]
    assert {s.snapshot_id for s in table.snapshots()} == {s1, s3}


def test_cherrypick_an_append_from_another_line(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    s1 = table.metadata.current_snapshot_id
    s2 = table.append(make_rows(range(10, 15))).snapshot_id  # type: ignore[union-attr]
    table.rollback_to(s1)  # type: ignore[arg-type]
    table.append(make_rows(range(20, 25)))
    picked = table.cherrypick(s2)
    assert picked.summary["source-snapshot-id"] == str(s2) and picked.operation == "append"
    assert scan_ids(table) == [*range(0, 15), *range(20, 25)]
    with pytest.raises(InvalidArgumentError, match="picked already"):
        table.cherrypick(s2)


def test_cherrypick_fast_forwards_a_child_of_the_current_snapshot(three: tuple[mor.Table, list[int]]) -> None:
    table, (s1, s2, s3) = three
    table.rollback_to(s2)
    assert table.cherrypick(s3).snapshot_id == s3  # a delete, but a fast-forward: made current
    assert scan_ids(table) == [i for i in range(20) if i != 3]
    table.rollback_to(s1)
    check = unchanged(table)
    with pytest.raises(InvalidArgumentError, match="only an append"):
        table.cherrypick(s3)  # a delete on another line
    with pytest.raises(InvalidArgumentError, match="descends from it"):
        table.cherrypick(s1)
    check()


def test_cherrypick_on_v3_gives_the_rows_new_row_ids(make_table: MakeTable) -> None:
    table = make_table(range(0, 10), format_version=3)
    s1 = table.metadata.current_snapshot_id
    s2 = table.append(make_rows(range(10, 15))).snapshot_id  # type: ignore[union-attr]
    table.rollback_to(s1)  # type: ignore[arg-type]
    table.append(make_rows(range(20, 25)))
    table.cherrypick(s2)
    row_ids = table.scan(columns=["id", "_row_id"]).to_arrow()["_row_id"].to_pylist()
    assert len(row_ids) == 20 and len(set(row_ids)) == 20 and None not in row_ids


def test_every_write_verb_commits_to_a_branch_and_leaves_main(three: tuple[mor.Table, list[int]], catalog: mor.Catalog) -> None:
    table, (_, s2, s3) = three
    table.create_branch("dev", s2, min_snapshots_to_keep=4)
    log = table.metadata.snapshot_log
    table.append(make_rows([100, 101]), branch="dev")
    table.delete("id < 2", branch="dev")
    table.update({"value": 0.0}, where="id = 100", branch="dev")
    table.upsert(make_rows([5, 102]), on=["id"], branch="dev")
    table.merge(make_rows([6, 103]), on=["id"], when_matched_delete=True, when_not_matched_insert="*", branch="dev")
    table.delete_rows(make_rows([7]).select(["id"]), branch="dev")
    table.overwrite(make_rows([8]), where="id = 8", branch="dev")
    expected = sorted({*range(2, 20), 100, 101, 102, 103} - {6, 7})
    assert scan_ids(table, branch="dev") == expected
    assert scan_ids(catalog.load_table("db.t"), branch="dev") == expected
    assert table.refresh().metadata.current_snapshot_id == s3 and table.metadata.snapshot_log == log  # main untouched
    assert scan_ids(table) == [i for i in range(20) if i != 3]
    dev = table.refs()["dev"]
    assert dev["min-snapshots-to-keep"] == 4  # retention kept as the branch moved
    assert [s.snapshot_id for s in table.metadata.ancestors(dev["snapshot-id"])][-2:] == [s2, table.snapshots()[0].snapshot_id]
    result = table.compact(branch="dev", min_input_files=1)
    assert result.rewritten_data_files and scan_ids(table, branch="dev") == expected
    assert table.metadata.current_snapshot_id == s3


def test_a_branch_handle_reads_and_writes_its_line(three: tuple[mor.Table, list[int]], catalog: mor.Catalog) -> None:
    table, (s1, _, s3) = three
    table.create_branch("dev", s1)
    dev = table.branch("dev")
    assert scan_ids(dev) == list(range(10))
    other = catalog.load_table("db.t").branch("dev")
    other.delete("id = 5")
    dev.delete("id = 6")  # planned on the older head: committed after re-checking on the new one
    assert scan_ids(dev) == scan_ids(table.refresh(), branch="dev") == [i for i in range(10) if i not in (5, 6)]
    assert table.refresh().metadata.current_snapshot_id == s3
    with pytest.raises(NoSuchRefError):
        table.append(make_rows([1]), branch="nope")
    table.create_tag("v", s1)
    check = unchanged(table)
    with pytest.raises(InvalidArgumentError, match="tag"):
        table.delete("id = 1", branch="v")
    check()
    assert scan_ids(table, branch="v") == list(range(10))


def test_staged_writes_and_publish(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    with pytest.raises(InvalidArgumentError, match="write.wap.enabled"):
        table.staged("night-1")
    table.set_properties(**{"write.wap.enabled": "true"})
    head = table.metadata.current_snapshot_id
    staged = table.staged("night-1").append(make_rows([50, 51]))
    assert staged is not None and staged.summary["wap.id"] == "night-1" and staged.parent_snapshot_id == head
    assert table.refresh().metadata.current_snapshot_id == head and scan_ids(table) == list(range(10))
    assert scan_ids(table, snapshot_id=staged.snapshot_id) == [*range(10), 50, 51]
    table.append(make_rows([60]))  # main moves on
    published = table.publish("night-1")
    assert published.summary["published-wap-id"] == "night-1"
    assert scan_ids(table) == [*range(10), 50, 51, 60]
    with pytest.raises(InvalidArgumentError, match="published already"):
        table.publish("night-1")
    with pytest.raises(NoSuchSnapshotError):
        table.publish("never-staged")


def test_expiry_and_orphan_removal_refuse_a_branch_handle(three: tuple[mor.Table, list[int]]) -> None:
    """Through a branch's handle, main's line would look unreferenced: they run on the table."""
    table, (s1, _, _) = three
    table.create_branch("dev", s1)
    for verb in (
        lambda t: t.expire_snapshots(older_than=dt.timedelta(0), allow_short_retention=True),
        lambda t: t.remove_orphan_files(),
    ):
        with pytest.raises(InvalidArgumentError, match="whole table"):
            verb(table.branch("dev"))
    assert len(table.refresh().snapshots()) == 3


def test_pyiceberg_reads_branches_and_tags_mor_writes(three: tuple[mor.Table, list[int]]) -> None:
    from pyiceberg.table import StaticTable as PyicebergTable

    table, (s1, _, _) = three
    table.create_tag("t", s1)
    table.create_branch("dev", s1, max_ref_age_ms=86_400_000)
    table.append(make_rows([77]), branch="dev")
    theirs = PyicebergTable.from_metadata(table.metadata_location)
    refs = theirs.refs()
    assert set(refs) == {"main", "t", "dev"} and refs["dev"].max_ref_age_ms == 86_400_000
    for name in ("t", "dev", "main"):
        ids = sorted(theirs.scan(snapshot_id=refs[name].snapshot_id).to_arrow()["id"].to_pylist())
        assert ids == scan_ids(table, branch=name), name


def test_expiry_honours_the_retention_set_on_refs(make_table: MakeTable) -> None:
    """A branch's min-snapshots-to-keep keeps its ancestors; a tag past its max-ref-age goes,
    and with it what only it kept."""
    import time

    from mor.format.metadata import now_ms

    table = make_table(range(0, 5))
    for i in range(5, 9):
        table.append(make_rows([i]))
    line = [s.snapshot_id for s in table.snapshots()]
    table.create_branch("keep3", line[-1], min_snapshots_to_keep=3)
    table.create_tag("short", line[0], max_ref_age_ms=1)
    while now_ms() - table.metadata.snapshot_by_id(line[0]).timestamp_ms <= 1:  # until the tag is older than its 1 ms
        time.sleep(0.001)
    result = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    assert "short" in result.removed_refs and "short" not in table.refresh().refs()
    kept = {s.snapshot_id for s in table.snapshots()}
    assert set(line[-3:]) <= kept and line[0] not in kept
    assert scan_ids(table, branch="keep3") == list(range(9))
