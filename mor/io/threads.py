"""Process-wide thread pools for reads that mostly wait on storage.

A GET from an object store costs milliseconds of waiting and almost no CPU (pyarrow releases the
GIL), so several are kept in flight at once. The pool is made on first use and made again in a
forked child (threads do not survive a fork: Spark's Python workers are forked).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor


class SharedPool:
    """A ThreadPoolExecutor made on first use, per process, with a settable size."""

    def __init__(self, threads: int, name: str) -> None:
        self.threads = threads
        self.name = name
        self._executor: ThreadPoolExecutor | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                self._executor = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix=self.name)
                self._pid = os.getpid()
            return self._executor

    def resize(self, threads: int) -> None:
        """Later work uses `threads` threads; work already on the old pool finishes there (its idle
        threads then exit)."""
        with self._lock:
            self.threads = threads
            self._executor = None


# Small reads that wait on storage: delete files fetched ahead of a reader, size checks.
IO_POOL = SharedPool(8, "mor-io")
