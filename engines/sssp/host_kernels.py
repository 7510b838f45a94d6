"""Optional Numba propagation of the host reference: a binary-heap schedule
(docs/algorithm.md §7.1 allows it).

Same rules as the NumPy near-far schedule and the device push (algorithm.md §5.9): the source is
never relaxed, offers above the bound are dropped, a word is replaced only by a strictly smaller one
in key order (one uint64 comparison), and a vertex is queued again after each strict decrease of its
distance. Entries are popped in distance order, so a vertex is expanded once at its final
distance; stale heap entries (their distance no longer the vertex's) are skipped. The final words
equal those of every other schedule (algorithm.md §5.12); the counters are this schedule's own:
``iterations = pushes = expansions``, ``epochs = 0``. Ties between entries of equal distance may
pop in any order without changing either: each vertex is expanded once, at its final distance.

With packed words (the usual case) a heap entry is one uint64, ``(distance << bits) | vertex``:
it fits exactly as a packed word does, and a 4-ary heap of single words moves half the bytes of
a binary heap of (key, vertex) pairs and is half as deep. Measured on the roadNet-PA stand-in's
local10k repair (183,521 expansions, 2 cores): 36 ms with the pair heap, 26 ms with this one;
18 ms once its loop (:func:`_heap_run`) kept one heap array and the least of four children was
chosen without branches. A bucket queue by distance and a radix heap over the packed keys pop the
same sequence (every pushed key exceeds the last popped: weights are >= 1) but measured no faster
there (20 and 34 ms): what is left is mostly the relaxations' reads of ``words``.
Distance-only words (bits = 0) leave no room for the vertex, so they keep the pair heap.

Importing this module needs Numba; :mod:`.host` falls back to NumPy when it is missing.
"""

from __future__ import annotations

import numpy as np

from ..errors import InternalError
from ..jit import njit
from .host_schedule import ScheduleCounts
from .packing import INF_WORD, Packing


@njit(nogil=True)
def _sift_up(keys, verts, i):
    key = keys[i]
    vert = verts[i]
    while i > 0:
        parent = (i - 1) >> 1
        if keys[parent] <= key:
            break
        keys[i] = keys[parent]
        verts[i] = verts[parent]
        i = parent
    keys[i] = key
    verts[i] = vert


