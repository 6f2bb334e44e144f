"""mor's errors back from Spark.

A MorError raised in a Python worker (a data source's planning, a task on an executor) reaches
the driver wrapped in a pyspark or py4j exception whose text holds the original, ending in a
line like

    mor.errors.InvalidFilterError: unknown column 'nope'

`spark_errors` (a context manager and decorator, on every mor.spark entry point: `read_table`,
`register_tables`, `MorTable`'s methods, the verbs, maintenance) finds the last such line of a
MorError subclass in the text of pyspark's `PythonException`, `AnalysisException` and
`SparkRuntimeException`, or of py4j's `Py4JJavaError`, and raises that class with that message
instead, chained to the original (kept as `__cause__`, so nothing of the Spark side is lost).
Two failures of the session's setup become a `SparkSetupError` that says what to do: format
"mor" not registered (Spark's DATA_SOURCE_NOT_FOUND) and Python workers that cannot import mor
("No module named 'mor'"). Other exceptions, and Spark exceptions that hold neither, pass
through unchanged.

    MorError
    └── SparkSetupError   the session cannot run mor: format "mor" not registered, or mor not
                          importable where Spark's Python workers run

`spark.read.format("mor")` and `spark.sql(...)` go from the user straight to Spark, which
raises its own exception types there (`AnalysisException [PYTHON_DATA_SOURCE_ERROR]` for errors
of the source's planning): mor cannot change the type without patching pyspark. What the source
does instead (`reported_alone`) is make the mor error the whole of what the worker reports: the
message reads `[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance:
mor.errors.NoSuchTableError: table db.missing does not exist`, one line, not a Python traceback
with the mor line at its end. Wrap such calls in `with mor.spark.spark_errors():` to get the
mor type itself.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import ContextDecorator, contextmanager
from types import TracebackType
from typing import Literal, TypeVar

from mor import errors as mor_errors
from mor.errors import MorError, ValidationError

# The qualified name Python prints for an exception raised from mor.errors, and its message line.
_ERROR_LINE = re.compile(r"mor\.errors\.([A-Za-z_][A-Za-z0-9_]*): ([^\n]*)")
# What Spark says when format "mor" is not registered with the session, and what a Python worker
# says when it cannot import mor (the data source is pickled by reference to the package).
_NOT_REGISTERED = re.compile(r"DATA_SOURCE_NOT_FOUND\][^\n]*data source: mor\b")
_NO_MOR = re.compile(r"No module named '?mor(?:'|\.)")
# pyspark's workers format the exception that ends them without its traceback when this is set
# (pyspark/util.py `handle_worker_exception`), then exit.
_HIDE_TRACEBACK_ENV = "SPARK_HIDE_TRACEBACK"
# Spark's own SQLSTATE suffix, which follows a worker's message on the same line.
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")

T = TypeVar("T")


class SparkSetupError(ValidationError):
    """The Spark session cannot run mor: format "mor" is not registered with it, or its Python
    workers cannot import mor. The message says what to do; the Spark error is the cause."""


def _wrappers() -> tuple[type[BaseException], ...]:
    """The exception types Spark wraps worker errors in (imported lazily: pyspark is optional)."""
    found: list[type[BaseException]] = []
    try:
        from pyspark.errors import AnalysisException, PythonException, SparkRuntimeException

        found += [AnalysisException, PythonException, SparkRuntimeException]
    except ImportError:
        pass
    try:
        from py4j.protocol import Py4JJavaError

        found.append(Py4JJavaError)
    except ImportError:
        pass
    return tuple(found)


def _text(error: BaseException) -> str | None:
    try:
        return str(error)
    except Exception:  # py4j may fail to render a Java exception whose gateway is gone
        return None


def mor_error_in(error: BaseException) -> MorError | None:
    """The MorError whose traceback `error`'s text carries (the last one named), or None."""
    if isinstance(error, MorError):
        return None
    text = _text(error)
    if text is None:
        return None
    found = None
    for match in _ERROR_LINE.finditer(text):
        cls = getattr(mor_errors, match.group(1), None)
        if isinstance(cls, type) and issubclass(cls, MorError):
            found = (cls, _SQLSTATE.sub("", match.group(2)).strip())
    if found is None:
        return None
    cls, message = found
    try:
        return cls(message)
    except Exception:  # an error class that wants more than a message
        return MorError(message)


def setup_error_in(error: BaseException) -> SparkSetupError | None:
    """A SparkSetupError saying what to do, when `error` is Spark's word for a session without
    format "mor" or with workers that cannot import mor; else None."""
    text = _text(error)
    if text is None:
        return None
    if _NOT_REGISTERED.search(text):
        return SparkSetupError(
            'format "mor" is not registered with this Spark session: call mor.spark.register(spark) '
            "(once per session; mor.spark.session() builds a session with it done)"
        )
    if _NO_MOR.search(text):
        return SparkSetupError(
            "Spark's Python workers cannot import mor (No module named 'mor'): install mor in the Python the workers "
            f"run and point them at it with PYSPARK_PYTHON or spark.pyspark.python (this driver runs {sys.executable}; "
            "mor.spark.session() sets it)"
        )
    return None


class spark_errors(ContextDecorator):
    """`with spark_errors(): ...` or `@spark_errors()`: Spark-wrapped mor errors raised as
    themselves, and setup failures as SparkSetupError (see the module docstring)."""

    def __enter__(self) -> spark_errors:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> Literal[False]:
        if error is None or not isinstance(error, _wrappers()):
            return False
        translated: MorError | None = mor_error_in(error) or setup_error_in(error)
        if translated is None:
            return False
        raise translated from error


def in_spark_worker() -> bool:
    """Is this process one of the Python workers Spark starts (pyspark's daemon, its workers,
    a planner), not the user's driver?"""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return (getattr(spec, "name", None) or "").startswith("pyspark.")


@contextmanager
def reported_alone() -> Iterator[None]:
    """Around the data source's work in a Spark worker: a MorError that ends the worker is
    reported as its one line (`mor.errors.X: message`), which Spark puts at the front of its
    own message, instead of a traceback that ends with it. The worker exits right after
    reporting (pyspark's `worker_run` and `worker.main`), so the setting dies with it; in any
    other process nothing is changed."""
    try:
        yield
    except MorError:
        if in_spark_worker():
            os.environ[_HIDE_TRACEBACK_ENV] = "1"
        raise


def reported_alone_each(batches: Iterator[T]) -> Iterator[T]:
    """`batches`, read under `reported_alone` (a task's reader is a generator)."""
    with reported_alone():
        yield from batches
