"""The Spark 3.5 virtualenv (`.spark35-venv` in the checkout): pyspark 3.5 and mor, editable,
with its base dependencies only. Built once; later runs only check a marker file.

Spark 3.5 has no Python data sources, so mor.spark.read_table reads there through the
DataFrame plan (mor/spark/dataframe_plan.py). A lock file keeps two pytest processes from
building the env at once; the marker is written only after the install imported fine, and it
names what was installed, so a half-built env is rebuilt rather than used.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("MOR_SPARK35_VENV", ROOT / ".spark35-venv"))
PYSPARK = "pyspark==3.5.*"
MARKER_VALUE = f"{PYSPARK} mor-editable v1"


def ensure_spark35() -> Path:
    """The env's python (building the env the first time: about a minute from the pip cache)."""
    marker = VENV / ".mor-installed"
    python = VENV / "bin" / "python"
    if _ready(marker, python):
        return python
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / ".spark35-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait for it
        if _ready(marker, python):
            return python
        if not python.exists():
            _run([sys.executable, "-m", "venv", str(VENV)])
        _run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", PYSPARK, "-e", str(ROOT)])
        _run([str(python), "-c", "import mor, pyspark; assert pyspark.__version__.startswith('3.5')"])
        marker.write_text(MARKER_VALUE)
    return python


def _ready(marker: Path, python: Path) -> bool:
    return python.exists() and marker.is_file() and marker.read_text() == MARKER_VALUE


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building {VENV} failed: {' '.join(command)}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


if __name__ == "__main__":
    print(ensure_spark35())
