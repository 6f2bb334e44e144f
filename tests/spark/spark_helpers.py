"""Tables with a history of every kind of change, and rows in a comparable form."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import In

import mor

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("n", pa.int64()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def rows(ids: range | list[int], n: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "category": [None if i % 11 == 4 else "abc"[i % 3] for i in ids],
            "n": [i + n for i in ids],
            "ts": [T0 + dt.timedelta(hours=i) for i in ids],
        },
        schema=SCHEMA,
    )


def source_rows(ids: list[int], n: int, categories: dict[int, str | None] | None = None) -> pa.Table:
    """Rows for a MERGE/UPSERT source; `categories` overrides the category of some ids."""
    data = rows(ids, n=n)
    if categories:
        values = [categories.get(i, c) for i, c in zip(ids, data.column("category").to_pylist())]
        data = data.set_column(1, "category", pa.array(values, pa.string()))
    return data


def canonical(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def spark_rows(df: Any) -> list[tuple]:
    return canonical(df.toArrow())


def build_history(table: mor.Table) -> list[int]:
    """Appends, merge-on-read DELETE, UPDATE, equality deletes, UPSERT both ways, MERGE, and a
    copy-on-write DELETE: the snapshot id after each."""
    steps = [
        lambda: table.append(rows(range(0, 300))),
        lambda: table.append(rows(range(300, 500))),
        lambda: table.delete(In("id", list(range(3, 500, 10)))),
        lambda: table.update({"n": pc.field("n") * 100, "category": "'moved'"}, where="id < 40"),
        lambda: table.delete_rows(pa.table({"id": pa.array([7, 8, 301, 302], pa.int64())})),
        lambda: table.upsert(rows([5, 6, 400, 900, 901], n=7), on=["id"]),
        lambda: table.upsert(rows([9, 10, 902], n=9), on=["id"], strategy="equality"),
        lambda: table.merge(rows([11, 12, 903], n=5), on=["id"], when_matched_delete=pc.field("source.id") == 11,
                            when_matched_update={"n": pc.field("source.n")}, when_not_matched_insert="*"),
        lambda: table.delete("id >= 450 and id < 470", mode="copy-on-write"),
    ]  # fmt: skip
    ids = []
    for step in steps:
        snapshot = step()
        assert snapshot is not None
        ids.append(snapshot.snapshot_id)
    return ids
