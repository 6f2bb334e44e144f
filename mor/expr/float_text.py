"""A double as Spark writes it as text (`cast(x as string)`, a double stored into a string
column): Java's `Double.toString` layout over the shortest digits that read back as the same
double. 1.5 is "1.5", 100.0 "100.0", 1e7 "1.0E7", 1e-5 "1.0E-5", NaN "NaN", infinity
"Infinity". Java 17's own digits are not always the shortest (1e23 is "9.999999999999999E22"
there, the smallest subnormal "4.9E-324"): on such rare values the texts differ. A 32-bit float is
not written here (Java's `Float.toString` often keeps a digit more than the shortest).

Arrow's expressions have no such cast, so it is a scalar function registered with Arrow once
(`call`), evaluated element by element in Python: fine for the values an UPDATE writes, slow
for millions of rows.
"""

from __future__ import annotations

import math
import threading
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Arrow is imported where an expression is made: casts of constants need none of it
    import pyarrow as pa
    import pyarrow.compute as pc

FUNCTION = "mor_double_text"
_REGISTERED = threading.Lock()
_registered = False


def double_text(value: float) -> str:
    """Java's `Double.toString` layout of `value` (see the module docstring)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)  # a finite value
    text = "".join(map(str, digits)).rstrip("0") or "0"
    leading = exponent + len(digits) - 1  # the power of ten of the first digit
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if leading >= 0:
            whole, fraction = text[: leading + 1].ljust(leading + 1, "0"), text[leading + 1 :]
        else:
            whole, fraction = "0", "0" * (-leading - 1) + text
        return f"{minus}{whole}.{fraction or '0'}"
    return f"{minus}{text[0]}.{text[1:] or '0'}E{leading}"


def _texts(context: Any, values: pa.Array) -> pa.Array:
    import pyarrow as pa

    return pa.array([None if v is None else double_text(v) for v in values.to_pylist()], pa.string())


def call(expr: pc.Expression) -> pc.Expression:
    """`expr` (float64) as Spark's text of it, an expression Arrow evaluates."""
    import pyarrow as pa
    import pyarrow.compute as pc

    global _registered
    with _REGISTERED:
        if not _registered:
            pc.register_scalar_function(
                _texts, FUNCTION, {"summary": "a double as Spark writes it", "description": __doc__ or ""},
                {"value": pa.float64()}, pa.string(),
            )  # fmt: skip
            _registered = True
    return pc.Expression._call(FUNCTION, [expr])
