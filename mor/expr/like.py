"""SQL's LIKE, as Spark SQL reads a pattern: `%` matches any run of characters (newlines too),
`_` any one character, and the escape character (`\\` unless `escape 'c'` names another)
makes the `%`, `_` or escape character after it literal. As Spark's
`StringUtils.escapeLikeRegex`, an escape before any other character, or at the end of the
pattern, is an error. Matching is case-sensitive.

A pattern is read once, when the filter is parsed: `abc%` (literal text, then only `%`) is a
prefix test and `abc` (no wildcard) equality, both pruned by column bounds; any other pattern
is matched on the rows by pyarrow's `match_like`, given the pattern re-escaped in pyarrow's
convention (backslash), and when it starts with literal text the filter also holds a prefix
test on that text, so that it still prunes.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_ESCAPE = "\\"


@dataclass(frozen=True)
class LikePattern:
    """A pattern as literal characters and the wildcards `%` and `_` (items of `parts`: a
    wildcard is the one-character string of `wildcards` at that index)."""

    parts: tuple[str, ...]
    wildcards: frozenset[int]  # indexes of parts that are wildcards

    @property
    def prefix(self) -> str:
        """The literal text before the first wildcard."""
        out = []
        for i, part in enumerate(self.parts):
            if i in self.wildcards:
                break
            out.append(part)
        return "".join(out)

    @property
    def exact(self) -> str | None:
        """The text a pattern without wildcards equals, else None."""
        return None if self.wildcards else "".join(self.parts)

    @property
    def is_prefix(self) -> bool:
        """Literal text followed by `%` only ('abc%', 'abc%%', '%')."""
        first = min(self.wildcards, default=len(self.parts))
        return bool(self.wildcards) and all(i in self.wildcards and self.parts[i] == "%" for i in range(first, len(self.parts)))

    def arrow_pattern(self) -> str:
        """The pattern with pyarrow match_like's escapes (backslash before a literal `%`, `_`, `\\`)."""
        return "".join(p if i in self.wildcards else _escaped(p) for i, p in enumerate(self.parts))


def _escaped(char: str) -> str:
    return "\\" + char if char in "%_\\" else char


def parse_like(pattern: str, escape: str = DEFAULT_ESCAPE) -> LikePattern:
    """`pattern` read with `escape` as its escape character; ValueError, saying why, for an
    escape that precedes nothing or another character, or an escape of more than one character."""
    if len(escape) != 1:
        raise ValueError(f"the escape of LIKE is one character, not {escape!r}")
    parts: list[str] = []
    wildcards: set[int] = set()
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape:
            if i + 1 == len(pattern):
                raise ValueError(f"the LIKE pattern {pattern!r} ends with its escape character {escape!r}: escape '%', '_' or {escape!r}")
            following = pattern[i + 1]
            if following not in ("%", "_", escape):
                raise ValueError(
                    f"in the LIKE pattern {pattern!r} the escape character {escape!r} precedes {following!r}: "
                    f"it may precede only '%', '_' or itself"
                )
            parts.append(following)
            i += 2
            continue
        if c in "%_":
            wildcards.add(len(parts))
        parts.append(c)
        i += 1
    return LikePattern(tuple(parts), frozenset(wildcards))
