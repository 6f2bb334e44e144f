"""Rows of Arrow tables in a form that compares as a multiset across engines: times as UTC text
(a naive time is UTC, as pyiceberg's metadata tables give them), bytes as hex, maps (lists of
key-value pairs) sorted. Used to compare metadata tables with Iceberg Java's and pyiceberg's."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa


def canonical(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC).isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):  # a map
            return sorted(([canonical(k), canonical(v)] for k, v in value), key=str)
        return [canonical(v) for v in value]
    return value


def row_texts(table: pa.Table, columns: Sequence[str] | None = None) -> list[str]:
    """Each row as canonical JSON text, sorted."""
    chosen = table if columns is None else table.select(list(columns))
    return sorted(json.dumps(canonical(r), sort_keys=True, default=str) for r in chosen.to_pylist())
