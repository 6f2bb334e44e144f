"""Predicates that Iceberg expressions cannot hold: arithmetic, functions, column against column
(`id % 7 = 0`, `lower(name) = 'x'`, `a + b > 10`).

A `Residual` is one such predicate, a leaf of a pyiceberg expression tree beside the plain
comparisons (and/or/not stay pyiceberg's). Metadata cannot judge it: the pruning form of a
filter reads it as TRUE (a file may hold matches) and the strict form as FALSE (no file is
known to match whole), after NOTs are pushed to the leaves, so pruning never drops a file that
holds a matching row. Rows evaluate it with SQL's semantics (mor.expr.residual_rows): a NULL
result selects nothing. A visitor that cannot evaluate it (Spark's column builder) raises
UnsupportedFeatureError instead of misreading it.

The terms are plain frozen values, so filters and tasks stay picklable; `bind` resolves column
names to field ids and checks the operands' kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Or,
)
from pyiceberg.expressions.visitors import visit
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    StringType,
    TimestampType,
    TimestamptzType,
)

from mor.errors import InvalidFilterError, UnsupportedFeatureError
from mor.expr.casts import CastType, check_cast
from mor.expr.literals import parse_temporal

NUMERIC = ("int", "decimal", "float")
TEMPORAL = ("date", "timestamp", "timestamptz")
ARITHMETIC = ("+", "-", "*", "/", "%")
COMPARISONS = ("<", "<=", ">", ">=", "=", "!=")
_ANY = ("int", "decimal", "float", "string", "bool", *TEMPORAL)
_DATES = (*TEMPORAL, "string")  # Spark reads text as a date where a function takes one
# function -> (kinds each argument may have, the result's kind: "same" as the arguments)
FUNCTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "lower": (("string",), "string"),
    "upper": (("string",), "string"),
    "length": (("string",), "int"),
    "trim": (("string",), "string"),
    "ltrim": (("string",), "string"),
    "rtrim": (("string",), "string"),
    "concat": (("int", "decimal", "float", "string", "bool", *TEMPORAL), "string"),
    "abs": (NUMERIC, "same"),
    "floor": (NUMERIC, "int"),
    "ceil": (NUMERIC, "int"),
    "coalesce": (_ANY, "same"),
    "greatest": (_ANY, "same"),
    "least": (_ANY, "same"),
    "year": (TEMPORAL, "int"),
    "quarter": (TEMPORAL, "int"),
    "month": (TEMPORAL, "int"),
    "weekofyear": (TEMPORAL, "int"),  # ISO 8601 week
    "day": (TEMPORAL, "int"),
    "dayofweek": (TEMPORAL, "int"),  # Sunday 1 to Saturday 7, as Spark SQL
    "dayofweek_iso": (TEMPORAL, "int"),  # Monday 1 to Sunday 7
    "dayofyear": (TEMPORAL, "int"),
    "hour": (TEMPORAL, "int"),
    "minute": (TEMPORAL, "int"),
    "second": (TEMPORAL, "int"),
    "date": (TEMPORAL, "date"),
    "size": (("list", "map"), "int"),
    "extract_second": (TEMPORAL, "decimal"),  # extract(second from t): with its fraction, decimal(8,6), as Spark SQL
}
# functions whose arguments differ: function -> (each argument's kinds, the result's kind)
SIGNATURES: dict[str, tuple[tuple[tuple[str, ...], ...], str]] = {
    "substring": ((("string",), ("int",), ("int",)), "string"),
    "round": ((NUMERIC, ("int",)), "same"),
    "pmod": ((NUMERIC, NUMERIC), "same"),
    "nullif": ((_ANY, _ANY), "same"),
    "date_add": ((_DATES, ("int",)), "date"),
    "datediff": ((_DATES, _DATES), "int"),
    "add_interval": ((TEMPORAL, ("interval",)), "same"),
    "startswith": ((("string",), ("string",)), "bool"),
    "endswith": ((("string",), ("string",)), "bool"),
    "contains": ((("string",), ("string",)), "bool"),
    "array_contains": ((("list",), ("int", "float", "string", "bool")), "bool"),
}
# how many arguments: at least, at most (None: any number); one where not said
ARITY: dict[str, tuple[int, int | None]] = {
    "coalesce": (1, None), "concat": (1, None), "greatest": (2, None), "least": (2, None), "substring": (2, 3),
    **{f: (2, 2) for f in SIGNATURES if f != "substring"},
}  # fmt: skip
PUBLIC_FUNCTIONS = tuple(f for f in (*FUNCTIONS, *SIGNATURES) if not f.startswith("extract_") and f != "add_interval")
# extract(part from t): the part's names (Spark SQL's) -> the function it is
EXTRACT_PARTS: dict[str, str] = {
    "year": "year", "years": "year", "y": "year", "yr": "year", "yrs": "year",
    "quarter": "quarter", "qtr": "quarter",
    "month": "month", "months": "month", "mon": "month", "mons": "month",
    "week": "weekofyear", "weeks": "weekofyear", "w": "weekofyear",
    "day": "day", "days": "day", "d": "day", "dayofmonth": "day",
    "dayofweek": "dayofweek", "dow": "dayofweek", "dayofweek_iso": "dayofweek_iso", "dow_iso": "dayofweek_iso", "isodow": "dayofweek_iso",
    "doy": "dayofyear", "dayofyear": "dayofyear",
    "hour": "hour", "hours": "hour", "h": "hour", "hr": "hour", "hrs": "hour",
    "minute": "minute", "minutes": "minute", "m": "minute", "min": "minute", "mins": "minute",
    "second": "extract_second", "seconds": "extract_second", "s": "extract_second", "sec": "extract_second", "secs": "extract_second",
}  # fmt: skip
EXTRACT_NAMES = "year, quarter, month, week, day, dayofweek (dow), dayofweek_iso (dow_iso), dayofyear (doy), hour, minute, second"
_KINDS: dict[type, str] = {
    IntegerType: "int", LongType: "int", FloatType: "float", DoubleType: "float", DecimalType: "decimal",
    StringType: "string", BooleanType: "bool", DateType: "date", TimestampType: "timestamp", TimestamptzType: "timestamptz",
    ListType: "list", MapType: "map",
}  # fmt: skip


# -- terms ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    field_id: int = -1  # bound: the field's id
    kind: str = ""  # bound: int, decimal, float, string, bool, date, timestamp, timestamptz
    type: IcebergType | None = None  # bound: the column's type

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Constant:
    """A value: int, Decimal, float, str or bool; a date as days, a timestamp as micros."""

    value: Any
    kind: str  # as Column.kind; "text" for 'quoted' text not yet given a type

    def __str__(self) -> str:
        if self.kind in ("text", "string"):
            return "'" + str(self.value).replace("'", "''") + "'"
        if self.kind in TEMPORAL and isinstance(self.value, str):
            return f"{self.kind} '{self.value}'"
        return str(self.value).lower() if isinstance(self.value, bool) else str(self.value)


@dataclass(frozen=True)
class Call:
    """A function or an operator (`+`, `-`, `*`, `/`, `%`, `neg`) applied to terms; `cast`
    takes a term and its CastType."""

    function: str
    args: tuple[Any, ...]
    kind: str = ""  # bound: the result's kind

    def __str__(self) -> str:
        if self.function == "cast":
            return f"cast({self.args[0]} as {self.args[1]})"
        if self.function == "extract_second":
            return f"extract(second from {self.args[0]})"
        if self.function in ARITHMETIC:
            return f"({self.args[0]} {self.function} {self.args[1]})"
        if self.function == "neg":
            return f"-{self.args[0]}"
        return f"{self.function}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Test:
    """`left op right...`: a comparison (one right term), `in` (constants), `is null` (none),
    `is nan` (none; false for a null, as Spark's isnan), `starts with` and `like` (one string
    constant: for `like`, its pattern in pyarrow's escapes)."""

    op: str
    left: Any
    right: tuple[Any, ...] = ()

    def __str__(self) -> str:
        if self.op in ("is null", "is nan"):
            return f"{self.left} {self.op}"
        if self.op == "in":
            return f"{self.left} in ({', '.join(map(str, self.right))})"
        return f"{self.left} {self.op} {self.right[0]}"

    def columns(self) -> list[Column]:
        found, todo = [], [self.left, *self.right]
        while todo:
            term = todo.pop()
            if isinstance(term, Column):
                found.append(term)
            elif isinstance(term, Call):
                todo.extend(term.args)
        return found


# -- the predicate ----------------------------------------------------------------------------


class Residual(BooleanExpression):
    """One predicate over terms, evaluated on rows only; `negated`: its NOT (Kleene's)."""

    test: Any
    negated: bool = False

    def __init__(self, test: Test, negated: bool = False, **_: Any):
        super().__init__(test=test, negated=negated)

    def __invert__(self) -> BooleanExpression:
        return type(self)(self.test, not self.negated)

    def __str__(self) -> str:
        return f"not ({self.test})" if self.negated else str(self.test)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"

    @property
    def term(self) -> Any:
        """A residual has no one column: code that builds a predicate on one (Spark's column
        builder) learns why here, rather than misreading the residual."""
        raise UnsupportedFeatureError(_unsupported(self, "an engine that reads predicates on one column"))

    def bind(self, schema: Schema, case_sensitive: bool = True) -> BoundResidual:
        return BoundResidual(_bound_test(self.test, schema, case_sensitive), self.negated)


class BoundResidual(Residual):
    """A Residual whose columns are resolved and whose kinds are checked."""

    def field_ids(self) -> set[int]:
        return {c.field_id for c in self.test.columns()}


@visit.register(Residual)
def _visit_residual(obj: Residual, visitor: Any) -> Any:
    visit_residual = getattr(visitor, "visit_residual", None)
    if visit_residual is None:
        raise UnsupportedFeatureError(_unsupported(obj, type(visitor).__name__))
    return visit_residual(obj)


def _unsupported(residual: Residual, path: str) -> str:
    return (
        f"the predicate {residual} (arithmetic, a function or two columns) is evaluated by mor's own row reader; "
        f"this path ({path}) cannot evaluate it: filter with column-vs-value comparisons here, or filter the rows read"
    )


# -- forms of a filter with residuals (recursion: a filter is at most filter_shape.MAX_DEPTH deep)


def pushed_not(expr: BooleanExpression) -> BooleanExpression:
    """`expr` without Not nodes: each NOT pushed to the leaves (pyiceberg's rewrite_not, which
    cannot visit a Residual)."""
    if isinstance(expr, And):
        return And(pushed_not(expr.left), pushed_not(expr.right))
    if isinstance(expr, Or):
        return Or(pushed_not(expr.left), pushed_not(expr.right))
    if isinstance(expr, Not):
        return ~pushed_not(expr.child)
    return expr


def has_residual(expr: BooleanExpression) -> bool:
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, Residual):
            return True
        if isinstance(e, (And, Or)):
            todo += [e.left, e.right]
        elif isinstance(e, Not):
            todo.append(e.child)
    return False


