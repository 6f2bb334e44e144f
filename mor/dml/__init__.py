"""The row-level engine below the API and Spark: find the live rows a DELETE, UPDATE, MERGE or
UPSERT changes, write their removals (position deletes, deletion vectors, equality deletes or
copy-on-write rewrites) and new rows, and commit with the conflict rules of its isolation level.

The seam (mor/dml/runner.py): `run_dml(table, kind, plan)` plans and commits with re-planning
and idempotency, `commit(table, changes)` commits, `write_mode` and `committed_before` answer
what every verb asks first. A table is any `TableHandle` (mor/dml/handle.py).
"""
