"""Runs in the Spark 3.5 env (tests/spark35/spark35_env.py): reads tables through
mor.spark.read_table (native scans filtered by mor's delete functions: Spark 3.5 has no Python
data sources) and writes each
result with Spark's own Parquet writer, for the test to compare with the local reader.

    python driver35.py requests.json

requests.json: [{"metadata": ..., "snapshot_id": ..., "columns": [...] | null, "out": dir}];
next to each `out` directory, `out + ".schema"` gets the DataFrame's Spark schema.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(request_file: str) -> None:
    from pyspark.sql import SparkSession

    import mor
    import mor.spark

    assert not mor.spark.HAS_PYTHON_SOURCE, "this driver is for pyspark without Python data sources"
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("mor-spark35")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for request in json.loads(Path(request_file).read_text()):
        table = mor.StaticTable.from_metadata(request["metadata"])
        df = mor.spark.read_table(spark, table, snapshot_id=request["snapshot_id"], columns=request["columns"])
        df.write.mode("overwrite").parquet(request["out"])
        Path(request["out"] + ".schema").write_text(df.schema.simpleString())
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
