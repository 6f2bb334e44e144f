"""The Spark tests marked `cluster` on a Spark standalone cluster (issue 29): a master and two
workers the suite starts on loopback (tests/servers/spark_cluster.py), each a JVM of its own,
executors in processes of their own, so nothing passes through the driver's process state.

One process holds one SparkContext, and the tests in tests/spark share a local[2] one; so the
cluster run is a second pytest process on tests/spark with MOR_SPARK_MASTER naming the cluster
(tests/spark/conftest.py builds its session on it). Its tables live in temporary folders (the
workers share this machine's file system) and, for tests/spark/test_s3_spark.py, on the moto S3
server that process starts on 127.0.0.1, which the executors reach over loopback. Tests needing
the PostgreSQL server are left out to keep the run short; their catalog work is the driver's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for tests.servers
from tests.servers.spark_cluster import SparkCluster, spark_cluster  # noqa: F401  (the session fixture)

pytestmark = pytest.mark.spark

CHECKOUT = Path(__file__).resolve().parents[2]
SELECTION = "cluster and not postgres"
RUN_TIMEOUT = 1800  # seconds: bounds a hung run, not a speed check
APP_NAME = "mor-tests"  # tests/spark/conftest.py's


def test_the_cluster_tests_pass_on_a_standalone_cluster(spark_cluster: SparkCluster, tmp_path: Path) -> None:  # noqa: F811
    report = tmp_path / "cluster-run.xml"
    command = [
        sys.executable, "-m", "pytest", "tests/spark", "-m", SELECTION,
        "-q", "-p", "no:cacheprovider", f"--junitxml={report}", f"--basetemp={tmp_path / 'run'}",
    ]  # fmt: skip
    env = {**os.environ, "MOR_SPARK_MASTER": spark_cluster.url, "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run(command, cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    output = f"{' '.join(command)}\n{run.stdout[-20000:]}\n{run.stderr[-5000:]}"
    assert run.returncode == 0, f"the cluster run failed (exit {run.returncode}):\n{output}{spark_cluster.log_tails()}"

    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None, output
    counts = {key: int(suite.get(key, "0")) for key in ("tests", "failures", "errors", "skipped")}
    assert counts["tests"] >= 30 and counts["failures"] == counts["errors"] == counts["skipped"] == 0, f"{counts}\n{output}"

    # The session ran on this cluster, not on a local master: the master lists it as finished,
    # and every worker ran an executor of it.
    status = spark_cluster.status() or {}
    finished = [app for app in status.get("completedapps", []) if app.get("name") == APP_NAME]
    assert [app.get("state") for app in finished] == ["FINISHED"], status
    workers = spark_cluster.worker_statuses()
    assert len(workers) == spark_cluster.workers, status
    for worker in workers:
        assert any(e.get("appid") == finished[0]["id"] for e in worker.get("finishedexecutors", [])), worker
