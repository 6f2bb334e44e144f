"""One SparkSession (local[2]) for the whole test run; every test here is marked `spark`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import mor

pytest.importorskip("pyspark", reason="the Spark tests need the mor[spark] extra")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    # Workers must run this interpreter, where mor is installed (no sys.path tricks).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    _use_java_17()
    from pyspark.sql import SparkSession

    import mor.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("mor-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    mor.spark.register(session)
    yield session
    session.stop()


def _use_java_17() -> None:
    """Spark 4 wants Java 17 or 21; a machine may also have a newer JDK first on the PATH."""
    if os.environ.get("JAVA_HOME"):
        return
    for candidate in sorted(Path("/usr/lib/jvm").glob("*17*")):
        if (candidate / "bin" / "java").exists():
            os.environ["JAVA_HOME"] = str(candidate)
            return


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


@pytest.fixture
def catalog(warehouse: Path) -> mor.Catalog:
    return mor.load_catalog(warehouse)


@pytest.fixture
def read_mor(spark: object, warehouse: Path) -> Callable[..., object]:
    """`read_mor("db.t", **options)`: a DataFrame of format "mor" on the test warehouse."""

    def read(name: str, **options: str) -> object:
        reader = spark.read.format("mor").option("warehouse", str(warehouse))  # type: ignore[attr-defined]
        for key, value in options.items():
            reader = reader.option(key.replace("_", "-"), value)
        return reader.load(name)

    return read
