"""Data file locations as Spark's native Parquet reader takes and reports them.

mor keeps locations as the table metadata spells them (`/tmp/w/x.parquet`, `file:/...`,
`s3://bucket/key`). Spark's reader wants a Hadoop path, and reports the file a row came from
(`_metadata.file_path`) as that path's URI: `file:/tmp/a%20b.parquet` for `/tmp/a b.parquet`
(no authority, percent-encoded). Anti-joins on the file therefore compare against
`spark_file_key`, which encodes the location the way Java's URI does (through the JVM, so
every character is encoded exactly as Spark will).

Object storage reads natively only when the session has a Hadoop filesystem for `s3a` (the
hadoop-aws jar and its credentials, configured by the user); `s3://bucket/key` is then read as
`s3a://bucket/key`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from mor.io.fileio import is_object_store, to_local_path


def spark_read_path(location: str) -> str:
    """The path to hand `spark.read.parquet` for a data file location."""
    if is_object_store(location):
        return "s3a://" + location.split("://", 1)[1]
    return to_local_path(location)


def spark_file_key(spark: SparkSession, location: str) -> str:
    """`location` as Spark reports it in `_metadata.file_path`."""
    if is_object_store(location):
        parts = urlsplit(location)
        scheme, authority, path = "s3a", parts.netloc, location.split("://", 1)[1][len(parts.netloc) :]
    else:
        scheme, authority, path = "file", None, to_local_path(location)
    return _uri(spark, scheme, authority, path)


def _uri(spark: SparkSession, scheme: str, authority: str | None, path: str) -> str:
    jvm = spark._jvm
    assert jvm is not None  # a live session's gateway (pyspark asserts the same)
    return str(jvm.java.net.URI(scheme, authority, path, None, None).toString())


def has_s3a(spark: SparkSession) -> bool:
    """Can this session's Hadoop read `s3a://` paths (is S3AFileSystem on its classpath)? One
    JVM call: cheap enough to ask on every read, so a session configured later is seen."""
    jvm = spark._jvm
    assert jvm is not None  # a live session's gateway (pyspark asserts the same)
    conf = spark._jsc.hadoopConfiguration()
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass("s3a", conf)
    except Py4JJavaError:  # ClassNotFoundException, or "No FileSystem for scheme"
        return False
    return True
