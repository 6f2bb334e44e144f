"""Planning at scale: manifests read concurrently and cached, with the same tasks as a plain
reading of every manifest, and a cache that never serves a stale or another manifest."""

from __future__ import annotations

import gc
import pickle
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from unit_helpers import make_rows

import mor
from mor.errors import CorruptMetadataError
from mor.expr.filters import FileFilter, parse_filter
from mor.format.content_file import CONTENT_FILE_FIELDS, DataFile, DeleteFile
from mor.format.manifest import ManifestFile, manifest_columns, read_manifest
from mor.format.spec import ManifestContent
from mor.io.fileio import FileIO, to_local_path
from mor.planning import manifest_cache
from mor.planning.data_manifests import DataManifestReader, ManifestFiles
from mor.planning.delete_index import DeleteFileIndex
from mor.planning.planner import manifests_of, plan_files, unpartitioned_spec_ids

MakeTable = Callable[..., mor.Table]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    cache = manifest_cache.cache()
    max_bytes = cache.max_bytes
    manifest_cache.clear()
    yield
    manifest_cache.configure(max_bytes=max_bytes, threads=manifest_cache.DEFAULT_THREADS)
    manifest_cache.clear()


def reference_plan(table: mor.Table, row_filter: BooleanExpression) -> list[tuple[DataFile, tuple[DeleteFile, ...]]]:
    """Every manifest read one after another with `read_manifest`, no pruning of delete files."""
    metadata = table.metadata
    snapshot = metadata.current_snapshot()
    assert snapshot is not None
    file_filter = FileFilter(metadata.schema(), metadata.specs(), row_filter)
    data, deletes = [], []
    for manifest in manifests_of(table.io, snapshot):
        for e in read_manifest(table.io, manifest, metadata.specs(), metadata.schema()):
            if not e.is_live:
                continue
            if manifest.content == ManifestContent.DATA and file_filter.manifest_may_match(manifest) and file_filter.file_may_match(e.file):
                data.append(e.file)
            elif manifest.content == ManifestContent.DELETES:
                deletes.append(e.file)
    index = DeleteFileIndex(deletes, unpartitioned_spec_ids(metadata))
    return [(f, index.for_data_file(f)) for f in data]


def as_pairs(tasks: list[mor.FileScanTask]) -> list[tuple[DataFile, tuple[DeleteFile, ...]]]:
    return [(t.data_file, t.delete_files) for t in tasks]


def busy(make_table: MakeTable) -> mor.Table:
    """Partitioned, several commits: appends, position deletes, an equality delete, a removal."""
    table = make_table(range(0, 30), range(30, 60), partition_by=["category"])
    table.delete("id = 3 or id = 41")
    table.append(make_rows(range(60, 90)))
    table.delete_rows(pa.table({"id": [65, 12]}))
    table.delete("id = 70")
    table.delete("category = 'c' and id < 60", mode="copy-on-write")
    return table


@pytest.fixture
def busy_table(make_table: MakeTable) -> mor.Table:
    return busy(make_table)


FILTERS = [None, "id < 40", "category = 'a'", "category = 'b' and id > 60", "id > 5000"]


@pytest.mark.parametrize("text", FILTERS)
@pytest.mark.parametrize("threads", [1, 4])
def test_cached_concurrent_plans_equal_a_plain_reading(busy_table: mor.Table, text: str | None, threads: int) -> None:
    manifest_cache.configure(threads=threads)
    row_filter = parse_filter(text)
    expected = reference_plan(busy_table, row_filter)
    cold = as_pairs(busy_table.scan(filter=text).plan_files())
    warm = as_pairs(busy_table.scan(filter=text).plan_files())
    assert cold == expected and warm == expected
    # Sequence numbers are not part of file equality: compare them too.
    seqs = [(f.data_sequence_number, [d.data_sequence_number for d in ds]) for f, ds in expected]
    assert [(f.data_sequence_number, [d.data_sequence_number for d in ds]) for f, ds in warm] == seqs
    assert manifest_cache.cache().hits > 0 or expected == []


