"""Schema changes as pure edits of a schema, each checked before it is made.

`SchemaEditor` holds a schema being changed and applies one change at a time: a change that
breaks a rule raises SchemaEvolutionError and leaves the editor as it was. Paths are dotted
names ("info.c"; "points.element.x" and "attrs.value.x" reach into lists and maps); each change
sees the schema as the changes before it left it (rename "a" to "b", then widen "b").

The rules (Iceberg's schema evolution; ids, never names, tie data to columns):
- a new column is optional (format v2 has no default values to fill old rows with), gets the
  next ids after `last-column-id`, and its name is unique among its siblings (case-sensitive)
  and, at the top level, none of the metadata columns' (`_file`, `_pos`, `_row_id`,
  `_last_updated_sequence_number`; a rename to one is refused too);
- a type changes only by promotion: int -> long, float -> double, decimal(P, S) ->
  decimal(P2 >= P, S);
- a column that a partition spec or sort order of the table uses as a source, an identifier
  field, or an equality field of a live equality delete file cannot be dropped (nor can a
  struct holding one); renaming them is fine, since they are referenced by id;
- a struct keeps at least one field (Parquet cannot write an empty group);
- moves stay within one struct, relative to another column;
- a column dropped in an update takes no other change in it, before or after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import count

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)

from mor.dml.constraints import table_constraints
from mor.errors import SchemaEvolutionError, SchemaMismatchError
from mor.format.arrow_types import RESERVED_COLUMNS, from_arrow_schema, reserved_message
from mor.format.metadata import TableMetadata
from mor.format.spec import FileContent, ManifestContent
from mor.io.fileio import FileIO
from mor.planning.planner import live_entries

ROOT = -1  # the holder id of the top-level fields

StructEdit = Callable[[int, tuple[NestedField, ...]], tuple[NestedField, ...]]
FieldEdit = Callable[[NestedField], NestedField]


@dataclass(frozen=True)
class Located:
    """A field of the schema and where it sits: `holder` is the id of the field whose struct
    (or list or map) holds it, ROOT at top level; `role` is "struct" for a struct field, or
    "element", "key", "value" for the inner fields of lists and maps."""

    field: NestedField
    path: str
    holder: int
    role: str
    ancestors: tuple[int, ...]


def locate_fields(fields: tuple[NestedField, ...]) -> dict[str, Located]:
    """Every field by its full dotted path."""
    out: dict[str, Located] = {}

    def visit(f: NestedField, path: str, holder: int, role: str, ancestors: tuple[int, ...]) -> None:
        out[path] = Located(f, path, holder, role, ancestors)
        inner = ancestors + (f.field_id,)
        t = f.field_type
        if isinstance(t, StructType):
            for child in t.fields:
                visit(child, f"{path}.{child.name}", f.field_id, "struct", inner)
        elif isinstance(t, ListType):
            visit(t.element_field, f"{path}.element", f.field_id, "element", inner)
        elif isinstance(t, MapType):
            visit(t.key_field, f"{path}.key", f.field_id, "key", inner)
            visit(t.value_field, f"{path}.value", f.field_id, "value", inner)

    for f in fields:
        visit(f, f.name, ROOT, "struct", ())
    return out


def edit_fields(
    fields: tuple[NestedField, ...], on_struct: StructEdit | None = None, on_field: FieldEdit | None = None
) -> tuple[NestedField, ...]:
    """The fields rebuilt bottom-up: `on_struct(holder id, fields)` may change the fields of
    each struct, `on_field` each field (struct fields and the inner fields of lists and maps)."""

    def struct(holder: int, members: tuple[NestedField, ...]) -> tuple[NestedField, ...]:
        rebuilt = tuple(field(f) for f in members)
        return on_struct(holder, rebuilt) if on_struct is not None else rebuilt

    def field(f: NestedField) -> NestedField:
        t = f.field_type
        if isinstance(t, StructType):
            t = StructType(*struct(f.field_id, tuple(t.fields)))
        elif isinstance(t, ListType):
            e = field(t.element_field)
            t = ListType(e.field_id, e.field_type, element_required=e.required)
        elif isinstance(t, MapType):
            k, v = field(t.key_field), field(t.value_field)
            t = MapType(k.field_id, k.field_type, v.field_id, v.field_type, value_required=v.required)
        out = f if t == f.field_type else f.model_copy(update={"field_type": t})
        return on_field(out) if on_field is not None else out

    return struct(ROOT, fields)


def iceberg_type(t: object, what: str) -> IcebergType:
    """An Iceberg type from a pyarrow DataType or a pyiceberg type (its ids are replaced later)."""
    if isinstance(t, pa.DataType):
        try:
            return from_arrow_schema(pa.schema([pa.field("_", t)])).fields[0].field_type
        except SchemaMismatchError as e:
            raise SchemaEvolutionError(f"{what}: {e}") from None
    if isinstance(t, IcebergType) and not isinstance(t, NestedField):
        return t
    raise SchemaEvolutionError(f"{what}: the type is a pyarrow DataType or a pyiceberg type, got {type(t).__name__}")


def with_fresh_ids(t: IcebergType, ids: Iterator[int], path: str) -> IcebergType:
    """`t` with new ids for its nested fields (a struct's fields first, then their insides)."""
    if isinstance(t, StructType):
        if not t.fields:
            raise SchemaEvolutionError(f"column {path!r}: a struct needs at least one field (Parquet cannot write an empty group)")
        check_names([f.name for f in t.fields], path)
        new_ids = [next(ids) for _ in t.fields]
        return StructType(
            *[
                f.model_copy(update={"field_id": i, "field_type": with_fresh_ids(f.field_type, ids, f"{path}.{f.name}")})
                for f, i in zip(t.fields, new_ids)
            ]
        )
    if isinstance(t, ListType):
        element_id = next(ids)
        return ListType(element_id, with_fresh_ids(t.element_type, ids, f"{path}.element"), element_required=t.element_required)
    if isinstance(t, MapType):
        key_id, value_id = next(ids), next(ids)
        key = with_fresh_ids(t.key_type, ids, f"{path}.key")
        return MapType(key_id, key, value_id, with_fresh_ids(t.value_type, ids, f"{path}.value"), value_required=t.value_required)
    return t


def check_names(names: list[str], parent: str) -> None:
    seen: set[str] = set()
    for name in names:
        check_name(name)
        if name in seen:
            raise SchemaEvolutionError(f"column name {name!r} appears twice in {parent!r}")
        seen.add(name)


def check_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise SchemaEvolutionError(f"a column name is a non-blank string, got {name!r}")
    if "." in name:
        raise SchemaEvolutionError(f"column name {name!r} has a '.', which separates the parts of a path")


def is_promotion(old: IcebergType, new: IcebergType) -> bool:
    """Iceberg's allowed type promotions (and no change at all)."""
    if old == new:
        return True
    if isinstance(old, IntegerType) and isinstance(new, LongType):
        return True
    if isinstance(old, FloatType) and isinstance(new, DoubleType):
        return True
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale == old.scale and new.precision >= old.precision
    return False


def protected_fields(io: FileIO, metadata: TableMetadata) -> dict[int, str]:
    """Field ids the table itself needs, each with the reason: sources of partition specs and
    sort orders (every one in the metadata: engines bind them all to the current schema), the
    columns of CHECK constraints, and equality fields of the live equality delete files of the current snapshot."""
    out: dict[int, str] = {}
    for spec in metadata.partition_specs:
        for pf in spec.fields:
            out.setdefault(pf.source_id, f"the source of partition field {pf.name!r} (spec {spec.spec_id})")
    for order in metadata.sort_orders:
        for sf in order.fields:
            out.setdefault(sf.source_id, f"a sort key of sort order {order.order_id}")
    schema = metadata.schema()
    for constraint in table_constraints(metadata.properties):
        for field_id in constraint.field_ids(schema):
            out.setdefault(field_id, f"used by constraint {constraint.name!r} ({constraint.expression}); drop the constraint first")
    snapshot = metadata.current_snapshot()
    if snapshot is not None:
        for entry in live_entries(io, metadata, snapshot, ManifestContent.DELETES):
            if entry.file.content == FileContent.EQUALITY_DELETES:
                for field_id in entry.file.equality_ids or ():
                    out.setdefault(field_id, f"an equality field of the live delete file {entry.file.file_path}")
    return out


class SchemaEditor:
    """A schema under change; see the module docstring for the rules. `protected` gives the
    field ids the table needs (see protected_fields), asked for on the first drop."""

    def __init__(self, schema: Schema, last_column_id: int, protected: Callable[[], dict[int, str]] | None = None):
        self.fields: tuple[NestedField, ...] = tuple(schema.fields)
        self.identifier_field_ids = list(schema.identifier_field_ids)
        self.last_column_id = max(last_column_id, schema.highest_field_id)
        self._protected_source = protected
        self._protected: dict[int, str] | None = None
        self._located = locate_fields(self.fields)
        self._changed: dict[int, list[str]] = {}  # field id -> the changes made to it (or inside it)
        self._dropped: dict[str, str] = {}  # path -> what dropped it

    def schema(self) -> Schema:
        return Schema(*self.fields, schema_id=0, identifier_field_ids=self.identifier_field_ids)

    # -- the changes -----------------------------------------------------------------------
    def add_column(self, path: str, field_type: object, doc: str | None = None, required: bool = False, default: object = None) -> None:
        if not isinstance(path, str):
            raise SchemaEvolutionError(f"a column path is a string, got {type(path).__name__}")
        if required and default is None:
            raise SchemaEvolutionError(
                f"cannot add required column {path!r} without a default: rows written before have no value for it; add "
                "it as optional, or with default= (format v3)"
            )
        parent_path, _, name = path.rpartition(".")
        check_name(name)
        holder, siblings = ROOT, self.fields
        chain: tuple[int, ...] = ()
        if parent_path:
            parent = self._find(parent_path)
            if not isinstance(parent.field.field_type, StructType):
                raise SchemaEvolutionError(f"cannot add {path!r}: {parent_path!r} is a {parent.field.field_type}, not a struct")
            holder, siblings = parent.field.field_id, tuple(parent.field.field_type.fields)
            chain = parent.ancestors + (holder,)
        if name in {f.name for f in siblings}:
            raise SchemaEvolutionError(f"cannot add {path!r}: a column of that name already exists there")
        if holder == ROOT and name in RESERVED_COLUMNS:
            raise SchemaEvolutionError(f"cannot add {path!r}: {reserved_message(name)}")
        ids = count(self.last_column_id + 1)
        field_id = next(ids)
        new_type = with_fresh_ids(iceberg_type(field_type, f"column {path!r}"), ids, path)
        defaults = {} if default is None else {"initial_default": _checked_default(path, new_type, default)}
        defaults["write_default"] = defaults.get("initial_default")
        new = NestedField(field_id, name, new_type, required=required, doc=doc, **defaults)
        self._apply(edit_fields(self.fields, on_struct=lambda h, fs: fs + (new,) if h == holder else fs))
        self.last_column_id = next(ids) - 1
        self._note(field_id, "add")
        for ancestor in chain:
            self._note(ancestor, f"add {path!r}")

    def rename_column(self, path: str, new_name: str) -> None:
        located = self._find(path, struct_field_only="rename")
        check_name(new_name)
        if new_name == located.field.name:
            return
        if new_name in {f.name for f in self._siblings(located)}:
            raise SchemaEvolutionError(f"cannot rename {path!r} to {new_name!r}: a column of that name already exists there")
        if located.holder == ROOT and new_name in RESERVED_COLUMNS:
            raise SchemaEvolutionError(f"cannot rename {path!r} to {new_name!r}: {reserved_message(new_name)}")
        field_id = located.field.field_id
        self._apply(self._edit_field(field_id, lambda f: f.model_copy(update={"name": new_name})))
        self._note(field_id, "rename")

    def drop_column(self, path: str) -> None:
        located = self._find(path, struct_field_only="drop")
        inside = {located.field.field_id} | {
            other.field.field_id for other in self._located.values() if located.field.field_id in other.ancestors
        }
        changed = [(i, c) for i in sorted(inside) for c in self._changed.get(i, [])]
        if changed:
            raise SchemaEvolutionError(
                f"conflicting changes: cannot drop {path!r}, this update already changes it ({', '.join(c for _, c in changed)})"
            )
        identifiers = inside & set(self.identifier_field_ids)
        if identifiers:
            raise SchemaEvolutionError(f"cannot drop {path!r}: it is (or holds) an identifier field of the table")
        protected = self._protected_fields()
        for field_id in sorted(inside):
            if field_id in protected:
                raise SchemaEvolutionError(f"cannot drop {path!r}: field {field_id} is {protected[field_id]}")
        if len(self._siblings(located)) == 1:
            where = "the table" if located.holder == ROOT else "its struct"
            raise SchemaEvolutionError(f"cannot drop {path!r}: it is the only column of {where}")
        dropped = located.field.field_id
        gone = [p for p in self._located if p == path or p.startswith(f"{path}.")]
        self._apply(edit_fields(self.fields, on_struct=lambda h, fs: tuple(f for f in fs if f.field_id != dropped)))
        self._dropped.update((p, path) for p in gone)
        self._changed[dropped] = ["drop"]

    def make_optional(self, path: str) -> None:
        located = self._find(path)
        if located.role == "key":
            raise SchemaEvolutionError(f"cannot make {path!r} optional: map keys are always required")
        if not located.field.required:
            return
        if located.field.field_id in self.identifier_field_ids:
            raise SchemaEvolutionError(f"cannot make {path!r} optional: it is an identifier field, which must be required")
        field_id = located.field.field_id
        self._apply(self._edit_field(field_id, lambda f: f.model_copy(update={"required": False})))
        self._note(field_id, "make optional")

    def make_required(self, path: str) -> None:
        """Mark a column required; the caller has checked that no live row holds a null
        (Table.set_not_null), which Iceberg's schema rules alone cannot know."""
        located = self._find(path)
        if located.field.required:
            return
        field_id = located.field.field_id
        self._apply(self._edit_field(field_id, lambda f: f.model_copy(update={"required": True})))
        self._note(field_id, "make required")

    def widen(self, path: str, new_type: object) -> None:
        located = self._find(path)
        old = located.field.field_type
        new = iceberg_type(new_type, f"column {path!r}")
        if not isinstance(old, PrimitiveType) or not isinstance(new, PrimitiveType):
            raise SchemaEvolutionError(f"cannot change {path!r} from {old} to {new}: only primitive types are widened")
        if located.role == "key" and old != new:
            raise SchemaEvolutionError(f"cannot change the type of map key {path!r}")
        if not is_promotion(old, new):
            raise SchemaEvolutionError(
                f"cannot change {path!r} from {old} to {new}: not a widening (allowed: int -> long, float -> double, "
                "decimal(P, S) -> decimal(P2 >= P, S))"
            )
        if old == new:
            return
        field_id = located.field.field_id
        self._apply(self._edit_field(field_id, lambda f: f.model_copy(update={"field_type": new})))
        self._note(field_id, "widen")

    def set_default(self, path: str, value: object) -> None:
        located = self._find(path, struct_field_only="set the default of")
        field = located.field
        checked = None if value is None else _checked_default(path, field.field_type, value)
        self._apply(self._edit_field(field.field_id, lambda f: f.model_copy(update={"write_default": checked})))
        self._note(field.field_id, "set default")

    def set_doc(self, path: str, doc: str | None) -> None:
        located = self._find(path, struct_field_only="document")
        field_id = located.field.field_id
        self._apply(self._edit_field(field_id, lambda f: f.model_copy(update={"doc": doc})))
        self._note(field_id, "set doc")

    def move_first(self, path: str) -> None:
        located = self._find(path, struct_field_only="move")
        self._move(located, lambda others: 0)

    def move_before(self, path: str, other: str) -> None:
        located, anchor = self._find_pair(path, other)
        self._move(located, lambda others: next(i for i, f in enumerate(others) if f.field_id == anchor.field.field_id))

    def move_after(self, path: str, other: str) -> None:
        located, anchor = self._find_pair(path, other)
        self._move(located, lambda others: 1 + next(i for i, f in enumerate(others) if f.field_id == anchor.field.field_id))

    # -- helpers ---------------------------------------------------------------------------
    def _find(self, path: str, struct_field_only: str | None = None) -> Located:
        if not isinstance(path, str):
            raise SchemaEvolutionError(f"a column path is a string, got {type(path).__name__}")
        located = self._located.get(path)
        if located is None:
            if path in self._dropped:
                raise SchemaEvolutionError(f"conflicting changes: {path!r} is dropped in this update")
            top = [f.name for f in self.fields]
            raise SchemaEvolutionError(f"unknown column {path!r} (paths are dotted and case-sensitive; top-level columns: {top})")
        if struct_field_only and located.role != "struct":
            raise SchemaEvolutionError(f"cannot {struct_field_only} {path!r}: it is the {located.role} of a list or map")
        return located

    def _find_pair(self, path: str, other: str) -> tuple[Located, Located]:
        located = self._find(path, struct_field_only="move")
        anchor = self._find(other, struct_field_only="move relative to")
        if located.field.field_id == anchor.field.field_id:
            raise SchemaEvolutionError(f"cannot move {path!r} relative to itself")
        if located.holder != anchor.holder:
            raise SchemaEvolutionError(f"cannot move {path!r} next to {other!r}: they are not in the same struct")
        return located, anchor

    def _move(self, located: Located, position: Callable[[tuple[NestedField, ...]], int]) -> None:
        moved = located.field.field_id

        def reorder(holder: int, fields: tuple[NestedField, ...]) -> tuple[NestedField, ...]:
            if holder != located.holder:
                return fields
            field = next(f for f in fields if f.field_id == moved)
            others = tuple(f for f in fields if f.field_id != moved)
            at = position(others)
            return others[:at] + (field,) + others[at:]

        self._apply(edit_fields(self.fields, on_struct=reorder))
        self._note(moved, "move")

    def _siblings(self, located: Located) -> tuple[NestedField, ...]:
        if located.holder == ROOT:
            return self.fields
        holder = next(o for o in self._located.values() if o.field.field_id == located.holder)
        assert isinstance(holder.field.field_type, StructType)
        return tuple(holder.field.field_type.fields)

    def _edit_field(self, field_id: int, change: FieldEdit) -> tuple[NestedField, ...]:
        return edit_fields(self.fields, on_field=lambda f: change(f) if f.field_id == field_id else f)

    def _apply(self, fields: tuple[NestedField, ...]) -> None:
        self.fields = fields
        self._located = locate_fields(fields)

    def _note(self, field_id: int, change: str) -> None:
        self._changed.setdefault(field_id, []).append(change)

    def _protected_fields(self) -> dict[int, str]:
        if self._protected is None:
            self._protected = self._protected_source() if self._protected_source is not None else {}
        return self._protected


def _checked_default(path: str, field_type: IcebergType, value: object) -> object:
    """`value` as a default of a column of `field_type` (a primitive: Iceberg has no defaults of
    structs, lists or maps but null), or SchemaEvolutionError when it does not fit."""
    import pyarrow as pa

    from mor.format.arrow_types import to_arrow_type

    if not field_type.is_primitive:
        raise SchemaEvolutionError(f"a default of column {path!r} ({field_type}) can only be null")
    try:
        return pa.scalar(value, to_arrow_type(field_type)).as_py()
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise SchemaEvolutionError(f"default {value!r} does not fit column {path!r} of type {field_type}: {e}") from None
