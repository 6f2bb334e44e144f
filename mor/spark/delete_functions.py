"""mor's Spark delete functions: a small Java function catalog (jvm/src, shipped as
mor/spark/jars/mor-deletes.jar) that filters Spark's native Parquet scan by a read's deletes.

`install(spark)` adds the jar to a running session (`ADD JAR`) and names the catalog
(`spark.sql.catalog.mor_deletes`). A read then filters each native scan of files with deletes
by `mor_deletes.keep_<token>(_metadata.file_path, _metadata.row_index, <equality columns>)`,
and gets what the metadata says of a row's file (its location as the table spells it, the
first row id and data sequence number v3 rows inherit) from `path_<token>`,
`first_row_id_<token>` and `data_sequence_<token>` of `_metadata.file_path`:

- the read's deletes (which delete files apply to which data file, as the planner decided) are
  written as a text (`descriptor`, a few hundred bytes a file) and handed to the catalog through the
  session conf `mor.deletes.<token>` only while Spark resolves the functions. The catalog
  broadcasts it once per read and the bound functions carry only the broadcast's handle, so a
  task's payload does not grow with the read's files; each executor fetches and parses the text
  once. Spark's cleaner drops the broadcast once no DataFrame holds the functions: nothing is
  left in the session or on disk;
- executors read the delete files themselves, lazily per data file: a position delete file's
  rows for that file, a deletion vector by offset and length, an equality delete file's keys.
  The driver decodes none of them. They open the files with the Hadoop configuration the
  session has when the read is made, built as Spark's own scans build theirs (the context's
  Hadoop configuration, then every session setting under its own name) and broadcast with the
  read: an endpoint or credentials set on the running session reach them. What they read is kept for the executor's other tasks in a
  cache bounded by `spark.mor.deletes.cacheBytes` (CACHE_BYTES_CONF: estimated heap bytes,
  default 256m; read through the session's conf when a read resolves its functions).

Spark resolves the function when the DataFrame is made (classic PySpark analyses eagerly), so
the conf can go right after. A Spark Connect session analyses later, on the server: it gets the
Python source instead (`install` says why).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pyspark.sql import SparkSession

from mor.format.content_file import DeleteFile
from mor.format.spec import FileContent
from mor.planning.task import FileScanTask
from mor.spark.file_paths import spark_read_path
from mor.spark.jvm_bridge import is_classic

logger = logging.getLogger("mor.spark")

CATALOG = "mor_deletes"
CATALOG_CLASS = "mor.jvm.DeleteFunctions"
CONF_PREFIX = "mor.deletes."
CACHE_BYTES_CONF = "spark.mor.deletes.cacheBytes"  # jvm/src/mor/jvm/DeleteCache.java
HEADER = "mor-deletes\t1"
_ESCAPE_TABLE = str.maketrans({"%": "%25", "\t": "%09", "\n": "%0A", "\r": "%0D"})


def jar_path() -> Path:
    """The shipped jar (built from jvm/src by jvm/build.py)."""
    return Path(str(resources.files("mor.spark") / "jars" / "mor-deletes.jar"))


def install(spark: SparkSession) -> str | None:
    """Make the delete functions available in `spark`: None when they are, else why not (the
    read then takes the Python source)."""
    if not is_classic(spark):
        return "a Spark Connect session resolves functions on the server, after the read's deletes are gone"
    catalog_key = f"spark.sql.catalog.{CATALOG}"
    if spark.conf.get(catalog_key, None) == CATALOG_CLASS:
        return None
    jar = jar_path()
    if not jar.is_file():
        return f"mor's jar is missing from the installed package ({jar})"
    try:
        spark.sql("ADD JAR '" + str(jar).replace("\\", "\\\\").replace("'", "\\'") + "'")
        spark.conf.set(catalog_key, CATALOG_CLASS)
    except Exception as e:  # any failure to add a jar: say so, and read without it
        return f"adding {jar} to the session failed: {e}"
    logger.info("mor.spark: added %s to the session; deletes are applied in Spark's native scan", jar)
    return None


@dataclass(frozen=True)
class ReadFunctions:
    """The functions of one read (one token), as SQL text for `F.expr`."""

    token: str

    def keep(self, file_path: str, row_index: str, equality: Sequence[str] = ()) -> str:
        """True for a row no delete removes, given its equality columns (in the read's order)."""
        return f"{CATALOG}.keep_{self.token}({', '.join([file_path, row_index, *equality])})"

    def keep_by_long(self, file_path: str, row_index: str, key: str) -> str:
        """`keep` for one integer equality column: called directly, no row object or boxing."""
        arguments = [file_path, row_index, f"coalesce(cast({key} as bigint), 0L)", f"{key} is null"]
        return f"{CATALOG}.keep_long_{self.token}({', '.join(arguments)})"

    def keep_by_string(self, file_path: str, row_index: str, key: str) -> str:
        """`keep` for one string equality column: called directly, no row object."""
        return f"{CATALOG}.keep_string_{self.token}({file_path}, {row_index}, {key})"

    def table_path(self, file_path: str) -> str:
        """The row's data file as the table's metadata spells it."""
        return f"{CATALOG}.path_{self.token}({file_path})"

    def first_row_id(self, file_path: str) -> str:
        return f"{CATALOG}.first_row_id_{self.token}({file_path})"

    def data_sequence(self, file_path: str) -> str:
        return f"{CATALOG}.data_sequence_{self.token}({file_path})"


@contextmanager
def read_functions(spark: SparkSession, tasks: Sequence[FileScanTask], equality_ids: Sequence[int]) -> Iterator[ReadFunctions]:
    """The functions of a read of `tasks` (keep takes the columns of `equality_ids` in that
    order), resolvable inside the block: Spark must resolve them there."""
    token = uuid.uuid4().hex
    key = CONF_PREFIX + token
    spark.conf.set(key, descriptor(tasks, equality_ids))
    try:
        yield ReadFunctions(token)
    finally:
        spark.conf.unset(key)


def descriptor(tasks: Sequence[FileScanTask], equality_ids: Sequence[int]) -> str:
    """The deletes of `tasks` as the JVM functions read them (jvm/src/mor/jvm/Descriptor.java)."""
    lines = [HEADER, "\t".join(["A", *map(str, equality_ids)])]
    index: dict[tuple[str, int | None], int] = {}
    for task in tasks:
        for d in task.delete_files:
            if d.key not in index:
                index[d.key] = len(index)
                lines.append(_delete_line(d))
    for task in tasks:
        path = task.data_file.file_path
        picked = ",".join(str(index[d.key]) for d in task.delete_files)
        lineage = [_number(task.data_file.first_row_id), _number(task.data_file.data_sequence_number)]
        lines.append("\t".join(["F", _escape(spark_read_path(path)), _escape(path), picked, *lineage]))
    return "\n".join(lines) + "\n"


def _delete_line(d: DeleteFile) -> str:
    path = _escape(spark_read_path(d.file_path))
    if d.is_deletion_vector:
        return "\t".join(["V", path, str(d.content_offset), str(d.content_size_in_bytes)])
    size = str(d.file_size_in_bytes)  # executors open the file without asking the store its size
    if d.content == FileContent.EQUALITY_DELETES:
        return "\t".join(["E", path, ",".join(map(str, d.equality_ids or ())), size])
    # Every row of a file-scoped delete file is for its one data file: read without filtering.
    return "\t".join(["P", path, "1" if d.referenced_data_file is not None else "", size])


def _number(value: int | None) -> str:
    return "" if value is None else str(value)


def _escape(text: str) -> str:
    return text.translate(_ESCAPE_TABLE)
