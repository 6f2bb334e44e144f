"""What a commit that adds rows asserts about the rules its rows were checked against.

A writer checks its rows against the schema (required columns) and the CHECK constraints of the
table as its handle knows it. Another commit may change either before ours lands: a column made
NOT NULL, a constraint added. So the commit compares those rules with the base it is attempted
on; where they differ it has the writer check its rows again on that base (`recheck`, which
raises when a row breaks the new rules) before anything is swapped in. It also asserts the
current schema id it ended up checked against, so a REST catalog refuses the commit when the
schema changes between our check and its apply (mor serve checks the constraints of what it
applies itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mor.format.metadata import TableMetadata
from mor.format.properties import CONSTRAINT_COLUMNS_PREFIX, CONSTRAINT_PREFIX

# (current schema id, the properties that store CHECK constraints, sorted)
Rules = tuple[int, tuple[tuple[str, str], ...]]


def rules_of(schema_id: int, properties: Mapping[str, str]) -> Rules:
    constraints = sorted((k, v) for k, v in properties.items() if k.startswith((CONSTRAINT_PREFIX, CONSTRAINT_COLUMNS_PREFIX)))
    return schema_id, tuple(constraints)


def table_rules(metadata: TableMetadata) -> Rules:
    return rules_of(metadata.current_schema_id, metadata.properties)


@dataclass
class RowRules:
    """The rules the added rows were checked against, and how to check them on another base."""

    checked: Rules
    recheck: Callable[[TableMetadata], None]

    def hold_on(self, base: TableMetadata, checked_base: TableMetadata | None = None) -> None:
        """Check the rows again when `base`'s rules are not those checked (on `checked_base`,
        default `base`: the metadata the commit will write on top of)."""
        rules = table_rules(base)
        if rules != self.checked:
            self.recheck(checked_base if checked_base is not None else base)
            self.checked = rules
