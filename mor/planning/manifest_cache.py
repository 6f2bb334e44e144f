"""Manifests for planning: read concurrently, decoded once, kept in a bounded process-wide cache.

A manifest is immutable, so its decoded entries can be reused by every later plan of any
snapshot that lists it (consecutive snapshots share most manifests). The cache key is the
manifest-list row's identity (path, length, spec, content, inherited sequence number,
snapshot id and first row id) and the kind of FileIO, so an entry is only ever served for the same file read the
same way. A hit costs one `size` call: a file replaced or damaged since it was cached no longer
has the size it was read with, and is read again (and fails, naming it, as it would have). On
object storage a hit costs nothing: objects are never replaced in place, and a HEAD request per
manifest per plan is what the cache is there to save.

Memory is bounded in bytes (`MOR_MANIFEST_CACHE_BYTES` or `configure(max_bytes=...)`; default
DEFAULT_MAX_BYTES; 0 turns the cache off), least recently used first out. A manifest's weight
is an estimate of what its decoded entries hold, measured on entries of real shape: about 500
bytes an entry without column metrics (a plan that prunes nothing reads them so), and about 450
more per column with metrics.
A plan never evicts manifests it has read itself: when those fill the cache, it reads the rest
without caching them, so a plan larger than the cache still finds its first part cached the next
time instead of thrashing.

Threads read manifests ahead (reading releases the GIL: the gain on an object store, where a GET
costs milliseconds) while the calling thread decodes them in order; decoding holds the GIL
(fastavro), so it stays in one thread. Decoding
allocates a few dozen objects per entry, all kept, and Python's cyclic garbage collector would
traverse them again and again (a third of the time of a cold plan of 20,000 entries): it is
paused while manifests are decoded (reference counting still frees everything acyclic).
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.errors import CorruptMetadataError
from mor.format.content_file import ManifestEntry
from mor.format.manifest import ManifestColumns, ManifestFile, manifest_columns, manifest_entries, read_manifest_bytes
from mor.io.environment import budget_from_env
from mor.io.fileio import FileIO, is_object_store
from mor.io.threads import SharedPool

DEFAULT_MAX_BYTES = 256 << 20
BUDGET_ENV = "MOR_MANIFEST_CACHE_BYTES"
ENTRY_BYTES = 500  # an entry without metrics: its slots, path, partition tuple, manifest entry
METRICS_BYTES_PER_COLUMN = 450  # six small dicts' share for one column
DEFAULT_THREADS = 4


@dataclass
class PlanScope:
    """The manifests one plan has used: the cache does not evict them for that plan."""

    keys: set[Hashable] = field(default_factory=set)
    full: bool = False  # the cache had no room left for this plan: stop trying


@dataclass(frozen=True)
class _Cached:
    entries: list[ManifestEntry]
    size: int  # bytes read: a hit is served only while the file still has this size
    live_keys: frozenset[tuple[str, int | None]]  # of the live entries, to find a file listed twice
    live_count: int
    weight: int  # estimated bytes held


def _cached(entries: list[ManifestEntry], size: int, metrics: bool) -> _Cached:
    live = [e.file.key for e in entries if e.is_live]
    columns = len(entries[0].file.value_counts or ()) if metrics and entries else 0
    weight = max(1, len(entries)) * (ENTRY_BYTES + METRICS_BYTES_PER_COLUMN * columns)
    return _Cached(entries, size, frozenset(live), len(live), weight)


class ManifestCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, _Cached] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def bytes(self) -> int:
        """The estimated bytes the cached entries hold."""
        return self._bytes

    def get(self, key: Hashable, scope: PlanScope) -> _Cached | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            scope.keys.add(key)
            self.hits += 1
            return found

    def discard(self, key: Hashable) -> None:
        with self._lock:
            found = self._items.pop(key, None)
            if found is not None:
                self._bytes -= found.weight

    def put(self, key: Hashable, value: _Cached, scope: PlanScope) -> None:
        weight = value.weight
        if scope.full or weight > self.max_bytes:
            return
        with self._lock:
            if key in self._items:
                return
            while self._bytes + weight > self.max_bytes:
                victim = next((k for k in self._items if k not in scope.keys), None)
                if victim is None:
                    scope.full = True
                    return
                self._bytes -= self._items.pop(victim).weight
            self._items[key] = value
            self._bytes += weight
            scope.keys.add(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0


def _budget() -> int:
    return budget_from_env(BUDGET_ENV, DEFAULT_MAX_BYTES, "bytes")


_CACHE = ManifestCache(_budget())
_POOL = SharedPool(DEFAULT_THREADS, "mor-manifests")


def cache() -> ManifestCache:
    return _CACHE


def configure(max_bytes: int | None = None, threads: int | None = None) -> None:
    """Resize the process-wide cache (0 turns it off; shrinking empties it) and set how many
    threads read manifests (1: read them one after another in the calling thread)."""
    if max_bytes is not None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        if max_bytes < _CACHE.max_bytes:
            _CACHE.clear()
        _CACHE.max_bytes = max_bytes
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        _POOL.resize(threads)


def clear() -> None:
    _CACHE.clear()


def cache_key(io: FileIO, manifest: ManifestFile, spec: Hashable) -> Hashable:
    """`spec`: what decoding depends on besides the file (`spec_fingerprint`)."""
    return (
        type(io),
        manifest.manifest_path,
        manifest.manifest_length,
        manifest.partition_spec_id,
        spec,
        manifest.content,
        manifest.sequence_number,
        manifest.added_snapshot_id,
        manifest.first_row_id,  # a manifest from before a v3 upgrade gets one when carried on
    )


def spec_fingerprint(spec: PartitionSpec | None) -> Hashable:
    return None if spec is None else tuple((f.source_id, f.field_id, str(f.transform), f.name) for f in spec.fields)


def read_entries(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    specs: dict[int, PartitionSpec],
    schema: Schema,
    scope: PlanScope | None = None,
    of_snapshot: str | None = None,
    metrics: bool = True,
) -> list[list[ManifestEntry]]:
    """Every entry of each manifest (in manifest and file order), from the cache or read
    concurrently; errors as `read_manifest` raises them. `of_snapshot`: the manifests are (some
    of) that manifest list's, so no file may be live in two entries (CorruptMetadataError).
    `metrics=False`: data files without their column metrics (`decode_manifest`), for a plan
    that prunes nothing; cached apart from the entries with metrics."""
    scope = scope or PlanScope()
    out: list[list[ManifestEntry] | None] = [None] * len(manifests)
    found: list[_Cached | None] = [None] * len(manifests)
    missing: list[int] = []
    fingerprints = {spec_id: spec_fingerprint(spec) for spec_id, spec in specs.items()}
    keys = [(cache_key(io, m, fingerprints.get(m.partition_spec_id)), metrics) for m in manifests]
    for i, (manifest, key) in enumerate(zip(manifests, keys)):
        cached = _CACHE.get(key, scope) if _CACHE.max_bytes else None
        if cached is not None and _still_there(io, manifest, cached.size):
            out[i], found[i] = cached.entries, cached
        else:
            if cached is not None:
                _CACHE.discard(key)
            missing.append(i)

    def columns(i: int) -> ManifestColumns:
        return manifest_columns(read_manifest_bytes(io, manifests[i]), manifests[i], metrics)

    def decode(i: int, decoded: ManifestColumns) -> list[ManifestEntry]:
        entries = manifest_entries(decoded, manifests[i], specs, schema)
        found[i] = made = _cached(entries, decoded.size, metrics)
        if _CACHE.max_bytes:
            _CACHE.put(keys[i], made, scope)
        return entries

    with gc_paused():
        if len(missing) > 1 and _POOL.threads > 1:
            # Threads read ahead and decode into columns (reading, and decoding a large manifest,
            # release the GIL: mor/io/avro_columns.py); this thread makes the entries, which
            # holds the GIL, in order as the columns arrive.
            for i, decoded in zip(missing, _POOL.get().map(columns, missing)):
                out[i] = decode(i, decoded)
        else:
            for i in missing:
                out[i] = decode(i, columns(i))
    # Every slot is filled by now: from the cache, or read and decoded.
    entries_of, cached_of = cast(list[list[ManifestEntry]], out), cast(list[_Cached], found)
    if of_snapshot is not None:
        checked = (of_snapshot, tuple(keys))
        if checked not in _CHECKED:
            _check_each_file_once(of_snapshot, manifests, cached_of, entries_of)
            if len(_CHECKED) >= _CHECKED_MAX:
                _CHECKED.clear()
            _CHECKED.add(checked)
    return entries_of


# Manifest combinations found to list each file once: manifests never change (a replaced file
# is read again, under its new size), so each plan of the same snapshot need not check again.
_CHECKED: set[Hashable] = set()
_CHECKED_MAX = 10_000


def _check_each_file_once(
    manifest_list: str, manifests: Sequence[ManifestFile], found: list[_Cached], entries_of: list[list[ManifestEntry]]
) -> None:
    """A file live in two entries of one snapshot would be read twice (its rows returned twice)
    or, a delete file, indexed twice. Keys are `ContentFile.key`: a Puffin file holds the deletion
    vectors of several data files, one entry per blob. The union of the key sets is built in C;
    only a table that fails is walked entry by entry, to name the file."""
    if len(frozenset().union(*(c.live_keys for c in found))) == sum(c.live_count for c in found):
        return
    seen: dict[tuple[str, int | None], str] = {}
    for manifest, entries in zip(manifests, entries_of):
        for e in entries:
            if not e.is_live:
                continue
            if e.file.key in seen:
                path, offset = e.file.key
                what = "data file" if not e.file.is_delete else "delete file"
                blob = "" if offset is None else f" (blob at offset {offset})"
                raise CorruptMetadataError(
                    f"manifest list {manifest_list}: {what} {path}{blob} is live twice, in manifest "
                    f"{seen[e.file.key]} and in manifest {manifest.manifest_path}"
                )
            seen[e.file.key] = manifest.manifest_path


_gc_pauses = 0
_gc_was_enabled = False
_gc_lock = threading.Lock()


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block; nested and concurrent blocks turn it
    back on (if it was on) when the last one ends. Turned back on as is, its next young
    collection would traverse every object the block allocated (0.15 s after a cold plan of
    20,000 entries): they are moved to the oldest generation first (freeze + unfreeze), which
    the collector traverses only in its full collections."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                if gc.get_freeze_count() == 0:  # never unfreeze what the application froze
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


def _still_there(io: FileIO, manifest: ManifestFile, size: int) -> bool:
    if is_object_store(manifest.manifest_path):
        # Objects are written once under new names, never replaced in place (mor/io/fileio.py):
        # checking would cost a HEAD request per cached manifest per plan.
        return True
    try:
        return io.size(manifest.manifest_path) == size
    except Exception:  # missing, a folder, unreachable: read it again and report what is wrong
        return False
