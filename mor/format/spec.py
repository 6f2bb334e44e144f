"""Constants and enums of the Iceberg table spec, with the spec's names."""

from enum import IntEnum

FORMAT_VERSION = 2  # what create_table writes unless asked for another
SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
INITIAL_SEQUENCE_NUMBER = 0
UNPARTITIONED_LAST_PARTITION_ID = 999
PARTITION_FIELD_ID_START = 1000

# Reserved field ids of the position delete schema.
DELETE_FILE_PATH_ID = 2147483546
DELETE_POS_ID = 2147483545
DELETE_FILE_PATH_NAME = "file_path"
DELETE_POS_NAME = "pos"
ROW_POSITION_FIELD_ID = 2147483645  # the `_pos` metadata column: what a deletion vector indexes

# Row lineage (v3): reserved metadata columns, stored in data files only for rows moved from
# another file; otherwise inherited from the file's first_row_id and data sequence number.
ROW_ID_FIELD_ID = 2147483540
ROW_ID_NAME = "_row_id"
LAST_UPDATED_SEQ_FIELD_ID = 2147483539
LAST_UPDATED_SEQ_NAME = "_last_updated_sequence_number"

# File format of deletion vectors (v3): blobs in Puffin files.
PUFFIN = "PUFFIN"
DELETION_VECTOR_BLOB = "deletion-vector-v1"

MAIN_BRANCH = "main"

# Top-level metadata keys listing statistics files, each entry naming its snapshot.
STATISTICS_KEYS = ("statistics", "partition-statistics")


class FileContent(IntEnum):
    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class ManifestContent(IntEnum):
    DATA = 0
    DELETES = 1


class ManifestEntryStatus(IntEnum):
    EXISTING = 0
    ADDED = 1
    DELETED = 2


class Operation:
    """Snapshot summary `operation` values."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"
