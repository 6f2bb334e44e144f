"""The delete index against a brute-force reading of the spec's applicability rules."""

from __future__ import annotations

from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from mor.format.content_file import DataFile, DeleteFile
from mor.format.spec import DELETE_FILE_PATH_ID, FileContent
from mor.planning.delete_index import DeleteFileIndex

PATHS = [f"file:/t/data/f{i}.parquet" for i in range(4)]
UNPARTITIONED_SPEC = 0
PARTITIONED_SPEC = 1
PARTITIONS = {UNPARTITIONED_SPEC: [()], PARTITIONED_SPEC: [("a",), ("b",)]}


@st.composite
def data_files(draw: st.DrawFn) -> list[DataFile]:
    out = []
    for path in draw(st.lists(st.sampled_from(PATHS), min_size=1, max_size=4, unique=True)):
        spec = draw(st.sampled_from(sorted(PARTITIONS)))
        out.append(
            DataFile(
                content=FileContent.DATA, file_path=path, file_format="PARQUET", spec_id=spec,
                partition=draw(st.sampled_from(PARTITIONS[spec])), record_count=10, file_size_in_bytes=1,
                data_sequence_number=draw(st.integers(1, 6)),
            )
        )  # fmt: skip
    return out


@st.composite
def delete_files(draw: st.DrawFn) -> DeleteFile:
    content = draw(st.sampled_from([FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES]))
    spec = draw(st.sampled_from(sorted(PARTITIONS)))
    referenced = lower = upper = None
    if content == FileContent.POSITION_DELETES:
        how = draw(st.sampled_from(["none", "referenced", "single-bounds", "range-bounds"]))
        if how == "referenced":
            referenced = draw(st.sampled_from(PATHS))
        elif how == "single-bounds":
            lower = upper = draw(st.sampled_from(PATHS))
        elif how == "range-bounds":
            lower, upper = sorted(draw(st.lists(st.sampled_from(PATHS), min_size=2, max_size=2)))

    def bounds(path: str | None) -> dict[int, bytes] | None:
        return None if path is None else {DELETE_FILE_PATH_ID: path.encode()}

    return DeleteFile(
        content=content, file_path=f"file:/t/data/d{draw(st.integers(0, 10**9))}.parquet", file_format="PARQUET",
        spec_id=spec, partition=draw(st.sampled_from(PARTITIONS[spec])), record_count=1, file_size_in_bytes=1,
        lower_bounds=bounds(lower), upper_bounds=bounds(upper), referenced_data_file=referenced,
        equality_ids=(1,) if content == FileContent.EQUALITY_DELETES else None,
        data_sequence_number=draw(st.integers(1, 6)),
    )  # fmt: skip


def spec_says_applies(delete: DeleteFile, data: DataFile) -> bool:
    """The spec's text, read literally, one condition per line."""
    same_partition = delete.spec_id == data.spec_id and delete.partition == data.partition
    if delete.content == FileContent.POSITION_DELETES:
        if not data.data_sequence_number <= delete.data_sequence_number:
            return False
        if not same_partition:
            return False
        if delete.referenced_data_file is not None and delete.referenced_data_file != data.file_path:
            return False
        if delete.lower_bounds and data.file_path.encode() < delete.lower_bounds[DELETE_FILE_PATH_ID]:
            return False
        if delete.upper_bounds and data.file_path.encode() > delete.upper_bounds[DELETE_FILE_PATH_ID]:
            return False
        return True
    delete_spec_unpartitioned = delete.spec_id == UNPARTITIONED_SPEC
    return data.data_sequence_number < delete.data_sequence_number and (same_partition or delete_spec_unpartitioned)


@settings(max_examples=examples(300), deadline=None)
@given(data=data_files(), deletes=st.lists(delete_files(), max_size=12, unique_by=lambda f: f.file_path))
def test_index_matches_the_spec(data: list[DataFile], deletes: list[DeleteFile]) -> None:
    index = DeleteFileIndex(deletes, frozenset({UNPARTITIONED_SPEC}))
    for d in data:
        expected = {f.file_path for f in deletes if spec_says_applies(f, d)}
        got = index.for_data_file(d)
        assert {f.file_path for f in got} == expected
        assert [f.data_sequence_number for f in got] == sorted(f.data_sequence_number for f in got)


def test_same_commit_position_delete_applies_but_equality_does_not() -> None:
    data = DataFile(FileContent.DATA, PATHS[0], "PARQUET", 0, (), 10, 1, data_sequence_number=3)
    pos = DeleteFile(FileContent.POSITION_DELETES, "p", "PARQUET", 0, (), 1, 1, data_sequence_number=3)
    eq = DeleteFile(FileContent.EQUALITY_DELETES, "e", "PARQUET", 0, (), 1, 1, equality_ids=(1,), data_sequence_number=3)
    assert DeleteFileIndex([pos, eq], frozenset({0})).for_data_file(data) == (pos,)
