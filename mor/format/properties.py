"""Table properties mor acts on, and the check a value must pass before it is committed.

A table property is a string to string map in the metadata; a value mor cannot act on
(`write.delete.mode=foo`, `commit.retry.num-retries=abc`) is refused when it is set, so it
never reaches the table and fails every later operation. Properties mor does not know are
kept as they are (other engines have their own); values are checked only when they change,
so a table another engine wrote stays readable and writable whatever it holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from mor.errors import InvalidArgumentError

MERGE_ON_READ = "merge-on-read"
COPY_ON_WRITE = "copy-on-write"
MODES = (MERGE_ON_READ, COPY_ON_WRITE)
# How DELETE, UPDATE and MERGE (UPSERT) remove rows: one of MODES each.
DELETE_MODE_PROPERTY = "write.delete.mode"
UPDATE_MODE_PROPERTY = "write.update.mode"
MERGE_MODE_PROPERTY = "write.merge.mode"
ISOLATION_LEVELS = ("serializable", "snapshot")
# Iceberg's codec names and pyarrow's; Iceberg's "uncompressed" is pyarrow's "none".
PARQUET_CODECS = ("uncompressed", "none", "snappy", "gzip", "brotli", "lz4", "lz4_raw", "zstd")
# "false": delete_rows and equality UPSERT write no equality delete file (they find the rows
# and write position deletes instead), for readers that cannot apply equality deletes
# (pyiceberg 0.12, and polars and daft, which plan through it).
EQUALITY_DELETES_ENABLED = "mor.write.equality-deletes.enabled"
# CHECK constraints (mor/dml/constraints.py): `mor.constraint.<name>` = the predicate's text,
# `mor.constraint-columns.<name>` = JSON {column path as the text names it: [field id of each
# part of the path]}, so a renamed column keeps its constraint.
CONSTRAINT_PREFIX = "mor.constraint."
CONSTRAINT_COLUMNS_PREFIX = "mor.constraint-columns."
# Exactly-once writes (mor/commit/idempotency.py): `mor.txn-version.<app id>` = the last version
# the app committed, set in the same commit as its snapshot so that no expiry forgets it.
TXN_VERSION_PREFIX = "mor.txn-version."
# `format-version` is accepted in table properties, as Iceberg does, and never stored.
FORMAT_VERSION_PROPERTY = "format-version"
# Field ids for files written without them (Iceberg's name mapping, JSON).
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
# Conflict checks of DML by isolation level (mor/dml/conflict_rules.py).
DELETE_ISOLATION_LEVEL = "write.delete.isolation-level"
UPDATE_ISOLATION_LEVEL = "write.update.isolation-level"
MERGE_ISOLATION_LEVEL = "write.merge.isolation-level"  # MERGE and UPSERT
# Commit retries (mor/commit/retry.py).
COMMIT_NUM_RETRIES = "commit.retry.num-retries"
COMMIT_MIN_WAIT_MS = "commit.retry.min-wait-ms"
COMMIT_MAX_WAIT_MS = "commit.retry.max-wait-ms"
COMMIT_TOTAL_TIMEOUT_MS = "commit.retry.total-timeout-ms"
DML_REPLAN_RETRIES = "mor.dml.replan.num-retries"
# Manifest merging on commit (mor/commit/manifest_merge.py).
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
MANIFEST_MIN_COUNT_TO_MERGE = "commit.manifest.min-count-to-merge"
MANIFEST_TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
# Metadata files kept in the metadata log (mor/format/metadata.py).
METADATA_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
# Parquet files mor writes (mor/write/options.py).
TARGET_FILE_SIZE_BYTES = "write.target-file-size-bytes"
PARQUET_COMPRESSION_CODEC = "write.parquet.compression-codec"
PARQUET_ROW_GROUP_LIMIT = "write.parquet.row-group-limit"
# What Iceberg Java's metadata builder writes into every new table's properties, under the ones
# given: a default that differs from the spec's (gzip), pinned so every engine writes zstd.
NEW_TABLE_PROPERTIES = {PARQUET_COMPRESSION_CODEC: "zstd"}
PARQUET_ROW_GROUP_SIZE_BYTES = "write.parquet.row-group-size-bytes"
# Snapshot expiry (mor/maintenance/expire.py).
MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
# Write-audit-publish: writes with a wap.id are staged, not published (mor/commit/branch_ops.py).
WAP_ENABLED = "write.wap.enabled"
# table.maintain()'s policy (mor/maintenance/policy.py): `mor.maintain.<name>`.
MAINTAIN_PREFIX = "mor.maintain."


def _one_of(choices: tuple[str, ...], case_sensitive: bool = True) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        v = value if case_sensitive else value.lower()
        return None if v in choices else f"one of {', '.join(choices)}"

    return check


# Upper bounds: the Java type Iceberg reads the property as (a larger value breaks Java writers
# of the same table, and overflows pyarrow and the clock arithmetic here on the next write).
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# An age subtracted from now as a datetime must stay after year 1.
AGE_MAX_MS = 1000 * 365 * 24 * 3600 * 1000
_DIGITS = re.compile(r"[+-]?[0-9]+")


def _whole_number(minimum: int, maximum: int = INT32_MAX) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        # Plain ASCII digits: Python's int() also takes "1_000" and other scripts' digits, Java does not.
        ok = _DIGITS.fullmatch(value) is not None and minimum <= int(value) <= maximum
        return None if ok else f"a whole number >= {minimum} and <= {maximum}"

    return check


def _fraction(value: str) -> str | None:
    try:
        ok = 0.0 <= float(value) <= 1.0
    except ValueError:
        ok = False
    return None if ok else "a number between 0 and 1"


# name -> check(value): None when the value is usable, else what the value must be.
CHECKS: dict[str, Callable[[str], str | None]] = {
    DELETE_MODE_PROPERTY: _one_of(MODES),
    UPDATE_MODE_PROPERTY: _one_of(MODES),
    MERGE_MODE_PROPERTY: _one_of(MODES),
    DELETE_ISOLATION_LEVEL: _one_of(ISOLATION_LEVELS, case_sensitive=False),
    UPDATE_ISOLATION_LEVEL: _one_of(ISOLATION_LEVELS, case_sensitive=False),
    MERGE_ISOLATION_LEVEL: _one_of(ISOLATION_LEVELS, case_sensitive=False),
    COMMIT_NUM_RETRIES: _whole_number(0),
    COMMIT_MIN_WAIT_MS: _whole_number(0),
    COMMIT_MAX_WAIT_MS: _whole_number(0),
    COMMIT_TOTAL_TIMEOUT_MS: _whole_number(0),
    DML_REPLAN_RETRIES: _whole_number(0),
    EQUALITY_DELETES_ENABLED: _one_of(("true", "false"), case_sensitive=False),
    METADATA_PREVIOUS_VERSIONS_MAX: _whole_number(0),
    MANIFEST_MERGE_ENABLED: _one_of(("true", "false"), case_sensitive=False),
    MANIFEST_MIN_COUNT_TO_MERGE: _whole_number(0),
    MANIFEST_TARGET_SIZE_BYTES: _whole_number(1, INT64_MAX),
    PARQUET_ROW_GROUP_LIMIT: _whole_number(1),
    TARGET_FILE_SIZE_BYTES: _whole_number(1, INT64_MAX),
    PARQUET_ROW_GROUP_SIZE_BYTES: _whole_number(1, INT64_MAX),
    PARQUET_COMPRESSION_CODEC: _one_of(PARQUET_CODECS, case_sensitive=False),
    MAX_SNAPSHOT_AGE_MS: _whole_number(0, INT64_MAX),
    MIN_SNAPSHOTS_TO_KEEP: _whole_number(1),
    MAX_REF_AGE_MS: _whole_number(0, INT64_MAX),
    WAP_ENABLED: _one_of(("true", "false"), case_sensitive=False),
    # table.maintain() policy (mor/maintenance/policy.py)
    MAINTAIN_PREFIX + "compact.enabled": _one_of(("true", "false"), case_sensitive=False),
    MAINTAIN_PREFIX + "compact.min-delete-ratio": _fraction,
    MAINTAIN_PREFIX + "compact.min-delete-files": _whole_number(1),
    MAINTAIN_PREFIX + "compact.min-input-files": _whole_number(1),
    MAINTAIN_PREFIX + "expire.enabled": _one_of(("true", "false"), case_sensitive=False),
    MAINTAIN_PREFIX + "remove-orphans.enabled": _one_of(("true", "false"), case_sensitive=False),
    MAINTAIN_PREFIX + "remove-orphans.min-age-ms": _whole_number(0, AGE_MAX_MS),
}


def equality_deletes_enabled(properties: Mapping[str, str]) -> bool:
    """May blind deletes by key write equality delete files? (`EQUALITY_DELETES_ENABLED`,
    default true.) A value another engine set that is neither true nor false is an error here,
    not a guess."""
    value = properties.get(EQUALITY_DELETES_ENABLED, "true")
    expected = CHECKS[EQUALITY_DELETES_ENABLED](value)
    if expected is not None:
        raise InvalidArgumentError(f"table property {EQUALITY_DELETES_ENABLED} must be {expected}, got {value!r}")
    return value.lower() == "true"


def check_properties(properties: Mapping[Any, Any]) -> None:
    """InvalidArgumentError naming the first property that is not a string or whose value
    mor could not act on."""
    if not isinstance(properties, Mapping):
        raise InvalidArgumentError(f"table properties are a dict of strings, got {type(properties).__name__}")
    for name, value in properties.items():
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"table property names are non-empty strings, got {name!r}")
        if not isinstance(value, str):
            raise InvalidArgumentError(f"table property {name} must be a string, got {type(value).__name__} {value!r}")
        check = CHECKS.get(name)
        expected = check(value) if check is not None else None
        if expected is not None:
            raise InvalidArgumentError(f"table property {name} must be {expected}, got {value!r}")
