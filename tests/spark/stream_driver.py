"""A Spark driver of its own for the streaming sink's crash tests: streams the Parquet files of
`input` (one file per micro-batch) into table db.t of `warehouse` with format "mor", from the
checkpoint `checkpoint`, until every file present at start is written (availableNow).

    python stream_driver.py <input> <warehouse> <checkpoint>

Run with MOR_FAULT_POINT / MOR_FAULT_KILL=group in its environment, a commit kills this
process, its JVM and its workers (tests/faults/sitecustomize.py); run again, it resumes from the
checkpoint."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(source: str, warehouse: str, checkpoint: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["MOR_FAULT_PGID"] = str(os.getpgid(0))  # a fault kills this driver whole (tests/faults)
    for candidate in sorted(Path("/usr/lib/jvm").glob("*17*")):
        if not os.environ.get("JAVA_HOME") and (candidate / "bin" / "java").exists():
            os.environ["JAVA_HOME"] = str(candidate)
    from pyspark.sql import SparkSession

    import mor.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("mor-stream-driver")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    mor.spark.register(spark)
    rows = spark.readStream.schema("id long, part long").option("maxFilesPerTrigger", 1).parquet(source)
    query = (
        rows.writeStream.format("mor")
        .option("warehouse", warehouse)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start("db.t")
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
