"""Crash tests' fault injection, loaded at the start of every Python process that has this
folder on its PYTHONPATH (Python imports `sitecustomize` when it starts): with
`MOR_FAULT_POINT=<step>` in the environment, the process sends itself SIGKILL when a commit
reaches that step (mor/catalog/steps.py), exactly as if the machine died there. With
`MOR_FAULT_KILL=group` it kills the process group `MOR_FAULT_PGID` (default its own) instead: a
Spark driver that puts its group id there before it starts its JVM dies whole, JVM and Python
workers with it, when a worker commits (Spark's workers run in groups of their own, and inherit
the driver's PYTHONPATH).
"""

from __future__ import annotations

import os
import signal

ENV = "MOR_FAULT_POINT"
SCOPE_ENV = "MOR_FAULT_KILL"  # "group": the process group, else this process
GROUP_ENV = "MOR_FAULT_PGID"


def _kill_at(point: str) -> None:
    if os.environ.get(ENV) == point:
        if os.environ.get(SCOPE_ENV) == "group":
            os.killpg(int(os.environ.get(GROUP_ENV) or os.getpgid(0)), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


if os.environ.get(ENV):
    from mor.catalog import steps

    steps.listen(_kill_at)
