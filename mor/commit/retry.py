"""How long and how often a commit retries, from Iceberg's table properties.

A lost compare-and-swap race is harmless (nothing of ours became visible), so it is retried
with exponential backoff and jitter until `commit.retry.total-timeout-ms`; a count limit
(`commit.retry.num-retries`) applies only when the table sets one, so a busy table with many
writers is not reported as a conflict after a handful of lost races. A DML operation whose
commit truly conflicts is re-planned on the new state up to `mor.dml.replan.num-retries` times.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from mor.catalog.table_operations import CommitFailedError
from mor.errors import CommitConflictError, InvalidArgumentError
from mor.format.properties import COMMIT_MAX_WAIT_MS, COMMIT_MIN_WAIT_MS, COMMIT_NUM_RETRIES, COMMIT_TOTAL_TIMEOUT_MS, DML_REPLAN_RETRIES

DEFAULT_MIN_WAIT_MS = 100  # Iceberg's defaults
DEFAULT_MAX_WAIT_MS = 60_000
DEFAULT_TOTAL_TIMEOUT_MS = 30 * 60_000
DEFAULT_REPLAN_RETRIES = 10

_T = TypeVar("_T")


def int_property(properties: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = properties.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidArgumentError(f"table property {name} must be a whole number, got {raw!r}") from None
    if value < 0:
        raise InvalidArgumentError(f"table property {name} must not be negative, got {raw!r}")
    return value


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int | None = None  # None: limited by the total timeout only
    min_wait_ms: int = DEFAULT_MIN_WAIT_MS
    max_wait_ms: int = DEFAULT_MAX_WAIT_MS
    total_timeout_ms: int = DEFAULT_TOTAL_TIMEOUT_MS
    replan_retries: int = DEFAULT_REPLAN_RETRIES

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> RetryPolicy:
        def get(name: str, default: int) -> int:
            value = int_property(properties, name, default)
            assert value is not None
            return value

        return cls(
            int_property(properties, COMMIT_NUM_RETRIES, None),
            get(COMMIT_MIN_WAIT_MS, DEFAULT_MIN_WAIT_MS),
            get(COMMIT_MAX_WAIT_MS, DEFAULT_MAX_WAIT_MS),
            get(COMMIT_TOTAL_TIMEOUT_MS, DEFAULT_TOTAL_TIMEOUT_MS),
            get(DML_REPLAN_RETRIES, DEFAULT_REPLAN_RETRIES),
        )

    def start(self) -> Attempts:
        return Attempts(self, time.monotonic())


@dataclass
class Attempts:
    """One operation's retry budget: `retry()` sleeps and says whether to try again."""

    policy: RetryPolicy
    started: float
    retries: int = 0

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def retry(self) -> bool:
        p = self.policy
        if p.max_retries is not None and self.retries >= p.max_retries:
            return False
        wait_ms = min(p.max_wait_ms, p.min_wait_ms * 2 ** min(self.retries, 30))
        wait_ms *= 0.5 + random.random()  # jitter: writers that collided do not collide again
        elapsed_ms = (time.monotonic() - self.started) * 1000
        if elapsed_ms + wait_ms > p.total_timeout_ms:
            return False
        self.retries += 1
        time.sleep(wait_ms / 1000)
        return True


def commit_with_retry(
    policy: RetryPolicy, attempt: Callable[[int], _T], what: str, *, before_retry: Callable[[], object] | None = None
) -> _T:
    """Every metadata and snapshot commit's loop (Iceberg's `Tasks.foreach(ops).retry(...)
    .onlyRetryOn(CommitFailedException)`): `attempt(n)` for n = 0, 1, ... until it returns. A
    lost compare-and-swap (CommitFailedError: nothing became visible) waits as `policy` says,
    calls `before_retry` (the caller refreshes its base there) and tries again; when the policy
    gives up, CommitConflictError saying `what` could not be done. Any other error ends it."""
    attempts = policy.start()
    for n in itertools.count():
        try:
            return attempt(n)
        except CommitFailedError:
            if not attempts.retry():
                raise CommitConflictError(
                    f"could not {what}: the table kept changing (gave up after {attempts.retries + 1} attempts in "
                    f"{attempts.elapsed_s:.1f} s; raise {COMMIT_NUM_RETRIES} or {COMMIT_TOTAL_TIMEOUT_MS})"
                ) from None
        if before_retry is not None:
            before_retry()
    raise AssertionError("unreachable")
