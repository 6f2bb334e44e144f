"""Which deletes apply to a data file once deletion vectors exist (the spec's "Scan Planning").

A deletion vector applies to the data file it names, in the same partition, when the file's data
sequence number is at most the vector's; it then takes the place of every position delete file
for that data file (a vector holds them all), not for other data files. Equality deletes apply
as before. At most one vector may apply to a data file. Values are hand-built; a hypothesis
test compares the index with the rules written out again.
"""

from __future__ import annotations

import dataclasses

import pytest
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from mor.errors import CorruptMetadataError
from mor.format.content_file import DataFile, DeleteFile
from mor.format.spec import FileContent
from mor.planning.delete_index import DeleteFileIndex, applies_to

FILE_PATH_ID = 2147483546  # `file_path` of the position delete schema, spelled out
SPEC, OTHER_SPEC, UNPARTITIONED = 0, 2, 1
UNPARTITIONED_IDS = frozenset({UNPARTITIONED})


def data(path: str, seq: int, partition: tuple = ("a",), spec_id: int = SPEC) -> DataFile:
    return DataFile(FileContent.DATA, path, "PARQUET", spec_id, partition, 10, 100, data_sequence_number=seq, file_sequence_number=seq)


def dv(target: str, seq: int, partition: tuple = ("a",), spec_id: int = SPEC, puffin: str = "p.puffin", offset: int = 4) -> DeleteFile:
    return DeleteFile(
        FileContent.POSITION_DELETES, puffin, "PUFFIN", spec_id, partition, 2, 500,
        referenced_data_file=target, content_offset=offset, content_size_in_bytes=40,
        data_sequence_number=seq, file_sequence_number=seq,
    )  # fmt: skip


def pos(path: str, seq: int, partition: tuple = ("a",), *, target: str | None = None, bounds: tuple[str, str] | None = None) -> DeleteFile:
    """A v2 Parquet position delete file: partition-scoped, or naming a file (by
    referenced_data_file or by equal `file_path` bounds)."""
    lower = upper = None
    if bounds is not None:
        lower, upper = {FILE_PATH_ID: bounds[0].encode()}, {FILE_PATH_ID: bounds[1].encode()}
    return DeleteFile(
        FileContent.POSITION_DELETES, path, "PARQUET", SPEC, partition, 1, 10, lower_bounds=lower, upper_bounds=upper,
        referenced_data_file=target, data_sequence_number=seq, file_sequence_number=seq,
    )  # fmt: skip


def eq(path: str, seq: int, partition: tuple = ("a",), spec_id: int = SPEC) -> DeleteFile:
    return DeleteFile(
        FileContent.EQUALITY_DELETES, path, "PARQUET", spec_id, partition, 1, 10, equality_ids=(1,),
        data_sequence_number=seq, file_sequence_number=seq,
    )  # fmt: skip


def applying(deletes: list[DeleteFile], file: DataFile) -> list[tuple[str, int | None]]:
    return [d.key for d in DeleteFileIndex(deletes, UNPARTITIONED_IDS).for_data_file(file)]


# -- one vector, one data file ------------------------------------------------------------------
def test_a_vector_applies_only_to_the_file_it_names() -> None:
    vector = dv("d/1", 2)
    assert applies_to(vector, data("d/1", 1), UNPARTITIONED_IDS)
    assert not applies_to(vector, data("d/2", 1), UNPARTITIONED_IDS)  # same partition, another file
    assert not applies_to(vector, data("d/10", 1), UNPARTITIONED_IDS)  # a path it is a prefix of
    assert applying([vector], data("d/1", 1)) == [("p.puffin", 4)]
    assert applying([vector], data("d/2", 1)) == []


def test_a_vector_applies_only_in_its_partition() -> None:
    assert not applies_to(dv("d/1", 2, ("b",)), data("d/1", 1, ("a",)), UNPARTITIONED_IDS)
    assert not applies_to(dv("d/1", 2, ("a",), spec_id=OTHER_SPEC), data("d/1", 1, ("a",)), UNPARTITIONED_IDS)
    # An unpartitioned vector is no global delete (that exception is for equality deletes).
    assert not applies_to(dv("d/1", 2, (), spec_id=UNPARTITIONED), data("d/1", 1, ("a",)), UNPARTITIONED_IDS)
    assert applying([dv("d/1", 2, ("b",))], data("d/1", 1, ("a",))) == []
    assert applies_to(dv("u/1", 2, (), spec_id=UNPARTITIONED), data("u/1", 1, (), UNPARTITIONED), UNPARTITIONED_IDS)


