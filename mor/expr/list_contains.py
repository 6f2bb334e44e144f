"""Spark's `array_contains(list, value)` on rows: Arrow's expressions have no such kernel, so it is
a scalar function registered with Arrow once per element type (as mor.expr.float_text's),
evaluated row by row in Python: NULL for a null list or value; true where an element equals the
value; else NULL where the list holds a null, false otherwise (SQL's `in` with a null)."""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# the element type a list is cast to, by the kind of the value looked for
ELEMENT_TYPES = {"int": pa.int64(), "float": pa.float64(), "string": pa.string(), "text": pa.string(), "bool": pa.bool_()}
_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def _contains(context: Any, lists: pa.Array, values: pa.Array | pa.Scalar) -> pa.Array:
    found = values.to_pylist() if isinstance(values, pa.Array) else [values.as_py()] * len(lists)
    out: list[bool | None] = []
    for elements, value in zip(lists.to_pylist(), found):
        if elements is None or value is None:
            out.append(None)
        elif any(e is not None and e == value for e in elements):
            out.append(True)
        else:
            out.append(None if any(e is None for e in elements) else False)
    return pa.array(out, pa.bool_())


def call(lists: pc.Expression, value: Any, kind: str) -> pc.Expression:
    """`array_contains(lists, value)` as an expression Arrow evaluates; `kind`: the value's kind."""
    element = ELEMENT_TYPES[kind]
    name = f"mor_array_contains_{element}"
    with _LOCK:
        if name not in _REGISTERED:
            pc.register_scalar_function(
                _contains, name, {"summary": "Spark's array_contains", "description": __doc__ or ""},
                {"lists": pa.list_(element), "value": element}, pa.bool_(),
            )  # fmt: skip
            _REGISTERED.add(name)
    return pc.Expression._call(name, [lists.cast(pa.list_(element)), pc.scalar(pa.scalar(value, element))])
