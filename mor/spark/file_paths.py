"""Data file locations as Spark's native Parquet reader takes and reports them.

mor keeps locations as the table metadata spells them (`/tmp/w/x.parquet`, `file:/...`,
`s3://bucket/key`). Spark's reader wants a Hadoop path, and reports the file a row came from
(`_metadata.file_path`) as that path's URI: `file:/tmp/a%20b.parquet` for `/tmp/a b.parquet`
(no authority, percent-encoded); mor's delete functions key files the same way, in Java
(jvm/src/mor/jvm/Descriptor.java, `fileKey`).

Object storage reads natively only when the session has a Hadoop filesystem for its store,
asked per store (`hadoop_reads`): `s3a` (the hadoop-aws jar and its credentials, configured by
the user; `s3://bucket/key` is then read as `s3a://bucket/key`), `gs` (the GCS connector) or
`abfss` (hadoop-azure). Without one, the files go through mor's Python source.

Spark lists every path it is handed before reading (`native_parquet` keeps that listing to
about one task per core: a table of 10,000 files made a 10,000-task job), and PySpark hands a
list of paths to the JVM one gateway call a path (`native_parquet` sends them as one string).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from py4j.protocol import Py4JJavaError
from pyiceberg.schema import Schema
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from mor.errors import CorruptMetadataError, UnsupportedFeatureError
from mor.io.fileio import is_object_store, to_local_path
from mor.io.stores import AZURE, GCS, S3, parse_object_location, store_of
from mor.read.task_reader import POSITION_COLUMN
from mor.spark.jvm_bridge import hadoop_configuration, is_classic, jvm, read_parquet

# The metadata columns of a read with positions (format "mor" with option metadata-columns, and
# the DML target rows): the row's data file as the table spells it, and its position there.
FILE_COLUMN = "_file"
POS_COLUMN = POSITION_COLUMN


def spark_read_path(location: str) -> str:
    """The path to hand `spark.read.parquet` for a data file location."""
    if is_object_store(location):
        where = parse_object_location(location)
        return "s3a://" + where.fs_path if where.store == S3 else where.canonical
    return to_local_path(location)


def native_parquet(spark: SparkSession, schema: StructType, locations: Sequence[str]) -> DataFrame:
    """Spark's native Parquet read of these data files with `schema`. A missing file is the
    CorruptMetadataError the local reader raises (Spark lists the files right away), chained to
    Spark's error."""
    from pyspark.errors import AnalysisException

    paths = [spark_read_path(location) for location in locations]
    try:
        with session_conf(spark, _listing_conf(spark, len(paths))):
            reader = spark.read.schema(schema)
            if len(paths) <= LISTING_THRESHOLD or not is_classic(spark):
                return reader.parquet(*paths)
            return read_parquet(reader, _java_strings(spark, paths))
    except AnalysisException as e:
        found = _MISSING.search(str(e))
        if found is None:
            raise
        raise CorruptMetadataError(f"data file {found.group(1)} is missing") from e


# Spark resolves `spark.read.parquet(*paths)` at once (InMemoryFileIndex): after checking that
# every path exists (40 driver threads), it lists each path again, on the driver up to
# `...threshold` (32) paths, else in a Spark job of one task per path up to `...parallelism`
# (10,000): 10,000 data files made a 10,000-task job (43-119 s on 2 cores) before any row was
# read. mor knows its files from the manifests, so the listing only has to stay cheap: in
# about one task per core (a job still, so that object stores are listed beside each other).
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
LISTING_THRESHOLD = 32  # Spark's default `spark.sql.sources.parallelPartitionDiscovery.threshold`


def _listing_conf(spark: SparkSession, paths: int) -> dict[str, str]:
    """The settings that keep Spark's listing of `paths` files to about one task per core."""
    if paths <= LISTING_THRESHOLD or not is_classic(spark):
        return {}
    cores = max(1, spark.sparkContext.defaultParallelism)
    asked = spark.conf.get(LISTING_PARALLELISM, None)
    return {LISTING_PARALLELISM: str(min(cores, int(asked)) if asked else cores)}


def _java_strings(spark: SparkSession, texts: list[str]) -> object:
    """`texts` as a JVM Seq, sent as one string: PySpark's `parquet(*paths)` has py4j convert
    the list one element at a time (a gateway call each: 100,000 paths took 9.8 s, this 0.3 s)."""
    view = jvm(spark)
    if any("\n" in text for text in texts):
        return view.PythonUtils.toSeq(texts)
    split = view.java.util.regex.Pattern.compile("\n").splitAsStream("\n".join(texts))
    return view.PythonUtils.toSeq(split.collect(view.java.util.stream.Collectors.toList()))


@contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """`settings` in the session's conf inside the block, each restored (or unset) after it."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


_MISSING = re.compile(r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?(?:\s|$)")


# The Hadoop filesystem scheme Spark reads each store's objects through (spark_read_path).
HADOOP_SCHEMES = {S3: "s3a", GCS: "gs", AZURE: "abfss"}


def has_s3a(spark: SparkSession) -> bool:
    """Can this session's Hadoop read `s3a://` paths (is S3AFileSystem on its classpath)?"""
    return _has_hadoop_filesystem(spark, "s3a")


def hadoop_reads(spark: SparkSession, locations: Sequence[str], s3a: Callable[[SparkSession], bool] = has_s3a) -> bool:
    """Can this session's Hadoop read every one of these locations: local files always, objects
    when it has a filesystem for their store's scheme (asked once per store)? A gs:// or Azure
    file must not go to the native reader on the strength of an s3a filesystem. `s3a` asks
    about S3 (a caller passes its own reference to `has_s3a`, which tests replace)."""
    stores = {store_of(location) for location in locations}
    return all(s3a(spark) if store == S3 else _has_hadoop_filesystem(spark, HADOOP_SCHEMES[store]) for store in stores if store is not None)


def _has_hadoop_filesystem(spark: SparkSession, scheme: str) -> bool:
    """Is there a Hadoop FileSystem class for `scheme` on the session's classpath? One JVM
    call: cheap enough to ask on every read, so a session configured later is seen."""
    try:
        jvm(spark).org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, hadoop_configuration(spark))
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
