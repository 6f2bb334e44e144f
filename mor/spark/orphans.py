"""Orphan-file removal on Spark: the listing and the reading of manifests spread over executors.

    mor.spark.remove_orphan_files(spark, table, older_than=dt.timedelta(days=3), dry_run=True)

Same rules and result as `table.remove_orphan_files` (mor/maintenance/orphans.py): only the
table's own unreferenced files older than the threshold go, the metadata being readable in
full, or nothing does. What is spread:
  - the reachable set: the driver reads the metadata and every snapshot's manifest list, the
    executors read the manifests (each names its content files), one Spark task per few;
  - the listing: the driver lists the top folder levels of the table location (local folders
    or S3 prefixes; links never entered) until it has about `defaultParallelism` folders, or
    three levels deep, and each of those folders is listed whole by an executor;
  - the deletion: the orphans are deleted on the executors, in `defaultParallelism` tasks.
The orphans are chosen on the driver (`select_orphans`, with the table's `Ownership`), from
what the executors found: the same choice as the local verb, from the same listing. Executors
must see the table's files as the driver does: the same local file system (one machine, or a
shared mount) or the table's object storage, reached through the table's FileIO.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING

from mor.api.table import Table
from mor.errors import MorError
from mor.io.fileio import FileIO
from mor.maintenance.orphans import DEFAULT_MIN_AGE, ListedFile, OrphanResult, cutoff_time, list_files, list_top, select_orphans
from mor.maintenance.ownership import REFUSE_SAME_OR_INNER, Ownership, Place
from mor.maintenance.reachable import manifest_references, metadata_references
from mor.progress import Progress, ProgressArg
from mor.spark.dml import job_description
from mor.spark.errors import spark_errors

if TYPE_CHECKING:
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyspark.sql import SparkSession

    from mor.format.manifest import ManifestFile

DRIVER_LIST_DEPTH = 3  # folder levels the driver lists at most before handing folders out


@spark_errors()
def remove_orphan_files(
    spark: SparkSession,
    table: Table,
    older_than: dt.timedelta | dt.datetime = DEFAULT_MIN_AGE,
    dry_run: bool = False,
    progress: ProgressArg = None,
) -> OrphanResult:
    """`table.remove_orphan_files(...)`, listed, read and deleted on Spark (module docstring)."""
    table.operations()
    table.refresh()
    ownership = Ownership(
        table.io, table.identifier, table.metadata.location, table.catalog_view, "remove_orphan_files", REFUSE_SAME_OR_INNER
    )
    cutoff = cutoff_time(older_than)
    reporter = Progress("remove_orphan_files", progress)
    referenced = reachable_locations(spark, table)
    listed, links = list_location(spark, table, ownership.literal)
    orphans = select_orphans(referenced, listed, links, cutoff, ownership)
    if not dry_run and orphans.owned:
        with reporter.stage("delete orphan files", len(orphans.owned)) as step:
            delete_files(spark, table, list(orphans.owned))
            step.advance(len(orphans.owned))
    return OrphanResult(orphans.owned, sum(orphans.owned.values()), dry_run, orphans.skipped)


def reachable_locations(spark: SparkSession, table: Table) -> set[str]:
    """Every location the table's metadata references (`referenced_locations`), its manifests
    read on the executors."""
    found, manifests = metadata_references(table.io, table.metadata, table.metadata_location)
    if not manifests:
        return found
    sc = spark.sparkContext
    slices = min(len(manifests), sc.defaultParallelism)
    read = partial(_read_manifests, table.io, table.metadata.specs(), table.metadata.schema())
    with job_description(spark, f"mor remove_orphan_files {table.identifier}: read {len(manifests)} manifests"):
        for locations in sc.parallelize(list(manifests.values()), slices).mapPartitions(read).collect():
            found |= locations
    return found


def _read_manifests(io: FileIO, specs: dict[int, PartitionSpec], schema: Schema, manifests: Iterable[ManifestFile]) -> Iterator[set[str]]:
    found: set[str] = set()
    for manifest in manifests:
        found |= manifest_references(io, manifest, specs, schema)
    yield found


def list_location(spark: SparkSession, table: Table, where: Place) -> tuple[list[ListedFile], list[str]]:
    """The regular files under `where` and the symbolic links met (`list_files`), the folders
    below its top levels listed on the executors."""
    sc = spark.sparkContext
    files, links, folders = list_top(table.io, where, DRIVER_LIST_DEPTH, sc.defaultParallelism)
    if folders:
        what = f"mor remove_orphan_files {table.identifier}: list {len(folders)} folders"
        with job_description(spark, what):
            for found, linked in sc.parallelize(folders, len(folders)).map(partial(_list_folder, table.io)).collect():
                files += found
                links += linked
    return files, links


def _list_folder(io: FileIO, folder: Place) -> tuple[list[ListedFile], list[str]]:
    return list_files(io, folder)


def delete_files(spark: SparkSession, table: Table, paths: list[str]) -> None:
    """Delete `paths` on the executors; every one is tried, then the first failure is raised
    (as a StorageError, as the local verb's)."""
    sc = spark.sparkContext
    slices = min(len(paths), sc.defaultParallelism)
    with job_description(spark, f"mor remove_orphan_files {table.identifier}: delete {len(paths)} orphan files"):
        failures = sc.parallelize(paths, slices).mapPartitions(partial(_delete, table.io)).collect()
    if failures:
        raise failures[0]


def _delete(io: FileIO, paths: Iterator[str]) -> Iterator[MorError]:
    for path in paths:
        try:
            io.delete(path)
        except MorError as e:
            yield e