def without_residuals(expr: BooleanExpression, may_match: bool) -> BooleanExpression:
    """`expr` (NOT-free: `pushed_not`) with each residual read as TRUE (`may_match`: the form
    that prunes) or FALSE (the strict form): monotone, so neither drops a possible match."""
    if isinstance(expr, Residual):
        return AlwaysTrue() if may_match else AlwaysFalse()
    if isinstance(expr, And):
        return And(without_residuals(expr.left, may_match), without_residuals(expr.right, may_match))
    if isinstance(expr, Or):
        return Or(without_residuals(expr.left, may_match), without_residuals(expr.right, may_match))
    return expr


def bound_field_ids(expr: BooleanExpression) -> set[int]:
    """The field ids a bound filter reads (pyiceberg's extract_field_ids, residuals included)."""
    ids: set[int] = set()
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, BoundResidual):
            ids |= e.field_ids()
        elif isinstance(e, (And, Or)):
            todo += [e.left, e.right]
        elif isinstance(e, Not):
            todo.append(e.child)
        elif isinstance(e, BoundPredicate):
            ids.add(e.term.ref().field.field_id)
    return ids


# -- binding ----------------------------------------------------------------------------------


def _bound_test(test: Test, schema: Schema, case_sensitive: bool) -> Test:
    left = _bound_term(test.left, schema, case_sensitive)
    right = [_bound_term(t, schema, case_sensitive) for t in test.right]
    if test.op == "is null":
        return Test(test.op, left)
    if test.op == "is nan":
        if left.kind not in NUMERIC:
            raise InvalidFilterError(f"isnan() takes a number, and {test.left} is {left.kind}")
        return Test(test.op, left)
    if test.op in ("starts with", "like"):
        if left.kind not in ("string", "text"):
            raise InvalidFilterError(f"'starts with' and 'like' need text, and {test.left} is {left.kind}")
        return Test(test.op, left, tuple(right))
    target = left.kind if not _is_text(left) else (right[0].kind if right and not _is_text(right[0]) else "string")
    left = _typed(left, target, test)
    right = [_typed(r, target, test) for r in right]
    kinds = {left.kind, *(r.kind for r in right)}
    if not _comparable(kinds):
        raise InvalidFilterError(f"cannot compare {' with '.join(sorted(kinds))} in {test}")
    return Test(test.op, left, tuple(right))


