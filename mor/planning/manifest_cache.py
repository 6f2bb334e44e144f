"""Manifests for planning: read concurrently, decoded once, kept in a bounded process-wide cache.

A manifest is immutable, so its decoded entries can be reused by every later plan of any
snapshot that lists it (consecutive snapshots share most manifests). The cache key is the
manifest-list row's identity (path, length, spec, content, inherited sequence number,
snapshot id and first row id) and the kind of FileIO, so an entry is only ever served for the same file read the
same way. A hit costs one `size` call: a file replaced or damaged since it was cached no longer
has the size it was read with, and is read again (and fails, naming it, as it would have). On
object storage a hit costs nothing: objects are never replaced in place, and a HEAD request per
manifest per plan is what the cache is there to save.

What is cached is a manifest's columns (`ManifestColumns`: Arrow arrays of the fields a kind
of plan reads, `Metrics`), not Python objects: a tenth of the memory, and an exact size. Memory
is bounded in bytes (`MOR_MANIFEST_CACHE_BYTES` or `configure(max_bytes=...)`; default
DEFAULT_MAX_BYTES; 0 turns the cache off), least recently used first out. A plan never evicts
manifests it has read itself: when those fill the cache, it reads the rest without caching them,
so a plan larger than the cache still finds its first part cached the next time instead of
thrashing.

Threads read and decode manifests ahead, a few at a time, in the order asked (reading releases
the GIL, and so does decoding a large manifest: mor/io/avro_columns.py), while the caller turns
columns into files. Making files allocates a few dozen objects per entry, and Python's cyclic
garbage collector would traverse them again and again (a third of the time of a cold plan of
20,000 entries): it is paused while manifests are decoded (reference counting still frees
everything acyclic).
"""

from __future__ import annotations

import gc
import hashlib
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.errors import CorruptMetadataError
from mor.format.content_file import ContentFile, ManifestEntry
from mor.format.manifest import ManifestColumns, ManifestFile, Metrics, manifest_columns, manifest_entries, read_manifest_bytes
from mor.format.spec import ManifestContent
from mor.io.environment import budget_from_env
from mor.io.fileio import FileIO, is_object_store
from mor.io.threads import SharedPool

DEFAULT_MAX_BYTES = 256 << 20
BUDGET_ENV = "MOR_MANIFEST_CACHE_BYTES"
DEFAULT_THREADS = 4


@dataclass
class PlanScope:
    """The manifests one plan has used: the cache does not evict them for that plan."""

    keys: set[Hashable] = field(default_factory=set)
    full: bool = False  # the cache had no room left for this plan: stop trying


@dataclass(frozen=True)
class _Cached:
    columns: ManifestColumns
    size: int  # bytes read: a hit is served only while the file still has this size
    weight: int  # bytes held


def _cached(columns: ManifestColumns) -> _Cached:
    return _Cached(columns, columns.size, max(1, columns.nbytes))


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


def read_columns(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    specs: dict[int, PartitionSpec],
    scope: PlanScope | None = None,
    metrics: Metrics = True,
) -> Iterator[ManifestColumns]:
    """The columns of each manifest, in order, from the cache or read and decoded by the
    pool's threads a few manifests ahead of the caller (so at most that many are held besides
    the cache); errors as `read_manifest` raises them. `metrics`: see `Metrics`; each kind of
    read is cached apart."""
    scope = scope or PlanScope()
    fingerprints = {spec_id: spec_fingerprint(spec) for spec_id, spec in specs.items()}
    keys = [(cache_key(io, m, fingerprints.get(m.partition_spec_id)), metrics) for m in manifests]

    def cached(i: int) -> ManifestColumns | None:
        found = _CACHE.get(keys[i], scope) if _CACHE.max_bytes else None
        if found is None:
            return None
        if _still_there(io, manifests[i], found.size):
            return found.columns
        _CACHE.discard(keys[i])
        return None

    def read(i: int) -> ManifestColumns:
        columns = manifest_columns(read_manifest_bytes(io, manifests[i]), manifests[i], metrics)
        if _CACHE.max_bytes:
            _CACHE.put(keys[i], _cached(columns), scope)
        return columns

    pool = _POOL.get() if _POOL.threads > 1 else None  # even for one manifest: the caller works meanwhile

    def start(i: int) -> Callable[[], ManifestColumns]:
        hit = cached(i)
        if hit is not None:
            return lambda: hit
        if pool is None:
            return lambda: read(i)
        return pool.submit(read, i).result

    # The first few are started now, not at the first next(): a caller may read other
    # manifests (the deletes) while these decode.
    ahead = deque(start(i) for i in range(min(len(manifests), _POOL.threads + 1)))
    return _in_order(ahead, start, len(manifests))


