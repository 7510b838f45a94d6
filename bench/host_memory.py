"""Is there host memory enough to prepare a graph? Checked before the CSR is built, so that a file
whose ids make n huge (a 2-line edge list naming vertex 2,000,000,000) ends with exit 3 and a
message instead of the kernel's out-of-memory kill.

The estimate is what preparing holds at its peak, per vertex and per edge: building the CSR (int64
row offsets and counts, 8 (3n + m) bytes with the edges' int32 copy), the graph (its out- and
in-CSR with K = 3 int32 weight columns, the drawn int64 weights), the K initial trees (int64
distances, int32 parents) and the per-vertex arrays of the facts and the batches. What is
available is the smallest of what the system has free (``psutil``), the cgroup's memory limit
less its use, and the process's address-space limit (``ulimit -v``).
"""

from __future__ import annotations

import resource
from pathlib import Path

from .weights import NUM_OBJECTIVES

# bytes held per vertex and per edge while a graph is prepared (see the module docstring)
BYTES_PER_VERTEX = 8 * 3 + 12 * NUM_OBJECTIVES + 8 * 4
BYTES_PER_EDGE = 8 + 4 * (1 + NUM_OBJECTIVES) * 2 + 8 * NUM_OBJECTIVES + 4 * NUM_OBJECTIVES
# a vertex count this many times the edge count is most likely sparse ids, not a graph
SPARSE_IDS_FACTOR = 100
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


class NotEnoughMemory(MemoryError):
    """Preparing the graph would need more host memory than there is (exit 3)."""


def needed_bytes(num_vertices: int, num_edges: int) -> int:
    return BYTES_PER_VERTEX * int(num_vertices) + BYTES_PER_EDGE * int(num_edges)


def _cgroup_room() -> int | None:
    for limit_file, usage_file in _CGROUP_FILES:
        try:
            limit = Path(limit_file).read_text().strip()
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # "max" or a huge number: no limit
            return max(int(limit) - usage, 0)
    return None


def _address_space_room() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    import psutil

    return max(soft - psutil.Process().memory_info().vms, 0)


def available_bytes() -> int:
    """The host memory this process can still take (the smallest of the limits above)."""
    import psutil

    rooms = [psutil.virtual_memory().available, _cgroup_room(), _address_space_room()]
    return min(r for r in rooms if r is not None)


def require_memory(label: str, num_vertices: int, num_edges: int) -> None:
    """NotEnoughMemory naming ``label``, n, m, the estimate and what is available, when preparing
    this graph would not fit."""
    needed, available = needed_bytes(num_vertices, num_edges), available_bytes()
    if needed <= available:
        return
    hint = ""
    if num_vertices > SPARSE_IDS_FACTOR * max(num_edges, 1):
        hint = f"; that is over {SPARSE_IDS_FACTOR} vertices an edge: if the ids are sparse, renumber them 0 .. k - 1"
    raise NotEnoughMemory(f"{label}: n = {num_vertices:,} vertices and m = {num_edges:,} edges need about "
                          f"{needed / 1e9:,.1f} GB of host memory, but {available / 1e9:,.1f} GB is "
                          f"available{hint}")


__all__ = ["NotEnoughMemory", "available_bytes", "needed_bytes", "require_memory"]