def _is_text(term: Any) -> bool:
    return isinstance(term, Constant) and term.kind == "text"


def _typed(term: Any, kind: str, test: Test) -> Any:
    """Quoted text as a value of `kind` (a string, or a date/time cast as filter_literals casts)."""
    if not _is_text(term):
        return term
    if kind in ("string", "text"):
        return Constant(term.value, "string")
    if kind not in TEMPORAL:
        raise InvalidFilterError(f"cannot compare {kind} with the text {term} in {test}")
    try:
        value = parse_temporal(term.value)
    except ValueError as e:
        raise InvalidFilterError(f"{e} (in {test})") from e
    if kind == "date":
        return Constant(value.days, "date")
    if kind == "timestamp" and value.offset not in (None, 0):
        raise InvalidFilterError(f"{term} has a zone, and {test} compares timestamps without zone")
    return Constant(value.wall_micros() - (value.offset or 0), kind)


def _comparable(kinds: set[str]) -> bool:
    return len(kinds) == 1 or kinds <= set(NUMERIC) or kinds <= set(TEMPORAL)


def bind_term(term: Any, schema: Schema) -> Any:
    """A term with its columns resolved and its kinds checked (a value's text: mor.expr.values)."""
    return _bound_term(term, schema, case_sensitive=True)


