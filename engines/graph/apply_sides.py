"""The device apply's two sides at once (``ENGINES_APPLY_PARALLEL_SIDES``, issue 27).

A commit edits the out side (rows are sources) and the in side (rows are destinations) with the
same kernels (device_apply.cu): decide, the row offsets, the move of untouched rows, the rebuild of
touched ones. The two sides share nothing but the sorted keys and the sizes, which are ready
before either starts, so their chains can run side by side: the in side's on a second stream that
waits for the sort, the out side's (and the maxima rescan, which reads the out side alone) on the
commit's stream, which then waits for the in side before the record's download. A captured commit
(launch "graph") records the fork and the join as edges of its graph, so the replay's critical path
is one side's chain instead of both. Every write lands in the same place: the bytes do not change.

What a side writes as scratch (``SIDE_ARRAYS``: the per-entry marks, the per-row flags, length
changes and prefix sums, the staged appends, the touched rows' sums) must then be its own: the
in side gets a second copy (``SideScratch``), as large again as those of the out side (about
20 bytes a vertex and 4 an edge). With the switch off (``0``) the in side runs after the out side
on the same stream and the same scratch.
"""

from __future__ import annotations

from ..sssp.cuda import switches

#: ``ENGINES_APPLY_PARALLEL_SIDES``: the in side beside the out side (on when unset; ``0`` or
#: ``off`` runs them one after the other); read when a graph's event buffers grow (its first
#: commit, then a larger batch), like the apply's other switches. Measured on an H100 at 3ee5d2b
#: (bench/update_anatomy.py --ab-env ENGINES_APPLY_PARALLEL_SIDES=0,1, whole update() per batch
#: interleaved, median ratio on/off, fused engine): the 4,039-vertex graph's 1,760-change batches
#: 0.951 (0.233 -> 0.221 ms), luxembourg_osm's 100-change batches 0.979, roadNet-PA's 100- and
#: 20,000-change batches 0.960 and 0.975; the trees equal.
PARALLEL_SIDES_ENV = "ENGINES_APPLY_PARALLEL_SIDES"

#: The scratch a side writes (the names of device_apply.ApplyScratch's arrays): a side's chain
#: reads and clears them, so two chains at once need a copy each.
SIDE_ARRAYS = ("mark", "row_flag", "row_delta", "cum", "stage_key", "stage_ins", "touched_cum")

#: The plan's markers of the branch (device_apply._plan, _enqueue): the steps after BRANCH and
#: before MAIN run on the side stream once the commit's stream has passed what came before; the
#: steps after MAIN on the commit's stream again; JOIN makes the commit's stream wait for the side.
BRANCH, MAIN, JOIN = ("branch",), ("main",), ("join",)


def parallel_sides() -> bool:
    """``ENGINES_APPLY_PARALLEL_SIDES`` (on when unset); a bad value is an error naming it."""
    return switches.flag(PARALLEL_SIDES_ENV, default=True)


class SideScratch:
    """The in side's own scratch (``SIDE_ARRAYS``) at the out side's capacities, zeroed where the
    kernels need zeros between commits, and the stream and events of the branch."""

    __slots__ = SIDE_ARRAYS + ("stream", "forked", "joined")

    def __init__(self, cupy, m_cap: int, n_cap: int, event_cap: int):
        """``cupy``: the CuPy module of the reserve that makes it (inside its device)."""
        self.mark = cupy.zeros(m_cap, dtype=cupy.int32)
        self.row_flag = cupy.zeros(n_cap, dtype=cupy.int32)
        self.row_delta = cupy.zeros(n_cap, dtype=cupy.int64)
        self.cum = cupy.empty(n_cap, dtype=cupy.int64)
        self.stage_key = cupy.empty(event_cap, dtype=cupy.int32)
        self.stage_ins = cupy.empty(event_cap, dtype=cupy.int32)
        self.touched_cum = cupy.empty(event_cap + 1, dtype=cupy.int64)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.forked = cupy.cuda.Event(block=False, disable_timing=True)
        self.joined = cupy.cuda.Event(block=False, disable_timing=True)

    @property
    def nbytes(self) -> int:
        return sum(int(getattr(self, name).nbytes) for name in SIDE_ARRAYS)

    def zero_invariant(self):
        """The arrays that must read zero between commits (a failed commit re-zeroes them)."""
        return (self.mark, self.row_flag, self.row_delta)


__all__ = ["BRANCH", "JOIN", "MAIN", "PARALLEL_SIDES_ENV", "SIDE_ARRAYS", "SideScratch", "parallel_sides"]
