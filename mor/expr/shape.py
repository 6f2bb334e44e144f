"""How deep and how large a filter may be, checked (without recursion) before anything recurses
over it.

pyiceberg's visitors and mor's binder recurse once per level of a filter's tree, so a tree
thousands of levels deep raises RecursionError; pyarrow flattens a chain of `or` (or `and`)
and recurses once per term of it, so about 9,000 terms overflow the C stack (8 MB) and kill
the process. A filter from text or from pyiceberg expression objects is therefore reshaped:
- a chain `a or b or c ...` (or `and`) becomes a balanced tree, O(log n) deep;
- a chain of more than MERGE_AT `=` on one column (values of one kind) joined by `or` becomes
  that column `in` the values, and such a chain of `!=` joined by `and` `not in`: the same
  rows under three-valued logic (a null is NULL both ways; NaN is false for `=` and `in`, true
  for `!=` and `not in`). An `in` list is one term however long;
and then refused with InvalidFilterError when it is more than MAX_DEPTH levels deep or holds
more than MAX_TERMS terms (predicates). MAX_TERMS keeps a margin below pyarrow's limit: the
row filter and the pruning form add `or x is nan` to each `>` on a floating column, so they
may hold twice as many terms (DERIVED_MAX_TERMS).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyiceberg.expressions import And, BooleanExpression, EqualTo, In, Not, NotEqualTo, NotIn, Or, Reference

from mor.errors import InvalidFilterError
from mor.expr.parse import set_predicate

MAX_DEPTH = 200
MAX_TERMS = 2_000
DERIVED_MAX_TERMS = 2 * MAX_TERMS
MERGE_AT = 32


@dataclass
class _Frame:
    node: Any  # an And, Or or Not
    operands: list[Any]  # a chain's operands (flattened), or a Not's child
    height: int  # how deep the chain itself is in the given tree (0 for a Not)
    results: list[tuple[Any, int, int]] = field(default_factory=list)  # (expression, depth, terms) of each operand


def shaped(expr: BooleanExpression, max_terms: int = MAX_TERMS) -> BooleanExpression:
    """`expr` reshaped as the module docstring says (`expr` itself when nothing changes);
    InvalidFilterError beyond MAX_DEPTH levels or `max_terms` terms."""
    if not isinstance(expr, (And, Or, Not)):
        return expr
    stack = [_open(expr)]
    while True:
        frame = stack[-1]
        if len(frame.results) < len(frame.operands):
            child = frame.operands[len(frame.results)]
            if isinstance(child, (And, Or, Not)):
                stack.append(_open(child))
            else:
                frame.results.append((child, 0, 1))
            continue
        stack.pop()
        result = _close(frame)
        if not stack:
            break
        stack[-1].results.append(result)
    shaped_expr, depth, terms = result
    if depth > MAX_DEPTH:
        raise InvalidFilterError(f"the filter nests {depth} levels deep; at most {MAX_DEPTH} (and, or, not and parentheses)")
    if terms > max_terms:
        raise InvalidFilterError(
            f"the filter has {terms} predicates; at most {max_terms} (an 'in' list counts as one: write col in (1, 2, ...))"
        )
    return shaped_expr


def _open(node: Any) -> _Frame:
    if isinstance(node, Not):
        return _Frame(node, [node.child], 0)
    kind, operands, height = type(node), [], 0
    todo = [(node, 0)]
    while todo:  # flatten the chain, left to right
        n, level = todo.pop()
        if type(n) is kind:
            todo += [(n.right, level + 1), (n.left, level + 1)]
        else:
            operands.append(n)
            height = max(height, level)
    return _Frame(node, operands, height)


def _close(frame: _Frame) -> tuple[Any, int, int]:
    node, results = frame.node, frame.results
    if isinstance(node, Not):
        child, depth, terms = results[0]
        return (node if child is node.child else Not(child)), depth + 1, terms
    exprs = [r[0] for r in results]
    merged = _merged(exprs, EqualTo, In) if isinstance(node, Or) else _merged(exprs, NotEqualTo, NotIn)
    depth = max(r[1] for r in results) + (len(merged) - 1).bit_length()  # a balanced tree's height
    terms = sum(r[2] for r in results) - (len(exprs) - len(merged))
    unchanged = merged is exprs and all(e is o for e, o in zip(exprs, frame.operands)) and frame.height <= (len(exprs) - 1).bit_length()
    if unchanged:
        return node, depth, terms
    if len(merged) == 1:
        return merged[0], depth, terms
    kind = type(node)
    return (kind(*merged) if len(merged) > 2 else kind(merged[0], merged[1])), depth, terms


def _merged(exprs: list[Any], single: type[Any], multiple: type) -> list[Any]:
    """`exprs` with more than MERGE_AT `single` predicates (EqualTo, NotEqualTo) of one column
    and one literal kind replaced by one `multiple` (In, NotIn) where the first of them stood;
    `exprs` itself when there are none."""
    groups: dict[tuple[str, type], list[int]] = {}
    for i, e in enumerate(exprs):
        if type(e) is single and isinstance(e.term, Reference):
            groups.setdefault((e.term.name, type(e.literal)), []).append(i)
    long = [g for g in groups.values() if len(g) > MERGE_AT]
    if not long:
        return exprs
    out: list[Any] = list(exprs)
    for indexes in long:
        first = exprs[indexes[0]]
        out[indexes[0]] = set_predicate(multiple, Reference(first.term.name), {exprs[i].literal for i in indexes})
        for i in indexes[1:]:
            out[i] = None
    return [e for e in out if e is not None]
