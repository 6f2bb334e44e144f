"""Which snapshot a read means: by id, or current at a point in time (`as_of`), as scans,
changes and snapshot management take them."""

from __future__ import annotations

import datetime as dt
import numbers
from typing import TYPE_CHECKING

from mor.errors import InvalidArgumentError, NoSuchSnapshotError
from mor.expr.parse_terms import point_in_time
from mor.format.metadata import Snapshot

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle


def choose_snapshot(table: TableHandle, snapshot_id: int | None, as_of: dt.datetime | dt.date | str | int | None) -> Snapshot | None:
    metadata = table.metadata
    if snapshot_id is not None and as_of is not None:
        raise InvalidArgumentError("give snapshot_id or as_of, not both")
    if snapshot_id is not None:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, numbers.Integral):
            raise InvalidArgumentError(f"snapshot_id is an int, got {type(snapshot_id).__name__} {snapshot_id!r}")
        try:
            return metadata.snapshot_by_id(int(snapshot_id))
        except KeyError:
            raise NoSuchSnapshotError(f"{table.identifier} has no snapshot {snapshot_id}") from None
    if as_of is not None:
        ms = as_of_ms(as_of)
        try:
            snapshot = metadata.snapshot_as_of(ms)
        except KeyError as e:
            raise NoSuchSnapshotError(f"the snapshot {e.args[0]} of {table.identifier} current at {as_of} has expired") from None
        if snapshot is None:
            first = min((ts for ts, _ in metadata.snapshot_log), default=None)
            since = "it has no snapshots" if first is None else f"its first snapshot is from {utc_text(first)}"
            raise NoSuchSnapshotError(f"{table.identifier} had no snapshot at {as_of} ({utc_text(ms)}): {since}")
        return snapshot
    return metadata.current_snapshot()


def as_of_ms(as_of: object) -> int:
    """Milliseconds since the epoch of an `as_of`: an int of milliseconds, a datetime or a date
    (naive: UTC; a date is its midnight), or text as filters write times ('2025-01-15',
    '2025-01-15 12:00[:00.5][Z|+02:00]', timestamp '...', current_timestamp - interval 1 day;
    without a zone, UTC)."""
    if isinstance(as_of, dt.datetime):
        return int(aware(as_of).timestamp() * 1000)
    if isinstance(as_of, dt.date):
        return int(dt.datetime(as_of.year, as_of.month, as_of.day, tzinfo=dt.UTC).timestamp() * 1000)
    if isinstance(as_of, numbers.Integral) and not isinstance(as_of, bool):
        return int(as_of)
    if isinstance(as_of, str):
        try:
            written = point_in_time(as_of)
        except ValueError as e:
            raise InvalidArgumentError(f"as_of: {e}") from None
        return (written.wall_micros() - (written.offset or 0)) // 1000
    raise InvalidArgumentError(
        f"as_of is a datetime, a date, text such as '2025-01-15 12:00', or an int of milliseconds since the epoch,"
        f" got {type(as_of).__name__} {as_of!r}"
    )


def utc_text(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


def aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)
