"""Idempotent writes: a commit tagged with an application id and a version commits at most once.

A writer that may repeat itself (a streaming micro-batch replayed after a crash, a job retried
after `CommitStateUnknownError`) tags each write with `(app_id, version)`, versions increasing
per app id, as Delta Lake's `txnAppId` / `txnVersion` do. The tag is recorded in the snapshot
summary (`mor.txn-app-id`, `mor.txn-version`). A write whose app id has already committed that
version or a later one, in the ancestry of the current snapshot, commits nothing: the check runs
inside the commit, on every base the commit is attempted on, so a retry racing its own earlier
attempt still lands once. Other engines keep the summary entries and ignore them.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from mor.errors import InvalidArgumentError, MorError
from mor.format.metadata import Snapshot, TableMetadata

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


class AlreadyCommitted(MorError):
    """Raised inside a commit whose (app id, version) an ancestor of the base already holds; the
    table verbs catch it, remove the files they wrote and return `snapshot`."""

    def __init__(self, snapshot: Snapshot, idempotency: Idempotency):
        super().__init__(
            f"{idempotency.app_id!r} already committed version {snapshot.summary.get(VERSION_KEY)} "
            f"(asked: {idempotency.version}) in snapshot {snapshot.snapshot_id}"
        )
        self.snapshot = snapshot


def committed_version(metadata: TableMetadata, app_id: str) -> int | None:
    """The latest version `app_id` committed in the current snapshot's ancestry, or None."""
    found = _latest(metadata, app_id)
    return None if found is None else found[1]


def check_not_committed(metadata: TableMetadata, idempotency: Idempotency | None) -> None:
    """AlreadyCommitted when the current snapshot's ancestry holds `idempotency`'s app id at its
    version or a later one."""
    if idempotency is None:
        return
    found = _latest(metadata, idempotency.app_id)
    if found is not None and found[1] >= idempotency.version:
        raise AlreadyCommitted(found[0], idempotency)


def _latest(metadata: TableMetadata, app_id: str) -> tuple[Snapshot, int] | None:
    for snapshot in metadata.ancestors(metadata.current_snapshot_id):
        summary = snapshot.summary or {}
        if summary.get(APP_ID_KEY) == app_id:
            try:
                return snapshot, int(summary.get(VERSION_KEY, ""))
            except ValueError:
                continue  # not ours to judge: another writer's malformed entry
    return None
