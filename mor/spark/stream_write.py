"""The streaming sink of format "mor": each micro-batch is one commit, exactly once.

    (df.writeStream.format("mor").option("warehouse", "warehouse")
       .option("checkpointLocation", "checkpoints/events").outputMode("append").start("db.events"))

Output modes: `append` adds each micro-batch's rows; `complete` replaces the table's rows with
the micro-batch (an aggregation's whole result). Tasks write Parquet files as the batch writer's
tasks do (mor/spark/write.py); the driver commits them in one snapshot per micro-batch.

Exactly once: a micro-batch is committed as an idempotent write (mor/commit/idempotency.py)
keyed by the query and the batch id: `(app id, batch id)`. The app id is the option
`txn-app-id` if given, else the query's id, which Spark keeps in the checkpoint folder's
`metadata` file and which stays the same when the query restarts from its checkpoint. Spark
records a batch in its checkpoint only after the sink's commit returns, so a driver that dies
between the files and the commit replays the batch (its files were never committed), and one
that dies between the commit and the checkpoint replays it too: the commit then finds its own
version in the table, commits nothing and deletes the replay's files.

Each micro-batch commit re-reads the table (the write target the query started with is only
used for its location, schema and spec): a table the first batch created is appended to by
the next, and `complete` replaces the rows as they are at that batch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from mor.commit.idempotency import Idempotency
from mor.errors import InvalidArgumentError
from mor.io.fileio import FileIO
from mor.spark.options import TableRef
from mor.spark.write import MorCommitMessage, MorWriter, committed_files, delete_written

CHECKPOINT_OPTION = "checkpointLocation"


class MorStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, ref: TableRef, options: Mapping[str, str], schema: StructType, overwrite: bool):
        self.options = dict(options)
        if self.options.get("txn-version") is not None:
            raise InvalidArgumentError("a streaming write takes no option 'txn-version': the batch id is the version")
        self.app_id = self.options.get("txn-app-id") or query_id(self.options)
        self.ref, self.schema, self.overwrite = ref, schema, overwrite
        self.options.pop("txn-app-id", None)  # not a batch write's option: the batch id is the version
        self.tasks = MorWriter(ref, self.options, schema, overwrite)  # checks the schema before any batch runs

    def write(self, iterator: Iterator[pa.RecordBatch]) -> MorCommitMessage:
        return self.tasks.write(iterator)

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        # The table as it is now (the first batch may have created it), the files the tasks wrote.
        batch = MorWriter(self.ref, self.options, self.schema, self.overwrite)
        batch.idempotency = Idempotency.of((self.app_id, batchId))
        batch.commit(messages)

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        # Spark also aborts after a commit that raised, with every message present: the commit
        # cleaned up itself, or its outcome is unknown (it may have landed: the files are live).
        if all(m is not None for m in messages):
            return
        # A task failed, so commit never ran. Only the files the messages name: the batch
        # writer's search by file-name prefix would also find this query's committed files.
        delete_written(FileIO(dict(self.tasks.ref.properties)), committed_files(messages))


def query_id(options: Mapping[str, str]) -> str:
    """The streaming query's id, from the `metadata` file Spark keeps in its checkpoint folder
    (the same id after a restart from that checkpoint)."""
    checkpoint = options.get(CHECKPOINT_OPTION) or options.get(CHECKPOINT_OPTION.lower())
    if not checkpoint:
        raise InvalidArgumentError(
            "a streaming write to mor needs option 'checkpointLocation' (its query id keys the exactly-once commits) or option 'txn-app-id'"
        )
    path = os.path.join(checkpoint.removeprefix("file:"), "metadata")
    try:
        with open(path) as f:
            return str(json.load(f)["id"])
    except (OSError, ValueError, KeyError) as e:
        raise InvalidArgumentError(f"cannot read the streaming query's id from {path}: {e}") from e