def test_a_vector_applies_to_data_of_its_own_or_an_older_sequence_number() -> None:
    assert applies_to(dv("d/1", 3), data("d/1", 3), UNPARTITIONED_IDS)  # same commit
    assert applies_to(dv("d/1", 4), data("d/1", 3), UNPARTITIONED_IDS)
    assert not applies_to(dv("d/1", 2), data("d/1", 3), UNPARTITIONED_IDS)
    assert applying([dv("d/1", 2)], data("d/1", 3)) == []


def test_a_null_partition_value_matches_itself() -> None:
    assert applying([dv("d/1", 2, (None,))], data("d/1", 1, (None,))) == [("p.puffin", 4)]
    assert applying([dv("d/1", 2, (None,))], data("d/1", 1, ("a",))) == []


# -- vectors and v2 position delete files (an upgraded table) -----------------------------------
V2_FILES = [
    pos("pos-partition", 2),  # partition-scoped: may hold deletes of d/1 and d/2
    pos("pos-target", 2, target="d/1"),
    pos("pos-bounds", 3, bounds=("d/1", "d/1")),
    pos("pos-range", 3, bounds=("d/0", "d/9")),
]


def test_a_vector_hides_the_position_delete_files_of_its_data_file() -> None:
    d1 = data("d/1", 1)
    assert applying(V2_FILES, d1) == [("pos-partition", None), ("pos-target", None), ("pos-bounds", None), ("pos-range", None)]
    assert applying([*V2_FILES, dv("d/1", 4)], d1) == [("p.puffin", 4)]


def test_a_vector_of_one_file_leaves_the_position_delete_files_of_another() -> None:
    d2 = data("d/2", 1)
    deletes = [*V2_FILES, dv("d/1", 4)]
    assert applying(deletes, d2) == [("pos-partition", None), ("pos-range", None)]


def test_a_vector_hides_position_delete_files_newer_than_itself() -> None:
    """The rule has no sequence-number condition: a vector for the file wins outright."""
    assert applying([dv("d/1", 4), pos("later", 6)], data("d/1", 1)) == [("p.puffin", 4)]


def test_a_vector_that_does_not_apply_hides_nothing() -> None:
    """A vector older than the data file (the file was rewritten with its path reused) does not
    apply, so the position delete files that do apply still count."""
    d1 = data("d/1", 5)
    assert applying([dv("d/1", 4), pos("pos-new", 6), pos("pos-old", 4)], d1) == [("pos-new", None)]
    assert applying([dv("d/1", 4, ("b",)), pos("pos-new", 6)], d1) == [("pos-new", None)]


def test_equality_deletes_still_apply_next_to_a_vector() -> None:
    d1 = data("d/1", 2)
    deletes = [
        dv("d/1", 4), pos("pos", 3), eq("eq-older", 2), eq("eq-partition", 3), eq("eq-b", 5, ("b",)),
        eq("eq-global", 5, (), spec_id=UNPARTITIONED),
    ]  # fmt: skip
    assert applying(deletes, d1) == [("eq-partition", None), ("p.puffin", 4), ("eq-global", None)]


def test_applying_deletes_come_ordered_by_sequence_number_then_path() -> None:
    deletes = [eq("e5", 5), dv("d/1", 3, puffin="z.puffin"), eq("e2", 2), eq("a3", 3)]
    assert applying(deletes, data("d/1", 1)) == [("e2", None), ("a3", None), ("z.puffin", 4), ("e5", None)]


# -- at most one vector per data file -----------------------------------------------------------
def test_two_vectors_for_one_data_file_are_corrupt_metadata() -> None:
    index = DeleteFileIndex([dv("d/1", 2, puffin="one.puffin"), dv("d/1", 3, puffin="two.puffin")], UNPARTITIONED_IDS)
    with pytest.raises(CorruptMetadataError, match="2 deletion vectors apply to data file d/1"):
        index.for_data_file(data("d/1", 1))
    assert index.for_data_file(data("d/2", 1)) == ()  # other files still plan


def test_two_vectors_in_one_puffin_file_for_one_data_file_are_corrupt_metadata() -> None:
    index = DeleteFileIndex([dv("d/1", 2, offset=4), dv("d/1", 2, offset=60)], UNPARTITIONED_IDS)
    with pytest.raises(CorruptMetadataError, match="at most one"):
        index.for_data_file(data("d/1", 1))


def test_a_second_vector_that_does_not_apply_is_no_conflict() -> None:
    """Only vectors that apply count: one older than the data file, or in another partition."""
    d1 = data("d/1", 3)
    assert applying([dv("d/1", 2, puffin="old.puffin"), dv("d/1", 4, puffin="new.puffin")], d1) == [("new.puffin", 4)]
    assert applying([dv("d/1", 4, ("b",), puffin="b.puffin"), dv("d/1", 4, puffin="a.puffin")], d1) == [("a.puffin", 4)]


