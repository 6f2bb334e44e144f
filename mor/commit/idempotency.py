"""Idempotent writes: a commit tagged with an application id and a version commits at most once.

A writer that may repeat itself (a streaming micro-batch replayed after a crash, a job retried
after `CommitStateUnknownError`) tags each write with `(app_id, version)`, versions increasing
per app id, as Delta Lake's `txnAppId` / `txnVersion` do. The tag is recorded in the snapshot
summary (`mor.txn-app-id`, `mor.txn-version`) and, in the same commit, as the table property
`mor.txn-version.<app id>` = the version: snapshots expire, properties do not, so a replay after
any expiry or compaction still finds its version (as Delta keeps `txn` records in its log state).
A write whose app id has already committed that version or a later one (by the property, or in
the ancestry of the current snapshot for tables written before the property) commits nothing:
the check runs inside the commit, on every base the commit is attempted on, so a retry racing
its own earlier attempt still lands once. The property is the table's, not a branch's: a
rollback does not make a committed version committable again. Other engines keep the summary
entries and the property and ignore them.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from mor.errors import CommitError, InvalidArgumentError
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.properties import TXN_VERSION_PREFIX

APP_ID_KEY = "mor.txn-app-id"
VERSION_KEY = "mor.txn-version"


@dataclass(frozen=True)
class Idempotency:
    app_id: str
    version: int

    @classmethod
    def of(cls, value: object) -> Idempotency | None:
        """`(app_id, version)` as the write verbs take it (None: not idempotent), checked."""
        if value is None or isinstance(value, Idempotency):
            return value
        if not isinstance(value, tuple) or len(value) != 2:
            raise InvalidArgumentError(f"idempotency is a pair (app_id, version), got {value!r}")
        app_id, version = value
        if not isinstance(app_id, str) or not app_id.strip():
            raise InvalidArgumentError(f"idempotency's app_id is a non-empty string, got {app_id!r}")
        if isinstance(version, bool) or not isinstance(version, numbers.Integral) or version < 0:
            raise InvalidArgumentError(f"idempotency's version is an integer >= 0, got {version!r}")
        return cls(app_id, int(version))

    def summary(self) -> dict[str, str]:
        return {APP_ID_KEY: self.app_id, VERSION_KEY: str(self.version)}

    def properties(self) -> dict[str, str]:
        """The table property that carries the version past every expiry."""
        return {TXN_VERSION_PREFIX + self.app_id: str(self.version)}


class AlreadyCommitted(CommitError):
    """Raised inside a commit whose (app id, version) the table already holds (version
    `committed`); the table verbs catch it, remove the files they wrote and return `snapshot`:
    the one that committed it, or the current one when that has expired."""

    def __init__(self, snapshot: Snapshot | None, idempotency: Idempotency, committed: int, current: Snapshot | None = None):
        where = f"in snapshot {snapshot.snapshot_id}" if snapshot is not None else "(its snapshot has expired)"
        super().__init__(f"{idempotency.app_id!r} already committed version {committed} (asked: {idempotency.version}) {where}")
        self.snapshot = snapshot if snapshot is not None else current


def check_not_committed(metadata: TableMetadata, idempotency: Idempotency | None) -> None:
    """AlreadyCommitted when the table holds `idempotency`'s app id at its version or a later
    one: by the table property, or in the current snapshot's ancestry."""
    if idempotency is None:
        return
    found = _latest(metadata, idempotency.app_id)
    if found is not None and found[1] >= idempotency.version:
        raise AlreadyCommitted(found[0], idempotency, found[1])
    recorded = _recorded(metadata, idempotency.app_id)
    if recorded is not None and recorded >= idempotency.version:
        snapshot = _committed_in(metadata, idempotency.app_id, recorded)
        raise AlreadyCommitted(snapshot, idempotency, recorded, metadata.current_snapshot())


def _recorded(metadata: TableMetadata, app_id: str) -> int | None:
    try:
        return int(metadata.properties.get(TXN_VERSION_PREFIX + app_id, ""))
    except ValueError:
        return None  # absent, or not ours to judge: another writer's malformed value


def _committed_in(metadata: TableMetadata, app_id: str, version: int) -> Snapshot | None:
    """The snapshot that committed `version`, while the table still has it."""
    for snapshot in metadata.snapshots:
        summary = snapshot.summary or {}
        if summary.get(APP_ID_KEY) == app_id and summary.get(VERSION_KEY) == str(version):
            return snapshot
    return None


def _latest(metadata: TableMetadata, app_id: str) -> tuple[Snapshot, int] | None:
    for snapshot in metadata.ancestors(metadata.current_snapshot_id):
        summary = snapshot.summary or {}
        if summary.get(APP_ID_KEY) == app_id:
            try:
                return snapshot, int(summary.get(VERSION_KEY, ""))
            except ValueError:
                continue  # not ours to judge: another writer's malformed entry
    return None
