"""SQL's `%` of doubles and decimals as Spark computes it (Java's `%` and BigDecimal.remainder):
the remainder of the division truncated toward zero, with the dividend's sign, exact. Arrow
has no remainder kernel, and `a - b * trunc(a / b)` in floating point is wrong where the
quotient rounds to a whole number (1e10 % 0.1) or is large, so both are pyarrow functions
registered here, usable inside the row filter's expressions. A zero divisor is an error where
the dividend is not null (ANSI mode); a null operand gives null.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MAX_PRECISION = 38
_DOUBLE_FUNCTION = "mor_remainder_double"


def _decimal_function(scale: int) -> str:
    return f"mor_remainder_decimal_{scale}"


def remainder(a: pc.Expression, b: pc.Expression, dtype: pa.DataType) -> pc.Expression:
    """`a % b`, both of `dtype` (float64, or a decimal: the result has its scale). pyarrow makes
    an expression of a registered function only through `Expression._call` (its generated
    wrappers cover the built-in functions): this module is the one place that calls it."""
    if pa.types.is_decimal(dtype):
        wide = pa.decimal128(MAX_PRECISION, dtype.scale)
        return pc.Expression._call(_decimal_function(dtype.scale), [a.cast(wide), b.cast(wide)])
    return pc.Expression._call(_DOUBLE_FUNCTION, [a, b])


def _arrays(ctx: Any, *values: pa.Array | pa.Scalar) -> list[pa.Array]:
    """The arguments as arrays of the batch's length (a constant arrives as a scalar)."""
    return [v if isinstance(v, pa.Array) else pa.repeat(v, ctx.batch_length) for v in values]


def _zero_divisor() -> pa.ArrowInvalid:
    return pa.ArrowInvalid("divide by zero (the divisor of %)")


def _double_remainder(ctx: Any, a: pa.Array | pa.Scalar, b: pa.Array | pa.Scalar) -> pa.Array:
    a, b = _arrays(ctx, a, b)
    valid = pc.and_(a.is_valid(), b.is_valid()).to_numpy(zero_copy_only=False)
    x, y = a.to_numpy(zero_copy_only=False), b.to_numpy(zero_copy_only=False)
    if np.any(valid & (y == 0)):
        raise _zero_divisor()
    with np.errstate(all="ignore"):
        return pa.array(np.fmod(x, y), pa.float64(), mask=~valid)  # C's fmod: exact, the dividend's sign


def _decimal_remainder(dtype: pa.DataType) -> Any:
    def compute(ctx: Any, a: pa.Array | pa.Scalar, b: pa.Array | pa.Scalar) -> pa.Array:
        out: list[Decimal | None] = []
        with localcontext() as context:
            context.prec = 2 * MAX_PRECISION + 2  # exact for any two decimals of 38 digits
            for x, y in zip(*(v.to_pylist() for v in _arrays(ctx, a, b))):
                if x is None or y is None:
                    out.append(None)
                elif y == 0:
                    raise _zero_divisor()
                else:
                    out.append(x % y)  # Decimal's %: truncated, the dividend's sign
        return pa.array(out, dtype)

    return compute


def _register() -> None:
    """Once per process, when mor.expr is imported (an expression names its functions)."""
    registered = set(pc.list_functions())
    if _DOUBLE_FUNCTION not in registered:
        doc = {"summary": "SQL's % of doubles", "description": "Java's %: truncated, exact; a zero divisor raises."}
        pc.register_scalar_function(_double_remainder, _DOUBLE_FUNCTION, doc, {"a": pa.float64(), "b": pa.float64()}, pa.float64())
    for scale in range(MAX_PRECISION + 1):
        name = _decimal_function(scale)
        if name not in registered:
            dtype = pa.decimal128(MAX_PRECISION, scale)
            doc = {"summary": "SQL's % of decimals", "description": "BigDecimal.remainder: exact; a zero divisor raises."}
            pc.register_scalar_function(_decimal_remainder(dtype), name, doc, {"a": dtype, "b": dtype}, dtype)


_register()
