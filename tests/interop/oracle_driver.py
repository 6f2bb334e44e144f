"""Runs under the iceberg-oracle venv (pyspark 3.5 + Iceberg Java): reads the requested table
snapshots with Iceberg Java and writes each result as Parquet. One JVM for all reads.

usage: python oracle_driver.py <oracle dir> <requests.json>
requests: [{"metadata": path, "snapshot_id": int, "out": path.parquet}, ...]
"""

import json
import sys

import pyarrow.parquet as pq

sys.path.insert(0, sys.argv[1])
import oracle  # noqa: E402

spark = oracle.spark_session()
for request in json.load(open(sys.argv[2])):
    rows = oracle.collect_arrow(oracle.read_rows(spark, request["metadata"], request["snapshot_id"]))
    pq.write_table(rows, request["out"])
spark.stop()