def _bound_term(term: Any, schema: Schema, case_sensitive: bool) -> Any:
    if isinstance(term, Column):
        try:
            field = schema.find_field(term.name, case_sensitive)
        except ValueError as e:
            raise InvalidFilterError(f"unknown column {term.name!r} (columns: {', '.join(schema.column_names[:30])})") from e
        kind = _KINDS.get(type(field.field_type))
        if kind is None:
            raise InvalidFilterError(f"column {term.name!r} of type {field.field_type} cannot be used in arithmetic or functions")
        return Column(schema.find_column_name(field.field_id) or term.name, field.field_id, kind, field.field_type)
    if isinstance(term, Constant):
        return _bound_constant(term)
    args = tuple(a if isinstance(a, CastType) else _bound_term(a, schema, case_sensitive) for a in term.args)
    return Call(term.function, args, _result_kind(term, args))


def _bound_constant(term: Constant) -> Constant:
    if term.kind not in TEMPORAL or not isinstance(term.value, str):
        return term
    value = parse_temporal(term.value)  # checked by the parser
    if term.kind == "date":
        return Constant(value.days, "date")
    if term.kind == "timestamp" and value.offset not in (None, 0):
        raise InvalidFilterError(f"timestamp '{term.value}' has no zone (write timestamptz '...')")
    micros = value.wall_micros() - (value.offset or 0)
    return Constant(micros, term.kind)


