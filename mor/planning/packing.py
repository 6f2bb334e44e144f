"""Pack scan tasks into about N groups of similar size, one group per Spark input partition.

Spark starts one Python reader per input partition, so many small partitions cost more than
they save; packing files into about `defaultParallelism` groups was measured faster than one
partition per file. Each task weighs its bytes (data plus deletes) plus a fixed open cost, as
Spark's own file source does.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from mor.planning.task import FileScanTask

OPEN_COST_BYTES = 4 << 20  # Spark's spark.sql.files.openCostInBytes default


def task_weight(task: FileScanTask) -> int:
    return task.data_file.file_size_in_bytes + sum(d.file_size_in_bytes for d in task.delete_files) + OPEN_COST_BYTES


def pack_tasks(tasks: Sequence[FileScanTask], groups: int) -> list[list[FileScanTask]]:
    """At most `groups` non-empty groups, heaviest task first onto the lightest group; within
    a group, tasks keep their planned order."""
    if not tasks:
        return []
    groups = max(1, min(groups, len(tasks)))
    heap = [(0, i) for i in range(groups)]
    members: list[list[int]] = [[] for _ in range(groups)]
    for index in sorted(range(len(tasks)), key=lambda i: -task_weight(tasks[i])):
        load, g = heapq.heappop(heap)
        members[g].append(index)
        heapq.heappush(heap, (load + task_weight(tasks[index]), g))
    return [[tasks[i] for i in sorted(m)] for m in members if m]
