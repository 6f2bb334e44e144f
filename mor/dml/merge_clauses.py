"""The clauses of a MERGE, built in order as Delta Lake's merge builder and SQL's MERGE INTO
write them; one model for the local engine (mor/dml/merge.py) and Spark's (mor/spark/table.py).

    clauses = (MergeClauses()
               .when_matched_delete(condition=pc.field("source.op") == "d")
               .when_matched_update_all()
               .when_not_matched_insert_all())

For a matched pair the matched clauses are tried in order and the first whose condition holds
applies (a pair none applies to keeps its target row); likewise the not-matched clauses for a
source row without a match. Only the last clause of each list may go without a condition: one
before it would leave the rest nothing to do.

Conditions and values are whatever the engine evaluates: locally, SQL text over the joined rows
(conditions in the filter language: `"source.ts > target.ts"`; values `"source.n + n"`;
mor/expr/values.py), pyarrow.compute expressions (source columns as `pc.field("source.<name>")`)
and, for values, literals (`mor.lit(...)`); on Spark, Spark SQL text and Columns. `values=None`
(the `*_all` clauses) takes every column from the source's column of the same name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mor.errors import InvalidArgumentError

ALL = "*"  # the keyword form's "every column from the source"
UPDATE, DELETE, INSERT = "update", "delete", "insert"


@dataclass(frozen=True)
class Clause:
    """One WHEN clause: its action, its condition (None: always) and, for an update or insert,
    the column values (None: every column from the source)."""

    action: str
    condition: Any = None
    values: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.values is not None:
            if not isinstance(self.values, Mapping):
                raise InvalidArgumentError(f"a {self.action} clause's values are a dict of column -> value, got {self.values!r}")
            not_names = [c for c in self.values if not isinstance(c, str)]
            if not_names:
                raise InvalidArgumentError(f"a {self.action} clause sets columns by name (strings), got {not_names}")

    @property
    def writes(self) -> bool:
        return self.action != DELETE

    def describe(self) -> str:
        matched = "WHEN NOT MATCHED" if self.action == INSERT else "WHEN MATCHED"
        return f"{matched} {self.action.upper()}" + ("" if self.condition is None else " AND <condition>")


@dataclass(frozen=True)
class MergeClauses:
    """The WHEN clauses of one MERGE; each builder method returns a new MergeClauses."""

    matched: tuple[Clause, ...] = ()
    not_matched: tuple[Clause, ...] = ()

    # -- building ------------------------------------------------------------------------------

    def when_matched_update(self, set: Mapping[str, Any], condition: Any = None) -> MergeClauses:
        return self._matched(Clause(UPDATE, condition, dict(set)))

    def when_matched_update_all(self, condition: Any = None) -> MergeClauses:
        return self._matched(Clause(UPDATE, condition))

    def when_matched_delete(self, condition: Any = None) -> MergeClauses:
        return self._matched(Clause(DELETE, condition))

    def when_not_matched_insert(self, values: Mapping[str, Any], condition: Any = None) -> MergeClauses:
        return replace(self, not_matched=(*self.not_matched, Clause(INSERT, condition, dict(values))))

    def when_not_matched_insert_all(self, condition: Any = None) -> MergeClauses:
        return replace(self, not_matched=(*self.not_matched, Clause(INSERT, condition)))

    # Delta's names, so Delta code ports with a rename of the table class.
    whenMatchedUpdate = when_matched_update
    whenMatchedUpdateAll = when_matched_update_all
    whenMatchedDelete = when_matched_delete
    whenNotMatchedInsert = when_not_matched_insert
    whenNotMatchedInsertAll = when_not_matched_insert_all

    def _matched(self, clause: Clause) -> MergeClauses:
        return replace(self, matched=(*self.matched, clause))

    @classmethod
    def of_keywords(
        cls,
        when_matched_delete: Any = False,
        when_matched_update: Mapping[str, Any] | str | None = None,
        when_matched_update_if: Any = None,
        when_not_matched_insert: Mapping[str, Any] | str | None = None,
        when_not_matched_insert_if: Any = None,
    ) -> MergeClauses:
        """The keyword form of `Table.merge` and `mor.spark.merge`: at most one clause of each
        kind, the delete tried before the update. `when_matched_delete` is True, False or a
        condition; an update or insert is "*" or a dict of column -> value."""
        if when_matched_update_if is not None and not when_matched_update:
            raise InvalidArgumentError("a condition for WHEN MATCHED UPDATE needs the update clause")
        if when_not_matched_insert_if is not None and not when_not_matched_insert:
            raise InvalidArgumentError("a condition for WHEN NOT MATCHED INSERT needs the insert clause")
        clauses = cls()
        if when_matched_delete is not False and when_matched_delete is not None:
            clauses = clauses.when_matched_delete(None if when_matched_delete is True else when_matched_delete)
        for name, given in (("when_matched_update", when_matched_update), ("when_not_matched_insert", when_not_matched_insert)):
            if given and not (given == ALL or isinstance(given, Mapping)):
                raise InvalidArgumentError(f"{name} is '*' or a dict of column -> value or expression, got {given!r}")
        if when_matched_update:
            clauses = clauses._matched(Clause(UPDATE, when_matched_update_if, _values(when_matched_update)))
        if when_not_matched_insert:
            clauses = replace(clauses, not_matched=(Clause(INSERT, when_not_matched_insert_if, _values(when_not_matched_insert)),))
        return clauses

    @classmethod
    def of_call(cls, clauses: MergeClauses | None, *keywords: Any) -> MergeClauses:
        """The clauses of a `merge` call: `clauses=` or the keyword form (`of_keywords`'s
        arguments, in its order), not both."""
        if clauses is None:
            return cls.of_keywords(*keywords)
        if any(k is not None and k is not False for k in keywords):
            raise InvalidArgumentError("give the MERGE clauses either as keywords or as clauses=MergeClauses(...), not both")
        if not isinstance(clauses, MergeClauses):
            raise InvalidArgumentError(f"clauses is a MergeClauses, got {type(clauses).__name__}")
        return clauses

    # -- reading -------------------------------------------------------------------------------

    def check(self) -> None:
        """InvalidArgumentError unless there is a clause and every clause can apply to some row."""
        if not self.matched and not self.not_matched:
            raise InvalidArgumentError("MERGE needs at least one clause (when_matched_update/delete, when_not_matched_insert)")
        for clauses in (self.matched, self.not_matched):
            for clause in clauses[:-1]:
                if clause.condition is None:
                    later = clauses[clauses.index(clause) + 1]
                    raise InvalidArgumentError(
                        f"an unconditional {clause.describe()} leaves the {later.describe()} after it nothing to do; "
                        "give it a condition, or put it last"
                    )

    def __iter__(self) -> Iterator[Clause]:
        return iter((*self.matched, *self.not_matched))

    @property
    def has_update(self) -> bool:
        return any(c.writes for c in self.matched)

    @property
    def has_insert(self) -> bool:
        return bool(self.not_matched)

    @property
    def reads_target_columns(self) -> bool:
        """Do the clauses look at table columns other than the keys? Only conditions and
        partial updates (which keep the columns they do not set) do; `*` and deletes do not."""
        return any(c.condition is not None or (c.action == UPDATE and c.values is not None) for c in self)

    def expressions(self) -> Iterator[Any]:
        """Every condition and value the clauses hold (to tell which engine can evaluate them)."""
        for clause in self:
            if clause.condition is not None:
                yield clause.condition
            yield from (clause.values or {}).values()


def _values(given: Mapping[str, Any] | str) -> Mapping[str, Any] | None:
    """A keyword clause's values: None for "*" (every column from the source)."""
    return None if isinstance(given, str) else given
