"""Filter text: its tokens, and the terms that predicates compare (mor.expr.parse reads the
predicates). A term is a column, a value, arithmetic, a function, `cast(x as type)` or
`x::type`, `extract(part from t)`, or a date or time computed once, when the text is parsed
(`current_date`, `current_timestamp`, `now()`, plus or minus an `interval`).

Terms of constants only are folded here: a cast of a value (mor.expr.casts) and date and time
arithmetic (mor.expr.temporal) become a typed value, so that a comparison of a column with them
stays a plain comparison that prunes. Every refusal says what is accepted and where.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, NamedTuple, NoReturn

from pyiceberg.expressions.literals import BooleanLiteral, DecimalLiteral, DoubleLiteral, Literal, LongLiteral, StringLiteral

from mor.errors import InvalidFilterError
from mor.expr.casts import TYPE_NAMES, CastType, cast_constant, cast_type, check_cast
from mor.expr.literals import TYPED_TEXT, Temporal, parse_temporal
from mor.expr.residual import EXTRACT_NAMES, EXTRACT_PARTS, PUBLIC_FUNCTIONS, TEMPORAL, Call, Column, Constant, constant_of
from mor.expr.temporal import UNITS, Interval, current_date, current_timestamp, interval_of, shifted, unit_of

SYNTAX = """filter syntax:
  col = 5 (!=, <>, <, <=, >, >=)   col [not] in (1, 2)   col [not] between 1 and 9
  col is null   col is not null   col is [not] nan   col [not] starts with 'ab'
  col [not] [i]like 'a_%'   and, or, not, ( )   bool_col   'text' ('' for a quote), 12, true
  times: '2025-06-05', '2025-06-05 10:00[:00.5][Z|+02:00]', date '...', timestamp '...'
    (on timestamptz, without zone is UTC; on timestamp, a date is its midnight)
    current_date - interval 7 days
  numbers compare exactly: 149.5 on decimal(10,2)
  on rows: + - * / %  lower(s) abs(x) coalesce(x, y) year(t) extract(dow from t)
    cast(x as int), x::date, a + b > c
  "any name" for other column names, a.b for a nested field"""
MAX_TERM_NODES = 64  # operators and functions in one predicate's terms (also how deep they nest)
CLOCK = ("current_date", "current_timestamp", "now()")

_STRING = r"'(?:[^']|'')*'"
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
# A parenthesized list of plain values is one token, split by one regex: a long IN list then
# costs little more than making its literals.
_LIST = re.compile(rf"\s*(\(\s*(?:(?:{_STRING}|{_NUMBER})\s*,\s*)*(?:{_STRING}|{_NUMBER})\s*\))")
LIST_ITEM = re.compile(rf"{_STRING}|{_NUMBER}")
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
    | (?P<cast>::)
    | (?P<punct>[(),.])
    )""",
    re.VERBOSE,
)
_INTEGER = re.compile(r"[+-]?\d+")
_WORDS = {"and", "or", "not", "is", "in", "null", "nan", "like", "between", "true", "false"}


class Token(NamedTuple):
    kind: str  # str, qid, num, word, op, arith, cast, punct, list (of values), end
    text: str
    at: int  # offset in the filter text
    ints: list[int] | None = None  # a list of integers only: its values

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words

    def is_punct(self, text: str) -> bool:
        return self.kind == "punct" and self.text == text

    def describe(self) -> str:
        if self.kind == "end":
            return "the end of the text"
        return repr(self.text if len(self.text) <= 30 else self.text[:27] + "...")


def _ints(body: str) -> list[int] | None:
    try:
        return [int(item) for item in body.split(",")]
    except ValueError:  # not integers only (or an empty item): the general grammar says what
        return None


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
    """A 'string' or number token's value, typed as pyiceberg's parser types it."""
    if text[0] == "'":
        return StringLiteral(text[1:-1].replace("''", "'"))
    return LongLiteral(int(text)) if _INTEGER.fullmatch(text) else DecimalLiteral(Decimal(text))


