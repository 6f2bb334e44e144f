"""Numbers too large for what they feed are refused when they are set, before anything commits:
integer table properties (Iceberg's Java types: int, or long for sizes and ages) and the
bucket count and truncate width of a partition transform (32-bit ints in the spec). Before,
they committed, and every later write failed with OverflowError."""

from __future__ import annotations

import pytest
from unit_helpers import SCHEMA, make_rows, scan_ids

import mor
from mor.format.properties import AGE_MAX_MS, CHECKS, INT32_MAX, INT64_MAX

WHOLE_NUMBER_PROPERTIES = sorted(
    name for name, check in CHECKS.items() if check("1") is None and check("0.5") is not None and check("true") is not None
)
INT64_PROPERTIES = {
    "commit.manifest.target-size-bytes",
    "write.target-file-size-bytes",
    "write.parquet.row-group-size-bytes",
    "history.expire.max-snapshot-age-ms",
    "history.expire.max-ref-age-ms",
}


def maximum(name: str) -> int:
    if name == "mor.maintain.remove-orphans.min-age-ms":
        return AGE_MAX_MS
    return INT64_MAX if name in INT64_PROPERTIES else INT32_MAX


def test_every_whole_number_property_has_a_bound() -> None:
    assert len(WHOLE_NUMBER_PROPERTIES) >= 17
    for name in WHOLE_NUMBER_PROPERTIES:
        assert CHECKS[name](str(maximum(name))) is None, name
        assert CHECKS[name](str(maximum(name) + 1)) is not None, name


@pytest.mark.parametrize("value", ["99999999999999999999", "1e23", "9223372036854775808", "2147483648", "1_000", "٣", " 5"])
def test_row_group_limit_out_of_range_is_refused_when_set(catalog: mor.Catalog, value: str) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(3)))
    before = table.metadata_location
    with pytest.raises(mor.InvalidArgumentError, match="write.parquet.row-group-limit must be a whole number"):
        table.set_properties(**{"write.parquet.row-group-limit": value})
    assert catalog.load_table("db.t").metadata_location == before
    table.append(make_rows([3]))  # the table still takes writes
    assert scan_ids(table) == [0, 1, 2, 3]


@pytest.mark.parametrize("name", WHOLE_NUMBER_PROPERTIES)
def test_a_value_past_the_bound_is_refused_at_create_table(catalog: mor.Catalog, name: str) -> None:
    with pytest.raises(mor.InvalidArgumentError, match=f"{name} must be a whole number"):
        catalog.create_table("db.t", schema=SCHEMA, properties={name: str(maximum(name) + 1)})
    assert not catalog.table_exists("db.t")


def test_every_property_at_its_bound_leaves_the_table_usable(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, properties={name: str(maximum(name)) for name in WHOLE_NUMBER_PROPERTIES})
    table.append(make_rows(range(5)))
    table.delete("id = 1")
    table.update({"name": "'x'"}, where="id = 2")
    table.compact(min_input_files=1)
    table.expire_snapshots()  # the table's retention: longer than time itself
    table.remove_orphan_files()
    table.maintain(dry_run=True)
    assert scan_ids(table) == [0, 2, 3, 4]


@pytest.mark.parametrize(
    "term", ["bucket(99999999999999999999, id)", "bucket(2147483648, id)", "truncate(99999999999999999999, name)", "truncate(², name)"]
)
def test_a_transform_argument_over_32_bits_is_refused_at_create_table(catalog: mor.Catalog, term: str) -> None:
    with pytest.raises(mor.InvalidArgumentError, match="at most 2147483647"):
        catalog.create_table("db.t", schema=SCHEMA, partition_by=[term])
    assert not catalog.table_exists("db.t")


@pytest.mark.parametrize(
    ("column", "transform"),
    [("id", "bucket[99999999999999999999]"), ("name", "truncate[2147483648]"), ("bucket(99999999999999999999, id)", "identity")],
)
def test_a_transform_argument_over_32_bits_is_refused_by_update_spec(catalog: mor.Catalog, column: str, transform: str) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(3)))
    before = table.metadata_location
    with pytest.raises(mor.PartitionEvolutionError, match="at most 2147483647"):
        table.update_spec().add_field(column, transform)
    assert catalog.load_table("db.t").metadata_location == before
    table.append(make_rows([3]))
    assert scan_ids(table) == [0, 1, 2, 3]


def test_the_largest_bucket_count_works(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["bucket(2147483647, id)", "truncate(2147483647, name)"])
    table.append(make_rows(range(5)))
    table.delete("id = 1")
    assert scan_ids(table) == [0, 2, 3, 4]
