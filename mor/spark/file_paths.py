"""Data file locations as Spark's native Parquet reader takes and reports them.

mor keeps locations as the table metadata spells them (`/tmp/w/x.parquet`, `file:/...`,
`s3://bucket/key`). Spark's reader wants a Hadoop path, and reports the file a row came from
(`_metadata.file_path`) as that path's URI: `file:/tmp/a%20b.parquet` for `/tmp/a b.parquet`
(no authority, percent-encoded); mor's delete functions key files the same way, in Java
(jvm/src/mor/jvm/Descriptor.java, `fileKey`).

Object storage reads natively only when the session has a Hadoop filesystem for `s3a` (the
hadoop-aws jar and its credentials, configured by the user); `s3://bucket/key` is then read as
`s3a://bucket/key`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from py4j.protocol import Py4JJavaError
from pyiceberg.schema import Schema
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from mor.errors import CorruptMetadataError, UnsupportedFeatureError
from mor.io.fileio import is_object_store, to_local_path
from mor.read.task_reader import POSITION_COLUMN

# The metadata columns of a read with positions (format "mor" with option metadata-columns, and
# the DML target rows): the row's data file as the table spells it, and its position there.
FILE_COLUMN = "_file"
POS_COLUMN = POSITION_COLUMN


def spark_read_path(location: str) -> str:
    """The path to hand `spark.read.parquet` for a data file location."""
    if is_object_store(location):
        return "s3a://" + location.split("://", 1)[1]
    return to_local_path(location)


def native_parquet(spark: SparkSession, schema: StructType, locations: Sequence[str]) -> DataFrame:
    """Spark's native Parquet read of these data files with `schema`. A missing file is the
    CorruptMetadataError the local reader raises (Spark lists the files right away), chained to
    Spark's error."""
    from pyspark.errors import AnalysisException

    try:
        return spark.read.schema(schema).parquet(*[spark_read_path(location) for location in locations])
    except AnalysisException as e:
        found = _MISSING.search(str(e))
        if found is None:
            raise
        raise CorruptMetadataError(f"data file {found.group(1)} is missing") from e


_MISSING = re.compile(r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?(?:\s|$)")


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


def check_metadata_columns_free(schema: Schema) -> None:
    """UnsupportedFeatureError when a table column has the name of a metadata column (a table
    another engine made: mor refuses such names, RESERVED_COLUMNS)."""
    clash = next((f.name for f in schema.fields if f.name in (FILE_COLUMN, POS_COLUMN)), None)
    if clash is not None:
        raise UnsupportedFeatureError(
            f"the table has a column named {clash!r}, the name of a metadata column: metadata-columns (and Spark's "
            "MERGE/UPSERT, which read them) cannot run on it; rename the column"
        )