def test_the_cache_off_plans_the_same(busy_table: mor.Table) -> None:
    warm = [as_pairs(busy_table.scan(filter=t).plan_files()) for t in FILTERS]
    manifest_cache.configure(max_bytes=0)
    assert len(manifest_cache.cache()) == 0
    assert [as_pairs(busy_table.scan(filter=t).plan_files()) for t in FILTERS] == warm
    assert len(manifest_cache.cache()) == 0


def test_every_snapshot_plans_the_same_warm_and_cold(busy_table: mor.Table) -> None:
    snapshots = [s.snapshot_id for s in busy_table.snapshots()]
    warm = [as_pairs(busy_table.scan(snapshot_id=s).plan_files()) for s in snapshots]
    warm_again = [as_pairs(busy_table.scan(snapshot_id=s).plan_files()) for s in snapshots]
    manifest_cache.configure(max_bytes=0)
    cold = [as_pairs(busy_table.scan(snapshot_id=s).plan_files()) for s in snapshots]
    assert warm == cold == warm_again


def test_a_manifest_replaced_under_its_name_is_read_again(make_table: MakeTable) -> None:
    """Never served stale: another manifest copied over a cached one is what the next plan sees."""
    table = make_table(range(0, 10))
    other = make_table(range(100, 150), name="other")
    (mine,) = manifests_of(table.io, table.current_snapshot())  # type: ignore[arg-type]
    (theirs,) = manifests_of(other.io, other.current_snapshot())  # type: ignore[arg-type]
    assert {t.data_file.record_count for t in table.scan().plan_files()} == {10}
    shutil.copyfile(to_local_path(theirs.manifest_path), to_local_path(mine.manifest_path))
    assert {t.data_file.record_count for t in table.scan().plan_files()} == {50}


def test_a_manifest_damaged_after_it_was_cached_still_fails_the_plan(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    (m,) = manifests_of(table.io, table.current_snapshot())  # type: ignore[arg-type]
    table.scan().plan_files()
    path = Path(to_local_path(m.manifest_path))
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CorruptMetadataError, match="manifest"):
        table.scan().plan_files()


