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

#: The scratch a side writes, by the capacity that sizes it (device_apply.ApplyScratch's groups:
#: old entries, rows, events): ``(name, dtype, zeroed, slots past the capacity)``. A side's chain
#: reads and clears them, so two chains at once need a copy each; the zeroed ones must read zero
#: between commits (each is cleared by the kernel that consumes it).
SIDE_GROUPS = {
    "entries": (("mark", "int32", True, 0),),
    "rows": (("row_flag", "int32", True, 0), ("row_delta", "int64", True, 0), ("cum", "int64", False, 0)),
    # the touched rows' sums: one slot per event and the total
    "events": (("stage_key", "int32", False, 0), ("stage_ins", "int32", False, 0),
               ("touched_cum", "int64", False, 1)),
}
#: Their names, and those that must read zero between commits.
SIDE_ARRAYS = tuple(spec[0] for group in SIDE_GROUPS.values() for spec in group)
ZERO_INVARIANT = tuple(spec[0] for group in SIDE_GROUPS.values() for spec in group if spec[2])

#: The plan's markers of the branch (device_apply._plan, _enqueue): the steps after BRANCH and
#: before MAIN run on the side stream once the commit's stream has passed what came before; the
#: steps after MAIN on the commit's stream again; JOIN makes the commit's stream wait for the side.
BRANCH, MAIN, JOIN = ("branch",), ("main",), ("join",)


def allocate(cupy, owner, group: str, capacity: int) -> None:
    """``owner``'s side scratch of ``group`` (SIDE_GROUPS) at ``capacity``: the out side's on
    device_apply.ApplyScratch, the in side's on SideScratch, from the same table. The old arrays
    are dropped first, so that a growth does not hold both sizes at once."""
    specs = SIDE_GROUPS[group]
    for name, *_ in specs:
        setattr(owner, name, None)
    for name, dtype, zeroed, extra in specs:
        make = cupy.zeros if zeroed else cupy.empty
        setattr(owner, name, make(capacity + extra, dtype=getattr(cupy, dtype)))


def parallel_sides() -> bool:
    """``ENGINES_APPLY_PARALLEL_SIDES`` (on when unset); a bad value is an error naming it."""
    return switches.flag(PARALLEL_SIDES_ENV, default=True)


class SideScratch:
    """The in side's own scratch (``SIDE_ARRAYS``) at the out side's capacities, zeroed where the
    kernels need zeros between commits, and the stream and events of the branch."""

    __slots__ = SIDE_ARRAYS + ("stream", "forked", "joined")

    def __init__(self, cupy, m_cap: int, n_cap: int, event_cap: int):
        """``cupy``: the CuPy module of the reserve that makes it (inside its device)."""
        for group, capacity in (("entries", m_cap), ("rows", n_cap), ("events", event_cap)):
            allocate(cupy, self, group, capacity)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.forked = cupy.cuda.Event(block=False, disable_timing=True)
        self.joined = cupy.cuda.Event(block=False, disable_timing=True)

    @property
    def nbytes(self) -> int:
        return sum(int(getattr(self, name).nbytes) for name in SIDE_ARRAYS)


__all__ = ["BRANCH", "JOIN", "MAIN", "PARALLEL_SIDES_ENV", "SIDE_ARRAYS", "SIDE_GROUPS", "SideScratch",
           "ZERO_INVARIANT", "allocate", "parallel_sides"]
