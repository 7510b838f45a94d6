"""The packed host search (a 4-ary heap of single ``(distance << bits) | vertex`` words) against
the pair heap it replaced for packed words, which still runs distance-only words: from the same
start the distances agree and so does the expansion count (each vertex is expanded once, at its
final distance, whatever the order of ties). The words themselves are compared with the NumPy
schedule in test_host_parts."""

from __future__ import annotations

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
    finite = packed != np.uint64(INF_WORD)
    assert np.array_equal(finite, plain != np.uint64(INF_WORD))
    assert np.array_equal(packed[finite] >> np.uint64(bits), plain[finite])


@njit(nogil=True)
def _reference_sift_up4(heap, i):
    x = heap[i]
    while i > 0:
        parent = (i - 1) >> 2
        if heap[parent] <= x:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = x


@njit(nogil=True)
def _reference_sift_down4(heap, i, size):
    x = heap[i]
    while True:
        first = 4 * i + 1
        if first >= size:
            break
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


# The packed search before its loop moved into _heap_run (the heap array reassigned inside the
# loop when it grew) and before the branch-free choice of the least of four children, kept
# verbatim as the reference with its sift functions: the heap holds the same entries at the same
# positions after every step (growth copies them in place), so the pops, words and counts agree.
@njit(nogil=True)
def _reference_heap_search(words, frontier, row_ptr, col_ind, weight, source, bits, bound):
    n = words.shape[0]
    inf_word = np.uint64(INF_WORD)
    ubits = np.uint64(bits)
    vertex_mask = (np.uint64(1) << ubits) - np.uint64(1)
    ubound = np.uint64(bound)
    heap = np.empty(max(16, 2 * frontier.shape[0]), dtype=np.uint64)
    size = 0
    for i in range(frontier.shape[0]):
        v = frontier[i]
        if words[v] == inf_word:
            continue
        heap[size] = ((words[v] >> ubits) << ubits) | np.uint64(v)
        size += 1
    for i in range((size - 2) // 4, -1, -1):
        _reference_sift_down4(heap, i, size)
    expansions = 0
    while size > 0:
        top = heap[0]
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            _reference_sift_down4(heap, 0, size)
        u = np.int64(top & vertex_mask)
        d = top >> ubits
        if (words[u] >> ubits) != d:
            continue
        expansions += 1
        if expansions > n:
            return expansions, False
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
                    if size == heap.shape[0]:
                        grown = np.empty(2 * size, dtype=np.uint64)
                        grown[:size] = heap
                        heap = grown
                    heap[size] = (nd << ubits) | np.uint64(x)
                    size += 1
                    _reference_sift_up4(heap, size - 1)
    return expansions, True


@settings(deadline=None, max_examples=300)
@given(st.data())
def test_packed_heap_matches_its_previous_version(data):
    """Same words and expansion count as the search it replaced, from random words (finite,
    INF, with a real parent or none) and frontiers with duplicates, on graphs dense enough that
    the heap grows (from 16 entries) several times, a hub included."""
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
    got_words, want_words = words.copy(), words.copy()
    got = host_kernels._heap_search(got_words, *args)
    want = _reference_heap_search(want_words, *args)
    assert got == want
    assert np.array_equal(got_words, want_words)


@settings(deadline=None, max_examples=300)
@given(st.lists(st.integers(0, 40), max_size=200))
def test_sift_down4_builds_and_pops_as_before(values):
    """The branch-free sift gives the same heap, entry for entry, and pops the same sequence
    (repeated keys included: the first least child wins in both)."""
    got = np.array(values, dtype=np.uint64)
    want = got.copy()
    size = got.shape[0]
    for i in range((size - 2) // 4, -1, -1):
        host_kernels._sift_down4(got, i, size)
        _reference_sift_down4(want, i, size)
    assert np.array_equal(got, want)
    while size > 0:
        assert got[0] == want[0]
        size -= 1
        got[0], want[0] = got[size], want[size]
        host_kernels._sift_down4(got, 0, size)
        _reference_sift_down4(want, 0, size)
        assert np.array_equal(got[:size], want[:size])
