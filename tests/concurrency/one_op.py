"""Runs one operation on the crash test's table (see test_crash.py); the test sets
MOR_FAULT_POINT so that the process kills itself at one step of the commit.

    python one_op.py <warehouse> <kind>
"""

from __future__ import annotations

import datetime as dt
import sys

import pyarrow as pa
import pyarrow.compute as pc
from writer import SCHEMA

import mor

NEW_ROWS = pa.table({"key": [1, 500], "n": [7, 7], "tag": ["new-1", "new-500"]}, schema=SCHEMA)


def run(table: mor.Table, kind: str) -> None:
    if kind == "append":
        table.append(NEW_ROWS)
    elif kind == "delete":
        table.delete("key in (1, 2)")
    elif kind == "delete-copy-on-write":
        table.delete("key in (1, 2)", mode="copy-on-write")
    elif kind == "update":
        table.update({"n": pc.add(pc.field("n"), 1)}, where="key in (1, 2)")
    elif kind == "upsert":
        table.upsert(NEW_ROWS, on=["key"])
    elif kind == "delete_rows":
        table.delete_rows(NEW_ROWS.select(["key"]))
    elif kind == "compact":
        table.compact()
    elif kind == "rewrite_position_deletes":
        table.rewrite_position_deletes()
    elif kind == "expire":
        table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    else:
        raise ValueError(kind)


if __name__ == "__main__":
    run(mor.load_catalog(sys.argv[1]).load_table("db.t"), sys.argv[2])
