r"""Filter text -> pyiceberg expression: a small hand-written parser.

It accepts pyiceberg's filter language plus `starts with`, `between`, typed date and time
literals, and terms (mor.expr.parse_terms) that become residuals (mor.expr.residual):
predicates evaluated on rows, not by metadata. The grammar (spec/predicates.md has it whole):

    filter     := or;  or := and ("or" and)*;  and := not ("and" not)*
    not        := "not" not | "(" filter ")" | "true" | "false" | predicate | column   -- a boolean column: = true
    predicate  := term op term                       -- column op value: plain, prunes files
                | term "is" ["not"] "null" | column "is" ["not"] "nan"
                | term ["not"] "in" "(" term ("," term)* ")"   -- values only: one set
                | term ["not"] "between" term "and" term
                | term ["not"] ("like" | "ilike") string ["escape" string] | term ["not"] "starts" "with" string
    term       := sums and products of: value | column | "(" term ")" | function "(" term ("," term)* ")"
                | "cast" "(" term "as" type ")" | term "::" type | "extract" "(" part "from" term ")"
                | "current_date" | "current_timestamp" | "now" "(" ")" | term ("+" | "-") interval
    interval   := "interval" (amount unit)+ | "interval" 'amount unit ...'     -- 7 days, '1' hour
    type       := boolean | tinyint | smallint | int | bigint | float | double | decimal(p,s)
                | string | varchar | date | timestamp (timestamp_ntz) | timestamptz (timestamp_ltz)
    part       := year | quarter | month | week | day | dayofweek (dow) | dayofweek_iso
                | dayofyear (doy) | hour | minute | second

LIKE is SQL's: `%` any text, `_` one character, `\` (or the `escape` character) makes the next
`%`, `_` or itself literal (mor.expr.like); 'abc%' is a prefix test and 'abc' equality, both
plain. A cast of a value and date arithmetic on values (`current_date - interval 7 days`) fold
to a typed value when the text is parsed, so they prune; `current_date` and
`current_timestamp` are read then, in UTC. A cast of a column, `extract`, a LIKE with other
wildcards and `in` over a term are residuals.

It parses a 100,000-value IN list in a fraction of a second (pyiceberg's grammar needs about a
second per 10,000 values), and says what is wrong and where instead of dumping its grammar.
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
    NotNaN,
    NotNull,
    Or,
    Reference,
    StartsWith,
)
from pyiceberg.expressions.literals import BooleanLiteral, Literal, LongLiteral

from mor.expr.like import DEFAULT_ESCAPE, LikePattern, parse_like
from mor.expr.parse_terms import (
    LIST_ITEM,
    SYNTAX,
    TermParser,
    Token,
    constant_of_literal,
    is_interval,
    literal,
    literal_of,
)
from mor.expr.residual import Column, Constant, Residual, Test

__all__ = ["SYNTAX", "PredicateParser", "make_literals", "parse", "set_predicate"]

_COMPARISONS = {"<": LessThan, "<=": LessThanOrEqual, ">": GreaterThan, ">=": GreaterThanOrEqual,
                "=": EqualTo, "==": EqualTo, "!=": NotEqualTo, "<>": NotEqualTo}  # fmt: skip
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}  # `5 < x` is `x > 5`
_AFTER_CONDITION = ("and", "or", "then", "when", "else", "end")  # words that may follow a whole condition
_OPERATORS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "=": "=", "==": "=", "!=": "!=", "<>": "!="}


def parse(text: str) -> BooleanExpression:
    return PredicateParser(text).parse()


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


def _literals(texts: list[str]) -> list[Literal]:
    return make_literals(literal, texts)


def _long_literals(values: list[int]) -> list[Literal]:
    return make_literals(LongLiteral, values)


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


class _Group:
    """A parenthesized filter being read: its `or` terms so far, the `and` terms of the last."""

    def __init__(self, opened_by: Token | None, nots: int):
        self.opened_by = opened_by  # the '(' token; None for the whole filter
        self.nots = nots  # the `not`s before the '('
        self.ors: list[BooleanExpression] = []
        self.ands: list[BooleanExpression] = []


def _chain(kind: type[And] | type[Or], terms: list[BooleanExpression]) -> BooleanExpression:
    return terms[0] if len(terms) == 1 else kind(*terms)


def _negated(expr: BooleanExpression, nots: int) -> BooleanExpression:
    return Not(expr) if nots % 2 else expr  # Not(Not(x)) is x, as pyiceberg makes it


class PredicateParser(TermParser):
    """The filter grammar above (mor.expr.values reads a value's conditions with it too)."""

    def parse(self) -> BooleanExpression:
        try:
            expr = self._or()
        except (ValueError, ArithmeticError) as e:  # a number with too many digits or no finite value
            self._fail(self.tokens[self.i - 1], f"a number out of range ({type(e).__name__})")
        if (t := self._peek()).kind != "end":
            self._fail(t, f"expected 'and', 'or' or the end of the filter, found {t.describe()}")
        return expr

    # -- grammar: or > and > not > predicate ----------------------------------------------

    # The grammar (or > and > not > primary) is read with an explicit stack of open
    # parentheses, not by recursion: no nesting of parentheses or `not`s can raise
    # RecursionError here (how deep the result may be is filter_shape's to say). A chain
    # `a or b or c ...` becomes a balanced tree (pyiceberg's Or(*terms)), as pyiceberg's
    # parser makes it: a deep one would overflow the recursion of pyiceberg's visitors.
    def _or(self) -> BooleanExpression:
        groups: list[_Group] = []  # the open parentheses, outermost first
        group = _Group(None, 0)
        while True:
            nots = 0
            while self._word("not"):
                nots += 1
            t = self._peek()
            if t.is_punct("(") and not self._opens_term():  # a new group; its result takes the `not`s
                self.i += 1
                groups.append(group)
                group = _Group(t, nots)
                continue
            expr = _negated(self._primary(), nots)
            while True:
                group.ands.append(expr)
                if self._word("and"):
                    break
                group.ors.append(_chain(And, group.ands))
                group.ands = []
                if self._word("or"):
                    break
                if group.opened_by is None:
                    return _chain(Or, group.ors)
                self._expect(")", f"')' to close the '(' at offset {group.opened_by.at}")
                expr = _negated(_chain(Or, group.ors), group.nots)
                group = groups.pop()

    def _opens_term(self) -> bool:
        """Does the '(' here open a term (`(a + b) > 3`) rather than a group of predicates? The
        token after its ')' says: an operator or a predicate's word."""
        close = self.closing.get(self.i)
        if close is None:
            return False
        after, then = self.tokens[close + 1], self.tokens[min(close + 2, len(self.tokens) - 1)]
        if after.kind in ("op", "arith", "cast") or (after.kind == "num" and after.text[0] in "+-"):
            return True
        return after.is_word("is", "in", "between", "like", "ilike", "starts") or (
            after.is_word("not") and then.is_word("in", "between", "like", "ilike", "starts")
        )

    def _primary(self) -> BooleanExpression:
        self.term_nodes = 0
        start = self._peek()
        left = self._term()
        t = self._peek()
        if t.kind == "op":
            self.i += 1
            return self._comparison(t.text, left, self._term(after=t), t)
        if isinstance(left, Constant) and left.kind == "bool" and not t.is_word("is", "in", "between", "like", "ilike", "starts", "not"):
            return AlwaysTrue() if left.value else AlwaysFalse()
        if isinstance(left, Column) and (t.kind == "end" or t.is_punct(")") or t.is_word(*_AFTER_CONDITION)):
            return EqualTo(Reference(left.name), BooleanLiteral(True))  # a boolean column alone: `where flag`
        self._no_interval(left, start)
        return self._predicate(left)

    def _no_interval(self, term: Any, at: Token) -> None:
        if is_interval(term):
            self._fail(at, "an interval is no value to compare: add it to or subtract it from a date or time "
                       "(current_date - interval 7 days)")  # fmt: skip

    def _comparison(self, op: str, left: Any, right: Any, at: Token | None = None) -> BooleanExpression:
        """A plain comparison of a column with a value where it is one, else a residual."""
        for term in (left, right):
            self._no_interval(term, at or self._peek())
        if isinstance(left, Constant) and isinstance(right, Column):
            left, right, op = right, left, _FLIPPED.get(op, op)
        if isinstance(left, Column) and isinstance(right, Constant):
            return _COMPARISONS[op](Reference(left.name), literal_of(right))
        return Residual(Test(_OPERATORS[op], left, (right,)))

    def _predicate(self, left: Any) -> BooleanExpression:
        column = Reference(left.name) if isinstance(left, Column) else None
        t = self._next()
        if t.is_word("is"):
            negate = self._word("not")
            kind = self._next()
            if kind.is_word("null"):
                if column is None:
                    return Residual(Test("is null", left), negate)
                return NotNull(column) if negate else IsNull(column)
            if kind.is_word("nan") and column is not None:
                return NotNaN(column) if negate else IsNaN(column)
            expected = "'null' or 'nan'" if column is not None else "'null'"
            self._fail(kind, f"expected {expected} after 'is{' not' if negate else ''}', found {kind.describe()}")
        negate = t.is_word("not")
        if negate:
            t = self._next()
        if t.is_word("in"):
            return self._in(left, t, negate)
        if t.is_word("like", "ilike"):  # ilike: Spark's, lower(left) like lower(pattern)
            ilike = t.is_word("ilike")
            expr = self._like(self._call(t, "lower", (left,)) if ilike else left, t, lowered=ilike)
            return Not(expr) if negate else expr
        if t.is_word("starts") and self._word("with"):
            expr = self._text_test(left, True, self._string(after=t))
            return Not(expr) if negate else expr
        if t.is_word("between"):
            low = self._term(after=t)
            self._expect("and", "'and' in 'between ... and ...'")
            expr = And(self._comparison(">=", left, low, t), self._comparison("<=", left, self._term(), t))
            return Not(expr) if negate else expr
        name = left.name if column is not None else str(left)
        expected = (
            f"'in', 'like', 'ilike', 'starts with' or 'between' after '{name} not'"
            if negate
            else (f"an operator after {'column ' if column is not None else ''}{name!r}")
        )
        self._fail(t, f"expected {expected}, found {t.describe()}")

    def _in(self, left: Any, t: Token, negate: bool) -> BooleanExpression:
        """`left [not] in (...)`: a column in plain values is one set (a long list read in one
        pass); a term in values a residual; with a term among the items, `left = a or left = b
        ...` (the same under three-valued logic)."""
        column = Reference(left.name) if isinstance(left, Column) else None
        if self._peek().kind == "list":  # plain values: one set, made once
            listed = self._next()
            literals = _long_literals(listed.ints) if listed.ints is not None else _literals(LIST_ITEM.findall(listed.text))
            if column is not None:
                return set_predicate(NotIn if negate else In, column, set(literals))
        else:
            items = self._items(t)
            if not all(isinstance(item, Constant) for item in items):
                expr = _chain(Or, [self._comparison("=", left, item, t) for item in items])
                return Not(expr) if negate else expr
            literals = [literal_of(item) for item in items]
            if column is not None:
                return NotIn(column, literals) if negate else In(column, literals)
        self._no_interval(left, t)
        return Residual(Test("in", left, tuple(constant_of_literal(lit) for lit in literals)), negate)

    def _items(self, after: Token) -> list[Any]:
        self._expect("(", "'(' to open the list of values after 'in'")
        items = [self._term(after)]
        while (t := self._next()).is_punct(","):
            items.append(self._term(t))
        if not t.is_punct(")"):
            self._fail(t, f"expected ',' or ')' in the list of values, found {t.describe()}")
        for item in items:
            self._no_interval(item, after)
        return items

    def _like(self, left: Any, t: Token, lowered: bool = False) -> BooleanExpression:
        """`left like 'pattern' [escape 'c']`: a prefix test or equality where the pattern is
        one, else a residual matched on the rows (after a prefix test on its literal start).
        `lowered`: the pattern in lower case (ilike)."""
        at = self._peek()
        raw = self._string(after=t)
        raw = raw.lower() if lowered else raw
        escape = DEFAULT_ESCAPE
        if self._word("escape"):
            escape_at = self._peek()
            escape = self._string(after=self.tokens[self.i - 1])
            if len(escape) != 1:
                self._fail(escape_at, f"the escape of LIKE is one character, not {escape!r}")
        try:
            pattern = parse_like(raw, escape)
        except ValueError as e:
            self._fail(at, str(e))
        return self._pattern_test(left, pattern)

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

    def _string(self, after: Token) -> str:
        t = self._next()
        if t.kind != "str":
            self._fail(t, f"expected a 'quoted string' after {after.text!r}, found {t.describe()}")
        return t.text[1:-1].replace("''", "'")
