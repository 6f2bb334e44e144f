"""Callbacks told of every commit this process makes to a table, whoever made it (the Python
API, a Spark job's driver, the CLI): an engine that shows tables through views of its own
(mor.spark.views) re-makes them, so they never keep showing a snapshot mor replaced here.

A listener runs after the commit, in the committing thread; a listener that fails is logged and
never makes the commit look failed (it happened).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mor.format.metadata import TableMetadata

logger = logging.getLogger("mor.catalog")
Listener = Callable[[TableMetadata], None]

_LISTENERS: list[Listener] = []
_LOCK = threading.Lock()


def listen(listener: Listener) -> None:
    """Call `listener(new metadata)` after each commit (once, however often it is added)."""
    with _LOCK:
        if listener not in _LISTENERS:
            _LISTENERS.append(listener)


def committed(metadata: TableMetadata) -> None:
    """Tell the listeners that the table now has `metadata`."""
    with _LOCK:
        listeners = list(_LISTENERS)
    for listener in listeners:
        try:
            listener(metadata)
        except Exception:  # the commit stands: a listener's failure is its own
            logger.warning("a commit listener failed after committing to %s", metadata.location, exc_info=True)
