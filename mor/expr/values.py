"""Values as SQL text, as in Delta Lake's Python API: a `str` value of UPDATE's `set` or of a
MERGE clause is an expression over the old row, in the filter language's terms
(mor.expr.parse_terms): `qty + 1`, `upper(name)`, `'closed'` (the text), `null`,
`coalesce(x, 0)`, `cast(x as int)`, `x::date`, `extract(year from t)`, `current_timestamp`,
`date '2025-01-15' + interval 1 day`. A MERGE names the source row's columns `source.<name>`
(and the table's `target.<name>`, or by their plain names). A condition is a value too (its
truth, for a boolean column: `qty > 10`), and so is a CASE, searched (`case when qty > 10 then
'big' when qty > 0 then 'small' else 'none' end`) or simple (`case status when 'o' then 'open'
end`), whose branches are values (null among them) and whose conditions are filters; NULL
counts as false, and a CASE without `else` gives null. A CASE is a whole value or a branch of
another, not an operand (`case ... end + 1`: put the arithmetic in the branches).

The result is stored in the column as Spark's ANSI store assignment stores it: a number in any
number column (to whole numbers toward zero, to fewer decimal places half away from zero; a
value out of the column's range is an error, never NULL), any value in a text (a double as
Spark writes it: mor.expr.float_text) column, text and dates and times in date and time columns (text read as filters read it: no
zone is UTC for a timestamptz). Nothing else converts by itself: text into a number is
refused (write `cast('5' as int)`). A value of constants only is converted when the text is
read, so a value that does not fit fails before a row is read.

Every other Python value (numbers, Decimal, datetime, date, bytes, bool, None) is a literal, as
is `lit(value)`, which makes text a literal too (`lit("qty + 1")` sets that text). A bare word
that names no column (`closed`) is refused, suggesting `'closed'` or `mor.lit("closed")`:
never a silent literal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.types import NestedField, StructType
from sqlglot import exp

from mor.errors import InvalidArgumentError, InvalidFilterError, SchemaMismatchError
from mor.expr.arrow_rows import to_arrow_filter
from mor.expr.cast_rows import cast_expression
from mor.expr.casts import CastType, cast_constant, check_cast
from mor.expr.filters import bind_filter, parse_filter
from mor.expr.parse import PredicateReader
from mor.expr.residual import NUMERIC, TEMPORAL, Call, Column, Constant, bind_term, refuse_float32_text
from mor.expr.residual_rows import term_expression
from mor.expr.sql_text import deep_recursion
from mor.format.arrow_types import from_arrow_schema, to_arrow_type

VALUE_SYNTAX = """value syntax (SQL over the old row, as in Delta Lake's Python API):
  qty + 1   upper(name)   coalesce(x, 0)   cast(x as int)   x::date   extract(year from t)
  'closed' (text; '' for a quote)   12, -3.5, true   null   mor.lit("any text") for a literal
  '2025-01-15 12:00' into a timestamp column   date '2025-01-15'   current_timestamp - interval 1 day
  qty > 10 (true/false)   case when qty > 10 then 'big' else 'small' end   case s when 'o' then 1 end
  in a MERGE: source.<name> for the source's columns, target.<name> or <name> for the table's
  + - * / %  lower() upper() length() abs() coalesce() year() month() day() hour() date() ..."""
SOURCE, TARGET = "source", "target"


@dataclass(frozen=True)
class Lit:
    """A literal value: `lit("qty + 1")` sets the text itself, where the text "qty + 1" adds."""

    value: Any


def lit(value: Any) -> Lit:
    """`value` as a literal, whatever it is (text too: `mor.lit("closed")` is `"'closed'"`)."""
    return value if isinstance(value, Lit) else Lit(value)


def is_null_value(value: Any) -> bool:
    """None, `lit(None)` and the text `null`: a value that makes the column null."""
    if isinstance(value, Lit):
        return value.value is None
    return value is None or (isinstance(value, str) and value.strip().lower() == "null")


@dataclass(frozen=True)
class Scope:
    """The columns a value's text may name: a schema, each field's path in the rows the value
    is evaluated on, and prefixes standing for other names (`target.` for none)."""

    schema: Schema
    paths: dict[int, tuple[str, ...]]
    aliases: dict[str, str] = field(default_factory=dict)
    note: str = ""  # said of a column it does not have


def table_scope(schema: Schema) -> Scope:
    """The table's columns, by name (`a.b` for a field of struct `a`)."""
    return Scope(schema, _paths(schema.as_struct(), ()))


def merge_scope(schema: Schema, source: pa.Schema, target_visible: bool) -> Scope:
    """A MERGE clause's names over the joined rows (the table's columns by name, the source's as
    "source.<name>"): `source.<name>`, and where `target_visible` (an update) the table's
    columns by name or as `target.<name>`. An insert sees the source alone."""
    names = {f.name for f in schema.fields}
    fields = list(schema.fields) if target_visible else []
    paths = _paths(schema.as_struct(), ()) if target_visible else {}
    if SOURCE not in names or not target_visible:
        convertible = [f for f in source if _has_iceberg_type(f)]
        ids = iter(range(schema.highest_field_id + 2, 2**31))
        fresh = assign_fresh_schema_ids(from_arrow_schema(pa.schema(convertible)), lambda: next(ids))
        struct = StructType(*fresh.fields)
        fields.append(NestedField(schema.highest_field_id + 1, SOURCE, struct, required=False))
        for f in struct.fields:
            top = (f"{SOURCE}.{f.name}",)
            paths[f.field_id] = top
            if isinstance(f.field_type, StructType):
                paths.update(_paths(f.field_type, top))
    aliases = {f"{TARGET}.": ""} if target_visible and TARGET not in names else {}
    note = "" if target_visible else f": an insert sees only the source's columns ({SOURCE}.<name>)"
    return Scope(Schema(*fields), paths, aliases, note)


def _has_iceberg_type(f: pa.Field) -> bool:
    try:
        from_arrow_schema(pa.schema([f]))
    except SchemaMismatchError:
        return False
    return True


def _paths(struct: StructType, prefix: tuple[str, ...]) -> dict[int, tuple[str, ...]]:
    paths: dict[int, tuple[str, ...]] = {}
    for f in struct.fields:
        paths[f.field_id] = (*prefix, f.name)
        if isinstance(f.field_type, StructType):
            paths.update(_paths(f.field_type, (*prefix, f.name)))
    return paths


# -- a condition -----------------------------------------------------------------------------


def text_condition(text: str, scope: Scope, what: str) -> pc.Expression:
    """A MERGE clause's condition as SQL text (the filter language: `source.qty > qty`,
    `target.status = 'open' and source.op <> 'd'`) over the rows `scope` describes; `what`
    names the clause in errors. InvalidFilterError for text that does not parse (with a caret)
    or names a column the clause does not see."""
    try:
        return condition_expression(parse_filter(text), scope)
    except InvalidFilterError as e:
        note = "" if "\n" in str(e) else scope.note  # after a one-line error, not after the syntax
        raise InvalidFilterError(f"the condition of {what}: {e}{note}") from None


def condition_expression(condition: BooleanExpression, scope: Scope, guard: pc.Expression | None = None) -> pc.Expression:
    """A parsed condition as a boolean expression over the rows `scope` describes (SQL's:
    NULL where SQL says so); InvalidFilterError for a column it does not see. `guard`: the
    rows whose answer matters (a CASE's branch); nothing fails on the others."""
    schema, paths = _with_target_struct(scope) if scope.aliases.get(f"{TARGET}.") == "" else (scope.schema, scope.paths)
    return to_arrow_filter(bind_filter(schema, condition), schema, paths, guard)


def _with_target_struct(scope: Scope) -> tuple[Schema, dict[int, tuple[str, ...]]]:
    """The scope's schema with the table's columns also under `target` (fields with fresh ids,
    at the same places in the rows), for a condition to name them `target.<name>`."""
    table = [f for f in scope.schema.fields if f.field_id in scope.paths and scope.paths[f.field_id] == (f.name,)]
    ids = iter(range(scope.schema.highest_field_id + 1, 2**31))
    fresh = assign_fresh_schema_ids(Schema(*table), lambda: next(ids))
    paths = dict(scope.paths)
    for old, new in zip(table, fresh.fields):
        paths.update(_same_places(old, new, scope.paths))
    target = NestedField(next(ids), TARGET, StructType(*fresh.fields), required=False)
    return Schema(*scope.schema.fields, target), paths


def _same_places(old: NestedField, new: NestedField, paths: dict[int, tuple[str, ...]]) -> dict[int, tuple[str, ...]]:
    """`new`'s field ids (through structs) -> the rows' paths of the `old` fields they copy."""
    found = {new.field_id: paths[old.field_id]}
    if isinstance(old.field_type, StructType) and isinstance(new.field_type, StructType):
        for o, n in zip(old.field_type.fields, new.field_type.fields):
            found.update(_same_places(o, n, paths))
    return found


# -- reading a value -------------------------------------------------------------------------


@dataclass(frozen=True)
class Truth:
    """A condition as a value: true where `condition` holds, false where `falsity` does, else
    null (filters read a predicate for where it is TRUE or FALSE: mor.expr.parse)."""

    condition: BooleanExpression
    falsity: BooleanExpression


@dataclass(frozen=True)
class Case:
    """`case when c then v ... [else d] end`: the value of the first branch whose condition is
    true, else `default` (NULL_VALUE without `else`)."""

    whens: tuple[tuple[BooleanExpression, Any], ...]
    default: Any


NULL_VALUE = Constant(None, "null")  # `null` as a CASE's branch (a whole value is caught earlier)
_MAX_CASE_DEPTH = 16
_CONDITIONS = (
    exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.And, exp.Or, exp.Not,
    exp.In, exp.Between, exp.Like, exp.ILike, exp.Escape, exp.Is, exp.IsNan,
)  # fmt: skip


class _ValueReader(PredicateReader):
    HELP = VALUE_SYNTAX

    def __init__(self, text: str, column: str):
        self.WHAT = f"the value of {column!r}"
        super().__init__(text)

    def value(self, node: exp.Expression | None = None, depth: int = 0) -> Any:
        """A term, a condition (its truth), a CASE, or (a CASE's branch) null."""
        node = self.parsed.tree if node is None else node
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Case):
            return self._case(node, depth)
        if isinstance(node, exp.If):  # if(c, a, b): Spark's short CASE (a NULL condition takes b)
            if depth >= _MAX_CASE_DEPTH:
                self.fail(node, f"CASEs nest more than {_MAX_CASE_DEPTH} deep")
            otherwise = node.args.get("false")
            default = self.value(otherwise, depth + 1) if otherwise is not None else NULL_VALUE
            return Case(((self.predicate(node.this), self.value(node.args["true"], depth + 1)),), default)
        if isinstance(node, exp.Null):
            if depth == 0:
                self.fail(node, "null is a whole value ('null') or a CASE's branch")
            return NULL_VALUE
        if isinstance(node, _CONDITIONS):
            return Truth(self.predicate(node), self.predicate(node, negated=True))
        self.term_nodes = 0
        return self.term(node)

    def _case(self, node: exp.Case, depth: int) -> Case:
        if depth >= _MAX_CASE_DEPTH:
            self.fail(node, f"CASEs nest more than {_MAX_CASE_DEPTH} deep")
        subject = node.this
        whens = []
        for branch in node.args.get("ifs") or []:
            self.term_nodes = 0
            if subject is None:
                condition = self.predicate(branch.this)
            else:
                condition = self.comparison(branch, "=", self.term(subject), self.term(branch.this))
            whens.append((condition, self.value(branch.args["true"], depth + 1)))
        default = node.args.get("default")
        return Case(tuple(whens), self.value(default, depth + 1) if default is not None else NULL_VALUE)


