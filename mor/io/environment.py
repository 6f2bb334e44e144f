"""Process settings read from environment variables (cache budgets)."""

from __future__ import annotations

import os
import warnings


def budget_from_env(name: str, default: int, unit: str) -> int:
    """A non-negative whole number from `name` (0 turns a cache off); `default` when unset, or
    with a warning when it is not a number."""
    raw = os.environ.get(name)
    try:
        return max(0, int(raw)) if raw else default
    except ValueError:
        warnings.warn(f"{name}={raw!r} is not a number of {unit}; using {default}", stacklevel=3)
        return default
