"""Filter text -> pyiceberg expression: a small hand-written parser.

It accepts pyiceberg's filter language plus `starts with`, `between`, typed date and time
literals, and arithmetic and functions (`id % 7 = 0`, `lower(name) = 'x'`), which become
residuals (mor.expr.residual): predicates evaluated on rows, not by metadata. It parses a
100,000-value IN list in a fraction of a second (pyiceberg's grammar needs about a second per
10,000 values), and says what is wrong and where instead of dumping its grammar.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple, NoReturn

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
from pyiceberg.expressions.literals import (
    BooleanLiteral,
    DecimalLiteral,
    Literal,
    LongLiteral,
    StringLiteral,
)

from mor.errors import InvalidFilterError
from mor.expr.literals import TYPED_TEXT, parse_temporal
from mor.expr.residual import FUNCTIONS, Call, Column, Constant, Residual, Test, constant_of

SYNTAX = """filter syntax:
  col = 5 (!=, <>, <, <=, >, >=)   col [not] in (1, 2)   col [not] between 1 and 9
  col is null   col is not null   col is [not] nan   col [not] starts with 'ab'   col [not] like 'ab%'
  and, or, not, ( ); values: 'text' ('' for a quote), 12, -3.5, 1e6, true, false
  times: '2025-06-05', '2025-06-05 10:00[:00.5][Z|+02:00]', date '...', timestamp '...'
    (on timestamptz, without zone is UTC; on timestamp, a date is its midnight)
  numbers compare exactly: 149.5 on decimal(10,2)
  on rows: + - * / %  lower(s) upper(s) length(s) abs(x) coalesce(x, y) year(t) month(t)
    day(t) date(t), col against col: a + b > c
  "any name" for other column names, a.b for a nested field"""
MAX_TERM_NODES = 64  # operators and functions in one predicate's terms (also how deep they nest)

_STRING = r"'(?:[^']|'')*'"
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
# A parenthesized list of plain values is one token, split by one regex: a long IN list then
# costs little more than making its literals.
_LIST = re.compile(rf"\s*(\(\s*(?:(?:{_STRING}|{_NUMBER})\s*,\s*)*(?:{_STRING}|{_NUMBER})\s*\))")
_LIST_ITEM = re.compile(rf"{_STRING}|{_NUMBER}")
# A list of integers only (the common long list) is found by one character class and split at
# its commas; int() takes the blanks and the sign around each, as the grammar does.
_INT_LIST = re.compile(r"\s*(\(([0-9\s,+-]*)\))")
_TOKEN = re.compile(
    rf"""\s*(?:
      (?P<str>{_STRING})
    | (?P<qid>"(?:[^"\\]|\\.)*")
    | (?P<num>{_NUMBER})
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<op><=|>=|<>|!=|==|=|<|>)
    | (?P<arith>[-+*/%])
    | (?P<punct>[(),.])
    )""",
    re.VERBOSE,
)
_INTEGER = re.compile(r"[+-]?\d+")
_WORDS = {"and", "or", "not", "is", "in", "null", "nan", "like", "between", "true", "false"}
_COMPARISONS = {"<": LessThan, "<=": LessThanOrEqual, ">": GreaterThan, ">=": GreaterThanOrEqual,
                "=": EqualTo, "==": EqualTo, "!=": NotEqualTo, "<>": NotEqualTo}  # fmt: skip
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}  # `5 < x` is `x > 5`


class _Token(NamedTuple):
    kind: str  # str, qid, num, word, op, arith, punct, list (of values), end
    text: str
    at: int  # offset in the filter text
    ints: list[int] | None = None  # a list of integers only: its values

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words

    def describe(self) -> str:
        if self.kind == "end":
            return "the end of the filter"
        return repr(self.text if len(self.text) <= 30 else self.text[:27] + "...")


def parse(text: str) -> BooleanExpression:
    return _Parser(text).parse()


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
    return make_literals(_literal, texts)


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


def _ints(body: str) -> list[int] | None:
    try:
        return [int(item) for item in body.split(",")]
    except ValueError:  # not integers only (or an empty item): the general grammar says what
        return None


_OPERATORS = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "=": "=", "==": "=", "!=": "!=", "<>": "!="}


def _number(text: str) -> Constant:
    return _constant_of(_literal(text))


def _constant_of(literal: Literal) -> Constant:
    """A parsed literal as a term of a residual."""
    for kind, cls in TYPED_TEXT.items():
        if type(literal) is cls:
            return Constant(literal.value, kind)
    return constant_of(literal.value)


def _literal_of(constant: Constant) -> Literal:
    """A term's constant as the literal of a plain comparison."""
    if constant.kind in TYPED_TEXT:
        return TYPED_TEXT[constant.kind](constant.value)
    if constant.kind == "bool":
        return BooleanLiteral(constant.value)
    if constant.kind == "text":
        return StringLiteral(constant.value)
    return LongLiteral(constant.value) if constant.kind == "int" else DecimalLiteral(constant.value)


