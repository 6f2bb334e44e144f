"""Test tiers by folder, and fixtures shared by the interop and Spark tests.

Every test is marked by the folder it lives in, so a tier is a marker expression:
- `fast`: tests/unit, tests/property, tests/stateful, except those marked `subprocess`: no
  JVM, no server, no other process (`scripts/test.sh fast`, before every commit);
- `slow`: everything else (Spark, Iceberg Java, PostgreSQL, the REST and S3 servers, the
  cluster, concurrency between processes, interop with other engines).

The Iceberg Java fixtures hold absolute paths under ``file:///tmp/mor-fixtures/iceberg-java``
(see ``shared/fixtures/iceberg-java/README.md``), so they are copied back there once per session
before anything reads them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

FAST_FOLDERS = ("unit", "property", "stateful")

SHARED_DIR = Path(__file__).resolve().parents[1].parent / "shared"
JAVA_FIXTURES_SOURCE = SHARED_DIR / "fixtures" / "iceberg-java"
JAVA_FIXTURES_ROOT = Path("/tmp/mor-fixtures/iceberg-java")
OWN_FIXTURES_SOURCE = Path(__file__).resolve().parent / "fixtures" / "iceberg-java"
# Tables only Iceberg core's generic reader reads (types Spark lacks: tests/fixtures/gen_java_v3_types.py).
GENERIC_FIXTURES_SOURCE = Path(__file__).resolve().parent / "fixtures" / "iceberg-java-generic"
GENERIC_FIXTURES_ROOT = Path("/tmp/mor-fixtures/iceberg-java-generic")


@pytest.fixture(scope="session")
def java_fixtures() -> Path:
    """The Iceberg Java fixtures, copied to the absolute location their metadata refers to.

    Equivalent to the README's
    ``rm -rf /tmp/mor-fixtures/iceberg-java && mkdir -p /tmp/mor-fixtures && cp -r ...``.
    """
    if not (JAVA_FIXTURES_SOURCE / "expected").is_dir():
        pytest.fail(
            f"Iceberg Java fixtures not found at {JAVA_FIXTURES_SOURCE}: the interop tests need "
            "the shared/ folder beside this checkout (shared/fixtures/iceberg-java/expected).",
            pytrace=False,
        )
    JAVA_FIXTURES_ROOT.parent.mkdir(parents=True, exist_ok=True)
    # The processes of one run copy once, under a lock: pytest-xdist's workers
    # (`scripts/test.sh fast`), and the slow tier's two processes, which scripts/test.sh gives
    # one MOR_TEST_RUN_ID (a copy made afresh by the second had removed the files the first was
    # reading). Every other run copies afresh.
    run = os.environ.get("MOR_TEST_RUN_ID") or os.environ.get("PYTEST_XDIST_TESTRUNUID")
    marker = JAVA_FIXTURES_ROOT.parent / "copied-for-run"
    with open(JAVA_FIXTURES_ROOT.parent / "copy.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if run is None or not marker.exists() or marker.read_text() != run:
            marker.unlink(missing_ok=True)
            if JAVA_FIXTURES_ROOT.exists():
                shutil.rmtree(JAVA_FIXTURES_ROOT)
            shutil.copytree(JAVA_FIXTURES_SOURCE, JAVA_FIXTURES_ROOT)
            # Ours (tests/fixtures/iceberg-java: evolution) live in the same warehouse path.
            shutil.copytree(OWN_FIXTURES_SOURCE, JAVA_FIXTURES_ROOT, dirs_exist_ok=True)
            if run is not None:
                marker.write_text(run)
    return JAVA_FIXTURES_ROOT


@pytest.fixture(scope="session")
def java_generic_fixtures() -> Path:
    """The fixtures of tests/fixtures/iceberg-java-generic, copied to the absolute location
    their metadata refers to (a slow-tier fixture: one process copies it)."""
    if GENERIC_FIXTURES_ROOT.exists():
        shutil.rmtree(GENERIC_FIXTURES_ROOT)
    shutil.copytree(GENERIC_FIXTURES_SOURCE, GENERIC_FIXTURES_ROOT)
    return GENERIC_FIXTURES_ROOT


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test `fast` or `slow` by its folder under tests/ (see the module docstring)."""
    tests = Path(__file__).resolve().parent
    for item in items:
        try:
            folder = item.path.resolve().relative_to(tests).parts[0]
        except ValueError:
            continue
        fast = folder in FAST_FOLDERS and item.get_closest_marker("subprocess") is None
        item.add_marker(pytest.mark.fast if fast else pytest.mark.slow)


# Tests judged by another engine (DuckDB, polars, pandas, PySpark, the server's Starlette) skip
# where it is not installed, on a developer's machine. CI installs every one (.ci/run sets
# MOR_REQUIRE_ENGINES=1): there, a judge that cannot be imported fails its tests instead of
# skipping them silently.
REQUIRE_ENGINES = os.environ.get("MOR_REQUIRE_ENGINES") == "1"


def _missing_engine(report: pytest.CollectReport | pytest.TestReport) -> bool:
    return report.skipped and "could not import" in str(report.longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ENGINES and _missing_engine(report):
        report.outcome = "failed"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ENGINES and _missing_engine(report):
        report.outcome = "failed"


@pytest.fixture(autouse=True)
def _no_backoff_in_one_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast test loses a commit race only to a commit it made itself, in its own process:
    Iceberg's 100 ms first backoff (mor/commit/retry.py) waits for nobody there (it was 13 s
    of the fast tier). Tests with other processes keep the real default."""
    if request.node.get_closest_marker("fast") is not None:
        monkeypatch.setattr("mor.commit.retry.DEFAULT_MIN_WAIT_MS", 1)