def _result_kind(call: Call, args: tuple[Any, ...]) -> str:
    if call.function == "cast":
        target: CastType = args[1]
        refusal = check_cast(args[0].kind, target, args[0])
        if refusal is not None:
            raise InvalidFilterError(f"{refusal}, in {call}")
        if target.kind == "string":
            refuse_float32_text(args[0], str(call))
        return target.kind
    kinds = [a.kind if not _is_text(a) else "string" for a in args if not (isinstance(a, Constant) and a.kind == "null")]
    if not kinds:
        raise InvalidFilterError(f"{call.function}() of null alone has no type: cast(null as <type>), in {call}")
    if call.function in ARITHMETIC or call.function == "neg":
        if any(k not in NUMERIC for k in kinds):
            raise InvalidFilterError(f"{call.function!r} needs numbers, in {call}")
        if call.function == "/":  # Spark's: of whole numbers or a double a double; else a decimal
            return "decimal" if "decimal" in kinds and "float" not in kinds else "float"
        return _wider(kinds)
    least, most = ARITY.get(call.function, (1, 1))
    if len(args) < least or (most is not None and len(args) > most):
        takes = f"{least}" if least == most else f"{least} or more" if most is None else f"{least} to {most}"
        raise InvalidFilterError(f"{call.function}() takes {takes} argument{'s' if most != 1 else ''}, found {len(args)}, in {call}")
    if call.function == "concat":
        for arg in args:
            refuse_float32_text(arg, str(call))
    if call.function in SIGNATURES:
        kinds_by_place, result = SIGNATURES[call.function]
        for kind, allowed in zip(kinds, kinds_by_place):
            if kind not in allowed:
                raise InvalidFilterError(f"{call.function}() takes {', '.join(allowed)} there, not {kind}, in {call}")
        if call.function == "add_interval":
            return _shifted_kind(kinds[0], args[1].value)
        if call.function == "nullif" and not _comparable(set(kinds)):
            raise InvalidFilterError(f"nullif() needs arguments of one kind, in {call}")
    else:
        allowed, result = FUNCTIONS[call.function]
        bad = [k for k in kinds if k not in allowed]
        if bad:
            raise InvalidFilterError(f"{call.function}() takes {', '.join(allowed)}, not {bad[0]}, in {call}")
        if call.function in ("coalesce", "greatest", "least") and not _comparable(set(kinds)):
            raise InvalidFilterError(f"{call.function}() needs arguments of one kind, in {call}")
    if result != "same":
        return result
    kinds = kinds if call.function not in ("round", "nullif") else kinds[:1]
    return _wider(kinds) if set(kinds) <= set(NUMERIC) else kinds[0]


def _shifted_kind(kind: str, interval: Any) -> str:
    """A date plus whole days or months stays a date; plus hours it is a timestamp (Spark's)."""
    if kind == "date" and interval.micros % 86_400_000_000:
        return "timestamp"
    return kind


def refuse_float32_text(term: Any, where: str) -> None:
    """A 32-bit float has no text here (mor.expr.float_text): InvalidFilterError if `term` reads one."""
    todo = [term]
    while todo:
        t = todo.pop()
        if isinstance(t, Column) and isinstance(t.type, FloatType):
            raise InvalidFilterError(f"column {t.name!r} is a 32-bit float, which mor does not write as text as Spark does, in {where}")
        if isinstance(t, Call):
            todo.extend(a for a in t.args if not isinstance(a, CastType))


def _wider(kinds: list[str]) -> str:
    return "float" if "float" in kinds else "decimal" if "decimal" in kinds else kinds[0]


def constant_of(value: Any) -> Constant:
    """The Constant of a parsed number, text or boolean."""
    if isinstance(value, bool):
        return Constant(value, "bool")
    if isinstance(value, int):
        return Constant(value, "int")
    if isinstance(value, Decimal):
        return Constant(value, "decimal")
    if isinstance(value, float):
        return Constant(value, "float")
    return Constant(value, "text")
