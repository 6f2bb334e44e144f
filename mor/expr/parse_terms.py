"""The terms of SQL text (sqlglot's tree of Spark SQL, mor.expr.sql_text) as mor's terms: a
column, a value, arithmetic, a function, a cast, `extract(part from t)`, or a date or time
computed once, when the text is read (`current_date`, `current_timestamp`, `now()`, plus or
minus an `interval`). mor.expr.parse reads the predicates around them.

Terms of constants only are folded here: a cast of a value (mor.expr.casts) and date and time
arithmetic (mor.expr.temporal) become a typed value, so that a comparison of a column with them
stays a plain comparison that prunes. A construct mor does not evaluate is refused by name, once.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, NoReturn

from pyiceberg.expressions.literals import BooleanLiteral, DecimalLiteral, DoubleLiteral, Literal, LongLiteral, StringLiteral
from sqlglot import exp

from mor.errors import InvalidFilterError
from mor.expr.casts import TYPE_NAMES, CastType, cast_constant, cast_type, check_cast
from mor.expr.literals import TYPED_TEXT, Temporal, parse_temporal
from mor.expr.residual import EXTRACT_NAMES, EXTRACT_PARTS, PUBLIC_FUNCTIONS, TEMPORAL, Call, Column, Constant, constant_of
from mor.expr.sql_text import LIST_PREFIX, fail, parse_sql, start_of, string_value
from mor.expr.temporal import UNITS, Interval, current_date, current_timestamp, interval_of, shifted, unit_of

SYNTAX = """filter syntax (Spark SQL's):
  col = 5 (!=, <>, <, <=, >, >=, <=>)   col [not] in (1, 2)   col [not] between 1 and 9
  col is null   col is not null   col is [not] nan   col is [not] true   col [not] starts with 'ab'
  col [not] [i]like 'a_%'   and, or, not, ( )   bool_col   'text' ('' or \\' for a quote), 12, true
  times: '2025-06-05', '2025-06-05 10:00[:00.5][Z|+02:00]', date '...', timestamp '...'
    (on timestamptz, without zone is UTC; on timestamp, a date is its midnight)
    current_date - interval 7 days   ts + interval 1 hour   date_add(d, 3)
  numbers compare exactly: 149.5 on decimal(10,2)
  on rows: + - * / % ||  lower(s) concat(a, b) substring(s, 1, 3) abs(x) coalesce(x, y) year(t)
    extract(dow from t) size(list) cast(x as int), x::date, a + b > c
  `any name` or "any name" for other column names, a.b for a nested field"""
MAX_TERM_NODES = 64  # operators and functions in one predicate's terms (also how deep they nest)
CLOCK = ("current_date", "current_timestamp", "now()")
_INTEGER = re.compile(r"[+-]?\d+")

# sqlglot's node -> mor's function of one argument
_UNARY: dict[type[exp.Expression], str] = {
    exp.Lower: "lower", exp.Upper: "upper", exp.Length: "length", exp.Abs: "abs",
    exp.Year: "year", exp.Quarter: "quarter", exp.Month: "month", exp.WeekOfYear: "weekofyear",
    exp.Day: "day", exp.DayOfMonth: "day", exp.DayOfWeek: "dayofweek", exp.DayOfWeekIso: "dayofweek_iso",
    exp.DayOfYear: "dayofyear", exp.Hour: "hour", exp.Minute: "minute", exp.Second: "second",
    exp.Floor: "floor", exp.Ceil: "ceil", exp.ArraySize: "size",
}  # fmt: skip
_ARITHMETIC: dict[type[exp.Expression], str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
# functions sqlglot does not model, by Spark's name -> (mor's function, arguments accepted)
_NAMED = {"now": ("now", (0, 0)), "cardinality": ("size", (1, 1)), "pmod": ("pmod", (2, 2))}
_SQLGLOT_TYPES = {
    "TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int", "BIGINT": "bigint", "FLOAT": "float", "DOUBLE": "double",
    "DECIMAL": "decimal", "VARCHAR": "varchar", "CHAR": "varchar", "TEXT": "string", "BOOLEAN": "boolean", "DATE": "date",
    "TIMESTAMP": "timestamp", "TIMESTAMPNTZ": "timestamp_ntz", "TIMESTAMPTZ": "timestamp", "TIMESTAMPLTZ": "timestamp",
}  # fmt: skip
_TRIMS = {"LEADING": "ltrim", "TRAILING": "rtrim"}


def number(text: str) -> Constant:
    return constant_of_literal(literal(text))


def constant_of_literal(literal: Literal) -> Constant:
    """A parsed literal as a term of a residual."""
    for kind, cls in TYPED_TEXT.items():
        if type(literal) is cls:
            return Constant(literal.value, kind)
    return constant_of(literal.value)


def literal_of(constant: Constant) -> Literal:
    """A term's constant as the literal of a plain comparison."""
    if constant.kind in TYPED_TEXT:
        return TYPED_TEXT[constant.kind](constant.value)
    if constant.kind == "bool":
        return BooleanLiteral(constant.value)
    if constant.kind in ("text", "string"):
        return StringLiteral(constant.value)
    if constant.kind == "float":
        return DoubleLiteral(constant.value)
    return LongLiteral(constant.value) if constant.kind == "int" else DecimalLiteral(constant.value)


def literal(text: str) -> Literal:
    """A 'string' or number item's value, typed as Spark SQL types it: a whole number a long,
    a number with a point a decimal, one with an exponent (`1e3`, `2.5E-1`) a double."""
    if text[0] == "'":
        return StringLiteral(string_value(text))
    if _INTEGER.fullmatch(text):
        return LongLiteral(int(text))
    if "e" in text or "E" in text:
        return DoubleLiteral(float(text))
    return DecimalLiteral(Decimal(text))


def is_interval(term: Any) -> bool:
    return isinstance(term, Constant) and term.kind == "interval"


def is_null(term: Any) -> bool:
    return isinstance(term, Constant) and term.kind == "null"


NULL = Constant(None, "null")


class TermReader:
    """Terms of one parsed text (mor.expr.parse reads its predicates)."""

    WHAT = "filter"  # what the text is, in errors (mor.expr.values reads values)
    HELP = SYNTAX  # the syntax shown under an error

    def __init__(self, text: str):
        self.parsed = parse_sql(text, self.WHAT, self.HELP)
        self.text = text
        self.term_nodes = 0  # operators and functions in the current predicate

    # -- terms ----------------------------------------------------------------------------

    def term(self, node: exp.Expression, depth: int = 0) -> Any:
        if depth > MAX_TERM_NODES:
            self.fail(
                node,
                f"terms nest more than {MAX_TERM_NODES} levels deep (a predicate holds at most {MAX_TERM_NODES} operators and functions)",
            )
        if isinstance(node, exp.Paren):
            return self.term(node.this, depth + 1)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return Constant(node.this, "text")
            return number(node.this)
        if isinstance(node, exp.Boolean):
            return Constant(bool(node.this), "bool")
        if isinstance(node, exp.Null):
            return NULL
        if isinstance(node, (exp.Column, exp.Dot)):
            return self._column(node)
        if isinstance(node, exp.Neg):
            inner = self.term(node.this, depth + 1)
            if isinstance(inner, Constant) and inner.kind == "int":
                return Constant(-inner.value, "int")
            if isinstance(inner, Constant) and inner.kind == "decimal":
                return Constant(inner.value.copy_negate(), "decimal")  # exactly: `-` rounds to 28 digits
            return self.call(node, "neg", (inner,))
        if type(node) in _ARITHMETIC:
            return self.call(node, _ARITHMETIC[type(node)], (self.term(node.this, depth + 1), self.term(node.expression, depth + 1)))
        if isinstance(node, exp.DPipe):
            return self.call(node, "concat", (self.term(node.this, depth + 1), self.term(node.expression, depth + 1)))
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self._cast(node, depth)
        if isinstance(node, exp.Interval):
            return self._interval(node)
        if isinstance(node, (exp.CurrentDate, exp.CurrentTimestamp)):
            text, kind = current_date() if isinstance(node, exp.CurrentDate) else current_timestamp()
            return Constant(text, kind)
        if isinstance(node, exp.Extract):
            return self._extract(node, depth)
        if isinstance(node, exp.Case):
            self.fail(node, "a CASE is a whole value or a branch of another CASE, not an operand: put the arithmetic in its branches")
        return self._function(node, depth)

    def _function(self, node: exp.Expression, depth: int) -> Any:
        def arg(n: exp.Expression) -> Any:
            return self.term(n, depth + 1)

        if type(node) in _UNARY:
            inner = node.this
            if isinstance(inner, exp.TsOrDsToDate) and not inner.args.get("safe"):
                inner = inner.this  # year(x) and friends: sqlglot's own wrapper, not the user's to_date()
            return self.call(node, _UNARY[type(node)], (arg(inner),))
        if isinstance(node, exp.Concat):
            return self.call(node, "concat", tuple(arg(a) for a in node.expressions))
        if isinstance(node, exp.Coalesce):
            return self.call(node, "coalesce", tuple(arg(a) for a in [node.this, *node.expressions]))
        if isinstance(node, (exp.Greatest, exp.Least)):
            name = "greatest" if isinstance(node, exp.Greatest) else "least"
            return self.call(node, name, tuple(arg(a) for a in [node.this, *node.expressions]))
        if isinstance(node, exp.Nullif):
            return self.call(node, "nullif", (arg(node.this), arg(node.expression)))
        if isinstance(node, exp.Round):
            digits = node.args.get("decimals")
            return self.call(node, "round", (arg(node.this), arg(digits) if digits is not None else Constant(0, "int")))
        if isinstance(node, exp.Trim):
            if node.expression is not None:
                self.fail(node, "trim() of other characters than spaces is not supported")
            return self.call(node, _TRIMS.get(str(node.args.get("position") or ""), "trim"), (arg(node.this),))
        if isinstance(node, exp.Substring):
            length = node.args.get("length")
            args = (arg(node.this), arg(node.args["start"]), *([arg(length)] if length is not None else []))
            return self.call(node, "substring", args)
        if isinstance(node, exp.TsOrDsAdd):
            return self._date_add(node, arg(node.this), arg(node.expression))
        if isinstance(node, exp.DateDiff):
            end, start = (n.this if isinstance(n, exp.TsOrDsToDate) else n for n in (node.this, node.expression))
            return self.call(node, "datediff", (arg(end), arg(start)))
        if isinstance(node, exp.TsOrDsToDate):
            if node.args.get("format") is not None:
                self.fail(node, "to_date() with a format is not supported: cast(x as date) reads ISO dates")
            return self._cast_of(node, arg(node.this), CastType("date"))
        if isinstance(node, (exp.StartsWith, exp.EndsWith, exp.Contains)):
            name = {exp.StartsWith: "startswith", exp.EndsWith: "endswith", exp.Contains: "contains"}[type(node)]
            return self.call(node, name, (arg(node.this), arg(node.expression)))
        if isinstance(node, exp.ArrayContains):
            return self.call(node, "array_contains", (arg(node.this), arg(node.expression)))
        if isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
            if name.startswith(LIST_PREFIX):
                self.fail(node, "a list of values here: a list is written after 'in'")
            known = _NAMED.get(name)
            if known is None:
                self.fail(node, f"function {name}() is not supported: write one of {_functions()}", syntax=False)
            function, (least, most) = known
            args = tuple(arg(a) for a in node.expressions)
            if not least <= len(args) <= most:
                self.fail(node, f"{name}() takes {least}{'' if least == most else f' to {most}'} arguments, found {len(args)}")
            if function == "now":
                text, kind = current_timestamp()
                return Constant(text, kind)
            return self.call(node, function, args)
        if isinstance(node, exp.Func) and not isinstance(node, exp.Connector):  # sqlglot's and/or are Funcs too
            self.fail(node, f"function {_spark_name(node)}() is not supported: write one of {_functions()}", syntax=False)
        if isinstance(node, exp.Alias):
            self.fail(node.args["alias"], f"expected an operator, 'and', 'or' or the end of the text, found {node.alias!r}")
        self.fail(node, f"{_construct(node)} is not supported in a {self.WHAT.split()[0]}")

    def call(self, node: exp.Expression, function: str, args: tuple[Any, ...]) -> Any:
        if function in ("+", "-", "neg") and any(isinstance(a, Constant) and (a.kind == "interval" or a.kind in TEMPORAL) for a in args):
            folded = self._date_arithmetic(node, function, args)
            if folded is not None:
                return folded
        if function in ("+", "-") and is_interval(args[1]) and not is_interval(args[0]):
            interval = args[1].value if function == "+" else -args[1].value
            if interval.months:
                self.fail(node, "an interval of months or years added to a column is not supported yet: use days, or add_months "
                          "to a date written in the text")  # fmt: skip
            return self.call(node, "add_interval", (args[0], Constant(interval, "interval")))
        if any(is_interval(a) for a in args) and function != "add_interval":
            self.fail(node, "an interval is added to or subtracted from a date or time (ts + interval 1 day), "
                      "not used as a value by itself")  # fmt: skip
        self.term_nodes += 1
        if self.term_nodes > MAX_TERM_NODES:
            self.fail(node, f"a predicate may hold at most {MAX_TERM_NODES} operators and functions")
        return Call(function, args)

    def _column(self, node: exp.Expression) -> Column:
        if isinstance(node, exp.Column) and not node.table and not node.this.quoted and node.name.lower() == "nan":
            self.fail(node, "NaN cannot be compared: use 'col is nan' or 'col is not nan' (or 'NaN', the text Spark casts to a double)")
        parts = _name_parts(node)
        if parts is None:
            self.fail(node, f"{node.sql(dialect='spark')} is not a column name")
        for part in parts:
            if "." in part or not part:
                self.fail(node, f"column name {part!r} cannot be empty or hold '.' (a.b names a nested field)")
        if parts[0].startswith(LIST_PREFIX):
            self.fail(node, "a list of values here: a list is written after 'in'")
        return Column(".".join(parts))

    def _date_add(self, node: exp.Expression, start: Any, days: Any) -> Any:
        if isinstance(start, Constant) and start.kind in ("date", "text") and isinstance(days, Constant) and days.kind == "int":
            date = start if start.kind == "date" else self._cast_of(node, start, CastType("date"))
            return self.call(node, "+", (date, Constant(interval_of(str(days.value), "day"), "interval")))
        return self.call(node, "date_add", (start, days))

    # -- casts, extract, intervals ----------------------------------------------------------

    def _cast(self, node: exp.Cast, depth: int) -> Any:
        if node.args.get("safe"):
            self.fail(node, "try_cast() is not supported: cast() is ANSI's (a value that does not convert is an error)")
        target = self._type(node, node.args["to"])
        inner = node.this
        if isinstance(inner, exp.Literal) and inner.is_string and target.kind in TEMPORAL and isinstance(node, exp.Cast):
            return self._typed_text(inner, target)  # date '...', timestamp '...'
        return self._cast_of(node, self.term(inner, depth + 1), target)

    def _type(self, node: exp.Expression, data_type: exp.DataType) -> CastType:
        name = _SQLGLOT_TYPES.get(data_type.this.name)
        if name is None:
            self.fail(node, f"unknown type {data_type.this.name.lower()!r}: cast to one of {TYPE_NAMES}")
        sizes = [int(p.this.this) for p in data_type.expressions] if data_type.expressions else None
        try:
            return cast_type(name, sizes)
        except (ValueError, AttributeError) as e:
            self.fail(node, str(e))

    def _typed_text(self, text: exp.Literal, target: CastType) -> Constant:
        value = str(text.this)
        try:
            parsed = parse_temporal(value)
        except ValueError as e:
            self.fail(text, str(e))
        kind = target.kind
        if kind == "timestamp" and parsed.offset is not None:
            kind = "timestamptz"  # timestamp '... +02:00': an instant
        return Constant(value, kind)

    def _cast_of(self, node: exp.Expression, term: Any, target: CastType) -> Any:
        """A cast of a constant folded to a constant of the type; of anything else a term."""
        if not isinstance(term, Constant):
            return self.call(node, "cast", (term, target))
        if is_null(term):
            return term
        refusal = check_cast(term.kind, target, term)
        if refusal is not None:
            self.fail(node, refusal)
        try:
            value, kind = cast_constant(term.value, term.kind, target)
        except ValueError as e:
            self.fail(node, f"cannot cast {term} to {target}: {e}")
        return Constant(value, kind)

    def _extract(self, node: exp.Extract, depth: int) -> Any:
        part = node.this
        name = str(part.this if isinstance(part, (exp.Var, exp.Literal)) else part.name).lower()
        function = EXTRACT_PARTS.get(name)
        if function is None:
            self.fail(node, f"expected the part to extract, found {name!r}: write one of {EXTRACT_NAMES}")
        return self.call(node, function, (self.term(node.expression, depth + 1),))

    def _interval(self, node: exp.Interval) -> Constant:
        """`interval 7 days`, `interval '1' hour`, `interval '7 days'` (sqlglot splits it)."""
        amount = node.this
        unit = node.args.get("unit")
        text = str(amount.this) if isinstance(amount, exp.Literal) else None
        if text is None:
            self.fail(node, f"expected an amount after 'interval' (7 days, '1' hour; units: {_units()})")
        if unit is None:  # interval '1 day 2 hours'
            words = text.split()
            if not words or len(words) % 2:
                self.fail(node, f"expected amounts and units in interval '{text}' (units: {_units()})")
            total = Interval(0, 0)
            for n, u in zip(words[::2], words[1::2]):
                total += self._amount(node, n, u)
            return Constant(total, "interval")
        return Constant(self._amount(node, text, unit.name), "interval")

    def _amount(self, node: exp.Expression, amount: str, unit: str) -> Interval:
        name = unit_of(unit)
        if name is None:
            self.fail(node, f"unknown interval unit {unit!r}: write one of {_units()}")
        try:
            return interval_of(amount, name)
        except ValueError as e:
            self.fail(node, str(e))

    def _date_arithmetic(self, node: exp.Expression, function: str, args: tuple[Any, ...]) -> Constant | None:
        """A date or time constant plus or minus an interval (or a date plus or minus whole
        days, as Spark's date_add), intervals added and negated; None for anything else."""
        if function == "neg":
            return Constant(-args[0].value, "interval") if is_interval(args[0]) else None
        left, right = args
        if not (isinstance(left, Constant) and isinstance(right, Constant)):
            return None
        if is_interval(left) and is_interval(right):
            return Constant(left.value + (right.value if function == "+" else -right.value), "interval")
        if is_interval(left) and right.kind in TEMPORAL and function == "+":
            left, right = right, left
        if left.kind == "date" and right.kind == "int":
            right = Constant(interval_of(str(right.value), "day"), "interval")
        if left.kind not in TEMPORAL or not is_interval(right):
            return None
        try:
            text, kind = shifted(left.value, left.kind, right.value if function == "+" else -right.value)
        except ValueError as e:
            self.fail(node, str(e))
        return Constant(text, kind)

    # -- errors ---------------------------------------------------------------------------

    def fail(self, node: exp.Expression | None, problem: str, syntax: bool = True) -> NoReturn:
        """InvalidFilterError at `node` (a caret under it); `syntax`: the syntax below."""
        at = start_of(node, self.parsed) if node is not None else len(self.text)
        fail(self.text, at, problem, self.WHAT, self.HELP if syntax else "")


def _name_parts(node: exp.Expression) -> list[str] | None:
    if isinstance(node, exp.Column):
        return [str(p.this) for p in node.parts]
    if isinstance(node, exp.Dot):
        left = _name_parts(node.this)
        right = node.expression
        if left is None or not isinstance(right, exp.Identifier):
            return None
        return [*left, str(right.this)]
    if isinstance(node, exp.Identifier):
        return [str(node.this)]
    return None


def _spark_name(node: exp.Func) -> str:
    return node.sql_name().lower()


def _construct(node: exp.Expression) -> str:
    names = {exp.Subquery: "a subquery", exp.Select: "a subquery", exp.Window: "a window function", exp.Star: "'*'",
             exp.Alias: "an alias (or a word after a whole expression)", exp.Placeholder: "a parameter"}  # fmt: skip
    for cls, name in names.items():
        if isinstance(node, cls):
            return name
    if isinstance(node, exp.Predicate) or isinstance(node, exp.Connector):
        return f"a condition as an operand ({node.sql(dialect='spark')}; a CASE in a value gives its truth a value)"
    return f"{node.sql(dialect='spark')!r}"


def _functions() -> str:
    return ", ".join([*(f + "()" for f in PUBLIC_FUNCTIONS), "cast(x as type)", "extract(part from t)", *CLOCK])


def _units() -> str:
    return ", ".join(UNITS)


def point_in_time(text: str) -> Temporal:
    """A point in time written as a filter writes one: '2025-01-15', '2025-01-15 12:00[Z|+02:00]',
    date '...', timestamp '...', current_date, current_timestamp (now()), and those plus or minus
    an interval; ValueError saying what is accepted otherwise."""
    try:
        return parse_temporal(text.strip())
    except ValueError:
        pass
    accepted = (
        f"{text!r} is not a point in time: write '2025-01-15', '2025-01-15 12:00[:00][Z|+02:00]', date '...', "
        "timestamp '...', current_date or current_timestamp, plus or minus an interval (current_timestamp - interval 1 hour)"
    )
    try:
        reader = TermReader(text)
        term = reader.term(reader.parsed.tree)
    except InvalidFilterError:
        raise ValueError(accepted) from None
    if not (isinstance(term, Constant) and term.kind in (*TEMPORAL, "text")):
        raise ValueError(accepted)
    return parse_temporal(term.value)
