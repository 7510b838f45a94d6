"""Numba kernels of the host reference that replace whole-graph NumPy passes (issue 35): the
subtree invalidation as one memoized walk up the parent pointers instead of ceil(log2 n) + 1
rounds of pointer jumping over every vertex, and the seed pull over the candidates' own in-edges
(the in-CSR the apply maintains beside the out-CSR), in time proportional to them rather than one
scan of every out-edge (12 ms on the roadNet-PA stand-in's local10k, against about 2).

Both give exactly what their NumPy references in :mod:`.host_steps` give (``invalidate_subtrees``,
``pull``): the flags and the ``parent_cycle`` condition of docs/algorithm.md §5.5, the words and the
frontier of algorithm.md §5.8 (all pulls read the words as they were after the invalidation). The
tests compare them on random parent arrays with and without cycles and on the golden corpus.

Importing this module needs Numba; :mod:`.host` uses the NumPy steps when it is missing.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from .packing import INF_WORD, Packing

# Walk states of invalidate_walk: unknown, on the walk in progress, reaches a root (flagged),
# reaches -1 without a root, reaches a cycle without a root (still jumping in the last round).
_UNKNOWN, _ON_PATH, _FLAGGED, _CLEAR, _CYCLIC = 0, 1, 2, 3, 4


@njit(nogil=True)
def _walk(parents, state, path):
    """Classify every vertex by where its parent chain ends; returns whether a chain ends in a
    cycle without a root. ``state`` comes in with the roots _FLAGGED and every other vertex
    _UNKNOWN (a root's chain ends at itself). Each vertex is walked once: a walk stops at the
    first vertex already classified (a root included, or -1, or a vertex of its own path: a
    cycle), then classifies its whole path alike, so the pass is O(n) whatever the depth of the
    tree."""
    n = parents.shape[0]
    cycle = False
    for v in range(n):
        if state[v] != _UNKNOWN:
            continue
        p = parents[v]
        if p < 0:
            state[v] = _CLEAR
            continue
        s = state[p]
        if s >= _FLAGGED:  # the parent is classified: what the walk below gives in one step
            state[v] = s
            if s == _CYCLIC:
                cycle = True
            continue
        length = 0
        u = v
        while True:
            s = state[u]
            if s == _ON_PATH:
                end = _CYCLIC  # back on this walk's own path before any root
                break
            if s != _UNKNOWN:
                end = s  # a root (_FLAGGED) or a vertex classified by an earlier walk
                break
            state[u] = _ON_PATH
            path[length] = u
            length += 1
            p = parents[u]
            if p < 0:
                end = _CLEAR
                break
            u = p
        for i in range(length):
            state[path[i]] = end
        if end == _CYCLIC:
            cycle = True
    return cycle


def invalidate_walk(parents_in: np.ndarray, roots: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(flag, cycle)`` exactly as :func:`.host_steps.invalidate_subtrees`: ``flag[v]`` iff v's
    parent chain (v included) reaches a root before -1; ``cycle`` iff some chain ends in a cycle
    without a root (a vertex still jumping in the last round of the device's pointer jumping).
    ``roots``: a boolean mask of n, or the root ids (any integer array, repeats allowed), which
    spares the caller a mask of n."""
    n = parents_in.shape[0]
    state = np.zeros(n, dtype=np.int8)
    roots = np.asarray(roots)
    if roots.dtype == np.bool_:
        state[roots] = _FLAGGED
    else:
        state[roots.astype(np.int64, copy=False)] = _FLAGGED
    path = np.empty(n, dtype=np.int64)
    # parents as they are (int32 in a result): widening them would be one more pass over n
    cycle = _walk(np.ascontiguousarray(parents_in), state, path)
    return state == _FLAGGED, bool(cycle)


@njit(nogil=True)
def _flag_subtrees(parents, roots, row_ptr, col_ind, limit, flag, queue):
    """Flag the roots and every vertex below them in the parent tree, reaching a child v of u
    through u's out-edge u -> v (``parents[v] == u``); returns how many were flagged (they are
    ``queue[:count]``, in discovery order), or -1 as soon as more than ``limit`` are (the flags
    are then incomplete). Touches the flagged vertices' out-rows only."""
    count = 0
    for i in range(roots.shape[0]):
        r = roots[i]
        if not flag[r]:
            flag[r] = True
            queue[count] = r
            count += 1
    head = 0
    while head < count:
        if count > limit:
            return -1
        u = queue[head]
        head += 1
        for e in range(row_ptr[u], row_ptr[u + 1]):
            v = col_ind[e]
            if not flag[v] and parents[v] == u:
                flag[v] = True
                queue[count] = v
                count += 1
    if count > limit:
        return -1
    return count


#: The share of the vertices above which flag_known_subtrees stops its search and walks all n
#: instead: on roadNet-PA (2 cores) the search costs about 40 ns a flagged vertex (its out-row
#: and its children's parents, scattered), the walk about 9 ns a vertex of the graph.
KNOWN_SEARCH_LIMIT = 0.125
#: flag_known_subtrees walks at once, without starting the search, when the roots times this
#: (a guess at a root's subtree) exceed the limit: a search that gives up costs the limit's worth
#: of scattered visits on top of the walk (10 ms on the roadNet-PA stand-in's safe50k: 7,079 roots,
#: 955,004 flagged; local10k: 1,418 roots, 102,755 flagged, stays below). 0 never walks at once.
KNOWN_ROOT_SPAN = 64


def flag_known_subtrees(parents_in: np.ndarray, roots: np.ndarray, row_ptr: np.ndarray,
                        col_ind: np.ndarray) -> tuple[np.ndarray, bool]:
    """:func:`invalidate_walk`'s ``(flag, cycle)`` for a *known* tree, in time proportional to the
    flagged subtrees instead of n: a tree this library's ``compute()`` / ``update()`` produced on
    G_t (api.py's ``Result._tree_known``) is acyclic (every parent is a tight in-neighbour and
    weights are >= 1, algorithm.md §2) and every parent edge p -> v is an edge of G_t. A non-root
    child keeps that edge in G_{t+1} (``row_ptr`` / ``col_ind``): deleting it, or raising its
    weight, puts (p, v) on the changed list and makes v a root. So the subtrees of the roots are
    found by a search down the out-edges, and ``cycle`` is False (no cycle to find). For any other
    tree the walk over all n vertices stays (a rootless cycle anywhere is parent_cycle).

    When more than :data:`KNOWN_SEARCH_LIMIT` of the vertices turn out flagged, the search stops
    and the walk over all n runs instead (faster there; the same flags); so it does from the start
    when there are too many roots for that limit (:data:`KNOWN_ROOT_SPAN`)."""
    n = parents_in.shape[0]
    flag = np.zeros(n, dtype=np.bool_)
    roots = np.ascontiguousarray(roots, dtype=np.int64)
    if roots.size == 0:
        return flag, False
    parents = np.ascontiguousarray(parents_in)
    limit = int(KNOWN_SEARCH_LIMIT * n)
    if roots.size * KNOWN_ROOT_SPAN > limit:
        return invalidate_walk(parents, roots)
    queue = np.empty(n, dtype=np.int64)
    if _flag_subtrees(parents, roots, row_ptr, col_ind, limit, flag, queue) < 0:
        return invalidate_walk(parents, roots)
    return flag, False


@njit(nogil=True)
def _pull_in(words, candidates, in_ptr, in_src, in_weight, bits, packed, bound, offered):
    """``offered[i]``: the key-minimum of candidate i's word and of pack(D[u] + w, u) over its
    in-edges u -> v; ``words`` is only read, so every offer sees the words after the invalidation."""
    inf = np.uint64(INF_WORD)
    for i in range(candidates.shape[0]):
        v = candidates[i]
        best = words[v]
        for e in range(in_ptr[v], in_ptr[v + 1]):
            u = in_src[e]
            x = words[u]
            if x == inf:
                continue
            nd = (x >> bits) + np.uint64(in_weight[e])
            if nd > bound:
                continue
            offer = (nd << bits) | np.uint64(u) if packed else nd
            if offer < best:
                best = offer
        offered[i] = best


def pull_in(words: np.ndarray, candidates: np.ndarray, in_ptr: np.ndarray, in_src: np.ndarray,
            in_weight: np.ndarray, packing: Packing) -> np.ndarray:
    """The seed pull of algorithm.md §7.1 step 6 over the candidates' in-edges; the same words and
    the same returned frontier as :func:`.host_steps.pull`."""
    if candidates.size == 0:
        return np.empty(0, dtype=np.int64)
    candidates = np.ascontiguousarray(candidates, dtype=np.int64)
    offered = np.empty(candidates.shape[0], dtype=np.uint64)
    bits = np.uint64(packing.bits)
    _pull_in(words, candidates, in_ptr, in_src, in_weight, bits, bool(packing.packed),
             np.uint64(packing.bound), offered)
    current = words[candidates]
    adopt = offered < current
    words[candidates[adopt]] = offered[adopt]
    decreased = (offered >> bits) < (current >> bits)
    return candidates[decreased]






@njit(nogil=True)
def _survivors_consistent(distances, parents, invalid, head, row_ptr, col_ind, weight, source,
                          inf_half, bound, lowest):
    """The scan behind :func:`survivors_are_canonical`; ``lowest`` is scratch (n)."""
    n = distances.shape[0]
    if invalid[source] or distances[source] != 0 or parents[source] != -1:
        return False
    for v in range(n):
        lowest[v] = -1
    for u in range(n):
        du = distances[u]
        if invalid[u] or du >= inf_half:
            continue
        for e in range(row_ptr[u], row_ptr[u + 1]):
            v = col_ind[e]
            if invalid[v] or head[v] or v == source:
                continue  # a head is pulled: its final word is the key-minimum of every offer
            offer = du + weight[e]
            if offer > bound:
                continue  # never packed: no constraint
            dv = distances[v]
            if dv >= inf_half or offer < dv:
                return False  # a survivor the old tree does not reach at its shortest
            if offer == dv and lowest[v] < 0:
                lowest[v] = u  # rows in increasing u: the first tight survivor is the lowest
    for v in range(n):
        if invalid[v] or head[v] or v == source:
            continue
        if distances[v] >= inf_half:
            if parents[v] != -1:
                return False
        elif parents[v] != lowest[v]:
            return False
    return True


def survivors_are_canonical(distances: np.ndarray, parents: np.ndarray, invalid: np.ndarray,
                            head: np.ndarray, row_ptr: np.ndarray, col_ind: np.ndarray,
                            weight: np.ndarray, source: int, inf_half: int, bound: int) -> bool:
    """Whether the vertices an update keeps as they are (neither ``invalid`` nor a ``head`` of an
    insertion, which the pull recomputes) already hold compute()'s tree on the new graph, as far as
    the survivors can tell: the source at (0, -1); no edge from a survivor offers such a vertex
    less than its distance (its edges in are all old ones: the kept distances are shortest, and
    what the repaired region offers, the update's propagation finds as compute() does); every
    reachable one's parent its lowest-id tight survivor in-neighbour (an invalidated in-neighbour
    that turns out tight is offered in the repair, as in compute()); an unreachable one without
    parent. Then update() and compute() give the same bytes (algorithm.md §6, §5.12), so a batch
    that invalidates most of the graph may be recomputed from scratch. One O(n + m) scan."""
    lowest = np.empty(distances.shape[0], dtype=np.int64)
    return bool(_survivors_consistent(distances, np.ascontiguousarray(parents),
                                      invalid.astype(np.bool_, copy=False),
                                      head.astype(np.bool_, copy=False), row_ptr, col_ind, weight,
                                      int(source), int(inf_half), int(bound), lowest))


@njit(nogil=True)
def _pack_start(distances, parents, bits, no_parent, packed, bound, inf_half, words):
    """The start words (words_from_tree) and the input check (host._check_inputs) in one pass;
    returns the first vertex whose finite distance is negative or above the bound, or -1."""
    n = distances.shape[0]
    inf = np.uint64(INF_WORD)
    for v in range(n):
        d = distances[v]
        if d >= inf_half:
            words[v] = inf
            continue
        if d < 0 or d > bound:
            return v
        if packed:
            p = parents[v]
            field = np.uint64(no_parent) if p < 0 else np.uint64(p)
            words[v] = (np.uint64(d) << bits) | field
        else:
            words[v] = np.uint64(d)
    return -1


def pack_start(distances: np.ndarray, parents: np.ndarray, packing: Packing, bound: int,
               inf_half: int) -> tuple[np.ndarray, int]:
    """``(words, bad)``: the words of algorithm.md §7.1 step 1 and the first vertex failing step 2's
    input check (-1 when none; the words are then incomplete and must not be used)."""
    words = np.empty(distances.shape[0], dtype=np.uint64)
    bad = _pack_start(distances, parents, np.uint64(packing.bits), int(packing.no_parent),
                      bool(packing.packed), int(bound), int(inf_half), words)
    return words, int(bad)


@njit(nogil=True)
def _write_changed(words, distances, parents, bits, no_parent, inf_distance):
    """Unpack every packed word and write the entries whose (distance, parent) differ; their
    count. The INF word unpacks to (inf_distance, -1), a ``no_parent`` field to parent -1."""
    n = words.shape[0]
    inf = np.uint64(INF_WORD)
    mask = np.uint64(no_parent)
    changed = 0
    for v in range(n):
        x = words[v]
        if x == inf:
            d = inf_distance
            p = -1
        else:
            d = np.int64(x >> bits)
            field = x & mask
            p = -1 if field == mask else np.int64(field)
        if d != distances[v] or p != parents[v]:
            distances[v] = d
            parents[v] = p
            changed += 1
    return changed


def write_changed(words: np.ndarray, distances: np.ndarray, parents: np.ndarray, packing: Packing,
                  inf_distance: int) -> int:
    """algorithm.md §7.1 step 8 for packed words, in place: what ``word_distances``/``word_parents``
    and the comparison with the input give, in one pass; returns ``affected``."""
    return int(_write_changed(words, distances, parents, np.uint64(packing.bits), int(packing.no_parent),
                              int(inf_distance)))


@njit(nogil=True)
def _clear_flagged(words, flagged, is_head, inf_word, candidates):
    count = 0
    for v in range(flagged.shape[0]):
        f = flagged[v]
        if f:
            words[v] = inf_word
        if f or is_head[v]:
            candidates[count] = v
            count += 1
    return count


def clear_flagged(words: np.ndarray, flagged: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """algorithm.md §7.1 step 6's start in one pass over n: the flagged (invalidated) vertices'
    words become INF, and the pull's candidates, the flagged vertices and ``heads``, come back
    ascending and each once (what ``np.flatnonzero`` of the two marks gives; measured on the
    roadNet-PA stand-in's local10k that was two such scans and a scattered write)."""
    n = flagged.shape[0]
    is_head = np.zeros(n, dtype=np.bool_)
    is_head[np.asarray(heads, dtype=np.int64)] = True
    candidates = np.empty(n, dtype=np.int64)
    count = _clear_flagged(words, flagged, is_head, np.uint64(INF_WORD), candidates)
    return candidates[:count]


__all__ = ["clear_flagged", "flag_known_subtrees", "invalidate_walk", "pack_start", "pull_in",
           "survivors_are_canonical", "write_changed"]
