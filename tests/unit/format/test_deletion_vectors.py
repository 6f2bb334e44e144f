"""Deletion vectors (v3) and the Puffin files that hold them, byte for byte.

The blob framing (length, magic, CRC) and the Puffin layout are checked here with independent
byte code (struct, zlib), the Roaring part against the blobs Iceberg Java wrote into the v3
fixtures: mor must read every one of them and write the very same bytes for the same positions.
Every kind of damage is a CorruptMetadataError that names the file.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap64
from unit_helpers import (
    JAVA_FIXTURES,
    SCHEMA,
    live_delete_entries,
    local,
    make_rows,
    scan_ids,
)

import mor
import mor.read.decoded_cache
from mor.errors import CorruptMetadataError
from mor.format import deletion_vector
from mor.format.content_file import DataFile, DeleteFile
from mor.format.puffin import MAGIC, Blob, puffin_bytes, read_footer
from mor.format.spec import PUFFIN, FileContent
from mor.io.fileio import FileIO, to_uri
from mor.read.position_deletes import (
    DeleteFileCache,
    read_deletion_vector,
    read_position_delete_file,
)
from mor.write.deletion_vectors import write_deletion_vectors

DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
ROW_POSITION_ID = 2147483645  # `_pos`, spelled out
HERE = Path(__file__).resolve().parents[2]  # tests/
JAVA_PUFFINS = sorted(
    glob.glob(str(JAVA_FIXTURES / "db" / "v3_dv" / "data" / "*.puffin"))
    + glob.glob(str(HERE / "fixtures" / "iceberg-java" / "db" / "v3_*" / "data" / "**" / "*.puffin"), recursive=True)
)


def frame(vector: bytes, *, length: int | None = None, magic: bytes = DV_MAGIC, crc: int | None = None) -> bytes:
    """A deletion-vector-v1 blob around `vector` (Roaring bytes), built here, not by mor."""
    body = magic + vector
    length = len(body) if length is None else length
    crc = zlib.crc32(body) if crc is None else crc
    return struct.pack(">I", length) + body + struct.pack(">I", crc)


def positions(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# -- blob round trips ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "values",
    [
        [0],
        [0, 1, 2, 7, 1000],
        [5, (1 << 32) - 1, 1 << 32, (1 << 32) + 3, (1 << 33) + 5, 1 << 40],  # keys 0, 1, 2 and 256
        [(1 << 63) - 1],  # the largest position the spec allows
        list(range(0, 200_000, 3)),  # array and bitmap containers
    ],
    ids=["one", "small", "above-2^32", "max", "many"],
)
def test_blob_round_trip(values: list[int]) -> None:
    blob = deletion_vector.serialize(positions(*values))
    got = deletion_vector.deserialize(blob, "w")
    assert got.dtype == np.int64
    assert got.tolist() == values
    # The framing, read here: big-endian length of magic + vector, the magic, a big-endian CRC-32.
    (length,) = struct.unpack(">I", blob[:4])
    assert length == len(blob) - 8
    assert blob[4:8] == DV_MAGIC
    assert struct.unpack(">I", blob[-4:])[0] == zlib.crc32(blob[4:-4])
    # Roaring's portable 64-bit format: a little-endian count of 32-bit bitmaps first, one per key.
    (count,) = struct.unpack("<Q", blob[8:16])
    assert count == len({v >> 32 for v in values})


def test_an_empty_vector_round_trips_as_zero_bitmaps() -> None:
    """mor never writes one (a removal always deletes a row), but the format allows it: a count
    of 0 bitmaps and nothing after it."""
    blob = deletion_vector.serialize(positions())
    assert blob == frame(bytes(8))
    assert deletion_vector.deserialize(blob, "w").tolist() == []


def test_a_run_of_positions_is_stored_as_a_run() -> None:
    """A deleted range (DELETE WHERE id < n) takes a few bytes per 2^16 rows (one run container
    each), not a bit (125 kB) or two bytes a row."""
    run = np.arange(1_000_000, dtype=np.int64)
    blob = deletion_vector.serialize(run)
    assert len(blob) < 300
    assert np.array_equal(deletion_vector.deserialize(blob, "w"), run)
    # Two runs, one each side of 2^32.
    two = np.concatenate([np.arange(10, 70_000), np.arange((1 << 32) - 5, (1 << 32) + 70_000)]).astype(np.int64)
    assert np.array_equal(deletion_vector.deserialize(deletion_vector.serialize(two), "w"), two)


def test_the_puffin_blob_carries_the_properties_the_spec_requires() -> None:
    b = deletion_vector.blob(positions(1, 4, 9), "s3://b/data/f.parquet")
    assert (b.type, b.fields) == ("deletion-vector-v1", (ROW_POSITION_ID,))
    assert b.properties == {"referenced-data-file": "s3://b/data/f.parquet", "cardinality": "3"}
    assert (b.snapshot_id, b.sequence_number) == (-1, -1)
    assert "compression-codec" not in b.metadata()


# -- damaged blobs ------------------------------------------------------------------------------
GOOD_VECTOR = BitMap64([1, 2, 3, (1 << 32) + 5]).serialize()


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


@pytest.mark.parametrize(
    "blob, message",
    [
        (b"", "too short"),
        (frame(b"")[:11], "too short"),
        (frame(GOOD_VECTOR, length=len(GOOD_VECTOR) + 5), "bad length or magic"),
        (frame(GOOD_VECTOR, length=len(GOOD_VECTOR) + 3), "bad length or magic"),
        (frame(GOOD_VECTOR, length=0), "bad length or magic"),
        (frame(GOOD_VECTOR, magic=b"\xd1\xd3\x39\x65"), "bad length or magic"),
        (frame(GOOD_VECTOR, magic=b"PFA1"), "bad length or magic"),
        (frame(GOOD_VECTOR)[:-1], "bad length or magic"),  # truncated: the length no longer fits
        (frame(GOOD_VECTOR)[:-9], "bad length or magic"),
        (frame(GOOD_VECTOR) + b"\x00", "bad length or magic"),
        (frame(GOOD_VECTOR, crc=0), "checksum"),
        (_flip(frame(GOOD_VECTOR), 20), "checksum"),  # a bit flipped in the bitmap
        (frame(b""), "does not decode"),  # magic and checksum only
        (frame(b"\xff" * 8), "does not decode"),  # 2^64 - 1 bitmaps
        (frame(GOOD_VECTOR[:-3]), "does not decode"),  # a bitmap cut short, with a valid checksum
        (frame(b"not a roaring bitmap at all"), "does not decode"),
        (frame(BitMap64([1 << 63]).serialize()), r"above 2\^63"),  # the sign bit must be 0
    ],
    ids=[
        "empty", "11-bytes", "length-too-long", "length-short", "length-zero", "magic-off-by-one", "puffin-magic",
        "truncated-1", "truncated-9", "trailing-byte", "crc-zero", "bit-flip", "no-vector", "huge-count", "cut-bitmap",
        "garbage", "sign-bit",
    ],
)  # fmt: skip
def test_a_damaged_blob_is_corrupt_metadata_naming_the_file(blob: bytes, message: str) -> None:
    with pytest.raises(CorruptMetadataError, match=message) as e:
        deletion_vector.deserialize(blob, "deletion vector s3://b/x.puffin at offset 4")
    assert "s3://b/x.puffin" in str(e.value)


# -- Iceberg Java's vectors ---------------------------------------------------------------------
def test_the_java_fixtures_have_puffin_files() -> None:
    assert len(JAVA_PUFFINS) >= 20, JAVA_PUFFINS


@pytest.mark.parametrize("path", JAVA_PUFFINS, ids=lambda p: "/".join(Path(p).parts[-3:]))
def test_every_java_vector_decodes_to_its_cardinality_and_mor_writes_the_same_bytes(path: str) -> None:
    data = Path(path).read_bytes()
    blobs, properties = read_footer(data, path)
    assert blobs and properties["created-by"].startswith("Apache Iceberg")
    assert data[-8:-4] == bytes(4)  # Java writes the footer uncompressed
    end = len(MAGIC)
    for b in blobs:
        assert (b.type, b.fields, b.snapshot_id, b.sequence_number) == ("deletion-vector-v1", (ROW_POSITION_ID,), -1, -1)
        assert b.offset == end  # blobs follow each other, right after the leading magic
        end = b.offset + b.length
        raw = data[b.offset : b.offset + b.length]
        found = deletion_vector.deserialize(raw, path)
        assert len(found) == int(b.properties["cardinality"]) > 0
        assert np.all(found[1:] > found[:-1])
        assert b.properties["referenced-data-file"].endswith(".parquet")
        # Both sides run-optimize the same way: the bytes are Java's own.
        assert deletion_vector.serialize(found) == raw


# -- Puffin footers -----------------------------------------------------------------------------
def _footer_json(data: bytes) -> dict:
    """The footer of an uncompressed Puffin file, read here with struct and json."""
    (size,) = struct.unpack("<i", data[-12:-8])
    return json.loads(data[-12 - size : -12])


def test_puffin_round_trip() -> None:
    blobs = [
        Blob("deletion-vector-v1", (ROW_POSITION_ID,), b"first", {"cardinality": "1"}),
        Blob("apache-datasketches-theta-v1", (1, 2), b"", {}),  # an empty payload is a blob too
        Blob("other", (3,), b"x" * 1000, {"k": "v"}, snapshot_id=7, sequence_number=3),
    ]
    data, placed = puffin_bytes(blobs, {"created-by": "mor test"})
    assert data[:4] == MAGIC and data[-4:] == MAGIC
    assert data[-8:-4] == bytes(4)  # flags: not compressed
    assert [(p.offset, p.length) for p in placed] == [(4, 5), (9, 0), (9, 1000)]
    for p, b in zip(placed, blobs):
        assert data[p.offset : p.offset + p.length] == b.payload
    (size,) = struct.unpack("<i", data[-12:-8])
    assert data[-16 - size : -12 - size] == MAGIC  # the footer starts with the magic
    raw = _footer_json(data)
    assert raw["properties"] == {"created-by": "mor test"}
    assert raw["blobs"][0] == {
        "type": "deletion-vector-v1", "fields": [ROW_POSITION_ID], "snapshot-id": -1, "sequence-number": -1,
        "offset": 4, "length": 5, "properties": {"cardinality": "1"},
    }  # fmt: skip
    assert "properties" not in raw["blobs"][1]  # optional, left out when empty
    read, properties = read_footer(data, "w")
    assert read == placed
    assert properties == {"created-by": "mor test"}


def test_a_puffin_file_without_blobs_or_properties() -> None:
    data, placed = puffin_bytes([])
    assert placed == []
    assert read_footer(data, "w") == ([], {})
    assert _footer_json(data) == {"blobs": []}


# LZ4 frames (https://github.com/lz4/lz4/blob/dev/doc/lz4_Frame_format.md). The Puffin spec wants
# the footer as one frame "with content size present"; pyarrow's compress() leaves the size out,
# so the tests put it in: set the FLG bit, add the 8 bytes, recompute the header checksum.
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, which LZ4 frames use for their header checksum."""
    i, n = 0, len(data)
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i + 16 <= n:
            for j in range(4):
                (lane,) = struct.unpack_from("<I", data, i + 4 * j)
                v[j] = (_rotl((v[j] + lane * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (word,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


LZ4_MAGIC = b"\x04\x22\x4d\x18"


def lz4_frame_with_content_size(payload: bytes) -> bytes:
    plain = pa.compress(payload, codec="lz4", asbytes=True)
    assert plain[:4] == LZ4_MAGIC
    flg, bd, hc = plain[4], plain[5], plain[6]
    assert not flg & 0x08 and not flg & 0x01  # no content size, no dictionary id: header is 3 bytes
    assert hc == (xxh32(bytes([flg, bd])) >> 8) & 0xFF  # the checksum as this test computes it
    descriptor = bytes([flg | 0x08, bd]) + struct.pack("<Q", len(payload))
    return LZ4_MAGIC + descriptor + bytes([(xxh32(descriptor) >> 8) & 0xFF]) + plain[7:]


def test_xxh32_known_values() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def compressed_puffin(footer_frame: bytes, blob: bytes = b"") -> bytes:
    return MAGIC + blob + MAGIC + footer_frame + struct.pack("<i", len(footer_frame)) + bytes([1, 0, 0, 0]) + MAGIC


def test_an_lz4_compressed_footer_with_content_size_is_read() -> None:
    payload = b"0123456789" * 7
    footer = {
        "blobs": [{"type": "deletion-vector-v1", "fields": [ROW_POSITION_ID], "snapshot-id": -1, "sequence-number": -1,
                   "offset": 4, "length": len(payload), "properties": {"cardinality": "2", "referenced-data-file": "f"}}],
        "properties": {"created-by": "test " * 40},  # repetitive: LZ4 has something to compress
    }  # fmt: skip
    framed = lz4_frame_with_content_size(json.dumps(footer).encode())
    assert len(framed) < len(json.dumps(footer))
    data = compressed_puffin(framed, payload)
    blobs, properties = read_footer(data, "w")
    assert properties == footer["properties"]
    assert [(b.type, b.offset, b.length, b.properties) for b in blobs] == [
        ("deletion-vector-v1", 4, len(payload), {"cardinality": "2", "referenced-data-file": "f"})
    ]


def test_an_lz4_footer_without_content_size_is_refused() -> None:
    """The spec requires the content size in the frame; pyarrow's own frames lack it."""
    framed = pa.compress(json.dumps({"blobs": []}).encode(), codec="lz4", asbytes=True)
    with pytest.raises(CorruptMetadataError, match="content size") as e:
        read_footer(compressed_puffin(framed), "puffin file s3://b/p.puffin")
    assert "s3://b/p.puffin" in str(e.value)


@pytest.mark.parametrize(
    "footer_frame",
    [
        b'{"blobs": []}',  # flagged compressed, but plain JSON
        LZ4_MAGIC,  # a frame cut inside its header
        LZ4_MAGIC + b"\x68",
        lz4_frame_with_content_size(b'{"blobs": []}')[:-6],  # cut inside its blocks
        _flip(lz4_frame_with_content_size(b'{"blobs": []}'), 6),  # content size changed: header checksum
        lz4_frame_with_content_size(b"not json at all"),
    ],
    ids=["plain-json", "magic-only", "header-cut", "blocks-cut", "bad-header-checksum", "not-json"],
)
def test_a_damaged_compressed_footer_is_corrupt_metadata(footer_frame: bytes) -> None:
    with pytest.raises(CorruptMetadataError, match="s3://b/p.puffin"):
        read_footer(compressed_puffin(footer_frame), "puffin file s3://b/p.puffin")


def _with_content_size(framed: bytes, size: int) -> bytes:
    descriptor = framed[4:6] + struct.pack("<Q", size)
    return LZ4_MAGIC + descriptor + bytes([(xxh32(descriptor) >> 8) & 0xFF]) + framed[15:]


@pytest.mark.parametrize("size", [3, 1000, 1 << 33, 1 << 40, (1 << 63) - 1, (1 << 64) - 1])
def test_a_wrong_content_size_is_corrupt_metadata_not_an_allocation(size: int) -> None:
    """A damaged size (with a matching header checksum) must not make the reader allocate it."""
    framed = _with_content_size(lz4_frame_with_content_size(b'{"blobs": []}'), size)
    with pytest.raises(CorruptMetadataError, match="does not decompress"):
        read_footer(compressed_puffin(framed), "w")


def test_a_footer_that_compresses_very_well_is_read() -> None:
    """About 240-fold: close to LZ4's limit, which bounds the content size a frame may claim."""
    footer = json.dumps({"blobs": [], "properties": {"k": "a" * 1_000_000}}).encode()
    framed = lz4_frame_with_content_size(footer)
    assert len(footer) / len(framed) > 200
    assert read_footer(compressed_puffin(framed), "w")[1]["k"] == "a" * 1_000_000


def _with_footer(payload: bytes, *, size: int | None = None) -> bytes:
    size = len(payload) if size is None else size
    return MAGIC + MAGIC + payload + struct.pack("<i", size) + bytes(4) + MAGIC


BAD_FIELDS = b'{"blobs": [{"type": "t", "fields": 1, "snapshot-id": -1, "sequence-number": -1, "offset": 4, "length": 0}]}'
GOOD_FILE = puffin_bytes([Blob("t", (1,), b"abc")], {"created-by": "x"})[0]


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "magic bytes missing"),
        (MAGIC * 4, "magic bytes missing"),  # too short for magic, footer magic and tail
        (b"XXXX" + GOOD_FILE[4:], "magic bytes missing"),
        (GOOD_FILE[:-4] + b"XXXX", "magic bytes missing"),
        (GOOD_FILE[:-1], "magic bytes missing"),
        (GOOD_FILE[1:], "magic bytes missing"),
        (_with_footer(b'{"blobs": []}', size=1000), "does not fit"),
        (_with_footer(b'{"blobs": []}', size=-1), "does not fit"),
        (_with_footer(b'{"blobs": []}', size=5), "does not fit"),  # no magic before the payload
        (_with_footer(b"{not json"), "not valid"),
        (_with_footer(b"\xff\xfe"), "not valid"),  # not UTF-8
        (_with_footer(b"[]"), "not valid"),
        (_with_footer(b"null"), "not valid"),
        (_with_footer(b"{}"), "not valid"),
        (_with_footer(b'{"blobs": 5}'), "not valid"),
        (_with_footer(b'{"blobs": [{"type": "t"}]}'), "not valid"),
        (_with_footer(BAD_FIELDS), "not valid"),
        (_with_footer(b'{"blobs": [], "properties": 5}'), "not valid"),
        (_with_footer(b'{"blobs": [], "properties": "ab"}'), "not valid"),
    ],
    ids=[
        "empty", "magic-only", "no-leading-magic", "no-trailing-magic", "cut-1", "cut-first", "size-too-big",
        "size-negative", "size-too-small", "bad-json", "not-utf8", "json-list", "json-null", "no-blobs",
        "blobs-not-a-list", "blob-without-fields", "fields-not-a-list", "properties-a-number", "properties-a-string",
    ],
)  # fmt: skip
def test_a_damaged_footer_is_corrupt_metadata_naming_the_file(data: bytes, message: str) -> None:
    with pytest.raises(CorruptMetadataError, match=message) as e:
        read_footer(data, "puffin file s3://b/p.puffin")
    assert "s3://b/p.puffin" in str(e.value)


# -- deletion vectors as manifest entries -------------------------------------------------------
def _data_file(path: str, records: int = 100) -> DataFile:
    return DataFile(
        content=FileContent.DATA, file_path=path, file_format="PARQUET", spec_id=0, partition=(),
        record_count=records, file_size_in_bytes=1000,
    )  # fmt: skip


@pytest.fixture
def two_vectors(tmp_path: Path) -> tuple[FileIO, list[DeleteFile]]:
    io = FileIO()
    vectors = [
        (_data_file("file:///t/data/a.parquet"), positions(0, 5, 99)),
        (_data_file("file:///t/data/b.parquet"), positions(*range(10, 60), (1 << 32) + 1)),
    ]
    return io, write_deletion_vectors(io, to_uri(tmp_path / "t"), vectors)


def test_one_puffin_file_holds_the_vectors_of_several_data_files(two_vectors: tuple[FileIO, list[DeleteFile]]) -> None:
    io, (a, b) = two_vectors
    assert a.file_path == b.file_path and a.file_path.endswith(".puffin") and "/data/" in a.file_path
    assert (a.file_format, a.content, a.referenced_data_file) == (PUFFIN, FileContent.POSITION_DELETES, "file:///t/data/a.parquet")
    assert (a.record_count, b.record_count) == (3, 51)
    assert a.content_offset == 4 and b.content_offset == 4 + a.content_size_in_bytes
    assert a.key != b.key
    data = Path(local(a.file_path)).read_bytes()
    assert a.file_size_in_bytes == b.file_size_in_bytes == len(data)
    blobs, properties = read_footer(data, a.file_path)
    assert properties["created-by"].startswith("mor")
    assert [(x.offset, x.length, x.properties) for x in blobs] == [
        (a.content_offset, a.content_size_in_bytes, {"referenced-data-file": "file:///t/data/a.parquet", "cardinality": "3"}),
        (b.content_offset, b.content_size_in_bytes, {"referenced-data-file": "file:///t/data/b.parquet", "cardinality": "51"}),
    ]
    assert read_deletion_vector(io, a).tolist() == [0, 5, 99]
    assert read_deletion_vector(io, b).tolist() == [*range(10, 60), (1 << 32) + 1]
    got = read_position_delete_file(io, b)
    assert list(got) == ["file:///t/data/b.parquet"] and got["file:///t/data/b.parquet"].tolist()[-1] == (1 << 32) + 1


def test_the_delete_file_cache_keeps_vectors_of_one_puffin_apart(two_vectors: tuple[FileIO, list[DeleteFile]]) -> None:
    io, (a, b) = two_vectors
    for shared in (None, mor.read.decoded_cache.DecodedFileCache(1 << 20)):
        cache = DeleteFileCache(io, shared=shared)
        assert cache.positions(a)["file:///t/data/a.parquet"].tolist() == [0, 5, 99]
        assert cache.positions(b)["file:///t/data/b.parquet"].tolist()[:2] == [10, 11]
        assert "file:///t/data/a.parquet" not in cache.positions(b)


def test_no_vectors_no_file(tmp_path: Path) -> None:
    assert write_deletion_vectors(FileIO(), to_uri(tmp_path), []) == []
    assert not (tmp_path / "data").exists()


def _changed(dv: DeleteFile, **fields: object) -> DeleteFile:
    values = {f.name: getattr(dv, f.name) for f in dataclasses.fields(dv)}
    values.update(fields)
    return DeleteFile(**values)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"record_count": 4}, "holds 3 positions, its manifest says 4"),
        ({"record_count": 2}, "holds 3 positions, its manifest says 2"),
        ({"content_offset": 10_000}, "past its end"),
        ({"content_size_in_bytes": 10_000}, "past its end"),
        ({"content_offset": 5}, "not a deletion-vector-v1 blob|checksum|too short"),  # one byte off
        ({"content_offset": None}, "no content_offset"),
        ({"content_size_in_bytes": None}, "no content_offset"),
        ({"file_path": "file:///nowhere/x.puffin"}, "missing"),
    ],
    ids=["count-high", "count-low", "offset-past-end", "length-past-end", "offset-off-by-one", "no-offset", "no-size", "missing-file"],
)
def test_a_vector_entry_that_does_not_fit_its_blob_is_corrupt_metadata(
    two_vectors: tuple[FileIO, list[DeleteFile]], change: dict, message: str
) -> None:
    io, (a, _) = two_vectors
    bad = _changed(a, **change)
    with pytest.raises(CorruptMetadataError, match=message) as e:
        read_deletion_vector(io, bad)
    assert bad.file_path in str(e.value)


def test_a_vector_without_its_data_file_is_corrupt_metadata(two_vectors: tuple[FileIO, list[DeleteFile]]) -> None:
    io, (a, _) = two_vectors
    with pytest.raises(CorruptMetadataError, match="referenced_data_file"):
        read_position_delete_file(io, _changed(a, referenced_data_file=None))


# -- in a table ---------------------------------------------------------------------------------
def test_a_damaged_vector_in_a_table_fails_the_scan_naming_the_puffin_file(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, format_version=3)
    table.append(make_rows(range(20)))
    table.delete("id in (3, 4)")
    assert scan_ids(table) == [0, 1, 2, *range(5, 20)]
    (entry,) = live_delete_entries(table)
    path = local(entry.path)
    offset = entry.data_file["content_offset"]
    data = bytearray(Path(path).read_bytes())
    data[offset + 12] ^= 0xFF  # inside the bitmap: the CRC no longer matches
    Path(path).write_bytes(bytes(data))
    mor.read.decoded_cache.SHARED.clear()
    with pytest.raises(CorruptMetadataError, match="checksum") as e:
        catalog.load_table("db.t").scan().to_arrow()
    assert entry.path in str(e.value)
