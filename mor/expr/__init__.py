"""The one predicate model: filter text parsed into pyiceberg's expressions plus a residual leaf
for arithmetic and functions (`parse`, `parse_terms`, `literals`, `shape`, `residual`; SQL's
LIKE in `like`, casts in `casts`, the clock and intervals in `temporal`), bound to a schema and
evaluated against partitions and column metrics (`filters`), and on Arrow rows with SQL's
three-valued logic (`arrow_rows`, `residual_rows`, `cast_rows`); `isin` builds long `in` lists.
Below planning, reading and writing; above the format. No engine: Spark's translations are in
mor/spark (`filters.py`, `columns.py`)."""