def parse_value(text: str, column: str) -> Any:
    """The value `text` writes (a Column, Constant or Call; a Truth or a Case);
    InvalidArgumentError with a caret where it does not parse."""
    try:
        with deep_recursion():
            return _ValueReader(text, column).value()
    except RecursionError:
        raise InvalidArgumentError(f"the value of {column!r} nests too deep to read") from None
    except InvalidFilterError as e:
        raise InvalidArgumentError(str(e)) from None


def text_expression(text: str, target: pa.DataType, scope: Scope, column: str) -> pc.Expression:
    """The SQL text `text` as an expression over the rows `scope` describes, of the column's
    type `target` (see the module docstring); SchemaMismatchError for a name or a value that
    does not fit, InvalidArgumentError for text that does not parse."""
    if text.strip().lower() == "null":
        return pc.scalar(pa.scalar(None, type=target))
    return _ValueOf(text, target, scope, column).expression(parse_value(text, column))


@dataclass(frozen=True)
class _ValueOf:
    """Parsed values of one column's text (`text`, for errors) as expressions of its type."""

    text: str
    target: pa.DataType
    scope: Scope
    column: str

    def expression(self, value: Any, guard: pc.Expression | None = None) -> pc.Expression:
        """`value` as an expression of the column's type; `guard`: the rows that take it (a
        CASE's branch: columns read as null on the others, so nothing there raises)."""
        if value is NULL_VALUE:
            return pc.scalar(pa.scalar(None, type=self.target))
        if isinstance(value, Case):
            truths, branches, untaken = [], [], guard  # untaken: the rows that reach the branch (a nested CASE: its own branch's)
            for condition, branch in value.whens:
                truth = pc.coalesce(self._truth(condition, untaken), pa.scalar(False))
                taken = truth if untaken is None else untaken & truth
                truths.append(truth)
                branches.append(self.expression(branch, taken))
                untaken = ~truth if untaken is None else untaken & ~truth
            chosen = pc.make_struct(*truths, field_names=[f"when{i}" for i in range(len(truths))])
            return pc.case_when(chosen, *branches, self.expression(value.default, untaken))
        term = value if isinstance(value, Truth) else _resolved(value, self.scope, self.text, self.column, whole=True)
        if isinstance(term, Column):
            found = self.scope.schema.find_field(term.name)
            if to_arrow_type(found.field_type) == self.target:  # a column of the same type, whatever the type
                return pc.field(*self.scope.paths[found.field_id])
        into = _cast_type(self.target)
        if into is None:
            raise SchemaMismatchError(
                f"{self.column!r} is {self.target}: SQL text sets it only to null or a column of that type; "
                f"give a Python value (bytes, uuid.UUID, datetime.time, ...) or a pyarrow expression instead of {self.text!r}"
            )
        if isinstance(term, Truth):
            true, false = (pc.coalesce(self._truth(c, guard), pa.scalar(False)) for c in (term.condition, term.falsity))
            expr, dtype, kind = pc.if_else(true, True, pc.if_else(false, False, pa.scalar(None, pa.bool_()))), pa.bool_(), "bool"
        else:
            expr, dtype, kind = self._term(term, into, guard)
        refusal = _refusal(kind, into, self.text)
        if refusal is not None and isinstance(term, Truth):
            refusal = (
                "a condition is true or false, stored in a boolean or text column; "
                f"for numbers write case when {self.text} then 1 else 0 end"
            )
        if refusal is not None:
            raise SchemaMismatchError(f"cannot set {self.column!r} ({self.target}) to {self.text}: {refusal}")
        if dtype != self.target and not (kind == into.kind and _same_kind_fits(dtype, self.target)):
            expr, dtype = cast_expression(expr, kind, dtype, into)
        return expr if dtype == self.target else expr.cast(self.target)

    def _term(self, term: Any, into: CastType, guard: pc.Expression | None) -> tuple[pc.Expression, pa.DataType, str]:
        if isinstance(term, Constant):  # converted now: a value that does not fit fails before any row is read
            term = _fitted(term, into, self.text, f"{self.column!r} ({self.target})")
        try:
            bound = bind_term(term, self.scope.schema)
            if into.kind == "string":
                refuse_float32_text(bound, self.text)
        except InvalidFilterError as e:
            raise SchemaMismatchError(f"the value of {self.column!r} ({self.text}): {e}") from None
        expr, dtype = term_expression(bound, self.scope.paths, guard)
        return expr, dtype, bound.kind

    def _truth(self, condition: BooleanExpression, guard: pc.Expression | None = None) -> pc.Expression:
        try:
            return condition_expression(condition, self.scope, guard)
        except InvalidFilterError as e:
            raise SchemaMismatchError(f"the value of {self.column!r} ({self.text}): {e}{self.scope.note}") from None


