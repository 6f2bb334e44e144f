"""Snapshot summaries: what a commit changed, and the running totals, as Iceberg writes them."""

from __future__ import annotations

from collections.abc import Iterable

from mor.format.content_file import ContentFile
from mor.format.spec import FileContent

_TOTALS = {
    "total-records": "records",
    "total-data-files": "data-files",
    "total-delete-files": "delete-files",
    "total-position-deletes": "position-deletes",
    "total-equality-deletes": "equality-deletes",
    "total-files-size": "files-size",
}


def _counts(files: Iterable[ContentFile]) -> dict[str, int]:
    c = dict.fromkeys(
        ["data-files", "delete-files", "position-delete-files", "equality-delete-files", "dvs", "records",
         "position-deletes", "equality-deletes", "files-size"], 0)  # fmt: skip
    for f in files:
        # A deletion vector counts its blob, not the Puffin file it shares (as Iceberg Java does).
        size = f.content_size_in_bytes if f.is_deletion_vector else f.file_size_in_bytes
        assert size is not None  # a deletion vector always has its blob's size
        c["files-size"] += size
        if f.content == FileContent.DATA:
            c["data-files"] += 1
            c["records"] += f.record_count
        else:
            c["delete-files"] += 1
            kind = "position" if f.content == FileContent.POSITION_DELETES else "equality"
            c["dvs" if f.is_deletion_vector else f"{kind}-delete-files"] += 1
            c[f"{kind}-deletes"] += f.record_count
    return c


def build_summary(
    operation: str,
    added: Iterable[ContentFile],
    removed: Iterable[ContentFile],
    previous: dict[str, str] | None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    added, removed = list(added), list(removed)
    a, r = _counts(added), _counts(removed)
    out: dict[str, str] = {"operation": operation}
    pairs = [
        ("added-data-files", a["data-files"]),
        ("deleted-data-files", r["data-files"]),
        ("added-delete-files", a["delete-files"]),
        ("added-position-delete-files", a["position-delete-files"]),
        ("added-equality-delete-files", a["equality-delete-files"]),
        ("removed-delete-files", r["delete-files"]),
        ("removed-position-delete-files", r["position-delete-files"]),
        ("removed-equality-delete-files", r["equality-delete-files"]),
        ("added-dvs", a["dvs"]),
        ("removed-dvs", r["dvs"]),
        ("added-records", a["records"]),
        ("deleted-records", r["records"]),
        ("added-position-deletes", a["position-deletes"]),
        ("removed-position-deletes", r["position-deletes"]),
        ("added-equality-deletes", a["equality-deletes"]),
        ("removed-equality-deletes", r["equality-deletes"]),
        ("added-files-size", a["files-size"]),
        ("removed-files-size", r["files-size"]),
    ]
    out.update({k: str(v) for k, v in pairs if v})
    partitions = {(f.spec_id, f.partition) for f in added + removed}
    out["changed-partition-count"] = str(len(partitions))
    previous = previous or {}
    # A parent without totals (another engine may omit them) leaves ours unknown too.
    if not previous or all(k in previous for k in _TOTALS):
        for total, key in _TOTALS.items():
            out[total] = str(int(previous.get(total, "0")) + a[key] - r[key])
    out.update(extra or {})
    return out
