"""Puffin files: blobs followed by a JSON footer that says where each blob is.

Layout (Iceberg's Puffin spec): `Magic Blob1 ... BlobN Magic FooterPayload PayloadSize Flags
Magic`, with `Magic` = b"PFA1", `PayloadSize` a 4-byte little-endian int and bit 0 of the first
flags byte saying the payload is LZ4-compressed (one LZ4 frame). mor writes footers uncompressed
and reads both. Deletion vectors are read by their offset and length from the manifest, so the
footer is only needed to write a file and to check one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from mor.errors import CorruptMetadataError

MAGIC = b"PFA1"
_FOOTER_TAIL = 12  # payload size, flags, magic
_COMPRESSED = 0x1


@dataclass(frozen=True)
class Blob:
    """A blob to write, or one a footer describes (then `offset`/`length` say where it is)."""

    type: str
    fields: tuple[int, ...]
    payload: bytes = b""
    properties: dict[str, str] = field(default_factory=dict)
    snapshot_id: int = -1  # unknown when the file is written (the spec's rule for deletion vectors)
    sequence_number: int = -1
    offset: int = 0
    length: int = 0

    def metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "fields": list(self.fields),
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "offset": self.offset,
            "length": self.length,
        }
        if self.properties:
            out["properties"] = self.properties
        return out


def puffin_bytes(blobs: Sequence[Blob], properties: dict[str, str] | None = None) -> tuple[bytes, list[Blob]]:
    """A whole Puffin file holding `blobs` (uncompressed), and the blobs with their offsets."""
    parts, placed, offset = [MAGIC], [], len(MAGIC)
    for blob in blobs:
        placed.append(Blob(blob.type, blob.fields, b"", blob.properties, blob.snapshot_id, blob.sequence_number, offset, len(blob.payload)))
        parts.append(blob.payload)
        offset += len(blob.payload)
    footer: dict[str, Any] = {"blobs": [b.metadata() for b in placed]}
    if properties:
        footer["properties"] = properties
    payload = json.dumps(footer, separators=(",", ":")).encode("utf-8")
    parts += [MAGIC, payload, len(payload).to_bytes(4, "little", signed=True), bytes(4), MAGIC]
    return b"".join(parts), placed


def read_footer(data: bytes, where: str) -> tuple[list[Blob], dict[str, str]]:
    """The blobs (without payloads) and file properties of a whole Puffin file."""
    if len(data) < len(MAGIC) * 2 + _FOOTER_TAIL or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise CorruptMetadataError(f"{where} is not a Puffin file (magic bytes missing)")
    size = int.from_bytes(data[-12:-8], "little", signed=True)
    flags = data[-8:-4]
    start = len(data) - _FOOTER_TAIL - size
    if size < 0 or start - len(MAGIC) < len(MAGIC) or data[start - 4 : start] != MAGIC:
        raise CorruptMetadataError(f"{where}: the Puffin footer size {size} does not fit the file")
    payload = data[start : start + size]
    if flags[0] & _COMPRESSED:
        payload = _lz4_frame_decompress(payload, where)
    try:
        footer = json.loads(payload)
        blobs = [
            Blob(
                type=b["type"],
                fields=tuple(b["fields"]),
                properties=dict(b.get("properties") or {}),
                snapshot_id=b["snapshot-id"],
                sequence_number=b["sequence-number"],
                offset=b["offset"],
                length=b["length"],
            )
            for b in footer["blobs"]
        ]
        # Inside the try: file properties that are no JSON object ("properties": 5) are a
        # damaged footer too, not a TypeError for the caller.
        properties = dict(footer.get("properties") or {})
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptMetadataError(f"{where}: the Puffin footer is not valid ({e!r})") from e
    return blobs, properties


def _lz4_frame_decompress(payload: bytes, where: str) -> bytes:
    try:
        # pyarrow's "lz4" codec is the LZ4 frame format; the frame carries its content size,
        # which decompress() needs up front: read it from the frame header.
        size = _lz4_frame_content_size(payload)
        return pa.decompress(payload, decompressed_size=size, codec="lz4", asbytes=True)
    # pyarrow reports a damaged frame as OSError ("LZ4 decompress failed: ..."), no ArrowException;
    # IndexError: a frame cut inside its header.
    except (pa.ArrowException, OSError, ValueError, IndexError) as e:
        raise CorruptMetadataError(f"{where}: the compressed Puffin footer does not decompress ({e})") from e


def _lz4_frame_content_size(frame: bytes) -> int:
    if frame[:4] != b"\x04\x22\x4d\x18":
        raise ValueError("not an LZ4 frame")
    flags = frame[4]
    if not flags & 0x08:
        raise ValueError("the LZ4 frame does not record its content size, which the Puffin spec requires")
    size = int.from_bytes(frame[6:14], "little")
    # A damaged size would make decompress() allocate it (MemoryError at 2^40, OverflowError
    # above 2^63): LZ4 expands at most 255-fold (a match byte of 255 more bytes), so a larger
    # size cannot be this frame's.
    if size > 255 * len(frame):
        raise ValueError(f"the LZ4 frame of {len(frame)} bytes cannot hold {size} bytes")
    return size
