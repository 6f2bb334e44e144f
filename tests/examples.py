"""How many random examples a property test runs: its full count in the whole suite (CI), a share
of it in the fast tier that runs before every commit (`scripts/test.sh fast` sets
MOR_EXAMPLES_SHARE), so that tier stays within its 3 minutes."""

from __future__ import annotations

import os


def examples(full: int) -> int:
    share = float(os.environ.get("MOR_EXAMPLES_SHARE", "1"))
    return max(10, round(full * share))
