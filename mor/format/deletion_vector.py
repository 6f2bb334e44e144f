"""Deletion vectors (v3): the deleted positions of one data file as a Puffin blob.

A `deletion-vector-v1` blob is: the length of magic + vector (4 bytes, big-endian), the magic
D1 D3 39 64, the vector in Roaring's portable 64-bit format (a little-endian count of 32-bit
bitmaps, then each with its 32-bit key), and a CRC-32 of magic + vector (4 bytes, big-endian).
pyroaring's BitMap64 reads and writes that portable format; this module adds the framing.
"""

from __future__ import annotations

import zlib

import numpy as np
from pyroaring import BitMap64

from mor.errors import CorruptMetadataError
from mor.format.puffin import Blob
from mor.format.spec import DELETION_VECTOR_BLOB, ROW_POSITION_FIELD_ID

MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
_MAX_POSITION = (1 << 63) - 1  # positions are positive 64-bit numbers


def serialize(positions: np.ndarray) -> bytes:
    """The framed blob for sorted, distinct, non-negative positions."""
    bitmap = BitMap64(np.asarray(positions, dtype=np.uint64))
    bitmap.run_optimize()  # runs of deleted rows (a deleted range) take a few bytes
    vector = MAGIC + bitmap.serialize()
    return len(vector).to_bytes(4, "big") + vector + zlib.crc32(vector).to_bytes(4, "big")


def deserialize(blob: bytes, where: str) -> np.ndarray:
    """Sorted int64 positions of a framed blob; CorruptMetadataError naming `where` when the
    framing, checksum or bitmap is wrong."""
    if len(blob) < 12:
        raise CorruptMetadataError(f"{where}: a deletion vector of {len(blob)} bytes is too short")
    length = int.from_bytes(blob[:4], "big")
    vector = blob[4 : 4 + length]
    if length != len(blob) - 8 or vector[:4] != MAGIC:
        raise CorruptMetadataError(f"{where}: not a deletion-vector-v1 blob (bad length or magic)")
    if zlib.crc32(vector) != int.from_bytes(blob[-4:], "big"):
        raise CorruptMetadataError(f"{where}: the deletion vector's checksum does not match")
    try:
        bitmap = BitMap64.deserialize(bytes(vector[4:]))
    except (ValueError, OverflowError, IndexError) as e:
        # IndexError: pyroaring's answer to an empty vector (a blob of magic and CRC only).
        raise CorruptMetadataError(f"{where}: the deletion vector's bitmap does not decode ({e})") from e
    positions = np.frombuffer(bitmap.to_array(), dtype=np.uint64)
    if positions.size and int(positions[-1]) > _MAX_POSITION:
        raise CorruptMetadataError(f"{where}: the deletion vector holds a position above 2^63")
    return positions.astype(np.int64)


def blob(positions: np.ndarray, referenced_data_file: str) -> Blob:
    """The Puffin blob of one data file's vector, with the properties the spec requires."""
    return Blob(
        type=DELETION_VECTOR_BLOB,
        fields=(ROW_POSITION_FIELD_ID,),
        payload=serialize(positions),
        properties={"referenced-data-file": referenced_data_file, "cardinality": str(len(positions))},
    )
