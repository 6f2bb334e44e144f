"""The README's API block runs as written: the `python` block of its "The API" section, in a
fresh folder and a fresh interpreter of this environment."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # runs the README in a fresh interpreter

README = Path(__file__).resolve().parents[2] / "README.md"


def api_block() -> str:
    section = README.read_text().split("## The API", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "the README's API section has no python block"
    return block.group(1)


def test_the_readme_api_block_runs_as_written(tmp_path: Path) -> None:
    code = api_block()
    for verb in ("overwrite(", "upsert(", "merge(", "delete_rows(", "compact(", "to_duckdb("):
        assert verb in code, verb
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    assert (tmp_path / "warehouse" / "catalog.db").is_file()
