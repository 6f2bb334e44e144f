"""Distributed maintenance (mor.spark.maintenance, mor.spark.orphans) against the local verbs:
twin tables with the same history, the local verb on one and the Spark verb on the other; the
same rows after, the same live files (by content, spec, partition and rows), the same result
counts; dry runs change nothing; conflicts and failing tasks end as locally, leaving nothing."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.expressions import In
from spark_helpers import SCHEMA, canonical, rows

import mor
from mor.format.manifest_list import read_manifest_list
from mor.io.fileio import to_local_path
from mor.maintenance.reachable import referenced_locations
from mor.spark import maintenance
from mor.spark.maintenance import compact, remove_orphan_files, rewrite_position_deletes


def build(catalog: mor.Catalog, name: str, version: int, partition_by: list[str] | None, evolve: bool = False) -> mor.Table:
    """Four appends (per partition), position deletes (v3: deletion vectors), an UPDATE, and
    equality deletes; `evolve`: a spec change halfway, so files of two specs."""
    table = catalog.create_table(name, schema=SCHEMA, partition_by=partition_by, format_version=version)
    for i, ids in enumerate((range(0, 40), range(40, 80), range(80, 120), range(120, 160))):
        if evolve and i == 2:
            table.update_spec().add_field("bucket(2, id)").commit()
        table.append(rows(ids))
    table.delete(In("id", [3, 13, 44, 85, 121]))
    table.delete(In("id", [4, 45, 86]))
    table.update({"n": pc.field("n") + 1000}, where="id in (20, 100)")
    table.delete_rows(pa.table({"id": pa.array([7, 48, 95, 150], pa.int64())}))
    return table


def twins(catalog: mor.Catalog, **kwargs: Any) -> tuple[mor.Table, mor.Table]:
    return build(catalog, "db.local", **kwargs), build(catalog, "db.spark", **kwargs)


def table_rows(table: mor.Table) -> list[tuple]:
    return canonical(table.scan().to_arrow())


def live_files(table: mor.Table) -> list[tuple]:
    """The live data and delete files, by what they are rather than by name."""
    out = []
    for task in table.scan().plan_files():
        f = task.data_file
        out.append(("data", f.spec_id, f.partition, f.record_count))
        for d in task.delete_files:
            out.append((f"delete {d.content}", d.spec_id, d.partition, d.record_count, d.is_deletion_vector, f.record_count))
    return sorted(out, key=repr)


def counts(result: Any) -> dict[str, object]:
    """A result's figures but sizes: a delete file holds its data files' paths, which differ
    between twins, and a bin's files are read in path order, so twins write their rows in
    another order (the sizes are checked against the snapshot instead)."""
    return {k: v for k, v in result.to_dict().items() if k != "snapshot_id" and not k.endswith("_bytes")}


def files_under(table: mor.Table) -> set[str]:
    return {str(p) for p in Path(to_local_path(table.location)).rglob("*") if p.is_file()}


TABLES = [
    pytest.param({"version": 2, "partition_by": None}, id="v2"),
    pytest.param({"version": 2, "partition_by": ["category"]}, id="v2-partitioned"),
    pytest.param({"version": 3, "partition_by": ["category"]}, id="v3-partitioned"),
    pytest.param({"version": 2, "partition_by": ["category"], "evolve": True}, id="v2-evolved-spec"),
    pytest.param({"version": 3, "partition_by": None, "evolve": True}, id="v3-evolved-spec"),
]


@pytest.mark.parametrize("kwargs", TABLES)
def test_compact_matches_the_local_verb(spark: Any, catalog: mor.Catalog, kwargs: dict[str, Any]) -> None:
    local, distributed = twins(catalog, **kwargs)
    expected = table_rows(local)

    want = local.compact(target_file_size=2000, min_input_files=2)
    got = compact(spark, distributed, target_file_size=2000, min_input_files=2)

    assert got.rewritten_data_files > 1 and got.snapshot_id == distributed.current_snapshot().snapshot_id
    assert counts(got) == counts(want)
    assert table_rows(distributed) == table_rows(local) == expected
    assert live_files(distributed) == live_files(local)
    summary = distributed.current_snapshot().summary
    assert distributed.current_snapshot().operation == "replace"
    assert int(summary["added-files-size"]) == got.added_data_bytes
    assert {k: v for k, v in distributed.current_snapshot().summary.items() if "size" not in k} == {
        k: v for k, v in local.current_snapshot().summary.items() if "size" not in k
    }
    if kwargs["version"] == 3:  # rows keep their lineage

        def lineage(t: mor.Table) -> Any:
            return canonical(t.scan(columns=["id", "_row_id", "_last_updated_sequence_number"]).to_arrow())

        assert lineage(distributed) == lineage(local)


def test_compact_with_where_and_thresholds_matches(spark: Any, catalog: mor.Catalog) -> None:
    local, distributed = twins(catalog, version=2, partition_by=["category"])
    options = {"where": "category = 'a'", "min_delete_ratio": 0.05, "min_delete_files": 2}
    want = local.compact(**options)
    got = compact(spark, distributed, **options)
    assert counts(got) == counts(want) and got.rewritten_data_files > 0
    assert live_files(distributed) == live_files(local)
    assert table_rows(distributed) == table_rows(local)


def test_dry_runs_change_nothing(spark: Any, catalog: mor.Catalog) -> None:
    local, distributed = twins(catalog, version=2, partition_by=["category"])
    before, files, metadata = table_rows(distributed), files_under(distributed), distributed.metadata_location

    got = compact(spark, distributed, min_input_files=2, dry_run=True)
    orphans = remove_orphan_files(spark, distributed, older_than=dt.datetime.now(dt.UTC) + dt.timedelta(days=1), dry_run=True)

    assert got.dry_run and got.snapshot_id is None and got.rewritten_data_files > 0
    assert counts(got) == counts(local.compact(min_input_files=2, dry_run=True))
    assert orphans.dry_run and list(orphans) == []
    distributed.refresh()
    assert distributed.metadata_location == metadata and files_under(distributed) == files
    assert table_rows(distributed) == before


def test_nothing_to_compact_is_no_commit(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(10)))
    snapshot = table.current_snapshot().snapshot_id
    result = compact(spark, table)
    assert result.snapshot_id is None and result.rewritten_data_files == 0
    assert table.current_snapshot().snapshot_id == snapshot


def race(monkeypatch: pytest.MonkeyPatch, concurrent: Callable[[], object]) -> list[int]:
    """Run `concurrent()` once, after the bins are written and before the commit; the list
    returned counts the plans written."""
    real, pending, plans = maintenance.rewrite_bins, [concurrent], []

    def written_then_raced(*args: Any, **kwargs: Any) -> Any:
        validate = real(*args, **kwargs)
        plans.append(1)
        while pending:
            pending.pop()()
        return validate

    monkeypatch.setattr(maintenance, "rewrite_bins", written_then_raced)
    return plans


def test_a_delete_committed_meanwhile_makes_it_plan_again(spark: Any, catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = build(catalog, "db.t", version=2, partition_by=None)
    plans = race(monkeypatch, lambda: catalog.load_table("db.t").delete(In("id", [60, 61])))
    expected = [r for r in table_rows(table) if r[0] not in (60, 61)]

    result = compact(spark, table)

    assert len(plans) == 2  # the first plan conflicted with the DELETE
    assert table_rows(table) == expected and result.written_rows == len(expected)
    assert all(not t.delete_files for t in table.scan().plan_files())
    assert files_under(table) <= reachable(table)


def test_without_replans_the_conflict_is_raised_as_locally(spark: Any, catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = build(catalog, "db.t", version=2, partition_by=None)
    table.set_properties(**{"mor.dml.replan.num-retries": "0"})
    race(monkeypatch, lambda: catalog.load_table("db.t").delete(In("id", [60, 61])))
    expected = [r for r in table_rows(table) if r[0] not in (60, 61)]
    files = files_under(table)

    with pytest.raises(mor.CommitConflictError, match="position deletes"):
        compact(spark, table)

    fresh = catalog.load_table("db.t")
    assert fresh.current_snapshot().operation == "delete" and table_rows(fresh) == expected
    assert files_under(fresh) - files <= reachable(fresh)  # the DELETE's files, none of compaction's


def reachable(table: mor.Table) -> set[str]:
    return {to_local_path(p) for p in referenced_locations(table.io, table.metadata, table.metadata_location)}


def break_one_delete_file(table: mor.Table) -> None:
    """Overwrite the position delete file of one partition with bytes no reader takes."""
    task = next(t for t in table.scan().plan_files() if t.position_deletes and t.data_file.partition == ("b",))
    Path(to_local_path(task.position_deletes[0].file_path)).write_bytes(b"not parquet at all")


def test_a_failing_task_leaves_no_files_and_the_table_unchanged(spark: Any, catalog: mor.Catalog) -> None:
    local, distributed = twins(catalog, version=2, partition_by=["category"])
    for table in (local, distributed):
        break_one_delete_file(table)
    with pytest.raises(Exception) as local_error:
        local.compact(min_input_files=2)
    metadata, files = distributed.metadata_location, files_under(distributed)

    with pytest.raises(Exception) as spark_error:
        compact(spark, distributed, target_file_size=2000, min_input_files=2)  # several bins: some succeed

    assert type(spark_error.value) is type(local_error.value)
    assert files_under(distributed) == files
    distributed.refresh()
    assert distributed.metadata_location == metadata


@pytest.mark.parametrize("version", [2, 3])
def test_rewrite_position_deletes_matches_the_local_verb(spark: Any, catalog: mor.Catalog, version: int) -> None:
    local, distributed = twins(catalog, version=2, partition_by=["category"])
    local.delete(In("id", [5, 46]))
    distributed.delete(In("id", [5, 46]))
    if version == 3:  # v2 position delete files left from before the upgrade become vectors
        local.upgrade(3)
        distributed.upgrade(3)
    expected = table_rows(local)

    want = local.rewrite_position_deletes()
    got = rewrite_position_deletes(spark, distributed)

    assert got.removed_delete_files > 0 and got.snapshot_id == distributed.current_snapshot().snapshot_id
    assert counts(got) == counts(want)
    assert table_rows(distributed) == table_rows(local) == expected
    assert live_files(distributed) == live_files(local)
    assert rewrite_position_deletes(spark, distributed).snapshot_id is None  # nothing left to merge


def add_orphans(table: mor.Table, old: bool) -> list[str]:
    """Unreferenced files in the data folder, a partition folder and the metadata folder."""
    root = Path(to_local_path(table.location))
    paths = [root / "data" / "stray.parquet", root / "data" / "category=a" / "stray.parquet", root / "metadata" / "stray.avro"]
    when = (dt.datetime.now() - dt.timedelta(days=10)).timestamp() if old else None
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"orphan")
        if when is not None:
            os.utime(p, (when, when))
    return sorted(str(p) for p in paths)


def test_orphans_are_found_and_removed_as_locally(spark: Any, catalog: mor.Catalog) -> None:
    local, distributed = twins(catalog, version=2, partition_by=["category"])
    for table in (local, distributed):
        table.compact(min_input_files=2)  # the replaced files stay referenced by older snapshots
    stray = {t.identifier: add_orphans(t, old=True) for t in (local, distributed)}
    young = Path(to_local_path(distributed.location)) / "data" / "young.parquet"
    young.write_bytes(b"too new")

    want = local.remove_orphan_files(dry_run=True)
    found = remove_orphan_files(spark, distributed, dry_run=True)
    assert list(found) == stray["db.spark"] and list(want) == stray["db.local"]
    assert found.removed_bytes == want.removed_bytes and found.skipped_paths == want.skipped_paths == ()

    removed = remove_orphan_files(spark, distributed)

    assert list(removed) == list(found) and not removed.dry_run
    assert not any(Path(p).exists() for p in removed) and young.exists()
    assert list(distributed.remove_orphan_files(dry_run=True)) == []
    assert table_rows(distributed) == table_rows(local)


def test_orphan_listing_skips_links_as_locally(spark: Any, catalog: mor.Catalog, tmp_path: Path) -> None:
    table = build(catalog, "db.t", version=2, partition_by=["category"])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "precious.parquet").write_bytes(b"keep")
    link = Path(to_local_path(table.location)) / "data" / "link"
    link.symlink_to(outside, target_is_directory=True)
    cutoff = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)

    want = table.remove_orphan_files(older_than=cutoff, dry_run=True)
    got = remove_orphan_files(spark, table, older_than=cutoff)

    assert list(got) == list(want) == [] and got.skipped_paths == want.skipped_paths == (str(link),)
    assert (outside / "precious.parquet").exists()


def test_unreadable_manifest_removes_nothing(spark: Any, catalog: mor.Catalog) -> None:
    table = build(catalog, "db.t", version=2, partition_by=None)
    add_orphans(table, old=True)
    first = read_manifest_list(table.io, table.current_snapshot().manifest_list)[0]
    Path(to_local_path(first.manifest_path)).write_bytes(b"broken")
    files = files_under(table)

    with pytest.raises(mor.MorError) as local_error:
        table.remove_orphan_files()
    with pytest.raises(mor.MorError) as spark_error:
        remove_orphan_files(spark, table)

    assert type(spark_error.value) is type(local_error.value)
    assert files_under(table) == files


def test_on_s3_orphans_and_compaction_match_the_local_verbs(spark: Any, s3_server: Any, tmp_path: Path) -> None:
    catalog = mor.load_catalog(s3_server.fresh_prefix(), uri=f"sqlite:///{tmp_path}/catalog.db", properties=s3_server.properties)
    local, distributed = twins(catalog, version=2, partition_by=["category"])
    stray = {}
    for table in (local, distributed):
        stray[table.identifier] = sorted(
            table.io.path(f"{table.location}/{p}") for p in ("data/stray.parquet", "data/category=a/x.avro", "metadata/y")
        )
        for path in stray[table.identifier]:
            with table.io.open_output(path) as out:
                out.write(b"orphan")
    cutoff = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)  # objects are all new: take every one

    want = local.remove_orphan_files(older_than=cutoff, dry_run=True)
    got = remove_orphan_files(spark, distributed, older_than=cutoff)
    assert list(want) == stray["db.local"] and list(got) == stray["db.spark"]
    assert not any(distributed.io.exists(p) for p in got)
    assert list(distributed.remove_orphan_files(older_than=cutoff, dry_run=True)) == []

    assert counts(compact(spark, distributed, min_input_files=2)) == counts(local.compact(min_input_files=2))
    assert table_rows(distributed) == table_rows(local)
    assert all(t.data_file.file_path.startswith("s3://") for t in distributed.scan().plan_files())


def test_jobs_say_what_they_do_and_progress_is_reported(spark: Any, catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    from mor.spark import orphans as orphans_module

    table = build(catalog, "db.t", version=2, partition_by=["category"])
    seen: list[str | None] = []
    real = maintenance.job_description

    @contextlib.contextmanager
    def recorded(session: Any, what: str) -> Iterator[None]:
        with real(session, what):
            seen.append(session.sparkContext.getLocalProperty("spark.job.description"))  # what Spark's UI shows
            yield

    monkeypatch.setattr(maintenance, "job_description", recorded)
    monkeypatch.setattr(orphans_module, "job_description", recorded)
    events: list[Any] = []

    merged = rewrite_position_deletes(spark, table)  # first: compaction leaves no deletes to merge
    result = compact(spark, table, target_file_size=2000, min_input_files=2, progress=events.append)
    remove_orphan_files(spark, table, dry_run=True)

    assert merged.added_delete_files > 0 and all(s is not None for s in seen)
    rewrite, compaction, read, listing = seen
    assert rewrite.startswith("mor rewrite_position_deletes db.t: merge the deletes of ") and rewrite.endswith(" tasks")
    assert compaction.startswith(f"mor compact db.t: rewrite {result.rewritten_data_files} data files in ") and compaction.endswith(" bins")
    assert read.startswith("mor remove_orphan_files db.t: read ") and read.endswith(" manifests")
    assert listing.startswith("mor remove_orphan_files db.t: list ") and listing.endswith(" folders")
    assert spark.sparkContext.getLocalProperty("spark.job.description") is None  # the caller's (none) is back
    rewritten = result.rewritten_data_bytes
    assert [(e.stage, e.done, e.total, e.unit) for e in events] == [
        ("rewrite data files", 0, rewritten, "bytes"),
        ("rewrite data files", rewritten, rewritten, "bytes"),
    ]
