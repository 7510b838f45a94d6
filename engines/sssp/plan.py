"""What the dispatch hands an engine: the scalars fixed before the commit and the change lists.

Every engine (host, CUDA fused, CUDA operators) receives the same ``Plan`` and ``ChangeLists`` and
reports an ``EngineReport``; the dispatch (``engines.sssp.api``) owns every check, the batch
application, poisoning and the public ``Stats``. So the engines differ only in their body.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .packing import Packing


#: Upper clamp of delta on the device (both CUDA engines): thresholds stay below
#: bound + 2^62 < 2^64, so the u64 threshold never wraps; a threshold above the bound behaves the
#: same whatever its value, so results do not change.
DEVICE_DELTA_CLAMP = 1 << 62

#: How the CUDA engines' push expands a near-list vertex (engines/sssp/cuda/push.py): "vertex",
#: one lane walks its out-edges; "group", up to a warp of lanes share them (the default: on the
#: H200 it took roadNet-PA safe50k from 2.20 to 1.44 ms, local10k from 3.10 to 1.12 ms, issue
#: 26); "batched", the group's lanes relax their edges four at a time, each step's loads issued
#: together (issue 34: for the long lists that fill the grid, where a lane walks a whole vertex).
#: The host ignores it.
PUSH_EXPANSIONS = ("vertex", "group", "batched")
DEFAULT_PUSH_EXPANSION = "group"


def ceil_log2(n: int) -> int:
    """``R``: the smallest r with ``2^r >= n`` (0 for n <= 1)."""
    return max(int(n) - 1, 0).bit_length()


def pointer_jumping_rounds(n: int) -> int:
    """Every engine's round limit of the pointer jumping (docs/algorithm.md §5.5): ``R + 1``, ``R =
    ceil(log2 n)``.

    R rounds reach every root; a vertex still jumping in round R + 1 is on a parent cycle."""
    return ceil_log2(n) + 1


@dataclass(frozen=True)
class Plan:
    """Scalars of one run (algorithm.md §3.5, §4, §6).

    For ``update()`` they are fixed on G_t before the commit, with ``num_vertices`` the vertex
    count after the batch; for ``compute()`` on the current graph.
    """

    source: int
    objective: int
    num_vertices: int
    max_weight: int  # W
    delta: int  # resolved, >= 1
    packing: Packing  # .packed, .bits, .bound
    push_expansion: str = DEFAULT_PUSH_EXPANSION  # the CUDA engines' push (PUSH_EXPANSIONS)
    #: the changes of the batch an update applies (events, every objective's); 0 for compute().
    #: The CUDA engines choose the block-append module by it (engines/sssp/cuda/appends.py)
    batch_changes: int = 0

    @property
    def bound(self) -> int:
        return self.packing.bound

    @property
    def packed(self) -> bool:
        return self.packing.packed

    @property
    def device_delta(self) -> int:
        """delta as the CUDA engines pass it (clamped to DEVICE_DELTA_CLAMP)."""
        return min(int(self.delta), DEVICE_DELTA_CLAMP)


@dataclass(frozen=True)
class ChangeLists:
    """The changes of one objective (algorithm.md §3.4), vertex dtype, in the spec's order.

    ``changed_from/changed_to``: every deletion of the classification, then every insertion whose
    ``weight_increased[i, k]`` is set. ``heads``: ``insert_dst`` of every insertion, duplicates
    and the source included (the engines drop those in the heads phase).
    """

    changed_from: np.ndarray
    changed_to: np.ndarray
    heads: np.ndarray

    @property
    def num_changed(self) -> int:
        return int(self.changed_to.shape[0])


@dataclass
class EngineReport:
    """What one engine run reports; the dispatch turns it into the public ``Stats``."""

    engine_used: str  # "host", "fused", "operators"
    invalidated: int = 0
    affected: int = 0
    iterations: int = 0
    epochs: int = 0
    pushes: int = 0
    host_syncs: int = 0
    sync_budget: int = 0
    grid_syncs: int | None = None  # the fused kernel's grid barriers (its phases); None elsewhere


__all__ = ["DEFAULT_PUSH_EXPANSION", "DEVICE_DELTA_CLAMP", "PUSH_EXPANSIONS", "Plan", "ChangeLists", "EngineReport", "ceil_log2", "pointer_jumping_rounds"]
