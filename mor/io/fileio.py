"""File access through pyarrow.fs, with Iceberg's URI spellings.

Iceberg writers spell local paths three ways: `file:///abs`, `file:/abs` (Hadoop) and `/abs`.
Locations are stored as the writer spelled them; this module turns them into file system paths.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from mor.errors import (
    CorruptMetadataError,
    MorError,
    StorageError,
    UnsupportedFeatureError,
)


def to_local_path(location: str) -> str:
    if location.startswith("file://"):
        return location[len("file://") :] or "/"
    if location.startswith("file:"):
        return location[len("file:") :]
    if "://" in location:
        raise UnsupportedFeatureError(f"only local file systems are supported, got {location!r}")
    return location


def unreadable(what: str, location: str, error: BaseException) -> MorError:
    """The error for a file of a table that cannot be read, naming it: missing, or not in its
    format (truncated, overwritten, a folder) is CorruptMetadataError; refused by the file
    system (permissions) is StorageError."""
    if isinstance(error, PermissionError):
        return StorageError(f"cannot read {what} {location}: permission denied")
    if isinstance(error, FileNotFoundError):
        return CorruptMetadataError(f"{what} {location} is missing")
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return CorruptMetadataError(f"{what} {location} is unreadable (damaged, or not the file it should be): {detail}")


def to_uri(path: str | os.PathLike[str]) -> str:
    """The `file:///abs` spelling we write for new locations."""
    return "file://" + str(Path(path).resolve())


class FileIO:
    """Reads and writes files by location. Local now; the seam for object stores later."""

    def __init__(self) -> None:
        self.fs: pafs.FileSystem = pafs.LocalFileSystem()

    def path(self, location: str) -> str:
        return to_local_path(location)

    def open_input(self, location: str) -> pa.NativeFile:
        return self.fs.open_input_file(self.path(location))

    def read_bytes(self, location: str) -> bytes:
        with self.open_input(location) as f:
            return bytes(f.read())

    def size(self, location: str) -> int:
        return int(self.fs.get_file_info(self.path(location)).size)

    def exists(self, location: str) -> bool:
        return self.fs.get_file_info(self.path(location)).type != pafs.FileType.NotFound

    def make_parent_dirs(self, location: str) -> None:
        self.fs.create_dir(os.path.dirname(self.path(location)), recursive=True)

    def write_bytes_exclusive(self, location: str, data: bytes) -> None:
        """Create a new file with `data`; fail if it exists. Written under a temporary name and
        linked into place, so a reader never sees a partial file."""
        final = self.path(location)
        tmp = f"{final}.{uuid.uuid4().hex}.tmp"
        try:
            os.makedirs(os.path.dirname(final), exist_ok=True)
            with open(tmp, "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise StorageError(f"cannot write {location}: {e.strerror or e}") from e
        try:
            os.link(tmp, final)  # atomic create-if-absent; os.rename would overwrite
        except FileExistsError:
            raise  # a name collision is a bug of the writer, not of the storage
        except OSError as e:
            raise StorageError(f"cannot write {location}: {e.strerror or e}") from e
        finally:
            os.unlink(tmp)

    def delete(self, location: str) -> None:
        try:
            self.fs.delete_file(self.path(location))
        except FileNotFoundError:
            pass

    def list_files(self, directory_location: str) -> list[pafs.FileInfo]:
        selector = pafs.FileSelector(self.path(directory_location), recursive=True, allow_not_found=True)
        return [info for info in self.fs.get_file_info(selector) if info.type == pafs.FileType.File]
