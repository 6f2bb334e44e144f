r"""Filter text -> pyiceberg expression: Spark SQL's predicates (read by sqlglot,
mor.expr.sql_text) translated into pyiceberg's plain comparisons, which prune files, and
residuals (mor.expr.residual): predicates over terms (mor.expr.parse_terms) evaluated on rows.
spec/predicates.md has the language whole.

NOT follows SQL's three-valued logic: each predicate is read for where it is TRUE, or (under an
odd number of NOTs) for where it is FALSE, so a NULL stays unselected either way: `x in (1,
null)` selects 1, `x not in (1, null)` nothing, `x between 10 and null` nothing, its NOT the
rows below 10. LIKE is SQL's (mor.expr.like); 'abc%' is a prefix test and 'abc' equality, both
plain. A cast of a value and date arithmetic on values (`current_date - interval 7 days`) are
folded to a typed value when the text is read, so they prune; `current_date` and
`current_timestamp` are read then, in UTC.

A long IN list (100,000 values) is read in a fraction of a second (mor.expr.sql_text's fast
path), and an error says what is wrong and where.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    Or,
    Reference,
    StartsWith,
)
from pyiceberg.expressions.literals import BooleanLiteral, Literal, LongLiteral
from sqlglot import exp

from mor.expr.like import DEFAULT_ESCAPE, LikePattern, parse_like
from mor.expr.parse_terms import SYNTAX, TermReader, constant_of_literal, is_interval, is_null, literal, literal_of
from mor.expr.residual import Column, Constant, Residual, Test, pushed_not
from mor.expr.sql_text import LIST_PREFIX, deep_recursion

__all__ = ["SYNTAX", "PredicateReader", "make_literals", "parse", "set_predicate"]

_COMPARISONS = {"<": LessThan, "<=": LessThanOrEqual, ">": GreaterThan, ">=": GreaterThanOrEqual,
                "=": EqualTo, "!=": NotEqualTo}  # fmt: skip
_NODES: dict[type[exp.Expression], str] = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}  # `5 < x` is `x > 5`
_OPPOSITE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "=": "!=", "!=": "="}


def parse(text: str) -> BooleanExpression:
    return PredicateReader(text).parse()


def set_predicate(cls: type[Any], term: Any, literals: set[Literal]) -> BooleanExpression:
    """`cls(term, literals)` for pyiceberg's In, NotIn, BoundIn and BoundNotIn, given literals
    that need no conversion. pyiceberg's constructors convert and hash every literal twice, and
    pydantic then checks the set once more (about 0.1 s for 100,000 values); this makes the same
    object as pydantic's `model_construct`, which cannot be used here (pyiceberg's `__new__`
    needs the literals). With fewer than two literals pyiceberg's own constructor simplifies
    (to false, true, `=` or `!=`)."""
    if len(literals) < 2:
        return cls(term, literals)
    expr = object.__new__(cls)
    fields = {name: f.get_default(call_default_factory=True) for name, f in cls.model_fields.items() if not f.is_required()}
    fields.update(term=term, literals=literals)
    object.__setattr__(expr, "__dict__", fields)
    object.__setattr__(expr, "__pydantic_fields_set__", {"term", "literals"})
    object.__setattr__(expr, "__pydantic_extra__", None)
    object.__setattr__(expr, "__pydantic_private__", None)
    return expr


def make_literals(make: Callable[[Any], Literal], items: list[Any]) -> list[Literal]:
    """Literals of a long list. Creating 100,000 pyiceberg literals (pydantic models) triggers
    many collections of the cyclic garbage collector, which then takes more time than the
    literals: pause it meanwhile (literals hold no cycles)."""
    paused = gc.isenabled() and len(items) > 1000
    if paused:
        gc.disable()
    try:
        return [make(item) for item in items]
    finally:
        if paused:
            gc.enable()


def _chain(kind: type[And] | type[Or], terms: list[BooleanExpression]) -> BooleanExpression:
    return terms[0] if len(terms) == 1 else kind(*terms)


def _is_condition(node: exp.Expression) -> bool:
    """A comparison, test or connective (true, false or NULL), not a value."""
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, (exp.Predicate, exp.Connector, exp.Not))


def _unknown_of(decided: list[BooleanExpression], unknown: list[BooleanExpression]) -> BooleanExpression:
    """Where an `and` (`decided`: where each operand is TRUE) or an `or` (where each is FALSE)
    is NULL: no operand decides it, and one is NULL (`unknown`: where each is)."""
    return And(_chain(And, [Or(d, u) for d, u in zip(decided, unknown)]), _chain(Or, unknown))


def _negation(expr: BooleanExpression) -> BooleanExpression:
    """Where `expr` (built of leaves NULL-safe under pyiceberg's NOT) is FALSE."""
    return pushed_not(Not(expr))


class PredicateReader(TermReader):
    """Predicates of one parsed text (mor.expr.values reads a value's conditions with it too)."""

    def parse(self) -> BooleanExpression:
        with deep_recursion():
            try:
                return self.predicate(self.parsed.tree)
            except RecursionError:
                self.fail(None, "the text nests too deep to read")

    def predicate(self, node: exp.Expression, negated: bool = False) -> BooleanExpression:
        """Where `node` is TRUE (`negated`: where it is FALSE). And/or chains are read without
        recursion and become balanced trees (pyiceberg's And(*terms)), so a chain of thousands
        of terms overflows no visitor."""
        while isinstance(node, exp.Paren) or isinstance(node, exp.Not):
            if isinstance(node, exp.Not):
                negated = not negated
            node = node.this
        if isinstance(node, exp.Connector):
            kind = type(node)
            if kind not in (exp.And, exp.Or):
                self.fail(node, f"{kind.__name__.lower()} is not supported: write it with and, or, not")
            operands, todo = [], [node]
            while todo:
                n = todo.pop()
                while isinstance(n, exp.Paren):
                    n = n.this
                if type(n) is kind:
                    todo += [n.expression, n.this]
                else:
                    operands.append(self.predicate(n, negated))
            both = And if (kind is exp.And) != negated else Or
            return _chain(both, operands)
        self.term_nodes = 0
        return self._leaf(node, negated)

    def _leaf(self, node: exp.Expression, negated: bool) -> BooleanExpression:
        if type(node) in _NODES:
            return self.comparison(node, _NODES[type(node)], self.term(node.this), self.term(node.expression), negated)
        if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
            equal = isinstance(node, exp.NullSafeEQ) != negated
            return self._null_safe(node, self.term(node.this), self.term(node.expression), equal)
        if isinstance(node, exp.Is):
            return self._is(node, negated)
        if isinstance(node, exp.In):
            return self._in(node, negated)
        if isinstance(node, exp.Between):
            left = self.term(node.this)
            low = self.comparison(node, ">=", left, self.term(node.args["low"]), negated, null_bound=True)
            high = self.comparison(node, "<=", left, self.term(node.args["high"]), negated, null_bound=True)
            return Or(low, high) if negated else And(low, high)
        if isinstance(node, (exp.Like, exp.ILike, exp.Escape)):
            return self._like(node, negated)
        if isinstance(node, exp.IsNan):
            return self._nan_test(node.this, negated)
        if isinstance(node, exp.Boolean):
            return AlwaysTrue() if bool(node.this) != negated else AlwaysFalse()
        if isinstance(node, exp.Null):
            return AlwaysFalse()
        term = self.term(node)
        if isinstance(term, Column):  # a boolean column alone: `where flag`
            return EqualTo(Reference(term.name), BooleanLiteral(not negated))
        if isinstance(term, Constant):
            if term.kind == "bool":
                return AlwaysTrue() if term.value != negated else AlwaysFalse()
            self.fail(node, f"expected a condition, found the value {term}")
        return Residual(Test("=", term, (Constant(True, "bool"),)), negated)  # a function of booleans

    def comparison(
        self, node: exp.Expression, op: str, left: Any, right: Any, negated: bool = False, null_bound: bool = False
    ) -> BooleanExpression:
        """A plain comparison of a column with a value where it is one, else a residual. A null
        operand makes it never TRUE nor FALSE: written as such (`x = null`, always a mistake) it
        is refused; a null bound of BETWEEN (`null_bound`) is SQL's."""
        for term in (left, right):
            if is_interval(term):
                self.fail(node, "an interval is no value to compare: add it to or subtract it from a date or time "
                          "(current_date - interval 7 days)")  # fmt: skip
        if is_null(left) or is_null(right):
            if not null_bound:
                self.fail(node, "a comparison with null is never true: use 'x is null' or 'x is not null' (or x <=> null)")
            return AlwaysFalse()
        if negated:
            op = _OPPOSITE[op]
        if isinstance(left, Constant) and isinstance(right, Column):
            left, right, op = right, left, _FLIPPED.get(op, op)
        if isinstance(left, Column) and isinstance(right, Constant):
            return _COMPARISONS[op](Reference(left.name), literal_of(right))
        return Residual(Test(op, left, (right,)))

    def _null_safe(self, node: exp.Expression, left: Any, right: Any, equal: bool) -> BooleanExpression:
        """`a <=> b` (`equal`) or its negation, `a is distinct from b`: never NULL."""
        if is_null(left):
            left, right = right, left
        if is_null(right):
            return self._is_null(left, equal)
        a_null, b_null = self._is_null(left, True), self._is_null(right, True)
        a_valued, b_valued = self._is_null(left, False), self._is_null(right, False)
        if equal:
            return Or(And(self.comparison(node, "=", left, right), And(a_valued, b_valued)), And(a_null, b_null))
        return Or(self.comparison(node, "!=", left, right), Or(And(a_null, b_valued), And(a_valued, b_null)))

    def _is_null(self, term: Any, is_null_: bool) -> BooleanExpression:
        if isinstance(term, Constant):
            return AlwaysTrue() if (term.kind == "null") == is_null_ else AlwaysFalse()
        if isinstance(term, Column):
            return IsNull(Reference(term.name)) if is_null_ else NotNull(Reference(term.name))
        return Residual(Test("is null", term), not is_null_)

    def _is(self, node: exp.Is, negated: bool) -> BooleanExpression:
        left, what = node.this, node.expression
        if isinstance(what, exp.Null) and _is_condition(left):  # `(a = b) is null`: where it is neither TRUE nor FALSE
            if not negated:
                return self._unknown(left)
            return Or(self.predicate(left), self.predicate(left, negated=True))
        if isinstance(what, exp.Null):
            return self._is_null(self.term(left), not negated)
        if isinstance(what, exp.Column) and what.name.lower() == "nan" and not what.args.get("table"):
            return self._nan_test(left, negated)
        if isinstance(what, exp.Boolean):  # `x is [not] true`: never NULL
            truth = bool(what.this)
            matches = self.predicate(left, negated=not truth)
            if not negated:
                return matches
            return Or(self.predicate(left, negated=truth), self._unknown(left))
        self.fail(what, "expected null, nan, true or false after 'is'")

    def _nan_test(self, node: exp.Expression, negated: bool) -> BooleanExpression:
        """`x is nan`, Spark's `isnan(x)`: never NULL (a null is not NaN)."""
        term = self.term(node)
        if isinstance(term, Column):
            return _negation(IsNaN(Reference(term.name))) if negated else IsNaN(Reference(term.name))
        return Residual(Test("is nan", term), negated)

    def _unknown(self, node: exp.Expression) -> BooleanExpression:
        """Where the condition `node` is NULL (neither TRUE nor FALSE), by Kleene's rules: a
        comparison where an operand is null; `and` where no operand is FALSE and one is NULL;
        `or` where none is TRUE and one is NULL. Combined only by and/or, never negated, so a
        NULL inside a form reads as not selected, as it should."""
        while isinstance(node, (exp.Paren, exp.Not)):
            node = node.this  # NOT keeps NULL
        if isinstance(node, exp.Connector):
            parts = [node.this, node.expression]
            decided = [self.predicate(p, negated=isinstance(node, exp.Or)) for p in parts]  # a TRUE of or, a FALSE of and
            unknown = [self._unknown(p) for p in parts]
            return _unknown_of(decided, unknown)
        if type(node) in _NODES or isinstance(node, exp.Like | exp.ILike):
            return self._any_null([self.term(node.this), self.term(node.expression)])
        if isinstance(node, exp.Escape):
            return self._unknown(node.this)
        if isinstance(node, exp.Between):  # `x >= low and x <= high`, a null bound allowed
            left, bounds = self.term(node.this), [(">=", self.term(node.args["low"])), ("<=", self.term(node.args["high"]))]
            decided = [self.comparison(node, op, left, bound, null_bound=True) for op, bound in bounds]
            unknown = [self._any_null([left, bound]) for _, bound in bounds]
            return _unknown_of(decided, unknown)
        if isinstance(node, exp.In):  # `x = a or x = b ...`, a null item allowed
            left, items = self.term(node.this), node.expressions
            if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name.startswith(LIST_PREFIX):
                return self._any_null([left])  # plain values, none of them null
            terms = [self.term(item) for item in items]
            decided = [self.comparison(node, "=", left, t, negated=True, null_bound=True) for t in terms]  # a FALSE of each
            unknown = [self._any_null([left, t]) for t in terms]
            return _unknown_of(decided, unknown)
        if isinstance(node, (exp.Is, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Boolean, exp.IsNan)):
            return AlwaysFalse()  # never NULL
        if isinstance(node, exp.Null):
            return AlwaysTrue()
        return self._any_null([self.term(node)])  # a boolean column or function

    def _any_null(self, terms: list[Any]) -> BooleanExpression:
        if any(is_null(t) for t in terms):
            return AlwaysTrue()
        tests = [self._is_null(t, True) for t in terms if not isinstance(t, Constant)]
        return _chain(Or, tests) if tests else AlwaysFalse()

    def _in(self, node: exp.In, negated: bool) -> BooleanExpression:
        """`left in (...)`: a column in values is one set (a long list read in one pass); a term
        in values a residual; with a term among the items, `left = a or left = b ...` (the same
        under three-valued logic). A null item makes every non-match NULL: `not in` never TRUE."""
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            self.fail(node, "IN over a subquery is not supported: list the values")
        left = self.term(node.this)
        if is_interval(left):
            self.fail(node, "an interval is no value to compare")
        items = node.expressions
        if len(items) == 1 and isinstance(items[0], exp.Column) and items[0].name.startswith(LIST_PREFIX):
            listed = self.parsed.lists.by_name[items[0].name]
            literals = make_literals(LongLiteral, listed.ints) if listed.ints is not None else make_literals(literal, listed.items)
            return self._in_values(left, literals, False, negated)
        terms = [self.term(item) for item in items]
        if any(is_interval(t) for t in terms):
            self.fail(node, "an interval is no value to compare")
        has_null = any(is_null(t) for t in terms)
        terms = [t for t in terms if not is_null(t)]
        if not all(isinstance(t, Constant) for t in terms):
            ors = [self.comparison(node, "=", left, t) for t in terms]
            if has_null:
                return AlwaysFalse() if negated else _chain(Or, ors)
            return _negation(_chain(Or, ors)) if negated else _chain(Or, ors)
        return self._in_values(left, [literal_of(t) for t in terms], has_null, negated)

    def _in_values(self, left: Any, literals: list[Literal], has_null: bool, negated: bool) -> BooleanExpression:
        if negated and has_null:
            return AlwaysFalse()
        if not literals:
            return AlwaysFalse()
        if isinstance(left, Column):
            return set_predicate(NotIn if negated else In, Reference(left.name), set(literals))
        return Residual(Test("in", left, tuple(constant_of_literal(lit) for lit in literals)), negated)

    def _like(self, node: exp.Expression, negated: bool) -> BooleanExpression:
        """`left like 'pattern' [escape 'c']`: a prefix test or equality where the pattern is
        one, else a residual matched on the rows (after a prefix test on its literal start)."""
        escape = DEFAULT_ESCAPE
        if isinstance(node, exp.Escape):
            escape_node = node.expression
            if not (isinstance(escape_node, exp.Literal) and escape_node.is_string and len(escape_node.this) == 1):
                self.fail(escape_node, f"the escape of LIKE is one character, not {escape_node.sql(dialect='spark')}")
            escape = escape_node.this
            node = node.this
        if node.args.get("negate"):
            negated = not negated
        ilike = isinstance(node, exp.ILike)
        pattern_node = node.expression
        if not (isinstance(pattern_node, exp.Literal) and pattern_node.is_string):
            self.fail(pattern_node, "the pattern of LIKE is a 'quoted string'")
        left = self.term(node.this)
        if ilike:
            left = self.call(node, "lower", (left,))
        raw = pattern_node.this.lower() if ilike else pattern_node.this
        try:
            pattern = parse_like(raw, escape)
        except ValueError as e:
            self.fail(pattern_node, str(e))
        expr = self._pattern_test(left, pattern)
        return _negation(expr) if negated else expr

    def _pattern_test(self, left: Any, pattern: LikePattern) -> BooleanExpression:
        if pattern.exact is not None:
            return self._text_test(left, False, pattern.exact)
        if pattern.is_prefix:
            return self._text_test(left, True, pattern.prefix)
        residual = Residual(Test("like", left, (Constant(pattern.arrow_pattern(), "text"),)))
        if isinstance(left, Column) and pattern.prefix:
            return And(StartsWith(left.name, pattern.prefix), residual)  # the same rows, and files pruned by the prefix
        return residual

    def _text_test(self, left: Any, is_prefix: bool, text: str) -> BooleanExpression:
        if isinstance(left, Column):
            return StartsWith(left.name, text) if is_prefix else EqualTo(left.name, text)
        return Residual(Test("starts with" if is_prefix else "=", left, (Constant(text, "text"),)))
