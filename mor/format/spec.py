"""Constants and enums of the Iceberg table spec, with the spec's names."""

from enum import IntEnum

FORMAT_VERSION = 2
INITIAL_SEQUENCE_NUMBER = 0
UNPARTITIONED_LAST_PARTITION_ID = 999
PARTITION_FIELD_ID_START = 1000

# Reserved field ids of the position delete schema.
DELETE_FILE_PATH_ID = 2147483546
DELETE_POS_ID = 2147483545
DELETE_FILE_PATH_NAME = "file_path"
DELETE_POS_NAME = "pos"

MAIN_BRANCH = "main"


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
