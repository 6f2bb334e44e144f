"""The DML benchmark's title and engine names, shared by its run (dml.py) and its report
(dml_report.py)."""

TITLE = "DELETE, UPDATE and UPSERT: merge-on-read vs copy-on-write"
MOR_MOR, MOR_COW, MOR_EQ = "mor merge-on-read", "mor copy-on-write", "mor merge-on-read, equality deletes"
PYICEBERG = "pyiceberg (copy-on-write)"
