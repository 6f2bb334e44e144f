"""Adopting existing Parquet files into a table without rewriting them (Iceberg's `add_files`
procedure, Delta's CONVERT TO DELTA).

Only footers are read, plus the partition source columns of a file when the table is
partitioned. A file fits when the reader (mor/read/field_resolution.py) can read it as the
table's schema: columns matched by Parquet field id, or, for files written without ids, by name
through the table's name mapping (`schema.name-mapping.default`, written from the current schema
when the table has none). Every column of the file must map to a table column, every required
table column must be there without nulls, and timestamps and times must be in microseconds
(Iceberg Java 1.10 reads a millisecond column as if it held microseconds; v2 has no
nanoseconds; an INT96 timestamp is nanoseconds). Metrics come from the footer statistics, keyed
by field id. Partition values are computed from the rows (all rows of a file must give one
value), or with `check_partitions=False` from the footer bounds (order-preserving transforms
whose lower and upper bound give the same value).

Refused, with nothing committed: a file the table already references (a live data or delete
file), a path given twice, a missing or unreadable file, a file that does not fit, a file whose
rows span partitions, a file whose rows break a CHECK constraint (mor/dml/constraints.py's
`check_files`: settled by the footer statistics where they prove it, else by reading the
constraint's columns). The files are the user's: a failed commit never deletes them, and
maintenance deletes only files under the table's location (mor/maintenance/ownership.py), so
files adopted from elsewhere are never removed by expiry, orphan removal or purge.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.name_mapping import NameMapping, create_mapping_from_schema
from pyiceberg.types import ListType, MapType, NestedField, StructType

from mor.commit.table_commits import properties_commit
from mor.errors import CommitConflictError, InvalidArgumentError, MorError, SchemaMismatchError
from mor.format.arrow_types import FIELD_ID_KEY
from mor.format.content_file import DataFile, PartitionValues
from mor.format.metadata import TableMetadata
from mor.format.properties import NAME_MAPPING_PROPERTY
from mor.format.spec import FileContent, ManifestContent
from mor.format.updates import TableCommit
from mor.io.fileio import FileIO, is_object_store, to_uri, unreadable
from mor.planning.planner import live_entries
from mor.read.field_resolution import FileProjection, field_ids_by_place, parse_name_mapping
from mor.write.metrics import collect_metrics
from mor.write.partitioning import partition_key, split_by_partition

PathsArg = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


@dataclass(frozen=True)
class Footer:
    """What adoption reads of a Parquet file before deciding: its footer and Arrow schema."""

    location: str
    metadata: pq.FileMetaData
    arrow_schema: pa.Schema
    size: int

    @property
    def has_field_ids(self) -> bool:
        return any((f.metadata or {}).get(FIELD_ID_KEY) is not None for f in self.arrow_schema)


@dataclass(frozen=True)
class Adoption:
    """The data files to add, and the name mapping to write first (None: the table's serves,
    or every file carries field ids) in place of `replaces` (the table's when planned)."""

    files: list[DataFile]
    name_mapping: str | None
    replaces: str | None = None

    def mapping_commit(self, base: TableMetadata) -> TableCommit:
        """Sets the planned name mapping on `base` (nothing when it has it already); a base
        whose mapping another commit changed meanwhile is a conflict."""
        current = base.properties.get(NAME_MAPPING_PROPERTY)
        if self.name_mapping is None or current == self.name_mapping:
            return properties_commit(base, {})
        if current != self.replaces:
            raise CommitConflictError(f"the table's name mapping ({NAME_MAPPING_PROPERTY}) changed meanwhile; nothing was added")
        return properties_commit(base, {NAME_MAPPING_PROPERTY: self.name_mapping})

    def validate(self, io: FileIO) -> Callable[[TableMetadata, TableMetadata], None]:
        """Refuses a commit base that meanwhile references one of the files."""
        ours = {io.path(f.file_path) for f in self.files}

        def check(read_base: TableMetadata, current: TableMetadata) -> None:
            taken = sorted(ours & referenced_paths(io, current))
            if taken:
                raise CommitConflictError(f"{taken[0]} was added to the table by a concurrent commit; nothing was committed")

        return check


# -- finding and reading the files ----------------------------------------------------------


def adoption_paths(io: FileIO, paths: PathsArg) -> list[str]:
    """The files to adopt, as locations: a file path or URI or a folder (its `.parquet` files,
    recursively, in name order; on S3 a prefix ending in '/'), or a list of them. A local path
    becomes `file:///abs`."""
    if isinstance(paths, (str, os.PathLike)):
        given = [paths]
    elif isinstance(paths, Sequence) and paths:
        given = list(paths)
    else:
        raise InvalidArgumentError(f"paths is a Parquet file, a folder or a non-empty list of files, got {paths!r}")
    out: list[str] = []
    for p in given:
        if not isinstance(p, (str, os.PathLike)) or not str(p).strip():
            raise InvalidArgumentError(f"a file to add is a path or URI, got {p!r}")
        location = _location(str(p))
        if _is_folder(io, location):
            found = sorted(i.path for i in io.list_files(location) if i.path.endswith(".parquet"))
            if not found:
                raise InvalidArgumentError(f"no .parquet files under {location}")
            out += [found_location if is_object_store(found_location) else to_uri(found_location) for found_location in found]
        else:
            out.append(location)
    seen: dict[str, str] = {}
    for location in out:
        key = io.path(location)
        if key in seen:
            raise InvalidArgumentError(f"file {location} is given twice; nothing was added")
        seen[key] = location
    return out


def _location(text: str) -> str:
    if is_object_store(text) or "://" in text or text.startswith("file:"):
        return text
    return to_uri(text)


def _is_folder(io: FileIO, location: str) -> bool:
    if is_object_store(location):
        return location.endswith("/")
    return os.path.isdir(io.path(location))


def read_footer(io: FileIO, location: str) -> Footer:
    """CorruptMetadataError (missing, not Parquet) or StorageError (refused) naming the file."""
    try:
        with io.open_input(location, whole=False) as source:
            parquet = pq.ParquetFile(source)
            return Footer(location, parquet.metadata, parquet.schema_arrow, source.size())
    except (OSError, pa.ArrowException) as e:
        raise unreadable("Parquet file to add", location, e) from e


def referenced_paths(io: FileIO, metadata: TableMetadata) -> set[str]:
    """Every live data and delete file of the current snapshot, as `io.path` spells it."""
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return set()
    entries = live_entries(io, metadata, snapshot, ManifestContent.DATA) + live_entries(io, metadata, snapshot, ManifestContent.DELETES)
    return {io.path(e.file.file_path) for e in entries}


# -- the plan -------------------------------------------------------------------------------


def plan_adoption(io: FileIO, metadata: TableMetadata, footers: list[Footer], check_partitions: bool = True) -> Adoption:
    """Data files for `footers` in `metadata`'s current schema and default spec; raises before
    anything is written when one of them cannot be adopted."""
    taken = referenced_paths(io, metadata)
    for footer in footers:
        if io.path(footer.location) in taken:
            raise InvalidArgumentError(f"file {footer.location} is already in the table; nothing was added")
    schema, spec = metadata.schema(), metadata.spec()
    old_mapping = metadata.properties.get(NAME_MAPPING_PROPERTY)
    new_mapping = None
    if not all(f.has_field_ids for f in footers):
        new_mapping = name_mapping_json(schema) if old_mapping is None else extended_mapping(old_mapping, schema)
    mapping = parse_name_mapping(new_mapping or old_mapping)
    files = [_data_file(io, footer, schema, spec, mapping, check_partitions) for footer in footers]
    return Adoption(files, new_mapping, old_mapping)


def name_mapping_json(schema: Schema) -> str:
    """Iceberg's name mapping of `schema`: each field by its current name."""
    return create_mapping_from_schema(schema).model_dump_json()


def extended_mapping(text: str, schema: Schema) -> str | None:
    """The name mapping `text` with the schema's current names added (None: nothing to add),
    as Iceberg Java updates it on schema changes: a field the mapping lacks (added since) gets
    its name, a renamed field gets its new name next to the old ones (files written before the
    rename keep theirs). A name another field of the mapping holds stays that field's."""
    try:
        entries = json.loads(text)
    except ValueError:
        parse_name_mapping(text)  # raises CorruptMetadataError naming the property
        raise
    return json.dumps(entries, separators=(",", ":")) if _extend(entries, list(schema.fields)) else None


def _extend(entries: list[dict[str, Any]], fields: list[NestedField]) -> bool:
    changed = False
    by_id = {e.get("field-id"): e for e in entries}
    claimed = {n for e in entries for n in e.get("names", [])}
    for f in fields:
        entry = by_id.get(f.field_id)
        if entry is None:
            if f.name in claimed:
                continue
            entry = {"field-id": f.field_id, "names": [f.name]}
            entries.append(entry)
            changed = True
        elif f.name not in entry.setdefault("names", []):
            if f.name in claimed:
                continue
            entry["names"].append(f.name)
            changed = True
        claimed.add(f.name)
        children = _child_fields(f)
        if children:
            below = entry.get("fields") or []
            if _extend(below, children):
                entry["fields"] = below
                changed = True
    return changed


def _child_fields(f: NestedField) -> list[NestedField]:
    t = f.field_type
    if isinstance(t, StructType):
        return list(t.fields)
    if isinstance(t, ListType):
        return [t.element_field]
    if isinstance(t, MapType):
        return [t.key_field, t.value_field]
    return []


def _data_file(
    io: FileIO, footer: Footer, schema: Schema, spec: PartitionSpec, mapping: NameMapping | None, check_partitions: bool
) -> DataFile:
    where = footer.location
    file_schema = footer.arrow_schema
    ids_present = [(f.metadata or {}).get(FIELD_ID_KEY) is not None for f in file_schema]
    if any(ids_present) and not all(ids_present):
        missing = [f.name for f, has in zip(file_schema, ids_present) if not has]
        raise SchemaMismatchError(f"file {where}: columns {missing} have no Parquet field id while others have one")
    _check_types(footer)
    try:
        projection = FileProjection(file_schema, list(schema.fields), where, mapping)
        ids = field_ids_by_place(file_schema, where, mapping)
    except MorError as e:
        raise SchemaMismatchError(f"file {where} does not fit the table: {e}") from e
    extra = [n for n in file_schema.names if n not in projection.file_columns]
    if extra:
        how = "field ids" if any(ids_present) else "names (through the table's name mapping)"
        raise SchemaMismatchError(f"file {where} has columns {extra} that match no table column by {how}")
    missing = [c.field.name for c in projection.columns if c.column is None and c.field.required]
    if missing:
        raise SchemaMismatchError(f"file {where} lacks the required columns {missing}")
    named = Schema(*_named_as_in_file(list(schema.fields), list(file_schema), ids, ()), schema_id=schema.schema_id)
    metrics = collect_metrics(footer.metadata, named)
    for c in projection.columns:
        if c.field.required and c.column is not None and not isinstance(c.field.field_type, StructType):
            nulls = metrics.null_value_counts.get(c.field.field_id)
            if nulls is None or nulls > 0:
                found = "nulls" if nulls else "no null count in its statistics"
                raise SchemaMismatchError(f"file {where}: column {c.column!r} is required in the table, but the file has {found}")
    if not spec.fields or footer.metadata.num_rows == 0:
        partition: PartitionValues = tuple(None for _ in spec.fields)
    elif check_partitions:
        partition = _partition_from_rows(io, footer, schema, spec, mapping)
    else:
        partition = _partition_from_bounds(
            footer, schema, spec, metrics.lower_bounds, metrics.upper_bounds, metrics.null_value_counts, metrics.value_counts
        )
    return DataFile(
        content=FileContent.DATA,
        file_path=footer.location,
        file_format="PARQUET",
        spec_id=spec.spec_id,
        partition=partition,
        record_count=footer.metadata.num_rows,
        file_size_in_bytes=footer.size,
        **metrics.as_fields(),
    )


def _check_types(footer: Footer) -> None:
    """Refuse what Iceberg readers would read wrongly: unsigned 32/64-bit integers (read as
    signed), and timestamps or times in another unit than microseconds (Iceberg Java 1.10
    read a millisecond column as microseconds; v2 has no nanoseconds)."""
    meta_schema = footer.metadata.schema
    for i in range(len(meta_schema)):
        column = meta_schema.column(i)
        logical = json.loads(column.logical_type.to_json() or "{}") if column.logical_type is not None else {}
        kind = logical.get("Type")
        if column.physical_type == "INT96" or (kind in ("Timestamp", "Time") and logical.get("timeUnit") != "microseconds"):
            unit = "INT96" if column.physical_type == "INT96" else logical.get("timeUnit")
            raise SchemaMismatchError(
                f"file {footer.location}: column {column.path!r} holds timestamps or times in {unit}; Iceberg keeps "
                "microseconds (Iceberg Java reads other units wrongly): rewrite the file with "
                "pq.write_table(..., coerce_timestamps='us')"
            )
        if kind == "Int" and not logical.get("isSigned", True) and int(logical.get("bitWidth", 0)) >= 32:
            raise SchemaMismatchError(
                f"file {footer.location}: column {column.path!r} is an unsigned {logical.get('bitWidth')}-bit integer, which "
                "Iceberg has no type for (readers would take large values as negative)"
            )


def _named_as_in_file(
    fields: list[NestedField], file_fields: list[pa.Field], ids: dict[tuple[int, ...], int], place: tuple[int, ...]
) -> list[NestedField]:
    """The table's fields present in the file, under the file's names (the footer's column
    paths), with the table's ids and types: metrics are read by the file's names and kept by
    the table's ids and types."""
    by_id = {ids[(*place, i)]: i for i in range(len(file_fields)) if (*place, i) in ids}
    out = []
    for f in fields:
        index = by_id.get(f.field_id)
        if index is None:
            continue
        file_field = file_fields[index]
        field_type = f.field_type
        if isinstance(field_type, StructType) and pa.types.is_struct(file_field.type):
            field_type = StructType(*_named_as_in_file(list(field_type.fields), list(file_field.type), ids, (*place, index)))
        out.append(NestedField(f.field_id, file_field.name, field_type, required=f.required))
    return out


def _source_fields(schema: Schema, spec: PartitionSpec) -> list[NestedField]:
    """The top-level columns holding the spec's source fields."""
    wanted = {f.source_id for f in spec.fields}
    return [f for f in schema.fields if _holds(f, wanted)]


def _holds(f: NestedField, ids: set[int]) -> bool:
    if f.field_id in ids:
        return True
    return isinstance(f.field_type, StructType) and any(_holds(c, ids) for c in f.field_type.fields)


def _partition_from_rows(io: FileIO, footer: Footer, schema: Schema, spec: PartitionSpec, mapping: NameMapping | None) -> PartitionValues:
    """The one partition value of every row of the file, row group by row group, reading only
    the partition source columns."""
    sources = _source_fields(schema, spec)
    projection = FileProjection(footer.arrow_schema, sources, footer.location, mapping)
    found: dict[tuple[Any, ...], PartitionValues] = {}
    try:
        with io.open_input(footer.location, whole=False) as source:
            parquet = pq.ParquetFile(source)
            for rg in range(parquet.num_row_groups):
                rows = parquet.read_row_group(rg, columns=projection.file_columns) if projection.file_columns else None
                n = parquet.metadata.row_group(rg).num_rows
                arrays = projection.arrays(rows if rows is not None else pa.record_batch({"_": pa.nulls(n)}))
                table = pa.Table.from_arrays(arrays, names=[f.name for f in sources])
                for values, _ in split_by_partition(spec, schema, table):
                    found.setdefault(partition_key(values), values)
                if len(found) > 1:
                    break
    except (OSError, pa.ArrowException) as e:
        raise unreadable("Parquet file to add", footer.location, e) from e
    if len(found) > 1:
        a, b = list(found.values())[:2]
        raise InvalidArgumentError(
            f"file {footer.location} holds rows of more than one partition of the table's spec (e.g. {a} and {b}); "
            "nothing was added: split the file by partition, or add it to a table partitioned otherwise"
        )
    return next(iter(found.values()))


def _partition_from_bounds(
    footer: Footer,
    schema: Schema,
    spec: PartitionSpec,
    lowers: dict[int, bytes],
    uppers: dict[int, bytes],
    nulls: dict[int, int],
    values: dict[int, int],
) -> PartitionValues:
    """The partition value the footer's bounds prove (check_partitions=False): per field, an
    order-preserving transform of the lower and the upper bound agree, and the column has no
    nulls (or only nulls)."""
    out: list[Any] = []
    for field in spec.fields:
        source = schema.find_field(field.source_id)
        fid = source.field_id
        if fid in values and nulls.get(fid) == values[fid]:
            out.append(None)
            continue
        lower, upper = lowers.get(fid), uppers.get(fid)
        if lower is None or upper is None or nulls.get(fid) != 0:
            raise InvalidArgumentError(
                f"file {footer.location}: its statistics do not prove one value of partition field {field.name!r} "
                "(no bounds, or nulls next to values); add it with check_partitions=True"
            )
        transform = field.transform.transform(source.field_type)
        lo, hi = from_bytes(source.field_type, lower), from_bytes(source.field_type, upper)
        low_value, high_value = transform(lo), transform(hi)
        if low_value != high_value or (lo != hi and not field.transform.preserves_order):
            raise InvalidArgumentError(
                f"file {footer.location}: its bounds for partition field {field.name!r} give {low_value!r} and {high_value!r}, "
                "so its rows may span partitions; add it with check_partitions=True (reads the column) or split the file"
            )
        out.append(low_value)
    return tuple(out)


# -- a new table from files -------------------------------------------------------------------


def infer_schema(footers: list[Footer]) -> tuple[pa.Schema | Schema, bool]:
    """The table schema of files that share one: the Arrow schemas unified (pyarrow's
    `unify_schemas`), or, when the files carry field ids, the first file's schema with its ids.
    The flag: whether the files carry ids (then no name mapping is needed)."""
    with_ids = [f.has_field_ids for f in footers]
    if any(with_ids) and not all(with_ids):
        raise SchemaMismatchError(
            f"some files carry Parquet field ids ({footers[with_ids.index(True)].location}) and some do not "
            f"({footers[with_ids.index(False)].location}); add them in two steps"
        )
    if all(with_ids):
        from pyiceberg.io.pyarrow import pyarrow_to_schema  # only here

        try:
            return pyarrow_to_schema(_plain(footers[0].arrow_schema, keep_ids=True)), True
        except (ValueError, TypeError) as e:
            raise SchemaMismatchError(f"cannot make a table schema of file {footers[0].location}: {e}") from e
    try:
        return pa.unify_schemas([_plain(f.arrow_schema) for f in footers]), False
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SchemaMismatchError(f"the files do not share one schema: {e}") from e


def _plain(schema: pa.Schema, keep_ids: bool = False) -> pa.Schema:
    """The schema without pandas or Arrow metadata (field ids kept when asked) and with
    dictionary columns as their value type."""
    fields = []
    for f in schema:
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        meta = {FIELD_ID_KEY: f.metadata[FIELD_ID_KEY]} if keep_ids and f.metadata and FIELD_ID_KEY in f.metadata else None
        fields.append(pa.field(f.name, t, f.nullable, meta))
    return pa.schema(fields)
