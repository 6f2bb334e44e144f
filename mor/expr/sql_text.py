"""SQL text -> sqlglot's syntax tree, in Spark SQL's dialect (mor.expr.parse_terms and
mor.expr.parse translate the tree into mor's terms and predicates).

The dialect is Spark SQL's as Spark reads it with ANSI mode on and
`spark.sql.ansi.doubleQuotedIdentifiers`: `"odd name"` and `` `odd name` `` are column names,
'text' is text, with `''` or `\\'` for a quote in it. Two things are added before sqlglot reads
the text, both for speed or for pyiceberg's filter language, never changing what Spark SQL's
text means:
- a parenthesized list of many plain values (`id in (1, 2, ...)`, 100,000 of them) is read by one
  regular expression and stands in the tree as one placeholder name: sqlglot would take seconds;
- `x [not] starts with 'ab'` (pyiceberg's) is read as `x [not] like 'ab%'`.
Errors point at the place in the text (a caret under it) and say what was expected.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NoReturn

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from mor.errors import InvalidFilterError
from mor.expr.casts import TYPE_NAMES


class MorSpark(Spark):
    """Spark SQL with double-quoted names (ANSI) and `''` for a quote inside text."""

    class Tokenizer(Spark.Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ["`", '"']
        STRING_ESCAPES = ["\\", "'"]


DIALECT = MorSpark()
LIST_PREFIX = "__mor_values_"  # the placeholder name of a long list of values
MIN_LISTED = 16  # lists at least this long are read by the fast path

_STRING = r"'(?:[^'\\]|''|\\.)*'"
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_QUOTED_TEXT = _STRING + r'|`(?:[^`]|``)*`|"(?:[^"\\]|\\.)*"'  # 'text', `name`, "name"
_QUOTED = re.compile(_QUOTED_TEXT)
_QUOTE = re.compile(r"""['"`]""")
_SKIP = re.compile(rf"{_QUOTED_TEXT}|\(")
_LIST = re.compile(rf"\(\s*(?:(?:{_STRING}|{_NUMBER})\s*,\s*)*(?:{_STRING}|{_NUMBER})\s*\)")
LIST_ITEM = re.compile(rf"{_STRING}|{_NUMBER}")
_INT_LIST = re.compile(r"\(([0-9\s,+-]*)\)")
_RECURSION_LIMIT = 200_000
_RECURSION_LOCK = threading.Lock()
_DEEP_READERS = 0  # threads reading text now: the last one restores the limit
_LIMIT_BEFORE = 1000
_ESCAPE = re.compile(r"''|\\(.)", re.DOTALL)
_UNESCAPED = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "Z": "\x1a"}


@dataclass
class Listed:
    """A long list of values read by the fast path: integers, or 'text' and number items."""

    ints: list[int] | None
    items: list[str] = field(default_factory=list)


@dataclass
class Lists:
    """The long lists lifted out of a text: by placeholder name, and where each was (for offsets)."""

    by_name: dict[str, Listed] = field(default_factory=dict)
    shifts: list[tuple[int, int]] = field(default_factory=list)  # (end of a placeholder in the new text, chars removed)

    def original_offset(self, offset: int) -> int:
        """An offset in the text with placeholders -> the offset in the text written."""
        return offset + sum(removed for end, removed in self.shifts if end <= offset)


@dataclass
class Parsed:
    """One text's tree, with the long lists that stand in it as placeholder names."""

    text: str
    tree: exp.Expression
    lists: Lists


def string_value(item: str) -> str:
    """The text of a quoted 'string' item, its escapes read as sqlglot reads Spark's."""
    return _ESCAPE.sub(lambda m: "'" if m.group(0) == "''" else _UNESCAPED.get(m.group(1), m.group(1)), item[1:-1])