def test_the_same_path_listed_with_another_sequence_number_is_another_entry(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    metadata = table.metadata
    (m,) = manifests_of(table.io, table.current_snapshot())  # type: ignore[arg-type]
    relisted = ManifestFile(**{**m.__dict__, "sequence_number": 42, "min_sequence_number": 42})
    first, again = manifest_cache.read_entries(table.io, [m, relisted], metadata.specs(), metadata.schema())
    assert [e.data_sequence_number for e in first] == [m.sequence_number]
    assert [e.data_sequence_number for e in again] == [42]


class ElsewhereFileIO(FileIO):
    """Another kind of file system: the same location names another file."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def path(self, location: str) -> str:
        return str(self.root) + super().path(location)


def test_another_kind_of_file_io_does_not_share_entries(make_table: MakeTable, tmp_path: Path) -> None:
    table = make_table(range(0, 10))
    other = make_table(range(100, 150), name="other")
    metadata = table.metadata
    (mine,) = manifests_of(table.io, table.current_snapshot())  # type: ignore[arg-type]
    (theirs,) = manifests_of(other.io, other.current_snapshot())  # type: ignore[arg-type]
    elsewhere = Path(str(tmp_path / "elsewhere") + to_local_path(mine.manifest_path))
    elsewhere.parent.mkdir(parents=True)
    shutil.copyfile(to_local_path(theirs.manifest_path), elsewhere)
    (here,) = manifest_cache.read_entries(table.io, [mine], metadata.specs(), metadata.schema())
    (there,) = manifest_cache.read_entries(ElsewhereFileIO(tmp_path / "elsewhere"), [mine], metadata.specs(), metadata.schema())
    assert [e.file.record_count for e in here] == [10] and [e.file.record_count for e in there] == [50]


def test_the_cache_stays_within_its_budget_and_keeps_a_plans_first_manifests(make_table: MakeTable) -> None:
    table = make_table(*[range(i * 10, i * 10 + 10) for i in range(6)])  # 6 manifests of 1 entry
    manifests = manifests_of(table.io, table.current_snapshot())  # type: ignore[arg-type]
    weights = [manifest_columns(table.io.read_bytes(m.manifest_path), m).nbytes for m in manifests]  # with metrics, as plan_files reads
    budget = sum(weights[:4])  # the plan's first four manifests, exactly
    manifest_cache.configure(max_bytes=budget, threads=1)
    cache = manifest_cache.cache()
    table.scan().plan_files()
    assert cache.bytes == budget and len(cache) == 4
    before = cache.hits
    table.scan().plan_files()
    assert cache.hits - before == 4  # a plan larger than the cache does not thrash it
    other = make_table(range(500, 510), name="other")
    other.scan().plan_files()  # another table's plan may evict what this one left
    assert cache.bytes <= budget


def test_decoded_files_have_every_field_and_equal_constructed_ones(busy_table: mor.Table) -> None:
    for task in busy_table.scan().plan_files():
        for f in (task.data_file, *task.delete_files):
            values = {name: getattr(f, name) for name in CONTENT_FILE_FIELDS}  # every field set (slots: none missing)
            rebuilt = type(f)(**values)
            assert rebuilt == f and hash(rebuilt) == hash(f)
            assert rebuilt.data_sequence_number == f.data_sequence_number


def test_decoded_metrics_are_dicts_and_survive_pickling(busy_table: mor.Table) -> None:
    for task in busy_table.scan().plan_files():
        for f in (task.data_file, *task.delete_files):
            assert pickle.loads(pickle.dumps(f)) == f  # Spark ships files to executors
            assert isinstance(f.value_counts, dict) and sum(f.value_counts.values()) > 0
            assert set(f.lower_bounds) == set(f.upper_bounds) and all(isinstance(v, bytes) for v in f.lower_bounds.values())


def test_the_garbage_collector_is_paused_and_restored() -> None:
    assert gc.isenabled()
    with manifest_cache.gc_paused():
        assert not gc.isenabled()
        with manifest_cache.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with manifest_cache.gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


def test_what_the_pause_allocated_skips_the_young_collections() -> None:
    with manifest_cache.gc_paused():
        kept = [[i] for i in range(50_000)]
    # In the oldest generation at once (still collectable, by a full collection): no young
    # collection traversed them to move them there.
    assert any(o is kept[-1] for o in gc.get_objects(generation=2))


def test_the_pause_leaves_what_the_application_froze_frozen() -> None:
    mine = [object()]  # frozen by the application: in no generation the collector traverses
    gc.freeze()
    try:
        with manifest_cache.gc_paused():
            _ = [[i] for i in range(1_000)]
        assert gc.get_freeze_count() > 0 and not any(o is mine for o in gc.get_objects())
    finally:
        gc.unfreeze()


def test_planning_an_empty_snapshot_and_all_pruned(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    assert plan_files(table.io, table.metadata, None, AlwaysTrue()) == []
    assert table.scan(filter="id > 100").plan_files() == []


def test_configure_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        manifest_cache.configure(max_bytes=-1)
    with pytest.raises(ValueError):
        manifest_cache.configure(threads=0)


@pytest.mark.parametrize("named_by", ["referenced_data_file", "bounds"])
@pytest.mark.parametrize("hashes", ["real", "all-colliding"])
def test_delete_files_kept_as_columns_plan_as_every_delete_file_decoded(
    make_table: MakeTable, monkeypatch: pytest.MonkeyPatch, named_by: str, hashes: str
) -> None:
    """Position delete files that name their data file stay columns until a chunk of data files
    needs them (mor/planning/referenced_deletes.py): named by `referenced_data_file`, or (older
    writers) by equal path bounds; a hash shared by every path names candidates, never a match.
    The files made so are those every entry decoded gives (the lean plan leaves out their bounds
    only when referenced_data_file names the file)."""
    if named_by == "bounds":
        from dataclasses import replace

        from mor.dml import row_changes

        written = row_changes.write_position_delete_file
        monkeypatch.setattr(row_changes, "write_position_delete_file", lambda *a: replace(written(*a), referenced_data_file=None))
    table = busy(make_table)
    if hashes == "all-colliding":
        from mor.planning import referenced_deletes

        monkeypatch.setattr(referenced_deletes, "hash", lambda _: 7, raising=False)
        monkeypatch.setattr(manifest_cache, "hash", lambda _: 7, raising=False)
    deletes = [d for t in table.scan().plan_files() for d in t.delete_files]
    assert all((d.referenced_data_file is None) == (named_by == "bounds") for d in deletes if d.content == 1)
    for text in FILTERS:
        expected = reference_plan(table, parse_filter(text))
        assert as_pairs(table.scan(filter=text).plan_files()) == expected
        lean = table.scan(filter=text).plan_files(keep_metrics=False)
        assert [(t.data_file.file_path, [d.file_path for d in t.delete_files]) for t in lean] == [
            (f.file_path, [d.file_path for d in ds]) for f, ds in expected
        ]
        assert all(d.lower_bounds for t in lean for d in t.delete_files if d.content == 1 and named_by == "bounds")


def read_in_another_process(reader: DataManifestReader, manifests: list[ManifestFile]) -> list[ManifestFiles]:
    """What Spark's executors do (mor/spark/planning.py), short of the processes: the reader
    and each answer pickled both ways."""
    return [pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(reader)).read(m))) for m in manifests]


@pytest.mark.parametrize("text", FILTERS)
@pytest.mark.parametrize("keep_metrics", [True, False])
def test_data_manifests_read_elsewhere_plan_the_same_tasks(busy_table: mor.Table, text: str | None, keep_metrics: bool) -> None:
    scan = busy_table.scan(filter=text)
    local = scan.plan_files(keep_metrics)
    manifest_cache.clear()
    elsewhere = list(scan.plan_tasks(keep_metrics, read_data_manifests=read_in_another_process))
    assert [(t.data_file, t.delete_files) for t in elsewhere] == [(t.data_file, t.delete_files) for t in local]
    assert [t.data_file.data_sequence_number for t in elsewhere] == [t.data_file.data_sequence_number for t in local]


def test_a_data_file_live_twice_is_found_when_read_elsewhere(make_table: MakeTable) -> None:
    from mor.commit.snapshot_producer import Changes, commit_changes
    from mor.planning.planner import live_entries

    table = make_table(range(0, 10), range(10, 20))
    entry = live_entries(table.io, table.metadata, table.current_snapshot(), ManifestContent.DATA)[0]  # type: ignore[arg-type]
    readded = Changes("append", added_data=[entry.file])
    table.metadata, table.metadata_location = commit_changes(table.io, table._ops, table.metadata, table.metadata_location, readded)  # type: ignore[arg-type]
    with pytest.raises(CorruptMetadataError, match=f"data file {entry.file.file_path} is live twice"):
        list(table.scan().plan_tasks(read_data_manifests=read_in_another_process))


def test_a_filtered_plan_indexes_only_the_deletes_of_the_files_it_keeps(busy_table: mor.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to `GATHERED` kept data files are gathered before the delete manifests are read, and
    only the delete files naming them are indexed; past it, every one is: the same tasks."""
    from mor.planning import planner, referenced_deletes

    indexes: list[referenced_deletes.ReferencedDeletes] = []

    class Recorded(referenced_deletes.ReferencedDeletes):
        def __init__(self, *args: object) -> None:
            super().__init__(*args)  # type: ignore[arg-type]
            indexes.append(self)

    monkeypatch.setattr(planner, "ReferencedDeletes", Recorded)
    sizes: dict[int, list[int]] = {}
    for gathered in (0, 100_000):
        monkeypatch.setattr(planner, "GATHERED", gathered)
        for text in FILTERS[1:]:
            indexes.clear()
            tasks = busy_table.scan(filter=text).plan_files()
            assert as_pairs(tasks) == reference_plan(busy_table, parse_filter(text))
            assert len(indexes) <= 1
            sizes.setdefault(gathered, []).append(len(indexes[0]) if indexes else 0)
            if gathered and indexes:
                assert len(indexes[0]) <= len(tasks)
    assert all(g <= every for g, every in zip(sizes[100_000], sizes[0])) and sizes[100_000] != sizes[0]
