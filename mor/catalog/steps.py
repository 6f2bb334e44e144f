"""The named steps of a commit, announced as a commit reaches each (see
snapshot_producer.commit_changes and `mor serve`'s commits). Nothing listens in the library:
the crash tests install a listener (tests/faults/sitecustomize.py) that kills the process at
one step, exactly as if the machine died there. Without listeners `reached` is one check of an
empty list.
"""

from __future__ import annotations

from collections.abc import Callable

# The steps of a commit, in order.
POINTS = (
    "files-written",  # data and delete files written, nothing else
    "manifests-written",  # plus manifests of the new files
    "manifest-list-written",  # plus the manifest list of the new snapshot
    "metadata-written",  # plus the new metadata JSON, not yet swapped in
    "committed",  # the catalog points at the new metadata; the caller has not heard yet
)
# Snapshot expiry's own (mor/maintenance/expire.py): its metadata committed, and then while it
# deletes the files only expired snapshots read.
EXPIRY_POINTS = ("expire-committed", "expire-deleting")

_listeners: list[Callable[[str], None]] = []


def listen(listener: Callable[[str], None]) -> None:
    """Call `listener(point)` at every step any commit of this process reaches from now on."""
    _listeners.append(listener)


def reached(point: str) -> None:
    for listener in _listeners:
        listener(point)
