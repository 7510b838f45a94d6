"""How a push iteration spreads a near-list vertex's out-edges over lanes (algorithm.md §5.9 (c)).

Under the ``"vertex"`` expansion one lane walks all the out-edges of a vertex one after another, so
an iteration lasts as long as the longest adjacency list it holds, while most of the grid idles
when the list is short (the usual case). Under ``"group"`` a vertex's out-edges are spread over a
group of ``2^shift`` lanes of one warp, the widest group up to a warp such that the list still
fits the grid (``group_shift``). The result never depends on the width (§5.12).

``kernels.cuh push_group_shift`` is the device twin of ``group_shift`` (every thread of a push
computes it from the list's length and the launch's threads); the operators host loop sizes its
push launch with ``launch_threads`` so that the kernel finds the width this module chose.
"""

from __future__ import annotations

from ..plan import PUSH_EXPANSIONS

#: The widest group: a warp, 2^5 lanes (kernels.cuh SSSP_PUSH_GROUP_SHIFT).
MAX_GROUP_SHIFT = 5
_MAX_SHIFT = {"vertex": 0, "group": MAX_GROUP_SHIFT}
assert set(_MAX_SHIFT) == set(PUSH_EXPANSIONS)


def max_shift(expansion: str) -> int:
    """The cap of ``group_shift`` under ``expansion`` (the kernels' ``push_shift`` argument)."""
    try:
        return _MAX_SHIFT[expansion]
    except KeyError:
        raise ValueError(f"unknown push expansion {expansion!r}: expected one of "
                         f"{', '.join(PUSH_EXPANSIONS)}") from None


def group_shift(count: int, threads: int, cap: int) -> int:
    """log2 of the lanes per near-list vertex: the largest shift <= ``cap`` with
    ``count << shift <= threads``, and 0 when even one lane per vertex overfills the grid."""
    count, threads, shift = int(count), int(threads), int(cap)
    if count < 0 or threads < 1 or not 0 <= shift <= MAX_GROUP_SHIFT:
        raise ValueError(f"group_shift({count}, {threads}, {cap}): count >= 0, threads >= 1 and "
                         f"0 <= cap <= {MAX_GROUP_SHIFT} expected")
    while shift > 0 and (count << shift) > threads:
        shift -= 1
    return shift


def launch_threads(count: int, max_threads: int, cap: int) -> int:
    """The threads a push launch over ``count`` near-list vertices asks for when at most
    ``max_threads`` can run: each vertex's group, as wide as ``group_shift`` allows."""
    return int(count) << group_shift(count, max_threads, cap)


__all__ = ["MAX_GROUP_SHIFT", "group_shift", "launch_threads", "max_shift"]
