"""The maintenance policy `table.maintain()` runs, from table properties.

A scheduler (cron, Airflow) calls `maintain()` and the table says what it needs:
  1. compact the data files whose deleted share reaches `mor.maintain.compact.min-delete-ratio`
     (0.2) or that carry `mor.maintain.compact.min-delete-files` (10) delete files, and pack a
     partition's small files once there are `mor.maintain.compact.min-input-files` (5);
  2. expire snapshots by Iceberg's retention properties (`history.expire.max-snapshot-age-ms`,
     `history.expire.min-snapshots-to-keep`);
  3. remove orphan files older than `mor.maintain.remove-orphans.min-age-ms` (3 days).
Each step can be turned off with `mor.maintain.<step>.enabled=false`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from mor.errors import InvalidArgumentError
from mor.format.properties import MAINTAIN_PREFIX
from mor.maintenance.compact import CompactionResult
from mor.maintenance.expire import ExpireResult
from mor.maintenance.orphans import DEFAULT_MIN_AGE, OrphanResult

_T = TypeVar("_T")


@dataclass(frozen=True)
class MaintenancePolicy:
    compact: bool = True
    min_delete_ratio: float = 0.2
    min_delete_files: int = 10
    min_input_files: int = 5
    expire: bool = True
    remove_orphans: bool = True
    orphan_min_age: dt.timedelta = DEFAULT_MIN_AGE

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> MaintenancePolicy:
        def get(name: str, parse: Callable[[str], _T], default: _T) -> _T:
            raw = properties.get(MAINTAIN_PREFIX + name)
            if raw is None:
                return default
            try:
                return parse(raw)
            except ValueError:
                raise InvalidArgumentError(f"table property {MAINTAIN_PREFIX + name} has an unusable value {raw!r}") from None

        return cls(
            compact=get("compact.enabled", _flag, True),
            min_delete_ratio=get("compact.min-delete-ratio", float, cls.min_delete_ratio),
            min_delete_files=get("compact.min-delete-files", int, cls.min_delete_files),
            min_input_files=get("compact.min-input-files", int, cls.min_input_files),
            expire=get("expire.enabled", _flag, True),
            remove_orphans=get("remove-orphans.enabled", _flag, True),
            orphan_min_age=get("remove-orphans.min-age-ms", lambda v: dt.timedelta(milliseconds=int(v)), DEFAULT_MIN_AGE),
        )


def _flag(value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ValueError(value)
    return value.lower() == "true"


@dataclass(frozen=True)
class MaintainResult:
    """Each step's result; None for a step the policy turned off."""

    compaction: CompactionResult | None
    expiry: ExpireResult | None
    orphans: OrphanResult | None

    def to_dict(self) -> dict[str, object]:
        steps = {"compaction": self.compaction, "expiry": self.expiry, "orphans": self.orphans}
        return {name: None if result is None else result.to_dict() for name, result in steps.items()}
