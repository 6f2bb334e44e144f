"""Filter text -> pyiceberg expression: a small hand-written parser.

It accepts pyiceberg's filter language plus `starts with` and `not between`, parses a
100,000-value IN list in a fraction of a second (pyiceberg's grammar needs about a second per
10,000 values), and says what is wrong and where instead of dumping its grammar.
"""

from __future__ import annotations

import gc
import re
from decimal import Decimal
from typing import Any, Callable, NamedTuple, NoReturn

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
    NotStartsWith,
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

SYNTAX = """filter syntax:
  col = 5  (also !=, <>, <, <=, >, >=)   col in (1, 2)   col not in ('a', 'b')   col between 1 and 9
  col is null   col is not null   col is nan   col is not nan
  col starts with 'ab'   col not starts with 'ab'   col like 'ab%'   col not like 'ab%'
  and, or, not, ( ); values: 'text' ('' inside for a quote), 12, -3.5, 1e6, true, false;
  "any name" for other column names, a.b for a nested field"""

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
    kind: str  # str, qid, num, word, op, punct, list (of values), end
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


def set_predicate(cls: type[Any], term: Any, literals: set[Literal]) -> BooleanExpression:  # type: ignore[type-arg]
    """`cls(term, literals)` for pyiceberg's In, NotIn, BoundIn and BoundNotIn, given literals
    that need no conversion. pyiceberg's constructors convert and hash every literal twice, and
    pydantic then checks the set once more (about 0.1 s for 100,000 values); this makes the same
    object as pydantic's `model_construct`, which cannot be used here (pyiceberg's `__new__`
    needs the literals). With fewer than two literals pyiceberg's own constructor simplifies
    (to false, true, `=` or `!=`)."""
    if len(literals) < 2:
        return cls(term, literals)  # type: ignore[no-any-return]
    expr = object.__new__(cls)
    fields = {name: f.get_default(call_default_factory=True) for name, f in cls.model_fields.items() if not f.is_required()}
    fields.update(term=term, literals=literals)
    object.__setattr__(expr, "__dict__", fields)
    object.__setattr__(expr, "__pydantic_fields_set__", {"term", "literals"})
    object.__setattr__(expr, "__pydantic_extra__", None)
    object.__setattr__(expr, "__pydantic_private__", None)
    return expr  # type: ignore[no-any-return]


def _literals(texts: list[str]) -> list[Literal]:  # type: ignore[type-arg]
    return make_literals(_literal, texts)


def _long_literals(values: list[int]) -> list[Literal]:  # type: ignore[type-arg]
    return make_literals(LongLiteral, values)


def make_literals(make: Callable[[Any], Literal], items: list[Any]) -> list[Literal]:  # type: ignore[type-arg]
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


