"""Test-only fault injection: kill this process at a named step of a commit.

Crash tests run a writer with `MOR_FAULT_POINT=<point>` in its environment; when the commit
reaches that point the process sends itself SIGKILL, exactly as if the machine died there.
With `MOR_FAULT_KILL=group` it kills its whole process group instead: a Spark driver, its JVM
and every Python worker at once, when a worker commits (the test starts the driver in a
session of its own). Unset (always, outside tests), `reached` is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "MOR_FAULT_POINT"
SCOPE_ENV = "MOR_FAULT_KILL"  # "group": the process group, else this process

# The steps of a commit, in order (see snapshot_producer.commit_changes).
POINTS = (
    "files-written",  # data and delete files written, nothing else
    "manifests-written",  # plus manifests of the new files
    "manifest-list-written",  # plus the manifest list of the new snapshot
    "metadata-written",  # plus the new metadata JSON, not yet swapped in
    "committed",  # the catalog points at the new metadata; the caller has not heard yet
)


def reached(point: str) -> None:
    if os.environ.get(ENV) == point:
        if os.environ.get(SCOPE_ENV) == "group":
            os.killpg(os.getpgid(0), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