def _same_kind_fits(dtype: pa.DataType, target: pa.DataType) -> bool:
    """A plain cast of `dtype` to `target` changes no value or raises (never rounds)."""
    return not pa.types.is_decimal(dtype) or dtype.scale <= target.scale


def _resolved(term: Any, scope: Scope, text: str, column: str, whole: bool = False) -> Any:
    """`term` with aliases replaced; SchemaMismatchError for a column the scope lacks (a bare
    word naming none, `whole` the value or a CASE's branch: the quotes of text suggested)."""
    if isinstance(term, Column):
        name = term.name
        for prefix, replacement in scope.aliases.items():
            if name.startswith(prefix):
                name = replacement + name[len(prefix) :]
        try:
            scope.schema.find_field(name)
        except ValueError:
            if _names_field(scope, f"{SOURCE}.{name}"):
                raise SchemaMismatchError(
                    f"the value of {column!r} ({text}) names {name!r}: the source's column is {SOURCE}.{name}"
                ) from None
            if whole and "." not in term.name:
                word = term.name
                lit = f" or mor.lit({word!r})" if word == text.strip() else ""
                raise SchemaMismatchError(
                    f"the value of {column!r} is SQL text, and {word!r} names no column{scope.note}; "
                    f"for the text write \"'{word}'\" (quoted, as in SQL){lit}"
                ) from None
            names = ", ".join(n for n in scope.schema.column_names[:30])
            raise SchemaMismatchError(
                f"the value of {column!r} ({text}) names column {term.name!r}, which is not one of {names}{scope.note}"
            ) from None
        return Column(name)
    if isinstance(term, Call):
        args = tuple(a if isinstance(a, CastType) else _resolved(a, scope, text, column) for a in term.args)
        return Call(term.function, args)
    return term


