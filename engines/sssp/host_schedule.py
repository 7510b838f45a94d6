"""The near-far schedule of the host reference (algorithm.md §5.9, allowed by algorithm.md §7.1).

Distances below ``threshold`` are expanded in synchronous push iterations (the near list);
vertices lowered to ``>= threshold`` wait in the far pile, deduplicated by ``in_far``. When the
near list runs dry the threshold is raised to ``max(threshold, min over the pile) + delta``
(one epoch) and the pile is re-split. The result does not depend on this schedule
(algorithm.md §5.12); it only decides how much redundant work is done. The Numba heap in
:mod:`.host_kernels` is another schedule with the same final words.
"""

from __future__ import annotations

import numpy as np

from ..errors import InternalError
from .host_steps import WORD_INF, push
from .packing import Packing


class ScheduleCounts:
    """``iterations`` (push iterations), ``epochs`` (threshold raises), ``pushes`` (expansions)."""

    __slots__ = ("iterations", "epochs", "pushes")

    def __init__(self, iterations: int = 0, epochs: int = 0, pushes: int = 0):
        self.iterations = iterations
        self.epochs = epochs
        self.pushes = pushes


def propagate_near_far(words: np.ndarray, frontier: np.ndarray, row_ptr: np.ndarray, col_ind: np.ndarray,
                       weight: np.ndarray, source: int, packing: Packing, delta: int) -> ScheduleCounts:
    """Run the search from ``frontier`` (distinct vertices whose words just decreased) to the fixpoint.

    ``words`` is modified in place. Raises InternalError if one threshold phase needs more than
    n + 1 push iterations (Bellman-Ford within a phase converges in n; a safety cap only).
    """
    n = words.shape[0]
    bits = np.uint64(packing.bits)
    delta = max(int(delta), 1)  # resolved deltas are >= 1 (algorithm.md §3.5); 0 would never raise the threshold
    counts = ScheduleCounts()
    if frontier.size == 0:
        return counts
    scratch = np.empty(n, dtype=np.int64)
    in_far = np.zeros(n, dtype=bool)
    # Thresholds stay Python ints. Above max(bound, m) + 1 (m the smallest waiting distance) a
    # threshold schedules exactly like that value, since every finite word holds a distance
    # <= bound; the cap keeps it inside uint64 and still moves the smallest entry.
    dist = words[frontier] >> bits
    finite = words[frontier] != WORD_INF
    first = int(dist[finite].min()) if finite.any() else 0
    threshold = min(first + delta, max(packing.bound, first) + 1)
    near_mask = dist < np.uint64(threshold)
    near = frontier[near_mask]
    far_parts = [frontier[~near_mask]]
    in_far[far_parts[0]] = True
    phase_iterations = 0
    while True:
        if near.size:
            counts.iterations += 1
            counts.pushes += int(near.size)
            phase_iterations += 1
            if phase_iterations > n + 1:
                raise InternalError(f"host propagation did not converge within {n + 1} push iterations of a phase")
            lowered = push(words, near, row_ptr, col_ind, weight, source, packing, scratch)
            below = (words[lowered] >> bits) < np.uint64(threshold)
            near = lowered[below]
            waiting = lowered[~below]
            waiting = waiting[~in_far[waiting]]
            if waiting.size:
                in_far[waiting] = True
                far_parts.append(waiting)
            continue
        pile = np.concatenate(far_parts) if len(far_parts) > 1 else far_parts[0]
        if pile.size == 0:
            break
        counts.epochs += 1
        phase_iterations = 0
        dist = words[pile] >> bits
        smallest = int(dist.min())
        threshold = min(max(threshold, smallest) + delta, max(packing.bound, smallest) + 1)
        moving = dist < np.uint64(threshold)
        near = pile[moving]
        in_far[near] = False
        far_parts = [pile[~moving]]
    return counts


__all__ = ["ScheduleCounts", "propagate_near_far"]