def _literal(text: str) -> Literal:
    """A 'string' or number token's value, typed as pyiceberg's parser types it."""
    if text[0] == "'":
        return StringLiteral(text[1:-1].replace("''", "'"))
    return LongLiteral(int(text)) if _INTEGER.fullmatch(text) else DecimalLiteral(Decimal(text))


def _matching_parentheses(tokens: list[_Token]) -> dict[int, int]:
    """The index of each '(' token -> the index of its ')' (unclosed ones are left out)."""
    opened, pairs = [], {}
    for i, t in enumerate(tokens):
        if t.kind == "punct" and t.text == "(":
            opened.append(i)
        elif t.kind == "punct" and t.text == ")" and opened:
            pairs[opened.pop()] = i
    return pairs


class _Group:
    """A parenthesized filter being read: its `or` terms so far, the `and` terms of the last."""

    def __init__(self, opened_by: _Token | None, nots: int):
        self.opened_by = opened_by  # the '(' token; None for the whole filter
        self.nots = nots  # the `not`s before the '('
        self.ors: list[BooleanExpression] = []
        self.ands: list[BooleanExpression] = []


def _chain(kind: type[And] | type[Or], terms: list[BooleanExpression]) -> BooleanExpression:
    return terms[0] if len(terms) == 1 else kind(*terms)


