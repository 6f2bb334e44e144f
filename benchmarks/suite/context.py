"""What every section of the benchmark report shares: the scale, the generated rows, tables
restored to the same starting state for each run, and the progress display.

A table is built once per (name, format version) with mor's appends (one data file per slice
of the generated rows) and kept as a template folder beside it; `fresh_table` puts the
template back at the table's path before each run (metadata holds absolute paths, so a
warehouse is restored where it was built, never copied elsewhere). Every run of every engine
thus starts from the same files.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from common import TABLE_NAME, build_warehouse, file_slices, generate_events
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

import mor


@dataclass(frozen=True)
class Scale:
    """How big a run is. `default` fits in 15 minutes on 2 cores; `large` is for big machines."""

    name: str
    rows: int
    files: int
    fractions: tuple[float, ...] = (0.0001, 0.001, 0.01, 0.1)
    iceberg_spark_fractions: tuple[float, ...] = (0.001, 0.1)  # its copy-on-write runs take 5-20 s each
    read_repeat: int = 3
    # Reads whose ratio a target uses (mor and the floor; Spark's readers and its floor), timed
    # in interleaved rounds: at the default scale 3 rounds left the ratio 20% apart between runs.
    paired_read_repeat: int = 5
    dml_repeat: int = 1
    planning_sizes: tuple[int, ...] = (1_000, 10_000)  # 100k: 2.5 more minutes here (--planning-sizes)
    accumulation_steps: int = 20
    accumulation_fraction: float = 0.0005
    memory_delete_files: int = 50
    append_rows: int = 5_000_000
    reader_timeout_seconds: float = 300.0  # a reader's process, both forms (reads section)
    dml_timeout_seconds: float = 300.0  # pyiceberg's DML process
    spark: bool = True


SCALES = {
    "smoke": Scale("smoke", rows=100_000, files=2, read_repeat=1, paired_read_repeat=1, planning_sizes=(100, 1_000), accumulation_steps=3,
                   memory_delete_files=5, append_rows=200_000, reader_timeout_seconds=120.0),
    "default": Scale("default", rows=2_000_000, files=8, reader_timeout_seconds=10.0, dml_timeout_seconds=30.0),
    "large": Scale("large", rows=100_000_000, files=100, planning_sizes=(1_000, 10_000, 100_000),
                   accumulation_fraction=0.0001, append_rows=100_000_000,
                   reader_timeout_seconds=1800.0, dml_timeout_seconds=3600.0),
}  # fmt: skip


@dataclass
class Context:
    scale: Scale
    data_dir: Path
    seed: int
    console: Console = field(default_factory=Console)
    _data: pa.Table | None = None
    _progress: Progress | None = None
    _task: TaskID | None = None

    # -- the generated rows -------------------------------------------------------------
    @property
    def data(self) -> pa.Table:
        if self._data is None:
            self._data = generate_events(self.scale.rows, self.seed)
        return self._data

    @property
    def rows(self) -> int:
        return self.scale.rows

    @property
    def id_sum(self) -> int:
        return self.rows * (self.rows - 1) // 2

    def selected_ids(self, predicate: pc.Expression) -> pa.Array:
        """The ids of the generated rows matching `predicate` (to check every engine's result)."""
        return self.data.filter(predicate)["id"].combine_chunks()

    # -- tables restored to one starting state ------------------------------------------
    def fresh_table(self, name: str, format_version: int | None = None) -> mor.Table:
        """The generated rows as table bench.events of warehouse data_dir/<name>, exactly as
        first built (the same files) however earlier runs changed it."""
        root = self.data_dir / name
        # A template per scale, seed and version: a data folder reused across them must not hand
        # one run another's rows.
        template = self.data_dir / f"{name}.template-{self.scale.rows}x{self.scale.files}-{self.seed}-v{format_version or 2}"
        if not template.exists():
            build_warehouse(root, file_slices(self.data, self.scale.files), format_version=format_version)
            shutil.copytree(root, template)
        else:
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(template, root)
        return mor.load_catalog(root).load_table(TABLE_NAME)

    def warehouse(self, name: str) -> Path:
        return self.data_dir / name

    # -- progress -----------------------------------------------------------------------
    @contextmanager
    def running(self) -> Iterator[None]:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=self.console, transient=False) as progress:
            self._progress = progress
            try:
                yield
            finally:
                self._progress = None

    @contextmanager
    def section(self, title: str, steps: int) -> Iterator[Any]:
        """A bar for one section of `steps` steps; `step(text)` says what runs now."""
        progress = self._progress
        task = progress.add_task(title, total=steps) if progress is not None else None
        started = time.perf_counter()
        begun = 0

        def step(text: str) -> None:  # the previous step is done; `text` begins
            nonlocal begun
            if progress is not None and task is not None:
                progress.update(task, completed=min(begun, steps), description=f"{title}: {text}")
            begun += 1

        try:
            yield step
        finally:
            if progress is not None and task is not None:
                progress.update(task, completed=steps, description=f"{title} ({time.perf_counter() - started:.0f} s)")

    def log(self, message: str) -> None:
        self.console.log(message)


def expected(ctx: Context, deleted: pa.Array | None = None) -> dict[str, int]:
    """Row count and id sum of the generated rows without `deleted` ids: every reader's result
    is held to them."""
    if deleted is None or len(deleted) == 0:
        return {"rows": ctx.rows, "id_sum": ctx.id_sum}
    return {"rows": ctx.rows - len(deleted), "id_sum": ctx.id_sum - int(pc.sum(deleted).as_py() or 0)}


TABLE = TABLE_NAME