@njit(nogil=True)
def _sift_down(keys, verts, i, size):
    key = keys[i]
    vert = verts[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and keys[child + 1] < keys[child]:
            child += 1
        if keys[child] >= key:
            break
        keys[i] = keys[child]
        verts[i] = verts[child]
        i = child
    keys[i] = key
    verts[i] = vert


@njit(nogil=True)
def _heap_run_distances(words, keys, verts, size, expansions, row_ptr, col_ind, weight, source, bound):
    """:func:`_heap_run` for distance-only words and the pair heap: pop and expand until the heap
    is empty or the next expansion might not fit (the top then not yet popped); returns (size,
    expansions, status, needed) as :func:`_heap_run` does. ``keys`` and ``verts`` are never
    reassigned in here, for the same code-generation reason."""
    n = words.shape[0]
    capacity = keys.shape[0]
    ubound = np.uint64(bound)
    while size > 0:
        u = verts[0]
        needed = size - 1 + (row_ptr[u + 1] - row_ptr[u])  # at most one entry per out-edge
        if needed > capacity:
            return size, expansions, 1, needed
        d = keys[0]
        size -= 1
        if size > 0:
            keys[0] = keys[size]
            verts[0] = verts[size]
            _sift_down(keys, verts, 0, size)
        if words[u] != d:
            continue  # stale: u was lowered after this entry was queued
        expansions += 1
        if expansions > n:
            return size, expansions, 2, 0
        for e in range(row_ptr[u], row_ptr[u + 1]):
            x = col_ind[e]
            if x == source:
                continue
            nd = d + np.uint64(weight[e])
            if nd > ubound:
                continue
            if nd < words[x]:
                words[x] = nd
                keys[size] = nd
                verts[size] = x
                size += 1
                _sift_up(keys, verts, size - 1)
    return size, expansions, 0, 0


@njit(nogil=True)
def _heap_search_distances(words, frontier, row_ptr, col_ind, weight, source, bound):
    """The search for distance-only words (a binary heap of (distance, vertex) pairs); returns
    (expansions, ok), ``ok`` False if the safety cap (n expansions) was exceeded. The loop is
    :func:`_heap_run_distances`; this grows the heap between its calls (the same entries at the
    same places: growing never reorders it)."""
    inf_word = np.uint64(INF_WORD)
    capacity = max(16, 2 * frontier.shape[0])
    keys = np.empty(capacity, dtype=np.uint64)
    verts = np.empty(capacity, dtype=np.int64)
    size = 0
    for i in range(frontier.shape[0]):
        v = frontier[i]
        if words[v] == inf_word:
            continue
        keys[size] = words[v]
        verts[size] = v
        size += 1
    for i in range(size // 2 - 1, -1, -1):  # bottom-up heap construction, O(size)
        _sift_down(keys, verts, i, size)
    expansions = 0
    while True:
        size, expansions, status, needed = _heap_run_distances(words, keys, verts, size, expansions, row_ptr,
                                                               col_ind, weight, source, bound)
        if status == 0:
            return expansions, True
        if status == 2:
            return expansions, False
        capacity = max(2 * keys.shape[0], needed)
        grown_keys = np.empty(capacity, dtype=np.uint64)
        grown_verts = np.empty(capacity, dtype=np.int64)
        grown_keys[:size] = keys[:size]
        grown_verts[:size] = verts[:size]
        keys = grown_keys
        verts = grown_verts


@njit(nogil=True)
def _sift_up4(heap, i):
    x = heap[i]
    while i > 0:
        parent = (i - 1) >> 2
        if heap[parent] <= x:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = x


@njit(nogil=True)
def _sift_down4(heap, i, size):
    x = heap[i]
    while True:
        first = 4 * i + 1
        if first >= size:
            break
        if first + 3 < size:
            # four children: the least (the first on ties, as the loop below) without a branch
            # per comparison; about a tenth faster on the roadNet-PA stand-in's searches
            a = heap[first]
            b = heap[first + 1]
            c = heap[first + 2]
            d = heap[first + 3]
            left = first + 1 if b < a else first
            low = b if b < a else a
            right = first + 3 if d < c else first + 2
            high = d if d < c else c
            best = right if high < low else left
            least = high if high < low else low
            if least >= x:
                break
            heap[i] = least
            i = best
            continue
        best = first
        least = heap[first]
        for c in range(first + 1, min(first + 4, size)):
            if heap[c] < least:
                least = heap[c]
                best = c
        if least >= x:
            break
        heap[i] = least
        i = best
    heap[i] = x


@njit(nogil=True)
def _heap_run(words, heap, size, expansions, row_ptr, col_ind, weight, source, bits, bound, cap):
    """Pop and expand until the heap is empty, or until the next expansion might not fit in
    ``heap`` (its entries then untouched, the top not yet popped); returns (size, expansions,
    status, needed): status 0 done, 1 grow to at least ``needed`` entries, 2 ``cap`` expansions
    were done (the next top put back, not expanded: the search may go on). ``heap`` is never
    reassigned in here: a heap array that the loop may replace costs Numba about a third of the
    search (measured on local10k, 30 against 22 ms)."""
    capacity = heap.shape[0]
    ubits = np.uint64(bits)
    vertex_mask = (np.uint64(1) << ubits) - np.uint64(1)
    ubound = np.uint64(bound)
    while size > 0:
        top = heap[0]
        u = np.int64(top & vertex_mask)
        needed = size - 1 + (row_ptr[u + 1] - row_ptr[u])  # at most one entry per out-edge
        if needed > capacity:
            return size, expansions, 1, needed
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            _sift_down4(heap, 0, size)
        d = top >> ubits
        if (words[u] >> ubits) != d:
            continue  # stale: u was lowered after this entry was queued
        expansions += 1
        if expansions > cap:  # put the top back (the least entry: it goes back to the root)
            heap[size] = top
            size += 1
            _sift_up4(heap, size - 1)
            return size, expansions - 1, 2, 0
        uu = np.uint64(u)
        for e in range(row_ptr[u], row_ptr[u + 1]):
            x = col_ind[e]
            if x == source:
                continue
            nd = d + np.uint64(weight[e])
            if nd > ubound:
                continue
            offer = (nd << ubits) | uu
            old = words[x]
            if offer < old:
                words[x] = offer
                if nd < (old >> ubits):
                    heap[size] = (nd << ubits) | np.uint64(x)
                    size += 1
                    _sift_up4(heap, size - 1)
    return size, expansions, 0, 0


@njit(nogil=True)
def _heap_search_stoppable(words, frontier, row_ptr, col_ind, weight, source, bits, bound, stop, chunk):
    """The search for packed words: a 4-ary heap of ``(distance << bits) | vertex`` entries
    (module docstring); returns (expansions, status): 0 done, 1 the safety cap (n expansions)
    was exceeded, 2 stopped: ``stop[0]`` was found set, looked at every ``chunk`` expansions (the
    words are then partial). The loop is :func:`_heap_run`; this grows the heap between its
    calls."""
    n = words.shape[0]
    inf_word = np.uint64(INF_WORD)
    ubits = np.uint64(bits)
    heap = np.empty(max(16, 2 * frontier.shape[0]), dtype=np.uint64)
    size = 0
    for i in range(frontier.shape[0]):
        v = frontier[i]
        if words[v] == inf_word:
            continue
        heap[size] = ((words[v] >> ubits) << ubits) | np.uint64(v)
        size += 1
    for i in range((size - 2) // 4, -1, -1):  # bottom-up heap construction, O(size)
        _sift_down4(heap, i, size)
    expansions = 0
    while True:
        cap = min(n, expansions + chunk)
        size, expansions, status, needed = _heap_run(words, heap, size, expansions, row_ptr, col_ind,
                                                     weight, source, bits, bound, cap)
        if status == 0:
            return expansions, 0
        if status == 2:
            if expansions >= n:
                return expansions, 1
            if stop[0] != 0:
                return expansions, 2
            continue
        grown = np.empty(max(2 * heap.shape[0], needed), dtype=np.uint64)
        grown[:size] = heap[:size]
        heap = grown


@njit(nogil=True)
def _heap_search(words, frontier, row_ptr, col_ind, weight, source, bits, bound):
    """:func:`_heap_search_stoppable` without a stop: (expansions, ok), ``ok`` False (and
    expansions n + 1) where the safety cap was exceeded."""
    expansions, status = _heap_search_stoppable(words, frontier, row_ptr, col_ind, weight, source, bits,
                                                bound, np.zeros(1, dtype=np.uint8), words.shape[0])
    if status == 1:
        return expansions + 1, False
    return expansions, True


#: How many expansions a stoppable search (``stop`` given) does between two looks at its flag:
#: about 3 ms on the roadNet-PA stand-in.
STOP_CHUNK = 1 << 14

_NO_STOP = np.zeros(1, dtype=np.uint8)


def propagate_heap(words: np.ndarray, frontier: np.ndarray, row_ptr: np.ndarray, col_ind: np.ndarray,
                   weight: np.ndarray, source: int, packing: Packing, stop: np.ndarray | None = None
                   ) -> ScheduleCounts | None:
    """Run the search from ``frontier`` to the fixpoint, modifying ``words`` in place.

    ``stop``: a one-element uint8 array another thread may set (packed words only); the search
    then returns None early, ``words`` partial (the kernels release the GIL)."""
    frontier = np.ascontiguousarray(frontier, dtype=np.int64)
    if packing.packed:
        chunk = words.shape[0] if stop is None else STOP_CHUNK
        expansions, status = _heap_search_stoppable(words, frontier, row_ptr, col_ind, weight,
                                                    np.int64(source), np.int64(packing.bits),
                                                    np.int64(packing.bound),
                                                    _NO_STOP if stop is None else stop, np.int64(chunk))
        if status == 2:
            return None
        ok = status == 0
    else:
        if stop is not None:
            raise InternalError("a stoppable host propagation needs packed words")
        expansions, ok = _heap_search_distances(words, frontier, row_ptr, col_ind, weight,
                                                np.int64(source), np.int64(packing.bound))
    if not ok:
        raise InternalError(f"host propagation expanded more than n = {words.shape[0]} vertices")
    return ScheduleCounts(iterations=int(expansions), epochs=0, pushes=int(expansions))


__all__ = ["propagate_heap"]
