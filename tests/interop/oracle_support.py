"""Reading tables with the real Iceberg Java reader (../shared/tools/iceberg-oracle)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
ORACLE_DIR = ROOT.parent / "shared" / "tools" / "iceberg-oracle"
ORACLE_VENV = Path(os.environ.get("MOR_ORACLE_VENV", ROOT / ".oracle-venv"))


def ensure_oracle() -> Path:
    """Install the oracle's environment (idempotent, ~40 s the first time); its python."""
    if not ORACLE_DIR.is_dir():
        raise RuntimeError(f"the Iceberg Java oracle is missing at {ORACLE_DIR}")
    env = {**os.environ, "ORACLE_VENV": str(ORACLE_VENV)}
    subprocess.run(["bash", str(ORACLE_DIR / "setup.sh")], check=True, env=env, capture_output=True)
    return ORACLE_VENV / "bin" / "python"


def read_with_iceberg_java(requests: list[tuple[str, int]], workdir: Path) -> list[pa.Table]:
    """Rows of each (metadata location, snapshot id), as Iceberg Java reads them."""
    python = ensure_oracle()
    payload = [
        {"metadata": metadata, "snapshot_id": snapshot_id, "out": str(workdir / f"oracle-{i}.parquet")}
        for i, (metadata, snapshot_id) in enumerate(requests)
    ]
    request_file = workdir / "oracle-requests.json"
    request_file.write_text(json.dumps(payload))
    env = {**os.environ, "ORACLE_VENV": str(ORACLE_VENV), "PYSPARK_PYTHON": str(python)}
    done = subprocess.run(
        [str(python), str(Path(__file__).with_name("oracle_driver.py")), str(ORACLE_DIR), str(request_file)],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"Iceberg Java oracle failed:\n{done.stderr[-4000:]}")
    return [pq.read_table(p["out"]) for p in payload]
