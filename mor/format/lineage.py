"""Row lineage (v3) columns as schema fields: `_row_id` and `_last_updated_sequence_number`.

They are no table columns: a scan may select them, and a writer that moves existing rows to a
new data file stores them there (the spec: a moved row keeps its `_row_id`; its
`_last_updated_sequence_number` is kept when the row is unchanged, and null, to be inherited
from the new file, when it was changed).
"""

from __future__ import annotations

from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from mor.format.spec import LAST_UPDATED_SEQ_FIELD_ID, LAST_UPDATED_SEQ_NAME, ROW_ID_FIELD_ID, ROW_ID_NAME

ROW_ID_FIELD = NestedField(ROW_ID_FIELD_ID, ROW_ID_NAME, LongType(), required=False, doc="Row lineage: the row's id")
LAST_UPDATED_FIELD = NestedField(
    LAST_UPDATED_SEQ_FIELD_ID, LAST_UPDATED_SEQ_NAME, LongType(), required=False,
    doc="Row lineage: the sequence number of the commit that last changed the row",
)  # fmt: skip
LINEAGE_FIELDS = {ROW_ID_NAME: ROW_ID_FIELD, LAST_UPDATED_SEQ_NAME: LAST_UPDATED_FIELD}
LINEAGE_FIELD_IDS = frozenset({ROW_ID_FIELD_ID, LAST_UPDATED_SEQ_FIELD_ID})


def with_lineage(schema: Schema, *names: str) -> Schema:
    """`schema` followed by the lineage columns `names` (both when none are named)."""
    fields = [LINEAGE_FIELDS[n] for n in (names or LINEAGE_FIELDS)]
    return Schema(*schema.fields, *fields, schema_id=schema.schema_id, identifier_field_ids=list(schema.identifier_field_ids))
