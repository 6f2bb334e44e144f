"""`table.maintain()`: the policy in the table properties decides what is compacted, expired
and removed; bad policy values are refused before anything changes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from pyiceberg.expressions import EqualTo, In
from unit_helpers import assert_no_orphans, live_delete_entries, make_rows, scan_ids

import mor
from mor.io.fileio import to_local_path


def stacked_table(catalog: mor.Catalog) -> mor.Table:
    """Two data files: the first with 12 position delete files (12% deleted), the second with one.
    A target size below theirs: neither is a small file that joins a compaction for its size."""
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties={"write.target-file-size-bytes": "1000"})
    table.append(make_rows(range(0, 100)))
    table.append(make_rows(range(100, 200)))
    for k in range(12):
        table.delete(EqualTo("id", k))
    table.delete(EqualTo("id", 150))
    return table


def delete_counts(table: mor.Table) -> list[int]:
    return sorted(len(t.delete_files) for t in table.scan().plan_files())


def test_defaults_compact_files_with_many_delete_files_only(catalog: mor.Catalog) -> None:
    table = stacked_table(catalog)
    expected = scan_ids(table)
    result = table.maintain()
    assert result.compaction is not None and result.compaction.rewritten_data_files == 1
    assert delete_counts(table) == [0, 1]  # 12 delete files >= 10; the single delete stays
    assert result.expiry is not None and result.expiry.expired_snapshots == 0  # all younger than 5 days
    assert result.orphans is not None and list(result.orphans) == []
    assert scan_ids(table) == expected


def test_thresholds_come_from_the_properties(catalog: mor.Catalog) -> None:
    table = stacked_table(catalog)
    table.set_properties(**{"mor.maintain.compact.min-delete-files": "20", "mor.maintain.compact.min-delete-ratio": "0.5"})
    assert table.maintain().compaction.snapshot_id is None
    table.set_properties(**{"mor.maintain.compact.min-delete-ratio": "0.1"})
    assert table.maintain().compaction.rewritten_data_files == 1  # 12% deleted
    table.set_properties(**{"mor.maintain.compact.min-delete-ratio": "0.01"})
    assert table.maintain().compaction.rewritten_data_files == 1  # the other file, 1% deleted
    assert delete_counts(table) == [0, 0] and live_delete_entries(table) == []


def test_expiry_and_orphans_follow_the_retention_properties(catalog: mor.Catalog) -> None:
    table = stacked_table(catalog)
    stray = Path(to_local_path(table.location)) / "data" / "stray.parquet"
    stray.write_bytes(b"x" * 10)
    an_hour_ago = time.time() - 3600
    os.utime(stray, (an_hour_ago, an_hour_ago))
    time.sleep(0.01)
    table.set_properties(
        **{
            "mor.maintain.compact.enabled": "false",
            "history.expire.max-snapshot-age-ms": "0",
            "history.expire.min-snapshots-to-keep": "3",
            "mor.maintain.remove-orphans.min-age-ms": str(30 * 60 * 1000),
        }
    )
    current = table.current_snapshot().snapshot_id
    expected = scan_ids(table)

    result = table.maintain()

    assert result.compaction is None
    assert len(table.snapshots()) == 3 and table.current_snapshot().snapshot_id == current
    assert result.expiry.expired_snapshots == 15 - 3
    assert list(result.orphans) == [str(stray)] and not stray.exists()
    assert scan_ids(table) == expected
    assert_no_orphans(table)


def test_dry_run_changes_nothing(catalog: mor.Catalog) -> None:
    table = stacked_table(catalog)
    table.set_properties(**{"history.expire.max-snapshot-age-ms": "0"})
    before = table.metadata_location
    result = table.maintain(dry_run=True)
    assert result.compaction.dry_run and result.compaction.rewritten_data_files == 1
    assert result.expiry.dry_run and result.expiry.expired_snapshots > 0
    assert catalog.load_table("db.t").metadata_location == before


@pytest.mark.parametrize(
    "name, value",
    [
        ("mor.maintain.compact.min-delete-ratio", "2"),
        ("mor.maintain.compact.min-delete-files", "0"),
        ("mor.maintain.compact.enabled", "yes"),
        ("mor.maintain.remove-orphans.min-age-ms", "-1"),
        ("history.expire.min-snapshots-to-keep", "0"),
    ],
)
def test_bad_policy_values_are_refused_when_set(catalog: mor.Catalog, name: str, value: str) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    with pytest.raises(mor.InvalidArgumentError, match=name.replace(".", r"\.")):
        table.set_properties(**{name: value})
    assert name not in table.properties


def test_progress_reaches_the_callback_for_each_step(catalog: mor.Catalog) -> None:
    table = stacked_table(catalog)
    table.delete(In("id", [180, 181]))
    events: list = []
    table.maintain(progress=events.append)
    assert {e.operation for e in events} >= {"compact"}
    assert all(e.done <= (e.total if e.total is not None else e.done) for e in events)