def _negated(expr: BooleanExpression, nots: int) -> BooleanExpression:
    return Not(expr) if nots % 2 else expr  # Not(Not(x)) is x, as pyiceberg makes it


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = self._tokenize()
        self.closing = _matching_parentheses(self.tokens)
        self.i = 0
        self.term_nodes = 0  # operators and functions in the current predicate

    def parse(self) -> BooleanExpression:
        try:
            expr = self._or()
        except (ValueError, ArithmeticError) as e:  # a number with too many digits or no finite value
            self._fail(self.tokens[self.i - 1], f"a number out of range ({type(e).__name__})")
        if (t := self._peek()).kind != "end":
            self._fail(t, f"expected 'and', 'or' or the end of the filter, found {t.describe()}")
        return expr

    # -- tokens ---------------------------------------------------------------------------

    def _tokenize(self) -> list[_Token]:
        text, pos, out = self.text, 0, []
        end = len(text.rstrip())
        while pos < end:
            if (m := _INT_LIST.match(text, pos)) is not None and (ints := _ints(m.group(2))) is not None:
                out.append(_Token("list", m.group(1), m.start(1), ints))
                pos = m.end()
                continue
            if (m := _LIST.match(text, pos)) is not None:
                out.append(_Token("list", m.group(1), m.start(1)))
                pos = m.end()
                continue
            m = _TOKEN.match(text, pos)
            if m is None or m.lastgroup is None:
                at = len(text) - len(text[pos:].lstrip())
                what = "an unterminated string" if text[at] in "'\"" else f"unexpected character {text[at]!r}"
                self._fail(_Token("end", "", at), f"{what} at offset {at}")
            out.append(_Token(m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)))
            pos = m.end()
        out.append(_Token("end", "", len(text)))
        return out

    def _peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def _next(self) -> _Token:
        t = self._peek()
        self.i += 1
        return t

    def _word(self, *words: str) -> bool:
        if self._peek().is_word(*words):
            self.i += 1
            return True
        return False

    def _expect(self, text: str, what: str) -> None:
        t = self._next()
        if not (t.text.lower() == text and t.kind in ("word", "punct")):
            self._fail(t, f"expected {what}, found {t.describe()}")

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
            if t.text == "(" and t.kind == "punct" and not self._opens_term():  # a new group; its result takes the `not`s
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
        if after.kind in ("op", "arith") or (after.kind == "num" and after.text[0] in "+-"):
            return True
        return after.is_word("is", "in", "between", "like", "starts") or (
            after.is_word("not") and then.is_word("in", "between", "like", "starts")
        )

    def _primary(self) -> BooleanExpression:
        self.term_nodes = 0
        left = self._term()
        t = self._peek()
        if t.kind == "op":
            self.i += 1
            return self._comparison(t.text, left, self._term(after=t))
        if isinstance(left, Constant) and left.kind == "bool" and not t.is_word("is", "in", "between", "like", "starts", "not"):
            return AlwaysTrue() if left.value else AlwaysFalse()
        return self._predicate(left)

    def _comparison(self, op: str, left: Any, right: Any) -> BooleanExpression:
        """A plain comparison of a column with a value where it is one, else a residual."""
        if isinstance(left, Constant) and isinstance(right, Column):
            left, right, op = right, left, _FLIPPED.get(op, op)
        if isinstance(left, Column) and isinstance(right, Constant):
            return _COMPARISONS[op](Reference(left.name), _literal_of(right))
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
            if column is None:
                return Residual(Test("in", left, tuple(_constant_of(lit) for lit in self._list_literals())), negate)
            if self._peek().kind == "list":  # plain values: one set, made once
                t = self._next()
                literals = _long_literals(t.ints) if t.ints is not None else _literals(_LIST_ITEM.findall(t.text))
                return set_predicate(NotIn if negate else In, column, set(literals))
            values = self._values()
            return NotIn(column, values) if negate else In(column, values)
        if t.is_word("like"):
            is_prefix, text = self._like(self._string(after=t).value)
            expr = self._text_test(left, is_prefix, text)
            return Not(expr) if negate else expr
        if t.is_word("starts") and self._word("with"):
            expr = self._text_test(left, True, self._string(after=t).value)
            return Not(expr) if negate else expr
        if t.is_word("between"):
            low = self._term(after=t)
            self._expect("and", "'and' in 'between ... and ...'")
            expr = And(self._comparison(">=", left, low), self._comparison("<=", left, self._term()))
            return Not(expr) if negate else expr
        name = left.name if column is not None else str(left)
        expected = (
            f"'in', 'like', 'starts with' or 'between' after '{name} not'"
            if negate
            else (f"an operator after {'column ' if column is not None else ''}{name!r}")
        )
        self._fail(t, f"expected {expected}, found {t.describe()}")

    def _text_test(self, left: Any, is_prefix: bool, text: str) -> BooleanExpression:
        if isinstance(left, Column):
            return StartsWith(left.name, text) if is_prefix else EqualTo(left.name, text)
        return Residual(Test("starts with" if is_prefix else "=", left, (Constant(text, "text"),)))

    # -- terms: sum > product > sign > operand ---------------------------------------------

    def _term(self, after: _Token | None = None, depth: int = 0) -> Any:
        term = self._product(after, depth)
        while True:
            t = self._peek()
            if t.kind == "arith" and t.text in "+-":
                self.i += 1
                term = self._call(t, t.text, (term, self._product(t, depth)))
            elif t.kind == "num" and t.text[0] in "+-":  # `a -1`: the sign is the operator
                self.i += 1
                term = self._call(t, t.text[0], (term, _number(t.text[1:])))
            else:
                return term

    def _product(self, after: _Token | None, depth: int) -> Any:
        term = self._signed(after, depth)
        while (t := self._peek()).kind == "arith" and t.text in "*/%":
            self.i += 1
            term = self._call(t, t.text, (term, self._signed(t, depth)))
        return term

    def _signed(self, after: _Token | None, depth: int) -> Any:
        t = self._peek()
        if t.kind == "arith" and t.text in "+-":
            self.i += 1
            operand = self._signed(t, depth + 1)
            return operand if t.text == "+" else self._call(t, "neg", (operand,))
        return self._operand(after, depth)

    def _operand(self, after: _Token | None, depth: int) -> Any:
        t = self._next()
        if depth > MAX_TERM_NODES:
            self._fail(t, f"terms nest more than {MAX_TERM_NODES} levels deep")
        if t.kind in ("str", "num"):
            return _constant_of(_literal(t.text))
        if t.kind == "list":  # `(5)`, or a function's plain arguments
            items = _LIST_ITEM.findall(t.text)
            if len(items) != 1:
                self._fail(t, f"expected a value, found the list {t.describe()}")
            return _constant_of(_literal(items[0]))
        if t.text == "(" and t.kind == "punct":
            inner = self._term(t, depth + 1)
            self._expect(")", f"')' to close the '(' at offset {t.at}")
            return inner
        if t.kind == "word":
            word = t.text.lower()
            if word in ("true", "false"):
                return Constant(word == "true", "bool")
            if word in TYPED_TEXT and self._peek().kind == "str":
                return self._typed_text(t, self._next())
            if self._peek().kind == "list" or (self._peek().text == "(" and self._peek().kind == "punct"):
                if word not in FUNCTIONS:
                    self._fail(t, f"unknown function {t.text}(): write one of {', '.join(f + '()' for f in FUNCTIONS)}")
                return self._function(t, depth)
        if t.is_word("null"):
            self._fail(t, "a comparison with null is never true: use 'col is null' or 'col is not null'")
        if t.is_word("nan"):
            self._fail(t, "NaN cannot be compared: use 'col is nan' or 'col is not nan'")
        if t.kind in ("qid", "word"):
            self.i -= 1
            return Column(self._column_name())
        where = f" after {after.text!r}" if after is not None else ""
        self._fail(t, f"expected a value or a column{where}, found {t.describe()}")

    def _function(self, name: _Token, depth: int) -> Any:
        function = name.text.lower()
        if self._peek().kind == "list":
            args = tuple(_constant_of(_literal(item)) for item in _LIST_ITEM.findall(self._next().text))
        else:
            self.i += 1  # '('
            args_list = [self._term(name, depth + 1)]
            while (t := self._next()).text == "," and t.kind == "punct":
                args_list.append(self._term(t, depth + 1))
            if t.text != ")" or t.kind != "punct":
                self._fail(t, f"expected ',' or ')' in the arguments of {function}(), found {t.describe()}")
            args = tuple(args_list)
        if len(args) != 1 and function != "coalesce":
            self._fail(name, f"{function}() takes one argument, found {len(args)}")
        return self._call(name, function, args)

    def _call(self, at: _Token, function: str, args: tuple[Any, ...]) -> Call:
        self.term_nodes += 1
        if self.term_nodes > MAX_TERM_NODES:
            self._fail(at, f"a predicate may hold at most {MAX_TERM_NODES} operators and functions")
        return Call(function, args)

    def _typed_text(self, kind: _Token, text: _Token) -> Constant:
        value = text.text[1:-1].replace("''", "'")
        try:
            parse_temporal(value)
        except ValueError as e:
            self._fail(text, str(e))
        return Constant(value, kind.text.lower())

    def _column_name(self) -> str:
        parts = [self._name()]
        while self._peek().text == "." and self._peek().kind == "punct":
            self.i += 1
            parts.append(self._name())
        return ".".join(parts)

    def _name(self) -> str:
        t = self._next()
        if t.kind == "qid":
            name = re.sub(r"\\(.)", r"\1", t.text[1:-1])
            if "." in name or not name:
                self._fail(t, f"column name {t.text} cannot be empty or hold '.' (a.b names a nested field)")
            return name
        if t.kind == "word" and t.text.lower() not in _WORDS:
            return t.text
        if t.kind == "word":
            self._fail(t, f'expected a column name, found the keyword {t.text!r} (quote a column of that name: "{t.text}")')
        self._fail(t, f"expected a column name, found {t.describe()}")

    # -- values ---------------------------------------------------------------------------

    def _literal(self, after: _Token | None = None) -> Literal:
        t = self._next()
        if t.kind in ("str", "num"):
            return _literal(t.text)
        if t.is_word("true", "false"):
            return BooleanLiteral(t.is_word("true"))
        if t.kind == "word" and t.text.lower() in TYPED_TEXT and self._peek().kind == "str":
            return _literal_of(self._typed_text(t, self._next()))
        if t.is_word("null"):
            self._fail(t, "a comparison with null is never true: use 'col is null' or 'col is not null'")
        if t.is_word("nan"):
            self._fail(t, "NaN cannot be compared: use 'col is nan' or 'col is not nan'")
        where = f" after {after.text!r}" if after is not None else ""
        self._fail(t, f"expected a value ('text', a number, true or false){where}, found {t.describe()}")

    def _string(self, after: _Token) -> StringLiteral:
        if self._peek().kind != "str":
            self._fail(self._peek(), f"expected a 'quoted string' after {after.text!r}, found {self._peek().describe()}")
        return self._literal()

    def _values(self) -> list[Literal]:
        self._expect("(", "'(' to open the list of values after 'in'")
        values = [self._literal()]
        while (t := self._next()).text == ",":
            values.append(self._literal(after=t))
        if t.text != ")" or t.kind != "punct":
            self._fail(t, f"expected ',' or ')' in the list of values, found {t.describe()}")
        return values

    def _list_literals(self) -> list[Literal]:
        if self._peek().kind == "list":
            t = self._next()
            return _long_literals(t.ints) if t.ints is not None else _literals(_LIST_ITEM.findall(t.text))
        return self._values()

    def _like(self, raw: str) -> tuple[bool, str]:
        """(is a prefix match, the text): LIKE 'abc%' is a prefix match and LIKE 'abc' equality;
        `\\%`, `\\_`, `\\\\` escape. Other wildcards are refused rather than matched
        differently from SQL."""
        out, i = [], 0
        while i < len(raw):
            c = raw[i]
            if c == "\\" and i + 1 < len(raw) and raw[i + 1] in "%_\\":
                out.append(raw[i + 1])
                i += 2
                continue
            if c == "%" and i == len(raw) - 1:
                return True, "".join(out)
            if c in "%_":
                self._fail(self.tokens[self.i - 1], f"LIKE supports one '%' at the end only (a prefix match); "
                           f"escape a literal {c!r} as '\\{c}'")  # fmt: skip
            out.append(c)
            i += 1
        return False, "".join(out)

    # -- errors ---------------------------------------------------------------------------

    def _fail(self, t: _Token, problem: str) -> NoReturn:
        lo = max(0, t.at - 40)
        snippet = self.text[lo : t.at + 40].replace("\n", " ")
        left = ("..." if lo else "") + snippet[: t.at - lo]
        right = snippet[t.at - lo :] + ("..." if t.at + 40 < len(self.text) else "")
        where = f" (offset {t.at})" if "offset" not in problem else ""
        raise InvalidFilterError(f"cannot parse filter: {problem}{where}\n  {left}{right}\n  {' ' * len(left)}^\n{SYNTAX}")