def _matching_parentheses(tokens: list[Token]) -> dict[int, int]:
    """The index of each '(' token -> the index of its ')' (unclosed ones are left out)."""
    opened, pairs = [], {}
    for i, t in enumerate(tokens):
        if t.is_punct("("):
            opened.append(i)
        elif t.is_punct(")") and opened:
            pairs[opened.pop()] = i
    return pairs


def is_interval(term: Any) -> bool:
    return isinstance(term, Constant) and term.kind == "interval"


class TermParser:
    """The tokens of a filter, and terms read from them (mor.expr.parse reads the rest)."""

    WHAT = "filter"  # what the text is, in errors (mor.expr.values reads values)
    HELP = SYNTAX  # the grammar shown under an error

    def __init__(self, text: str):
        self.text = text
        self.tokens = self._tokenize()
        self.closing = _matching_parentheses(self.tokens)
        self.i = 0
        self.term_nodes = 0  # operators and functions in the current predicate

    # -- tokens ---------------------------------------------------------------------------

    def _tokenize(self) -> list[Token]:
        text, pos, out = self.text, 0, []
        end = len(text.rstrip())
        while pos < end:
            if (m := _INT_LIST.match(text, pos)) is not None and (ints := _ints(m.group(2))) is not None:
                out.append(Token("list", m.group(1), m.start(1), ints))
                pos = m.end()
                continue
            if (m := _LIST.match(text, pos)) is not None:
                out.append(Token("list", m.group(1), m.start(1)))
                pos = m.end()
                continue
            m = _TOKEN.match(text, pos)
            if m is None or m.lastgroup is None:
                at = len(text) - len(text[pos:].lstrip())
                what = "an unterminated string" if text[at] in "'\"" else f"unexpected character {text[at]!r}"
                self._fail(Token("end", "", at), f"{what} at offset {at}")
            out.append(Token(m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)))
            pos = m.end()
        out.append(Token("end", "", len(text)))
        return out

    def _peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def _next(self) -> Token:
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

    # -- terms: sum > product > sign > operand (> postfix ::type) ---------------------------

    def _term(self, after: Token | None = None, depth: int = 0) -> Any:
        term = self._product(after, depth)
        while True:
            t = self._peek()
            if t.kind == "arith" and t.text in "+-":
                self.i += 1
                term = self._call(t, t.text, (term, self._product(t, depth)))
            elif t.kind == "num" and t.text[0] in "+-":  # `a -1`: the sign is the operator
                self.i += 1
                term = self._call(t, t.text[0], (term, number(t.text[1:])))
            else:
                return term

    def _product(self, after: Token | None, depth: int) -> Any:
        term = self._signed(after, depth)
        while (t := self._peek()).kind == "arith" and t.text in "*/%":
            self.i += 1
            term = self._call(t, t.text, (term, self._signed(t, depth)))
        return term

    def _signed(self, after: Token | None, depth: int) -> Any:
        t = self._peek()
        if t.kind == "arith" and t.text in "+-":
            self.i += 1
            operand = self._signed(t, depth + 1)
            return operand if t.text == "+" else self._call(t, "neg", (operand,))
        term = self._operand(after, depth)
        while (t := self._peek()).kind == "cast":  # x::int::string
            self.i += 1
            term = self._cast(t, term, self._type(t))
        return term

    def _operand(self, after: Token | None, depth: int) -> Any:
        t = self._next()
        if depth > MAX_TERM_NODES:
            self._fail(t, f"terms nest more than {MAX_TERM_NODES} levels deep")
        if t.kind in ("str", "num"):
            return constant_of_literal(literal(t.text))
        if t.kind == "list":  # `(5)`, or a function's plain arguments
            items = LIST_ITEM.findall(t.text)
            if len(items) != 1:
                self._fail(t, f"expected a value, found the list {t.describe()}")
            return constant_of_literal(literal(items[0]))
        if t.is_punct("("):
            inner = self._term(t, depth + 1)
            self._expect(")", f"')' to close the '(' at offset {t.at}")
            return inner
        if t.kind == "word":
            word = t.text.lower()
            if word in ("true", "false"):
                return Constant(word == "true", "bool")
            if word in TYPED_TEXT and self._peek().kind == "str":
                return self._typed_text(t, self._next())
            if word in ("current_date", "current_timestamp", "now"):
                return self._clock(t, word)
            if word == "interval":
                return self._interval(t)
            opens = self._peek().is_punct("(")
            if word == "cast" and opens:
                return self._cast_call(t, depth)
            if word == "extract" and opens:
                return self._extract(t, depth)
            if self._peek().kind == "list" or opens:
                if word not in PUBLIC_FUNCTIONS:
                    self._fail(t, f"unknown function {t.text}(): write one of {_functions()}")
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

    def _function(self, name: Token, depth: int) -> Any:
        function = name.text.lower()
        if self._peek().kind == "list":
            args = tuple(constant_of_literal(literal(item)) for item in LIST_ITEM.findall(self._next().text))
        else:
            self.i += 1  # '('
            args_list = [self._term(name, depth + 1)]
            while (t := self._next()).is_punct(","):
                args_list.append(self._term(t, depth + 1))
            if not t.is_punct(")"):
                self._fail(t, f"expected ',' or ')' in the arguments of {function}(), found {t.describe()}")
            args = tuple(args_list)
        if len(args) != 1 and function != "coalesce":
            self._fail(name, f"{function}() takes one argument, found {len(args)}")
        return self._call(name, function, args)

    def _call(self, at: Token, function: str, args: tuple[Any, ...]) -> Any:
        if function in ("+", "-", "neg") and any(isinstance(a, Constant) and (a.kind == "interval" or a.kind in TEMPORAL) for a in args):
            folded = self._date_arithmetic(at, function, args)
            if folded is not None:
                return folded
        if any(is_interval(a) for a in args):
            self._fail(at, "an interval is added to or subtracted from a date or time value (current_date, current_timestamp, "
                       "date '...', timestamp '...'), not to a column: compare the column with the shifted value")  # fmt: skip
        self.term_nodes += 1
        if self.term_nodes > MAX_TERM_NODES:
            self._fail(at, f"a predicate may hold at most {MAX_TERM_NODES} operators and functions")
        return Call(function, args)

    def _typed_text(self, kind: Token, text: Token) -> Constant:
        value = text.text[1:-1].replace("''", "'")
        try:
            parse_temporal(value)
        except ValueError as e:
            self._fail(text, str(e))
        return Constant(value, kind.text.lower())

    def _column_name(self) -> str:
        parts = [self._name()]
        while self._peek().is_punct("."):
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

    # -- casts, extract, the clock and intervals -------------------------------------------

    def _cast_call(self, name: Token, depth: int) -> Any:
        self.i += 1  # '('
        inner = self._term(name, depth + 1)
        self._expect("as", "'as' in 'cast(x as type)'")
        target = self._type(name)
        self._expect(")", f"')' to close 'cast(' at offset {name.at}")
        return self._cast(name, inner, target)

    def _type(self, after: Token) -> CastType:
        t = self._next()
        if t.kind != "word":
            self._fail(t, f"expected a type after {after.text!r}, found {t.describe()}: cast to one of {TYPE_NAMES}")
        sizes = self._next().ints if self._peek().kind == "list" and self._peek().ints is not None else None
        try:
            return cast_type(t.text, sizes)
        except ValueError as e:
            self._fail(t, str(e))

    def _cast(self, at: Token, term: Any, target: CastType) -> Any:
        """A cast of a constant folded to a constant of the type; of anything else a term."""
        if not isinstance(term, Constant):
            return self._call(at, "cast", (term, target))
        refusal = check_cast(term.kind, target, term)
        if refusal is not None:
            self._fail(at, refusal)
        try:
            value, kind = cast_constant(term.value, term.kind, target)
        except ValueError as e:
            self._fail(at, f"cannot cast {term} to {target}: {e}")
        return Constant(value, kind)

    def _extract(self, name: Token, depth: int) -> Any:
        self.i += 1  # '('
        part = self._next()
        function = EXTRACT_PARTS.get(part.text.lower()) if part.kind in ("word", "str") else None
        if function is None:
            self._fail(part, f"expected the part to extract, found {part.describe()}: write one of {EXTRACT_NAMES}")
        self._expect("from", "'from' in 'extract(part from t)'")
        inner = self._term(name, depth + 1)
        self._expect(")", f"')' to close 'extract(' at offset {name.at}")
        return self._call(name, function, (inner,))

    def _clock(self, t: Token, word: str) -> Constant:
        """The date or instant now (UTC), read once: `current_date`, `current_timestamp`, with
        or without `()`, and `now()`."""
        if self._peek().is_punct("(") and self._peek(1).is_punct(")"):
            self.i += 2
        elif word == "now":
            self._fail(self._peek(), f"expected '()' after 'now', found {self._peek().describe()}")
        text, kind = current_date() if word == "current_date" else current_timestamp()
        return Constant(text, kind)

    def _interval(self, t: Token) -> Constant:
        """`interval 7 days`, `interval '1' hour`, `interval 1 day 2 hours`, `interval '7 days'`."""
        total, pairs = Interval(0, 0), 0
        while True:
            amount, unit = self._peek(), self._peek(1)
            if amount.kind not in ("num", "str"):
                break
            if amount.kind == "str" and unit_of(unit.text) is None and pairs == 0:  # '7 days' or '1 day 2 hours'
                words = amount.text[1:-1].split()
                if not words or len(words) % 2:
                    self._fail(amount, f"expected amounts and units in {amount.text} (units: {_units()})")
                self.i += 1
                for n, u in zip(words[::2], words[1::2]):
                    total += self._amount(amount, n, u)
                return Constant(total, "interval")
            if unit.kind != "word" or unit_of(unit.text) is None:
                if pairs == 0:
                    self._fail(unit, f"expected a unit after 'interval {amount.text}', found {unit.describe()}: write one of {_units()}")
                break
            self.i += 2
            total += self._amount(amount, amount.text.strip("'"), unit.text)
            pairs += 1
        if pairs == 0:
            self._fail(self._peek(), f"expected an amount and a unit after 'interval' (7 days, '1' hour; units: {_units()})")
        return Constant(total, "interval")

    def _amount(self, at: Token, amount: str, unit: str) -> Interval:
        name = unit_of(unit)
        if name is None:
            self._fail(at, f"unknown interval unit {unit!r}: write one of {_units()}")
        try:
            return interval_of(amount, name)
        except ValueError as e:
            self._fail(at, str(e))

    def _date_arithmetic(self, at: Token, function: str, args: tuple[Any, ...]) -> Constant | None:
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
            self._fail(at, str(e))
        return Constant(text, kind)

    # -- errors ---------------------------------------------------------------------------

    def _fail(self, t: Token, problem: str) -> NoReturn:
        lo = max(0, t.at - 40)
        snippet = self.text[lo : t.at + 40].replace("\n", " ")
        left = ("..." if lo else "") + snippet[: t.at - lo]
        right = snippet[t.at - lo :] + ("..." if t.at + 40 < len(self.text) else "")
        where = f" (offset {t.at})" if "offset" not in problem else ""
        raise InvalidFilterError(f"cannot parse {self.WHAT}: {problem}{where}\n  {left}{right}\n  {' ' * len(left)}^\n{self.HELP}")


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
        parser = TermParser(text)
        term = parser._term()
        ended = parser._peek().kind == "end"
    except InvalidFilterError:
        raise ValueError(accepted) from None
    if not (ended and isinstance(term, Constant) and term.kind in (*TEMPORAL, "text")):
        raise ValueError(accepted)
    return parse_temporal(term.value)
