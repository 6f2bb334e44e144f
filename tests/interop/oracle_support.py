"""Reading tables with the real Iceberg Java reader (../shared/tools/iceberg-oracle)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def java_metadata_tables(requests: Sequence[tuple[str, str]], workdir: Path) -> list[pa.Table]:
    """Iceberg Java's metadata table of each (metadata location, name), e.g. "files"."""
    return _run_oracle([{"metadata": m, "metadata_table": name} for m, name in requests], workdir)


def read_with_iceberg_java(
    requests: Sequence[tuple[str, int] | tuple[str, int, Sequence[str] | None]], workdir: Path, sort: bool = True
) -> list[pa.Table]:
    """Rows of each (metadata location, snapshot id), as Iceberg Java reads them.

    A request may name the columns to read as a third item, metadata columns included: on a v3
    table `("…/v9.metadata.json", snapshot_id, ["id", "_row_id", "_last_updated_sequence_number"])`
    gives each row's lineage as Iceberg Java assigns it (NULL in snapshots from before v3).
    Without it (or with None) every column of the snapshot's schema is read. The rows come
    sorted by every column; `sort=False` leaves them in Spark's order, which halves the cost of
    each read, for callers that compare rows as multisets."""
    payload = []
    for metadata, snapshot_id, *rest in requests:
        request: dict[str, Any] = {"metadata": metadata, "snapshot_id": snapshot_id}
        if rest and rest[0] is not None:
            request["columns"] = list(rest[0])
        if not sort:
            request["sort"] = False
        payload.append(request)
    return _run_oracle(payload, workdir)


def _run_oracle(payload: list[dict[str, Any]], workdir: Path) -> list[pa.Table]:
    python = ensure_oracle()
    for i, request in enumerate(payload):
        request["out"] = str(workdir / f"oracle-{i}.parquet")
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