def parse_sql(text: str, what: str, syntax: str) -> Parsed:
    """The one expression `text` holds; InvalidFilterError saying where and what is wrong
    (`what`: the filter, the value of a column; `syntax`: shown under the error)."""
    replaced, lists = _lifted_lists(text)
    try:
        with deep_recursion():
            tokens = _starts_with_as_like(DIALECT.tokenize(replaced))
            malformed = _malformed(tokens)
            if malformed is not None:
                fail(text, lists.original_offset(malformed[0].start), malformed[1], what, syntax)
            trees = DIALECT.parser().parse(tokens, replaced)
    except RecursionError:
        fail(text, 0, "the text nests too deep to read", what, syntax)
    except TokenError:
        at = _unterminated_at(text)
        fail(text, at, f"an unterminated string or name at offset {at}", what, syntax)
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        offset = lists.original_offset(_offset_in(replaced, first.get("line", 1), first.get("col", 0)))
        fail(text, offset, _described(first.get("description", str(e))), what, syntax)
    found = [t for t in trees if isinstance(t, exp.Expression)]
    if len(found) != 1:
        fail(text, len(text), f"expected one expression, found {len(found)} (no ';' between expressions)", what, syntax)
    return Parsed(text, found[0], lists)


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for sqlglot's recursive descent (about a dozen Python frames a level) and for the
    translation of the tree: thousands of `not`s or parentheses are read, not a RecursionError.
    Python 3.11 runs Python-to-Python calls without the C stack, so the room costs only memory."""
    global _DEEP_READERS, _LIMIT_BEFORE
    with _RECURSION_LOCK:
        if _DEEP_READERS == 0:
            _LIMIT_BEFORE = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_LIMIT_BEFORE, _RECURSION_LIMIT))
        _DEEP_READERS += 1
    try:
        yield
    finally:
        with _RECURSION_LOCK:
            _DEEP_READERS -= 1
            if _DEEP_READERS == 0:
                sys.setrecursionlimit(_LIMIT_BEFORE)


def start_of(node: exp.Expression, parsed: Parsed) -> int:
    """Where `node` starts in the text the user wrote (its first token that sqlglot placed)."""
    starts = [n.meta["start"] for n in node.walk() if isinstance(n, exp.Expression) and "start" in n.meta]
    return parsed.lists.original_offset(min(starts)) if starts else 0


def fail(text: str, at: int, problem: str, what: str, syntax: str) -> NoReturn:
    at = max(0, min(at, len(text)))
    lo = max(0, at - 40)
    snippet = text[lo : at + 40].replace("\n", " ")
    left = ("..." if lo else "") + snippet[: at - lo]
    right = snippet[at - lo :] + ("..." if at + 40 < len(text) else "")
    where = f" (offset {at})" if "offset" not in problem else ""
    raise InvalidFilterError(
        f"cannot parse {what}: {problem}{where}\n  {left}{right}\n  {' ' * len(left)}^" + (f"\n{syntax}" if syntax else "")
    )


# -- the fast path for long lists --------------------------------------------------------------


def _lifted_lists(text: str) -> tuple[str, Lists]:
    """`text` with each long parenthesized list of plain values replaced by `(<placeholder>)`."""
    lists = Lists()
    if text.count(",") < MIN_LISTED - 1:
        return text, lists
    out: list[str] = []
    pos, length = 0, 0
    for m in _SKIP.finditer(text):
        if m.group(0) != "(" or m.start() < pos:
            continue
        listed = _listed_at(text, m.start())
        if listed is None:
            continue
        found, end = listed
        name = f"{LIST_PREFIX}{len(lists.by_name)}"
        lists.by_name[name] = found
        placed = f"({name})"
        out += [text[pos : m.start()], placed]
        length += m.start() - pos + len(placed)
        lists.shifts.append((length, end - m.start() - len(placed)))
        pos = end
    if not lists.by_name:
        return text, lists
    out.append(text[pos:])
    return "".join(out), lists


def _listed_at(text: str, at: int) -> tuple[Listed, int] | None:
    m = _INT_LIST.match(text, at)
    if m is not None and m.group(1).count(",") >= MIN_LISTED - 1:
        try:
            return Listed([int(item) for item in m.group(1).split(",")]), m.end()
        except ValueError:
            pass  # not integers only
    m = _LIST.match(text, at)
    if m is None:
        return None
    items = LIST_ITEM.findall(m.group(0))
    return (Listed(None, items), m.end()) if len(items) >= MIN_LISTED else None


def _offset_in(replaced: str, line: int, col: int) -> int:
    lines = replaced.split("\n")
    return sum(len(s) + 1 for s in lines[: max(0, line - 1)]) + max(0, col - 1)


def _unterminated_at(text: str) -> int:
    """Where the first quote that is never closed opens (the end of the text if none is)."""
    pos = 0
    while (m := _QUOTE.search(text, pos)) is not None:
        closed = _QUOTED.match(text, m.start())
        if closed is None:
            return m.start()
        pos = closed.end()
    return len(text)


def _described(description: str) -> str:
    if description.startswith("Required keyword: 'expression' missing"):
        return "expected a value after the operator"
    if description.startswith("Required keyword: 'this' missing"):
        return "expected a value before the operator (a column named like a keyword is quoted: `and`)"
    if description.startswith("Invalid expression / Unexpected token"):
        return "expected an operator, a value or a column here"
    if description.startswith("Expecting )"):
        return "expected ')' to close a '(' (or ',' between a list's items)"
    if description.startswith("Expected TYPE after CAST"):
        return f"unknown type: cast to one of {TYPE_NAMES}"
    if description.startswith("Expected AS after CAST"):
        return "expected 'as' in 'cast(x as type)'"
    if description.startswith("Expected FROM or comma after EXTRACT"):
        return "expected 'from' in 'extract(part from t)'"
    return description[0].lower() + description[1:]


def _malformed(tokens: list[Token]) -> tuple[Token, str] | None:
    """A token sqlglot would let pass where Spark SQL refuses it, and why: an empty item in a
    list (`(1,,2)`, `(1, 2,)`, `in ()`), a number with `_`, a CASE's `when` without `then`."""
    for before, t, after in zip([None, *tokens], tokens, [*tokens[1:], None]):
        empty_item = t.token_type == TokenType.COMMA and (after is None or after.token_type in (TokenType.COMMA, TokenType.R_PAREN))
        in_list = before is not None and before.token_type == TokenType.IN and t.token_type == TokenType.L_PAREN
        bad = (after or t) if empty_item else after if in_list and after is not None and after.token_type == TokenType.R_PAREN else None
        if t.token_type == TokenType.VAR and t.text[:1].isdigit():
            bad = t  # 1_000, 12abc: neither a number nor a name
        if bad is not None:
            return bad, f"expected a value, found {bad.text!r}"
    when = _when_without_then(tokens)
    return (when, "expected 'then' after the condition of 'when'") if when is not None else None


