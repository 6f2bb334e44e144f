"""Planning a Spark read or DML job: data manifests read on the executors for large tables, as
Iceberg-Spark's distributed planning does (`planning_mode`).

    "local"        the driver reads every manifest (threads; mor/planning/planner.py)
    "distributed"  one Spark task per data manifest reads it on an executor, with the filter,
                   and sends back the files it keeps; the driver reads the delete manifests
                   and assigns deletes (mor/planning/data_manifests.py)
    "auto"         distributed when the snapshot's data manifests hold DISTRIBUTED_FROM_FILES
                   live files or more, in two manifests or more, and the session has executors
                   to send work to (not Spark Connect)

Either way the tasks are the same, in the same order (tests/spark/test_distributed_planning.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import SparkSession

from mor.api.scan import Scan
from mor.errors import InvalidArgumentError
from mor.format.manifest import ManifestFile
from mor.format.spec import ManifestContent
from mor.planning.data_manifests import DataManifestReader, ManifestFiles, ReadDataManifests
from mor.planning.planner import manifests_of
from mor.planning.task import FileScanTask

PLANNING_MODES = ("auto", "local", "distributed")
DISTRIBUTED_FROM_FILES = 500_000


def planned_tasks(spark: SparkSession, scan: Scan, planning_mode: str = "auto", keep_metrics: bool = False) -> list[FileScanTask]:
    """The tasks of `scan`, planned as `planning_mode` says."""
    return list(scan.plan_tasks(keep_metrics, read_data_manifests=data_manifest_reading(spark, scan, planning_mode)))


def data_manifest_reading(spark: SparkSession, scan: Scan, planning_mode: str) -> ReadDataManifests | None:
    """Where `scan`'s data manifests are read: None on the driver."""
    if planning_mode not in PLANNING_MODES:
        raise InvalidArgumentError(f"planning_mode must be one of {', '.join(PLANNING_MODES)}, not {planning_mode!r}")
    if planning_mode == "local" or scan.snapshot is None:
        return None
    connect = not hasattr(spark, "sparkContext") or not hasattr(spark, "_jsparkSession")
    if connect:
        if planning_mode == "distributed":
            raise InvalidArgumentError(
                "planning_mode='distributed' needs a classic Spark session: a Spark Connect client has no executors to send manifests to"
            )
        return None
    if planning_mode == "auto":
        data = [m for m in manifests_of(scan.table.io, scan.snapshot) if m.content == ManifestContent.DATA]
        if len(data) < 2 or sum(m.added_files_count + m.existing_files_count for m in data) < DISTRIBUTED_FROM_FILES:
            return None
    return _on_executors(spark)


def _on_executors(spark: SparkSession) -> ReadDataManifests:
    def read(reader: DataManifestReader, manifests: list[ManifestFile]) -> Iterable[ManifestFiles]:
        if not manifests:
            return []
        # One partition per manifest, fetched in order as the driver plans: a partition's files
        # arrive while the next ones are still being read.
        rdd = spark.sparkContext.parallelize(manifests, len(manifests)).map(reader.read)
        return rdd.toLocalIterator(prefetchPartitions=True)

    return read
