"""Deletion vectors against plain sets: any set of positions (runs, dense and sparse blocks, keys
above 2^32) survives serialize/deserialize, reads the same with an independent decoder of
Roaring's portable format written here, and merging vectors is the set union."""

from __future__ import annotations

import struct
import zlib

import numpy as np
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from mor.errors import CorruptMetadataError
from mor.format import deletion_vector
from mor.read.position_deletes import merge_sorted_runs

MAX_POSITION = (1 << 63) - 1
HIGH_KEYS = [0, 1, 2, (1 << 31) - 1, (1 << 31)]  # the 32-bit key a position's high half selects


@st.composite
def position_sets(draw: st.DrawFn) -> set[int]:
    """Clusters of positions near interesting places: single values, runs (a deleted range),
    dense blocks (bitmap containers, > 4096 in 2^16) and the edges of 2^16 and 2^32 chunks."""
    out: set[int] = set()
    for _ in range(draw(st.integers(0, 4))):
        base = draw(st.sampled_from(HIGH_KEYS)) << 32
        base += draw(st.sampled_from([0, 1 << 16, (1 << 32) - (1 << 16), draw(st.integers(0, (1 << 32) - 1))]))
        base = min(base, MAX_POSITION)
        kind = draw(st.sampled_from(["points", "run", "dense", "edge"]))
        if kind == "points":
            out |= {min(base + d, MAX_POSITION) for d in draw(st.lists(st.integers(0, 1 << 17), max_size=30))}
        elif kind == "run":
            start, length = draw(st.integers(0, 1 << 17)), draw(st.integers(1, 70_000))
            out |= set(range(min(base + start, MAX_POSITION - length), min(base + start, MAX_POSITION - length) + length))
        elif kind == "dense":
            start = min(base, MAX_POSITION - 10_000)
            out |= {start + i for i in range(0, 10_000, draw(st.integers(1, 2)))}
        else:
            out |= {p for p in (base - 1, base, base + 1, (1 << 32) - 1, 1 << 32, MAX_POSITION) if 0 <= p <= MAX_POSITION}
    out |= set(draw(st.lists(st.integers(0, MAX_POSITION), max_size=5)))
    return out


def _array(values: set[int]) -> np.ndarray:
    return np.array(sorted(values), dtype=np.int64)


# -- an independent reader of the blob ------------------------------------------------------------
def decode(blob: bytes) -> list[int]:
    """deletion-vector-v1 (Puffin spec) and Roaring's portable format
    (https://github.com/RoaringBitmap/RoaringFormatSpec), read with struct alone."""
    (length,) = struct.unpack_from(">I", blob, 0)
    assert length == len(blob) - 8 and blob[4:8] == bytes([0xD1, 0xD3, 0x39, 0x64])
    assert struct.unpack_from(">I", blob, len(blob) - 4)[0] == zlib.crc32(blob[4:-4])
    data, at = blob[8:-4], 0
    (buckets,) = struct.unpack_from("<Q", data, at)
    at += 8
    out: list[int] = []
    last_key = -1
    for _ in range(buckets):
        (high,) = struct.unpack_from("<I", data, at)
        assert high > last_key  # keys ascend
        last_key = high
        low, at = _decode_32(data, at + 4)
        out += [(high << 32) | v for v in low]
    assert at == len(data)  # nothing after the last bitmap
    return out


def _decode_32(data: bytes, at: int) -> tuple[list[int], int]:
    (cookie,) = struct.unpack_from("<I", data, at)
    if cookie & 0xFFFF == 12347:  # with run containers
        size = (cookie >> 16) + 1
        at += 4
        run_flags = data[at : at + (size + 7) // 8]
        at += (size + 7) // 8
        has_offsets = size >= 4
    else:
        assert cookie == 12346
        (size,) = struct.unpack_from("<I", data, at + 4)
        at += 8
        run_flags, has_offsets = bytes((size + 7) // 8), True
    header = [struct.unpack_from("<HH", data, at + 4 * i) for i in range(size)]
    at += 4 * size
    if has_offsets:
        at += 4 * size
    values: list[int] = []
    for i, (key, card_minus_1) in enumerate(header):
        cardinality = card_minus_1 + 1
        if run_flags[i // 8] >> (i % 8) & 1:
            (runs,) = struct.unpack_from("<H", data, at)
            at += 2
            low = []
            for r in range(runs):
                start, extra = struct.unpack_from("<HH", data, at + 4 * r)
                low += range(start, start + extra + 1)
            at += 4 * runs
        elif cardinality <= 4096:
            low = list(struct.unpack_from(f"<{cardinality}H", data, at))
            at += 2 * cardinality
        else:
            words = struct.unpack_from("<1024Q", data, at)
            at += 8192
            low = [64 * w + b for w, word in enumerate(words) if word for b in range(64) if word >> b & 1]
        assert len(low) == cardinality
        values += [(key << 16) | v for v in low]
    return values, at


# -- properties ------------------------------------------------------------------------------------
@settings(max_examples=examples(200), deadline=None)
@given(values=position_sets())
def test_round_trip_and_independent_decode(values: set[int]) -> None:
    blob = deletion_vector.serialize(_array(values))
    got = deletion_vector.deserialize(blob, "w")
    assert got.dtype == np.int64
    assert got.tolist() == sorted(values)
    assert decode(blob) == sorted(values)
    assert deletion_vector.serialize(got) == blob  # one set, one encoding


@settings(max_examples=examples(100), deadline=None)
@given(vectors=st.lists(position_sets(), min_size=1, max_size=4))
def test_merging_vectors_is_the_union(vectors: list[set[int]]) -> None:
    """What a writer does with a file's earlier vector and its new deletes."""
    read = [deletion_vector.deserialize(deletion_vector.serialize(_array(v)), "w") for v in vectors]
    merged = merge_sorted_runs(read)
    union = set().union(*vectors)
    assert merged.tolist() == sorted(union)
    blob = deletion_vector.serialize(merged)
    assert blob == deletion_vector.serialize(_array(union))
    assert deletion_vector.deserialize(blob, "w").tolist() == sorted(union)


@settings(max_examples=examples(100), deadline=None)
@given(values=position_sets(), flip=st.data())
def test_any_damaged_byte_is_caught(values: set[int], flip: st.DataObject) -> None:
    """The CRC covers magic and vector; the length and the CRC itself are checked too: a
    changed byte anywhere is an error, never other positions."""
    blob = bytearray(deletion_vector.serialize(_array(values)))
    at = flip.draw(st.integers(0, len(blob) - 1), label="byte")
    blob[at] ^= flip.draw(st.integers(1, 255), label="xor")
    try:
        deletion_vector.deserialize(bytes(blob), "w")
    except CorruptMetadataError:
        return
    raise AssertionError(f"byte {at} changed, yet the vector decoded")
