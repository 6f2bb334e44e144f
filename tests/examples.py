"""How many random examples a property test runs: a share of its full count in the fast tier
(`scripts/test.sh` sets MOR_EXAMPLES_SHARE=0.4, for `fast` and for the whole suite alike, so that
tier stays within its 3 minutes; each run draws new examples), the full count in a plain pytest
run or with MOR_EXAMPLES_SHARE=1 (more for a deeper run)."""

from __future__ import annotations

import os


def examples(full: int) -> int:
    share = float(os.environ.get("MOR_EXAMPLES_SHARE", "1"))
    return max(10, round(full * share))
