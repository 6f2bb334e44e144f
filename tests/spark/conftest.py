"""One SparkSession for the whole test run; every test here is marked `spark`.

The session runs on `local[2]` unless MOR_SPARK_MASTER names another master: the suite's
standalone-cluster run (tests/spark_cluster) starts a master and two workers on loopback
(tests/servers/spark_cluster.py) and runs the tests marked `cluster` in a pytest process of
their own with MOR_SPARK_MASTER=spark://127.0.0.1:<port>, since one process holds one
SparkContext. A test joins that set with `@pytest.mark.cluster` (or a module-wide
`pytestmark = pytest.mark.cluster`), or by its node id in CLUSTER_TESTS below; tests that lean
on the driver's process state (monkeypatching mor, timing) stay out of it.

The session has Hadoop's s3a filesystem (hadoop-aws, tests/servers/hadoop_aws.py) pointed at the
run's moto S3 server, as a Spark deployment on S3 has, so tables there read through Spark's
native scan and mor's JVM delete functions, on the cluster too. A session without s3a falls back
to the Python source; its tests stand in for that session by hiding s3a from mor.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import mor

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for tests.servers
from tests.servers.hadoop_aws import hadoop_aws_jars, s3a_settings
from tests.servers.s3 import s3_server  # noqa: F401  (the session fixture, for the s3a settings)

pytest.importorskip("pyspark", reason="the Spark tests need the mor[spark] extra")

MASTER_ENV = "MOR_SPARK_MASTER"
LOCAL_MASTER = "local[2]"
LOOPBACK = "127.0.0.1"

# More of the cluster set, by node id relative to this folder: a test with its parameters,
# without them for every parameterization, or ending in `*` for every id it begins. For tests whose module carries no `cluster` mark of
# its own, and for a subset of a parametrized test (keeping the cluster run within minutes).
CLUSTER_TESTS: tuple[str, ...] = (
    "test_dml.py::test_spark_verb_leaves_the_rows_the_local_verb_leaves[partitioned-delete]",
    "test_dml.py::test_spark_verb_leaves_the_rows_the_local_verb_leaves[partitioned-merge]",
    "test_read.py::test_every_snapshot_reads_as_the_local_reader[cat-day]",
    "test_write.py::test_appends_round_trip_through_mor_spark_and_pyiceberg",
    "test_write.py::test_first_write_creates_a_partitioned_table",
    "test_write.py::test_overwrite_replaces_data_and_deletes_in_one_snapshot",
    "test_fast_path.py::test_delete_free_files_go_native_and_the_rest_through_mor",
    "test_fast_path.py::test_lists_maps_and_structs_read_natively_and_through_mor",
    "test_dataframe_plan.py::test_deletion_vectors",
    "test_dataframe_plan.py::test_metadata_columns_name_each_row_as_the_table_does[3]",
    # The last snapshot of two Java fixtures (where their deletes have piled up): executors read
    # every snapshot the same way, and the local session reads all of them.
    "test_dataframe_plan.py::test_java_fixture_snapshots[v3_dv_multi-seq11]",
    "test_dataframe_plan.py::test_java_fixture_snapshots[eq_v2_part-seq4]",
    "test_table_api.py::test_delete_and_update_change_the_rows_the_local_verbs_change[v2]",
    "test_table_api.py::test_merge_changes_the_rows_the_local_merge_changes[3]",
    "test_maintenance_spark.py::test_compact_matches_the_local_verb[v2-partitioned]",
    "test_maintenance_spark.py::test_rewrite_position_deletes_matches_the_local_verb[3]",
    "test_changes_spark.py::test_batch_changes_equal_the_local_feed[2]",
    "test_views_and_errors.py::test_errors_inside_spark_jobs_reach_the_caller_as_mor_errors",
    # Of the tests above marked for a whole parametrization, the parameters worth a cluster run:
    "test_dml.py::test_copy_on_write_rewrites_files_like_the_local_api[merge]",
    "test_v3_spark.py::test_spark_verbs_write_deletion_vectors_and_keep_row_ids[delete]",
    "test_v3_spark.py::test_spark_verbs_write_deletion_vectors_and_keep_row_ids[merge]",
)


def spark_master() -> str:
    """The master the session runs on: MOR_SPARK_MASTER, else local[2]."""
    return os.environ.get(MASTER_ENV) or LOCAL_MASTER


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        path = Path(item.fspath)
        if here in path.parents:
            item.add_marker(pytest.mark.spark)
            node = f"{path.relative_to(here).as_posix()}::{item.name}"
            if any(_names(test, node) for test in CLUSTER_TESTS):
                item.add_marker(pytest.mark.cluster)


def _names(test: str, node: str) -> bool:
    """Does the CLUSTER_TESTS entry `test` name the node id `node`?"""
    if test.endswith("*"):
        return node.startswith(test[:-1])
    return node == test or ("[" not in test and node.startswith(test + "["))


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[object]:
    # Workers must run this interpreter, where mor is installed (no sys.path tricks).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    _use_java_17()
    from pyspark.sql import SparkSession

    import mor.spark

    master = spark_master()
    builder = (
        SparkSession.builder.master(master)
        .appName("mor-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.memory", "2g")
    )
    if master.startswith("spark://"):
        # The test cluster listens on loopback only: so must the driver its executors call back.
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
        builder = (
            builder.config("spark.driver.host", LOOPBACK)
            .config("spark.driver.bindAddress", LOOPBACK)
            .config("spark.executor.memory", "1g")
            .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        )
    builder = builder.config("spark.jars", ",".join(str(jar) for jar in hadoop_aws_jars()))
    for key, value in s3a_settings(request.getfixturevalue("s3_server")).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    mor.spark.register(session)
    yield session
    session.stop()


def _use_java_17() -> None:
    """Spark 4 wants Java 17 or 21; a machine may also have a newer JDK first on the PATH."""
    if os.environ.get("JAVA_HOME"):
        return
    for candidate in sorted(Path("/usr/lib/jvm").glob("*17*")):
        if (candidate / "bin" / "java").exists():
            os.environ["JAVA_HOME"] = str(candidate)
            return


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.fixture
def catalog(warehouse: Path) -> mor.Catalog:
    return mor.load_catalog(warehouse)


@pytest.fixture
def read_mor(spark: object, warehouse: Path) -> Callable[..., object]:
    """`read_mor("db.t", **options)`: a DataFrame of format "mor" on the test warehouse."""

    def read(name: str, **options: str) -> object:
        reader = spark.read.format("mor").option("warehouse", str(warehouse))  # type: ignore[attr-defined]
        for key, value in options.items():
            reader = reader.option(key.replace("_", "-"), value)
        return reader.load(name)

    return read
