"""Vectorized NumPy building blocks of the host reference engine (algorithm.md §7).

The engine works on one uint64 *word* per vertex, exactly like the device (algorithm.md §4): in
packed mode ``word = (d << bits) | parent_field`` and unsigned comparison is the key order
(distance, then parent id, "no parent" largest); in distance-only mode ``bits = 0`` and ``word =
d``, so comparing words compares distances only and ties never replace anything. Unreachable is the
all-ones word. Because every finite word holds a distance ``<= bound <= max_distance(bits)``
(candidates above the bound are dropped before packing), every candidate fits and one comparison
does it all.

Each function here is one phase: the old-tree invalidation (pointer jumping with the device's
``R + 1`` rounds, which also detects parent cycles), the seed pull, one push iteration of the
near-far schedule, the parent recovery of distance-only mode, and pack/unpack.
"""

from __future__ import annotations

import numpy as np

from .packing import INF_HALF, INF_WORD, INFINITE_DISTANCE, Packing
from .plan import pointer_jumping_rounds

WORD_INF = np.uint64(INF_WORD)
_EMPTY_IDS = np.empty(0, dtype=np.int64)


def gather_rows(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edge positions of the given CSR rows, concatenated: ``(positions int64, row lengths)``.

    ``np.repeat`` of each row's start minus its output offset, plus a running index, gives every
    position without a Python loop.
    """
    starts = ptr[rows].astype(np.int64)
    lens = ptr[rows + 1].astype(np.int64) - starts
    total = int(lens.sum())
    if total == 0:
        return _EMPTY_IDS, lens
    out_begin = np.cumsum(lens) - lens
    positions = np.repeat(starts - out_begin, lens) + np.arange(total, dtype=np.int64)
    return positions, lens


def unique_ids(ids: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """Drop duplicate vertex ids without sorting.

    Every occurrence writes its own index into ``scratch`` (length n); whichever write survives,
    exactly one occurrence per id reads its own index back. Order of the result is free.
    """
    if ids.size <= 1:
        return ids
    idx = np.arange(ids.size, dtype=np.int64)
    scratch[ids] = idx
    return ids[scratch[ids] == idx]


def invalidate_subtrees(parents_in: np.ndarray, roots: np.ndarray) -> tuple[np.ndarray, bool]:
    """Pointer jumping of algorithm.md §5.5: ``(flag, cycle)``.

    ``flag[v]`` is set iff following ``parents_in`` from v (v included) reaches a root before -1.
    ``cycle`` is the device's ``parent_cycle`` condition: some vertex still jumps in the last of
    ``R + 1`` rounds, which happens exactly when the parents have a cycle without a root.
    Rounds are synchronous (every read sees the previous round), a valid schedule of the
    in-place device rounds: each pointer still at least doubles its reach and never passes a root.
    """
    n = parents_in.shape[0]
    ancestor = parents_in.astype(np.int64)
    flag = roots.copy()
    active = np.flatnonzero((ancestor >= 0) & ~flag)
    max_rounds = pointer_jumping_rounds(n)
    jumped = False
    rounds = 0
    for r in range(max_rounds):
        rounds = r + 1
        if active.size == 0:
            jumped = False
            break
        a = ancestor[active]
        reached = flag[a]
        rest = active[~reached]
        nxt = ancestor[a[~reached]]
        flag[active[reached]] = True
        ancestor[rest] = nxt
        moving = nxt >= 0
        jumped = bool(moving.any())
        active = rest[moving]
        if not jumped:
            break
    cycle = rounds == max_rounds and rounds > 0 and jumped
    return flag, cycle


def words_from_tree(distances: np.ndarray, parents: np.ndarray, packing: Packing) -> np.ndarray:
    """The start state of algorithm.md §7.1 step 1 as words: INF word where ``d >= INF/2``, else
    ``pack(d, p)``.

    The input check has already ensured that every finite distance is in ``[0, bound]``.
    """
    finite = distances < INF_HALF
    words = np.full(distances.shape, WORD_INF, dtype=np.uint64)
    d = distances[finite].astype(np.uint64)
    if packing.packed:
        p = parents[finite].astype(np.int64)
        field = np.where(p < 0, packing.no_parent, p).astype(np.uint64)
        words[finite] = (d << np.uint64(packing.bits)) | field
    else:
        words[finite] = d
    return words


def word_distances(words: np.ndarray, packing: Packing) -> np.ndarray:
    """int64 distances of words, INF for the INF word."""
    inf = words == WORD_INF
    d = (words >> np.uint64(packing.bits)).astype(np.int64)
    d[inf] = INFINITE_DISTANCE
    return d


def word_parents(words: np.ndarray, packing: Packing, vertex_dtype) -> np.ndarray:
    """Parents of packed words: the field, with ``no_parent`` and the INF word giving -1."""
    field = (words & np.uint64(packing.no_parent)).astype(np.int64)
    field[(field == packing.no_parent) | (words == WORD_INF)] = -1
    return field.astype(vertex_dtype)


def recover_parents(distances: np.ndarray, in_ptr: np.ndarray, in_src: np.ndarray, in_weight: np.ndarray,
                    source: int, vertex_dtype) -> np.ndarray:
    """Parent recovery of distance-only mode (algorithm.md §4.4).

    -1 for unreachable vertices and the source; otherwise the lowest-id u with a tight in-edge
    ``D[u] + w == D[x]`` (``D[u]`` finite), or VMAX (the vertex type's maximum) if there is none.
    Works on the in-CSR, whose rows are the segments of a minimum reduction.
    """
    n = distances.shape[0]
    vmax = np.iinfo(vertex_dtype).max
    indeg = np.diff(in_ptr.astype(np.int64))
    head = np.repeat(np.arange(n, dtype=np.int64), indeg)
    d_src = distances[in_src]
    tight = (d_src < INF_HALF) & (d_src + in_weight == distances[head])
    offered = np.where(tight, in_src.astype(np.int64), vmax)
    parents = np.full(n, vmax, dtype=np.int64)
    rows = np.flatnonzero(indeg > 0)
    if rows.size:
        parents[rows] = np.minimum.reduceat(offered, in_ptr[rows].astype(np.int64))
    parents[distances >= INF_HALF] = -1
    parents[source] = -1
    return parents.astype(vertex_dtype)


def pull(words: np.ndarray, candidates: np.ndarray, in_ptr: np.ndarray, in_src: np.ndarray,
         in_weight: np.ndarray, packing: Packing) -> np.ndarray:
    """The seed pull of algorithm.md §5.8, §7.1 step 6; returns the candidates whose distance
    decreased.

    Each candidate takes the key-minimum of ``pack(D[u] + w, u)`` over all its in-edges (finite
    ``D[u]``, ``D[u] + w <= bound``) and adopts it if strictly smaller than its own word. All pulls
    read the words as they were after the invalidation (a valid schedule of concurrent pulls).
    """
    if candidates.size == 0:
        return _EMPTY_IDS
    bits = np.uint64(packing.bits)
    positions, lens = gather_rows(in_ptr, candidates)
    current = words[candidates]
    best = current.copy()
    if positions.size:
        src = in_src[positions]
        x = words[src]
        live = np.flatnonzero(x != WORD_INF)
        offers = np.full(positions.size, WORD_INF, dtype=np.uint64)
        nd = (x[live] >> bits) + in_weight[positions[live]].astype(np.uint64)
        fits = nd <= np.uint64(packing.bound)
        live, nd = live[fits], nd[fits]
        if packing.packed:
            offers[live] = (nd << bits) | src[live].astype(np.uint64)
        else:
            offers[live] = nd
        has_edges = np.flatnonzero(lens > 0)
        seg_start = (np.cumsum(lens) - lens)[has_edges]
        best[has_edges] = np.minimum(best[has_edges], np.minimum.reduceat(offers, seg_start))
    adopt = best < current
    words[candidates[adopt]] = best[adopt]
    decreased = (best >> bits) < (current >> bits)
    return candidates[decreased]


def push(words: np.ndarray, near: np.ndarray, row_ptr: np.ndarray, col_ind: np.ndarray, weight: np.ndarray,
         source: int, packing: Packing, scratch: np.ndarray) -> np.ndarray:
    """One push iteration (algorithm.md §5.9 (c)); returns the distinct vertices whose distance
    decreased.

    Every vertex of ``near`` offers ``pack(D[u] + w, u)`` along each out-edge (the source is never
    relaxed, offers above the bound are dropped); ``np.minimum.at`` applies all offers like the
    device's atomicMin, so a target keeps the key-minimum. A parent-only win (same distance, lower
    id) changes the word but does not re-queue the target.
    """
    x = words[near]
    live = x != WORD_INF
    u = near[live]
    if u.size == 0:
        return _EMPTY_IDS
    bits = np.uint64(packing.bits)
    du = x[live] >> bits
    positions, lens = gather_rows(row_ptr, u)
    if positions.size == 0:
        return _EMPTY_IDS
    tgt = col_ind[positions]
    nd = np.repeat(du, lens) + weight[positions].astype(np.uint64)
    keep = (nd <= np.uint64(packing.bound)) & (tgt != source)
    if packing.packed:
        offers = (nd << bits) | np.repeat(u.astype(np.uint64), lens)
    else:
        offers = nd
    tgt, offers = tgt[keep], offers[keep]
    before = words[tgt]
    better = offers < before
    tgt, offers, before = tgt[better], offers[better], before[better]
    if tgt.size == 0:
        return _EMPTY_IDS
    np.minimum.at(words, tgt, offers)
    decreased = (words[tgt] >> bits) < (before >> bits)
    return unique_ids(tgt[decreased].astype(np.int64), scratch)


__all__ = [
    "WORD_INF",
    "gather_rows",
    "unique_ids",
    "invalidate_subtrees",
    "words_from_tree",
    "word_distances",
    "word_parents",
    "recover_parents",
    "pull",
    "push",
]
