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