def _when_without_then(tokens: list[Token]) -> Token | None:
    """The token where a CASE's `when` lacks its `then` (sqlglot reads `when c 'a'` as `when c then 'a'`)."""
    open_cases: list[Token | None] = []  # per open CASE: its `when` still waiting for `then`
    for t in tokens:
        kind = t.token_type
        if kind == TokenType.CASE:
            open_cases.append(None)
        elif not open_cases:
            continue
        elif kind == TokenType.WHEN:
            if open_cases[-1] is not None:
                return t
            open_cases[-1] = t
        elif kind == TokenType.THEN:
            open_cases[-1] = None
        elif kind in (TokenType.ELSE, TokenType.END) and open_cases[-1] is not None:
            return t
        if kind == TokenType.END:
            open_cases.pop()
    return None


# -- `starts with` ----------------------------------------------------------------------------


def _starts_with_as_like(tokens: list[Token]) -> list[Token]:
    """`starts with 'ab'` -> `like 'ab%'` (the prefix's own % _ and \\ escaped)."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if (
            t.token_type == TokenType.VAR
            and t.text.lower() == "starts"
            and i + 2 < len(tokens)
            and tokens[i + 1].token_type == TokenType.WITH
            and tokens[i + 2].token_type == TokenType.STRING
        ):
            prefix = tokens[i + 2]
            pattern = re.sub(r"([%_\\])", r"\\\1", prefix.text) + "%"
            out.append(Token(TokenType.LIKE, "like", t.line, t.col, t.start, t.end))
            out.append(Token(TokenType.STRING, pattern, prefix.line, prefix.col, prefix.start, prefix.end))
            i += 3
            continue
        out.append(t)
        i += 1
    return out