def _names_field(scope: Scope, name: str) -> bool:
    try:
        scope.schema.find_field(name)
    except ValueError:
        return False
    return True


def _fitted(term: Constant, into: CastType, text: str, column: str) -> Constant:
    """`term` converted to the kind of the column (`column`: its name and type, for errors)."""
    refusal = _refusal(term.kind, into, text)
    if refusal is not None:
        raise SchemaMismatchError(f"cannot set {column} to {text}: {refusal}")
    try:
        value, kind = cast_constant(term.value, term.kind, into)
    except ValueError as e:
        raise SchemaMismatchError(f"{text} does not fit {column}: {e}") from None
    return Constant(value, kind)


def covers(t: pa.DataType) -> bool:
    """Can SQL text compute values of type `t` (numbers, text, booleans, dates and times)?"""
    return _cast_type(t) is not None


def _cast_type(t: pa.DataType) -> CastType | None:
    """The kind of a column's type, as casts name it; None for types values do not cover."""
    if pa.types.is_signed_integer(t):
        return CastType("int", t.bit_width)
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return CastType("float", t.bit_width)
    if pa.types.is_decimal(t):
        return CastType("decimal", precision=t.precision, scale=t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return CastType("string")
    if pa.types.is_boolean(t):
        return CastType("bool")
    if pa.types.is_date32(t):
        return CastType("date")
    if pa.types.is_timestamp(t):
        return CastType("timestamptz" if t.tz is not None else "timestamp")
    return None


def _refusal(kind: str, into: CastType, text: str) -> str | None:
    """Why Spark's ANSI store assignment does not put a value of `kind` into a column of `into`;
    None when it does."""
    kind = "string" if kind == "text" else kind
    if kind == into.kind or (kind in NUMERIC and into.kind in NUMERIC):
        return None
    if into.kind == "string" or (into.kind in TEMPORAL and kind in ("string", *TEMPORAL)):
        return check_cast(kind, into, text)
    named = "boolean" if kind == "bool" else kind
    if check_cast(kind, into, text) is None:
        return f"{named} is not stored in a column of type {into} by itself; write cast({text} as {into}) to convert it"
    return f"{named} does not convert to {into}"