def _literal(text: str) -> Literal:  # type: ignore[type-arg]
    """A 'string' or number token's value, typed as pyiceberg's parser types it."""
    if text[0] == "'":
        return StringLiteral(text[1:-1].replace("''", "'"))
    return LongLiteral(int(text)) if _INTEGER.fullmatch(text) else DecimalLiteral(Decimal(text))


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
        self.i = 0

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
            if t.text == "(" and t.kind == "punct":  # a new group; its result takes the `not`s
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

    def _primary(self) -> BooleanExpression:
        t = self._peek()
        if t.kind in ("str", "num") or t.is_word("true", "false", "null", "nan"):
            if self._peek(1).kind == "op":  # `5 < x`
                value, op = self._literal(), self._next()
                column = self._column()
                return _COMPARISONS[_FLIPPED.get(op.text, op.text)](column, value)
            if t.is_word("true", "false"):
                self.i += 1
                return AlwaysTrue() if t.is_word("true") else AlwaysFalse()
            self._fail(t, f"expected a column name, found the value {t.text}")
        column = self._column()
        return self._predicate(column)

    def _predicate(self, column: Reference) -> BooleanExpression:
        t = self._next()
        if t.kind == "op":
            return _COMPARISONS[t.text](column, self._literal(after=t))
        if t.is_word("is"):
            negate = self._word("not")
            kind = self._next()
            if kind.is_word("null"):
                return NotNull(column) if negate else IsNull(column)
            if kind.is_word("nan"):
                return NotNaN(column) if negate else IsNaN(column)
            self._fail(kind, f"expected 'null' or 'nan' after 'is{' not' if negate else ''}', found {kind.describe()}")
        negate = t.is_word("not")
        if negate:
            t = self._next()
        if t.is_word("in"):
            if self._peek().kind == "list":  # plain values: one set, made once
                t = self._next()
                literals = _long_literals(t.ints) if t.ints is not None else _literals(_LIST_ITEM.findall(t.text))
                return set_predicate(NotIn if negate else In, column, set(literals))
            values = self._values()
            return NotIn(column, values) if negate else In(column, values)
        if t.is_word("like"):
            expr = self._like(column, self._string(after=t))
            return Not(expr) if negate else expr
        if t.is_word("starts") and self._word("with"):
            prefix = self._string(after=t).value
            return NotStartsWith(column, prefix) if negate else StartsWith(column, prefix)
        if t.is_word("between"):
            low = self._literal(after=t)
            self._expect("and", "'and' in 'between ... and ...'")
            expr = And(GreaterThanOrEqual(column, low), LessThanOrEqual(column, self._literal()))
            return Not(expr) if negate else expr
        expected = f"'in', 'like', 'starts with' or 'between' after '{column.name} not'" if negate else (
            f"an operator after column {column.name!r}")
        self._fail(t, f"expected {expected}, found {t.describe()}")

    def _column(self) -> Reference:
        parts = [self._name()]
        while self._peek().text == "." and self._peek().kind == "punct":
            self.i += 1
            parts.append(self._name())
        return Reference(".".join(parts))

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
            self._fail(t, f"expected a column name, found the keyword {t.text!r} (quote a column of that name: \"{t.text}\")")
        self._fail(t, f"expected a column name, found {t.describe()}")

    # -- values ---------------------------------------------------------------------------

    def _literal(self, after: _Token | None = None) -> Literal:  # type: ignore[type-arg]
        t = self._next()
        if t.kind in ("str", "num"):
            return _literal(t.text)
        if t.is_word("true", "false"):
            return BooleanLiteral(t.is_word("true"))
        if t.is_word("null"):
            self._fail(t, "a comparison with null is never true: use 'col is null' or 'col is not null'")
        if t.is_word("nan"):
            self._fail(t, "NaN cannot be compared: use 'col is nan' or 'col is not nan'")
        where = f" after {after.text!r}" if after is not None else ""
        self._fail(t, f"expected a value ('text', a number, true or false){where}, found {t.describe()}")

    def _string(self, after: _Token) -> StringLiteral:
        if self._peek().kind != "str":
            self._fail(self._peek(), f"expected a 'quoted string' after {after.text!r}, found {self._peek().describe()}")
        return self._literal()  # type: ignore[return-value]

    def _values(self) -> list[Literal]:  # type: ignore[type-arg]
        self._expect("(", "'(' to open the list of values after 'in'")
        values = [self._literal()]
        while (t := self._next()).text == ",":
            values.append(self._literal(after=t))
        if t.text != ")" or t.kind != "punct":
            self._fail(t, f"expected ',' or ')' in the list of values, found {t.describe()}")
        return values

    def _like(self, column: Reference, pattern: StringLiteral) -> BooleanExpression:
        """LIKE 'abc%' is a prefix match and LIKE 'abc' equality; `\\%`, `\\_`, `\\\\` escape.
        Other wildcards are refused rather than matched differently from SQL."""
        raw, out, i = pattern.value, [], 0
        while i < len(raw):
            c = raw[i]
            if c == "\\" and i + 1 < len(raw) and raw[i + 1] in "%_\\":
                out.append(raw[i + 1])
                i += 2
                continue
            if c == "%" and i == len(raw) - 1:
                return StartsWith(column, "".join(out))
            if c in "%_":
                self._fail(self.tokens[self.i - 1], f"LIKE supports one '%' at the end only (a prefix match); "
                           f"escape a literal {c!r} as '\\{c}'")  # fmt: skip
            out.append(c)
            i += 1
        return EqualTo(column, "".join(out))

    # -- errors ---------------------------------------------------------------------------

    def _fail(self, t: _Token, problem: str) -> NoReturn:
        lo = max(0, t.at - 40)
        snippet = self.text[lo : t.at + 40].replace("\n", " ")
        left = ("..." if lo else "") + snippet[: t.at - lo]
        right = snippet[t.at - lo :] + ("..." if t.at + 40 < len(self.text) else "")
        where = f" (offset {t.at})" if "offset" not in problem else ""
        raise InvalidFilterError(f"cannot parse filter: {problem}{where}\n  {left}{right}\n  {' ' * len(left)}^\n{SYNTAX}")
