"""mor's errors back from Spark: a MorError raised in a Python worker (a data source's planning,
a task on an executor) reaches the driver wrapped in a pyspark or py4j exception whose text
holds the original traceback, ending in a line like

    mor.errors.InvalidFilterError: unknown column 'nope'

`spark_errors` (a context manager and decorator) finds the last such line of a MorError subclass
in the text of pyspark's `PythonException`, `AnalysisException` and `SparkRuntimeException`, or of
py4j's `Py4JJavaError`, and raises that class with that message instead, chained to the original
(kept as `__cause__`, so nothing of the Spark side is lost). Other exceptions, and Spark
exceptions that hold no mor error, pass through unchanged.
"""

from __future__ import annotations

import re
from contextlib import ContextDecorator
from types import TracebackType
from typing import Literal

from mor import errors as mor_errors
from mor.errors import MorError

# The qualified name Python prints for an exception raised from mor.errors, and its message line.
_ERROR_LINE = re.compile(r"mor\.errors\.([A-Za-z_][A-Za-z0-9_]*): ([^\n]*)")


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


def mor_error_in(error: BaseException) -> MorError | None:
    """The MorError whose traceback `error`'s text carries (the last one named), or None."""
    if isinstance(error, MorError):
        return None
    try:
        text = str(error)
    except Exception:  # py4j may fail to render a Java exception whose gateway is gone
        return None
    found = None
    for match in _ERROR_LINE.finditer(text):
        cls = getattr(mor_errors, match.group(1), None)
        if isinstance(cls, type) and issubclass(cls, MorError):
            found = (cls, match.group(2).strip())
    if found is None:
        return None
    cls, message = found
    try:
        return cls(message)
    except Exception:  # an error class that wants more than a message
        return MorError(message)


class spark_errors(ContextDecorator):
    """`with spark_errors(): ...` or `@spark_errors()`: Spark-wrapped mor errors raised as
    themselves (see the module docstring)."""

    def __enter__(self) -> spark_errors:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> Literal[False]:
        if error is None or not isinstance(error, _wrappers()):
            return False
        translated = mor_error_in(error)
        if translated is None:
            return False
        raise translated from error