def _in_order(
    ahead: deque[Callable[[], ManifestColumns]], start: Callable[[int], Callable[[], ManifestColumns]], count: int
) -> Iterator[ManifestColumns]:
    for i in range(len(ahead), count):
        yield ahead.popleft()()
        ahead.append(start(i))
    while ahead:
        yield ahead.popleft()()


def read_entries(
    io: FileIO,
    manifests: Sequence[ManifestFile],
    specs: dict[int, PartitionSpec],
    schema: Schema,
    scope: PlanScope | None = None,
    of_snapshot: str | None = None,
    metrics: Metrics = True,
) -> list[list[ManifestEntry]]:
    """Every entry of each manifest (in manifest and file order): `read_columns` made into
    entries. `of_snapshot`: the manifests are (some of) that manifest list's, so no file may be
    live in two entries (CorruptMetadataError)."""
    with gc_paused():
        out = [manifest_entries(c, m, specs, schema) for m, c in zip(manifests, read_columns(io, manifests, specs, scope, metrics))]
    if of_snapshot is not None and (of_snapshot, tuple(manifests)) not in _CHECKED:
        live_of = {id(m): [e.file for e in es if e.is_live] for m, es in zip(manifests, out)}
        check = OnceEach(of_snapshot, lambda m: live_of[id(m)])
        for manifest in manifests:
            check.add(manifest, live_of[id(manifest)])
        check.done(manifests)
    return out


Key = tuple[str, int | None]  # ContentFile.key


def stable_hash(key: Key) -> int:
    """A key's hash, the same in every process (Python's string hashes are salted per process):
    for hashes made on Spark executors."""
    path, offset = key
    return int.from_bytes(hashlib.blake2b(f"{path}\x00{offset}".encode(), digest_size=8).digest(), "little")


class OnceEach:
    """A file live in two entries of one snapshot would be read twice (its rows returned twice)
    or, a delete file, indexed twice. Keys are `ContentFile.key`: a Puffin file holds the
    deletion vectors of several data files, one entry per blob. Only the keys' hashes are kept
    (a plan streams a million files through); a hash met twice is looked for again in the
    manifests met so far (`live_files`), to name the file, or to find two keys sharing a hash.
    Manifest combinations found clean are remembered: manifests never change (a replaced file
    is read again, under its new size), so later plans of them need not check again."""

    def __init__(
        self,
        manifest_list: str,
        live_files: Callable[[ManifestFile], Iterable[ContentFile]],
        key_hash: Callable[[Key], int] | None = None,
    ):
        self.manifest_list = manifest_list
        self.live_files = live_files
        self.key_hash = key_hash or hash  # `stable_hash` for hashes made in other processes
        self.hashes: set[int] = set()
        self.met: list[ManifestFile] = []

    def add(self, manifest: ManifestFile, files: Iterable[ContentFile]) -> None:
        self.add_keys(manifest, (f.key for f in files), delete=manifest.content == ManifestContent.DELETES)

    def add_keys(self, manifest: ManifestFile, keys: Iterable[Key], delete: bool) -> None:
        self.add_hashes(manifest, map(self.key_hash, keys), delete)

    def add_hashes(self, manifest: ManifestFile, key_hashes: Iterable[int], delete: bool) -> None:
        if not self.met or self.met[-1] is not manifest:
            self.met.append(manifest)
        hashes = self.hashes
        added = list(key_hashes)
        new = set(added)
        if len(new) == len(added) and hashes.isdisjoint(new):
            hashes |= new
            return
        for h in added:  # some hash met twice: find its keys, and whether one is a file live twice
            if h in hashes:
                self._met_again(h, delete)
            hashes.add(h)

    def _met_again(self, key_hash: int, delete: bool) -> None:
        holders: dict[Key, str] = {}
        for manifest in self.met:
            for f in self.live_files(manifest):
                if self.key_hash(f.key) != key_hash:
                    continue
                if f.key in holders:
                    path, offset = f.key
                    blob = "" if offset is None else f" (blob at offset {offset})"
                    raise CorruptMetadataError(
                        f"manifest list {self.manifest_list}: {'delete file' if delete else 'data file'} {path}{blob} is live "
                        f"twice, in manifest {holders[f.key]} and in manifest {manifest.manifest_path}"
                    )
                holders[f.key] = manifest.manifest_path

    def done(self, manifests: Sequence[ManifestFile]) -> None:
        """Every live file of `manifests` was added: remember them clean."""
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED.add((self.manifest_list, tuple(manifests)))


def checked(manifest_list: str, manifests: Sequence[ManifestFile]) -> bool:
    return (manifest_list, tuple(manifests)) in _CHECKED


_CHECKED: set[Hashable] = set()
_CHECKED_MAX = 10_000


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
