"""The one place mor touches PySpark's and py4j's private names (`_jvm`, `_jsc`, `_jdf`,
`_jsparkSession`, `_jreader`, ...): the handles of a classic session's driver JVM, which mor
needs where PySpark offers no public call. A PySpark release that renames them breaks this
module alone; tests/unit/spark/test_jvm_bridge.py keeps every other module of mor off them.

Each function answers for a classic session (its driver JVM reached through py4j's gateway);
`is_classic` tells one from a Spark Connect client, which has none of them. The Java objects
returned are py4j proxies: their public Java methods are called as Python methods.
"""

from __future__ import annotations

from py4j.java_gateway import JavaObject, JVMView
from pyspark.sql import DataFrame, DataFrameReader, SparkSession


def is_classic(spark: SparkSession) -> bool:
    """Is `spark` a classic session, with a driver JVM in reach (not a Spark Connect client)?"""
    return hasattr(spark, "_jsparkSession")


def is_stopped(spark: SparkSession) -> bool:
    """Has the SparkContext of `spark` been stopped (its Java context released)?"""
    return getattr(spark.sparkContext, "_jsc", None) is None


def jvm(spark: SparkSession) -> JVMView:
    """The gateway's view of the driver JVM: `jvm(spark).java.util.ArrayList()` and the like."""
    view = spark._jvm
    assert view is not None  # a live session's gateway (pyspark asserts the same)
    return view


def hadoop_configuration(spark: SparkSession) -> JavaObject:
    """The SparkContext's Hadoop Configuration (Java, live: a setting made on it applies)."""
    return spark._jsc.hadoopConfiguration()


def java_dataframe(df: DataFrame) -> JavaObject:
    """The Java Dataset behind `df` (AttributeError for a Spark Connect DataFrame)."""
    return df._jdf


def read_parquet(reader: DataFrameReader, paths: JavaObject) -> DataFrame:
    """`reader.parquet(...)` of paths already in the JVM (a Scala Seq of strings): PySpark's own
    `parquet(*paths)` converts a Python list one element a gateway call."""
    return reader._df(reader._jreader.parquet(paths))
