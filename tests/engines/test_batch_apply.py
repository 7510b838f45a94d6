"""Graph.apply semantics (algorithm.md §3.3, §13 item 8): hand-made cases with explicit CSR arrays
and counters, then randomized batches against the reference apply of conformance/oracles.py."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import engines

from .. import harness as H
from conformance import oracles as O

E = np.zeros(0, np.int64)


def graph(n, edges, K=1, **kw):
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] if K > 1 else [e[2]] for e in edges], dtype=np.int64).reshape(len(edges), K)
    return engines.Graph.from_edges(src, dst, w, num_vertices=n, **kw)


def assert_csr(g, row_ptr, col_ind, weights_flat):
    assert np.asarray(g.row_ptr).tolist() == row_ptr
    assert np.asarray(g.col_ind).tolist() == col_ind
    assert np.asarray(g.weights).tolist() == weights_flat


def summary(s):
    return H.summary_dict(s)


def test_apply_by_hand_every_rule():
    #  row 0: (0,1) w(10,11), (0,2) w(20,21), (0,1) w(30,31); row 1: (1,2) w(5,6); row 2: (2,2) w(7,8)
    g = graph(3, [(0, 1, [10, 11]), (0, 2, [20, 21]), (0, 1, [30, 31]), (1, 2, [5, 6]),
                  (2, 2, [7, 8])], K=2)
    assert_csr(g, [0, 3, 4, 5], [1, 2, 1, 2, 2], [10, 20, 30, 5, 7, 11, 21, 31, 6, 8])
    batch = engines.Batch(
        [0, 0, 1, 3, 2], [1, 1, 2, 0, 2], [[40, 41], [50, 9], [1, 100], [2, 2], [7, 8]],
        [0, 0, 0, 2, 9], [1, 1, 1, 0, 1],
    )
    s, d = g.apply(batch)
    # deletions first: both (0,1) copies go, the third is missing; (2,0) missing; (9,1) names a
    # vertex beyond n_after = 4: ignored and not listed. Then (0,1) is appended and immediately
    # upserted by the second insertion; (1,2) and (2,2) upsert; (3,0) grows the graph.
    assert summary(s) == dict(inserted_edges=2, updated_edges=3, deleted_edges=2,
                              ignored_deletions=3, inserted_vertices=1, num_vertices_after=4)
    assert_csr(g, [0, 2, 3, 4, 5], [2, 1, 2, 2, 0], [20, 50, 1, 7, 2, 21, 9, 100, 8, 2])
    assert g.version == 1 and g.num_vertices == 4 and g.num_edges == 5
    assert d.insert_src.tolist() == [0, 0, 1, 3, 2]
    assert d.insert_dst.tolist() == [1, 1, 2, 0, 2]
    assert d.delete_src.tolist() == [0, 0, 0, 2]
    assert d.delete_dst.tolist() == [1, 1, 1, 0]
    assert d.insert_src.dtype == np.int32 and d.delete_dst.dtype == np.int32
    assert d.weight_increased.dtype == bool
    assert d.weight_increased.tolist() == [[True, False], [True, False], [False, True],
                                           [False, False], [False, False]]
    assert d.num_vertices_before == 3 and d.num_vertices_after == 4


def test_weight_increased_compares_first_entries_even_when_the_old_first_was_deleted():
    g = graph(2, [(0, 1, 5), (0, 1, 9)])
    s, d = g.apply(engines.Batch([0], [1], [[7]], [0], [1]))
    # the 5 copy is deleted; the upsert lowers the 9 copy to 7, yet 7 > 5 (old first): increased
    assert_csr(g, [0, 1, 1], [1], [7])
    assert d.weight_increased.tolist() == [[True]]
    assert summary(s)["updated_edges"] == 1 and summary(s)["deleted_edges"] == 1

    g = graph(2, [(0, 1, 5), (0, 1, 9)])
    s, d = g.apply(engines.Batch([0], [1], [[3]], [0], [1]))
    assert_csr(g, [0, 1, 1], [1], [3])
    assert d.weight_increased.tolist() == [[False]]

    # upsert raising the first of two parallel copies; the second copy is untouched
    g = graph(2, [(0, 1, 5), (0, 1, 2)])
    s, d = g.apply(engines.Batch([0], [1], [[8]], E, E))
    assert_csr(g, [0, 2, 2], [1, 1], [8, 2])
    assert d.weight_increased.tolist() == [[True]]

    # an insertion of a pair that did not exist in G_t is never "increased"
    g = graph(2, [(1, 0, 5)])
    s, d = g.apply(engines.Batch([0, 0], [1, 1], [[4], [9]], E, E))
    assert_csr(g, [0, 1, 2], [1, 0], [9, 5])
    assert d.weight_increased.tolist() == [[False], [False]]
    assert summary(s)["inserted_edges"] == 1 and summary(s)["updated_edges"] == 1


def test_append_order_and_untouched_rows():
    g = graph(4, [(0, 1, 1), (0, 2, 2), (1, 3, 3), (2, 0, 4)])
    s, d = g.apply(engines.Batch([1, 0, 1, 3], [0, 3, 2, 3], [[5], [6], [7], [8]], [0], [1]))
    # row 0: (0,1) deleted, (0,2) kept, (0,3) appended; row 1: (1,3), then (1,0), (1,2) in batch
    # order; row 2 untouched; row 3: the self-loop appended.
    assert_csr(g, [0, 2, 5, 6, 7], [2, 3, 3, 0, 2, 0, 3], [2, 6, 3, 5, 7, 4, 8])
    assert summary(s) == dict(inserted_edges=4, updated_edges=0, deleted_edges=1,
                              ignored_deletions=0, inserted_vertices=0, num_vertices_after=4)


def test_deletion_beyond_grown_n_and_within_grown_n():
    g = graph(2, [(0, 1, 1)])
    # insertion grows n to 4; (3,0) is inside the grown range: passed on (missing); (4,0) is not
    s, d = g.apply(engines.Batch([1], [3], [[2]], [3, 4, 0], [0, 0, 5]))
    assert summary(s) == dict(inserted_edges=1, updated_edges=0, deleted_edges=0,
                              ignored_deletions=3, inserted_vertices=2, num_vertices_after=4)
    assert d.delete_src.tolist() == [3] and d.delete_dst.tolist() == [0]
    assert_csr(g, [0, 1, 2, 2, 2], [1, 3], [1, 2])


def test_empty_batch_commits_a_new_version():
    g = graph(2, [(0, 1, 1)], K=1)
    s, d = g.apply(engines.Batch.empty(3))  # an empty batch may carry any K
    assert g.version == 1
    assert summary(s) == dict(inserted_edges=0, updated_edges=0, deleted_edges=0,
                              ignored_deletions=0, inserted_vertices=0, num_vertices_after=2)
    assert d.weight_increased.shape[0] == 0
    assert_csr(g, [0, 1, 1], [1], [1])


def test_batch_attributes():
    b = engines.Batch([0, 1], [1, 2], [3, 4], [], [])
    assert b.insert_weights.shape == (2, 1) and b.num_weights == 1
    assert b.num_insertions == 2 and b.num_deletions == 0
    for a in (b.insert_src, b.insert_dst, b.insert_weights, b.delete_src, b.delete_dst):
        assert a.dtype == np.int64
    e = engines.Batch.empty(2)
    assert e.num_insertions == 0 and e.num_deletions == 0 and e.num_weights == 2


@settings(max_examples=H.examples(200))
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES), n=st.integers(1, 20),
       K=st.integers(1, 3), kind=st.sampled_from(H.BATCH_KINDS), multi=st.booleans(),
       offsets64=st.booleans())
def test_apply_matches_reference(seed, shape, n, K, kind, multi, offsets64):
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, K, "tiny", multi=multi)
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n,
                                 offset_dtype=np.int64 if offsets64 else None)
    ref = O.RefGraph.from_edge_list(n, src, dst, w)
    H.assert_graph_matches(g, ref)
    for _ in range(2):
        p = O.canonical_tree(ref.num_vertices, 0, *ref.edges(0))[1]
        arrays = H.random_batch(rng, kind, ref, p, 0, "tiny")
        app = O.ref_apply(ref, *arrays)
        s, d = g.apply(H.make_batch(arrays))
        assert H.summary_dict(s) == app.summary
        H.assert_graph_matches(g, app.graph)
        np.testing.assert_array_equal(d.insert_src, app.insert_src)
        np.testing.assert_array_equal(d.insert_dst, app.insert_dst)
        np.testing.assert_array_equal(d.delete_src, app.delete_src)
        np.testing.assert_array_equal(d.delete_dst, app.delete_dst)
        np.testing.assert_array_equal(np.asarray(d.weight_increased).reshape(app.weight_increased.shape),
                                      app.weight_increased)
        assert d.num_vertices_before == app.num_vertices_before
        assert d.num_vertices_after == app.num_vertices_after
        ref = app.graph
