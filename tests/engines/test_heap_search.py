"""The packed host search (a 4-ary heap of single ``(distance << bits) | vertex`` words) against
the pair heap it replaced for packed words, which still runs distance-only words: from the same
start the distances agree and so does the expansion count (each vertex is expanded once, at its
final distance, whatever the order of ties); and against a textbook Dijkstra on Python integers
(heapq), word for word. A search stopped by the poison guard (more than n expansions, reachable
here through duplicate frontier entries) leaves words that depend on the order of ties: only its
count and verdict are compared. The words are also compared with the NumPy schedule in
test_host_parts."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines import Graph
from engines.sssp.packing import INF_WORD, parent_bits

host_kernels = pytest.importorskip("engines.sssp.host_kernels")
njit = pytest.importorskip("numba").njit


@settings(deadline=None, max_examples=200)
@given(st.data())
def test_packed_heap_matches_the_pair_heap(data):
    n = data.draw(st.integers(1, 40))
    m = data.draw(st.integers(0, 4 * n))
    ends = st.lists(st.integers(0, n - 1), min_size=m, max_size=m)
    src, dst = data.draw(ends), data.draw(ends)
    w = data.draw(st.lists(st.integers(1, 3), min_size=m, max_size=m))  # small: many ties
    g = Graph.from_edges(np.array(src, np.int64), np.array(dst, np.int64), np.array(w, np.int64).reshape(m, 1),
                         num_vertices=n)
    source = data.draw(st.integers(0, n - 1))
    bound = data.draw(st.sampled_from([15, 60, 10**6]))
    bits = parent_bits(n)
    dist = np.array(data.draw(st.lists(st.one_of(st.integers(0, 30), st.none()), min_size=n, max_size=n)),
                    dtype=object)
    frontier = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n)), np.int64)  # duplicates too
    packed = np.full(n, INF_WORD, np.uint64)
    plain = np.full(n, INF_WORD, np.uint64)
    for v, d in enumerate(dist):
        if d is not None and d <= bound:
            packed[v] = (np.uint64(d) << np.uint64(bits)) | np.uint64((1 << bits) - 1)
            plain[v] = np.uint64(d)
    args = (g.row_ptr.astype(np.int64), g.col_ind, g.weight_column(0), np.int64(source))
    got = host_kernels._heap_search(packed, frontier, *args, np.int64(bits), np.int64(bound))
    want = host_kernels._heap_search_distances(plain, frontier, *args, np.int64(bound))
    assert got == want
    if not want[1]:
        return  # stopped by the poison guard: the words depend on the order of ties, the count does not
    finite = packed != np.uint64(INF_WORD)
    assert np.array_equal(finite, plain != np.uint64(INF_WORD))
    assert np.array_equal(packed[finite] >> np.uint64(bits), plain[finite])


def _oracle_search(words, frontier, row_ptr, col_ind, weight, source, bits, bound):
    """The packed search written as a textbook Dijkstra on Python integers with ``heapq`` (an
    independent oracle, not a copy of the engine's 4-ary heap): every frontier entry with a finite
    word is queued at its distance (duplicates too); a popped entry whose distance is no longer
    its vertex's is stale; an expansion offers ``(d + w) << bits | u`` to each out-neighbour but
    the source within ``bound``, keeps the smaller word and queues the neighbour when its
    distance dropped. More than n expansions stop the search (the caller's poison guard).
    Returns ((expansions, finished), words)."""
    words = [int(w) for w in words]
    n, inf = len(words), int(INF_WORD)
    queue = [(words[v] >> bits, int(v)) for v in frontier if words[v] != inf]
    heapq.heapify(queue)
    expansions = 0
    while queue:
        d, u = heapq.heappop(queue)
        if words[u] >> bits != d:
            continue
        expansions += 1
        if expansions > n:
            return (expansions, False), words
        for e in range(int(row_ptr[u]), int(row_ptr[u + 1])):
            x = int(col_ind[e])
            nd = d + int(weight[e])
            if x == source or nd > bound:
                continue
            offer, old = (nd << bits) | u, words[x]
            if offer < old:
                words[x] = offer
                if nd < old >> bits:
                    heapq.heappush(queue, (nd, x))
    return (expansions, True), words


@settings(deadline=None, max_examples=300)
@given(st.data())
def test_packed_heap_matches_a_textbook_dijkstra(data):
    """Same words and expansion count as ``_oracle_search``, from random words (finite, INF, with
    a real parent or none) and frontiers with duplicates, on graphs dense enough that the heap
    grows (from 16 entries) several times, a hub included. The words do not depend on the order
    of ties (each is the least offer of a unique fixed point), so they must agree exactly; a
    search stopped by the poison guard left order-dependent words, and only its count and
    verdict are compared."""
    n = data.draw(st.integers(1, 60))
    m = data.draw(st.integers(0, 8 * n))
    ends = st.lists(st.integers(0, n - 1), min_size=m, max_size=m)
    src, dst = data.draw(ends), data.draw(ends)
    if data.draw(st.booleans()) and n > 1:  # a hub: one row longer than the initial heap
        src, dst = src + [0] * (n - 1), dst + list(range(1, n))
    m = len(src)
    w = data.draw(st.lists(st.integers(1, data.draw(st.sampled_from([2, 5, 100]))), min_size=m, max_size=m))
    g = Graph.from_edges(np.array(src, np.int64), np.array(dst, np.int64), np.array(w, np.int64).reshape(m, 1),
                         num_vertices=n)
    source = data.draw(st.integers(0, n - 1))
    bound = data.draw(st.sampled_from([15, 60, 10**6]))
    bits = parent_bits(n)
    words = np.full(n, INF_WORD, np.uint64)
    for v in range(n):
        d = data.draw(st.one_of(st.integers(0, min(bound, 40)), st.none()))
        if d is not None:
            p = data.draw(st.integers(-1, n - 1))
            field = (1 << bits) - 1 if p < 0 else p
            words[v] = (np.uint64(d) << np.uint64(bits)) | np.uint64(field)
    frontier = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=3 * n)), np.int64)
    args = (frontier, g.row_ptr, g.col_ind, g.weight_column(0), np.int64(source), np.int64(bits), np.int64(bound))
    got_words = words.copy()
    got = host_kernels._heap_search(got_words, *args)
    want, want_words = _oracle_search(words, frontier, g.row_ptr, g.col_ind, g.weight_column(0), source, bits, bound)
    assert got == want
    if want[1]:
        assert got_words.tolist() == want_words


@settings(deadline=None, max_examples=300)
@given(st.lists(st.integers(0, 40), max_size=200))
def test_sift_down4_builds_a_heap_that_pops_in_sorted_order(values):
    """Built bottom-up with the branch-free sift, the array is a 4-ary min-heap (no child below
    its parent), and popping it (last entry to the root, sift down) yields the values sorted,
    repeated keys included."""
    heap = np.array(values, dtype=np.uint64)
    size = heap.shape[0]
    for i in range((size - 2) // 4, -1, -1):
        host_kernels._sift_down4(heap, i, size)
    assert all(heap[(c - 1) >> 2] <= heap[c] for c in range(1, size))
    popped = []
    while size > 0:
        popped.append(int(heap[0]))
        size -= 1
        heap[0] = heap[size]
        host_kernels._sift_down4(heap, 0, size)
    assert popped == sorted(values)


@settings(deadline=None, max_examples=300)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=200))
def test_sift_up4_keeps_the_heap(values):
    """Entries pushed one by one with the sift up keep the 4-ary heap property at every size."""
    heap = np.zeros(len(values), dtype=np.uint64)
    for size, v in enumerate(values, start=1):
        heap[size - 1] = v
        host_kernels._sift_up4(heap, size - 1)
        assert all(heap[(c - 1) >> 2] <= heap[c] for c in range(1, size))
    assert int(heap[0]) == min(values)