def test_vectors_of_several_files_in_one_puffin_file() -> None:
    deletes = [dv("d/1", 2, offset=4), dv("d/2", 2, offset=44), dv("d/3", 2, ("b",), offset=84)]
    index = DeleteFileIndex(deletes, UNPARTITIONED_IDS)
    assert [f.key for f in index.for_data_file(data("d/1", 1))] == [("p.puffin", 4)]
    assert [f.key for f in index.for_data_file(data("d/2", 1))] == [("p.puffin", 44)]
    assert [f.key for f in index.for_data_file(data("d/3", 1, ("b",)))] == [("p.puffin", 84)]
    assert index.for_data_file(data("d/3", 1, ("a",))) == ()


# -- the rules against random files -------------------------------------------------------------
PATHS = [f"d/{i}" for i in range(4)]
PARTITIONS = {SPEC: [("a",), ("b",)], UNPARTITIONED: [()]}


def spec_says(delete: DeleteFile, file: DataFile, deletes: list[DeleteFile]) -> bool:
    """The spec's rules, read literally, with the vector rule for position delete files."""
    same_partition = delete.spec_id == file.spec_id and delete.partition == file.partition
    assert delete.data_sequence_number is not None and file.data_sequence_number is not None

    def vector_applies(v: DeleteFile) -> bool:
        return (
            v.referenced_data_file == file.file_path
            and file.data_sequence_number <= v.data_sequence_number  # type: ignore[operator]
            and v.spec_id == file.spec_id
            and v.partition == file.partition
        )

    if delete.file_format == "PUFFIN":
        return vector_applies(delete)
    if delete.content == FileContent.EQUALITY_DELETES:
        return file.data_sequence_number < delete.data_sequence_number and (same_partition or delete.spec_id in UNPARTITIONED_IDS)
    if any(vector_applies(v) for v in deletes if v.file_format == "PUFFIN"):
        return False
    if delete.referenced_data_file is not None and delete.referenced_data_file != file.file_path:
        return False
    lower = (delete.lower_bounds or {}).get(FILE_PATH_ID)
    upper = (delete.upper_bounds or {}).get(FILE_PATH_ID)
    in_bounds = (lower is None or lower <= file.file_path.encode()) and (upper is None or file.file_path.encode() <= upper)
    return file.data_sequence_number <= delete.data_sequence_number and same_partition and in_bounds


@st.composite
def a_delete(draw: st.DrawFn, i: int) -> DeleteFile:
    spec = draw(st.sampled_from(sorted(PARTITIONS)))
    partition = draw(st.sampled_from(PARTITIONS[spec]))
    seq = draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["dv", "pos-partition", "pos-target", "pos-bounds", "eq"]))
    if kind == "dv":
        f = dv(draw(st.sampled_from(PATHS)), seq, partition, spec, puffin=f"v{i}.puffin")
    elif kind == "eq":
        f = eq(f"e{i}", seq, partition, spec)
    else:
        path = draw(st.sampled_from(PATHS))
        target = path if kind == "pos-target" else None
        bounds = (path, path) if kind == "pos-bounds" else None
        f = pos(f"p{i}", seq, partition, target=target, bounds=bounds)
        f = dataclasses.replace(f, spec_id=spec)
    return f


@st.composite
def deletes_and_files(draw: st.DrawFn) -> tuple[list[DeleteFile], list[DataFile]]:
    deletes = [draw(a_delete(i)) for i in range(draw(st.integers(0, 10)))]
    files = []
    for path in draw(st.lists(st.sampled_from(PATHS), min_size=1, unique=True)):
        spec = draw(st.sampled_from(sorted(PARTITIONS)))
        files.append(data(path, draw(st.integers(1, 6)), draw(st.sampled_from(PARTITIONS[spec])), spec))
    return deletes, files


@settings(max_examples=examples(300), deadline=None)
@given(case=deletes_and_files())
def test_the_index_follows_the_rules_with_vectors(case: tuple[list[DeleteFile], list[DataFile]]) -> None:
    deletes, files = case
    index = DeleteFileIndex(deletes, UNPARTITIONED_IDS)
    for f in files:
        vectors = [d for d in deletes if d.file_format == "PUFFIN" and spec_says(d, f, deletes)]
        if len(vectors) > 1:
            with pytest.raises(CorruptMetadataError):
                index.for_data_file(f)
            continue
        want = sorted((d for d in deletes if spec_says(d, f, deletes)), key=lambda d: (d.data_sequence_number, d.file_path))
        assert [d.key for d in index.for_data_file(f)] == [d.key for d in want]
