"""The README's command line examples run as written: each line of the `sh` block of its
"Command line" section, in a fresh folder, through the `mor` of this environment's PATH."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # runs the README in a fresh interpreter

README = Path(__file__).resolve().parents[2] / "README.md"


def cli_examples() -> list[str]:
    text = README.read_text()
    section = text.split("## Command line", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the README's Command line section has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_cli_examples_run_as_written(tmp_path: Path) -> None:
    examples = cli_examples()
    assert any(line.startswith("mor scan") for line in examples) and any(line.startswith("mor update") for line in examples)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for line in examples:
        # The trailing comments document; the shell would drop them too.
        command = shlex.split(line, comments=True)
        run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{line}\nexit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        if "no rows matched" in line:
            assert "no rows matched" in run.stdout
    assert (tmp_path / "events.parquet").exists()
