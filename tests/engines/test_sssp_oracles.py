"""compute() and update() against the independent oracles (algorithm.md §5.12, §6, §13 items 1, 4, 7).

The first group checks the oracles themselves (brute force, and the spec's claims about the closed
form), so that an engine bug and an oracle bug cannot hide each other.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engines
from engines import sssp

from .. import harness as H
from conformance import oracles as O

# --------------------------------------------------------------------------------------------
# The oracles against brute force
# --------------------------------------------------------------------------------------------


def bellman_ford(n, src, dst, w, source):
    d = [O.INF] * n
    d[source] = 0
    for _ in range(n):
        changed = False
        for u, v, x in zip(src.tolist(), dst.tolist(), w.tolist()):
            if d[u] < O.INF and d[u] + x < d[v]:
                d[v] = d[u] + x
                changed = True
        if not changed:
            break
    return np.array(d, dtype=np.int64)


@settings(max_examples=H.examples(60))
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES),
       wclass=st.sampled_from(H.WEIGHT_CLASSES), n=st.integers(1, 25), multi=st.booleans())
def test_oracle_dijkstra_equals_bellman_ford(seed, shape, wclass, n, multi):
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, 1, wclass, multi=multi)
    s = int(rng.integers(0, n))
    np.testing.assert_array_equal(O.dijkstra_distances(n, src, dst, w[:, 0], s),
                                  bellman_ford(n, src, dst, w[:, 0], s))


def test_oracle_dijkstra_uses_the_lightest_parallel_copy():
    src, dst, w = np.array([0, 0, 1, 1]), np.array([1, 1, 1, 2]), np.array([5, 2, 1, 3])
    assert O.dijkstra_distances(3, src, dst, w, 0).tolist() == [0, 2, 5]
    assert O.dijkstra_distances(3, src, dst, w, 2).tolist() == [O.INF, O.INF, 0]


@settings(max_examples=H.examples(60))
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES),
       wclass=st.sampled_from(("tiny", "mid")), n=st.integers(2, 25),
       kinds=st.lists(st.sampled_from(H.BATCH_KINDS), min_size=1, max_size=3))
def test_oracle_closed_form_claims(seed, shape, wclass, n, kinds):
    """algorithm.md §5.12: from a canonical tree the closed form is the canonical tree of G_{t+1};
    from a perturbed one it is a valid tree with the right distances."""
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, 1, wclass, multi=True)
    ref = O.RefGraph.from_edge_list(n, src, dst, w)
    s = int(rng.integers(0, n))
    d, p = O.canonical_tree(n, s, *ref.edges(0))
    pert = O.perturbed_parents(rng, n, s, d, *ref.edges(0))
    for kind in kinds:
        arrays = H.random_batch(rng, kind, ref, p, s, wclass)
        app = O.ref_apply(ref, *arrays)
        n2 = app.num_vertices_after
        e = app.graph.edges(0)
        d_star, canon = O.canonical_tree(n2, s, *e)
        cf, ct, heads = O.change_lists(app, 0)
        for p_in, is_canon in ((p, True), (pert, False)):
            flagged = O.invalidated_set(O.grow(d, p_in, n2)[1], cf, ct)
            for packed in (True, False):
                od, op = O.closed_form(n2, s, *e, d_star, d, p_in, flagged, heads, packed)
                np.testing.assert_array_equal(od, d_star)
                if is_canon or not packed:
                    np.testing.assert_array_equal(op, canon)
                reach = (d_star < O.INF) & (np.arange(n2) != s)
                assert (op[~reach] == -1).all()
                pr = op[reach]
                assert (pr >= 0).all()
                # every parent is tight
                pairs = set(zip(e[0].tolist(), e[1].tolist(), e[2].tolist()))
                for v in np.flatnonzero(reach):
                    u = int(op[v])
                    assert any((u, int(v), x) in pairs for x in [int(d_star[v] - d_star[u])])
        ref = app.graph
        d, p = d_star, canon
        pert = O.perturbed_parents(rng, n2, s, d, *e)


def test_oracle_invalidated_set_by_hand():
    #   0 -> 1 -> 2 -> 3 ; 1 -> 4 ; 5 unreachable
    p = np.array([-1, 0, 1, 2, 1, -1])
    flagged = O.invalidated_set(p, np.array([1, 9]), np.array([2, 4]))
    assert flagged.tolist() == [False, False, True, True, False, False]  # (9,4) is not a tree edge
    assert not O.invalidated_set(p, np.zeros(0, int), np.zeros(0, int)).any()
    cyc = np.array([-1, 2, 1])
    with pytest.raises(O.RootlessCycle):
        O.invalidated_set(cyc, np.array([0]), np.array([0]))
    # a cycle through a root is fine: its vertices are flagged
    assert O.invalidated_set(cyc, np.array([2]), np.array([1])).tolist() == [False, True, True]


def test_oracle_valid_tree_accepts_any_tight_parent_and_nothing_else():
    """is_valid_tree (what the golden generator checks perturbed input trees with), by hand."""
    #   0 -> 1 (1), 0 -> 2 (1), 1 -> 3 (1), 2 -> 3 (1), 1 -> 2 (5); 4 unreachable
    src, dst, w = np.array([0, 0, 1, 2, 1]), np.array([1, 2, 3, 3, 2]), np.array([1, 1, 1, 1, 5])
    d, p = O.canonical_tree(5, 0, src, dst, w)
    assert d.tolist() == [0, 1, 1, 2, O.INF] and p.tolist() == [-1, 0, 0, 1, -1]
    assert O.is_valid_tree(5, 0, d, p, src, dst, w) is None
    assert O.is_valid_tree(5, 0, d, [-1, 0, 0, 2, -1], src, dst, w) is None  # the other tie parent
    assert "not a tight in-neighbour" in O.is_valid_tree(5, 0, d, [-1, 0, 1, 1, -1], src, dst, w)
    assert "source has a parent" in O.is_valid_tree(5, 0, d, [1, 0, 0, 1, -1], src, dst, w)
    assert "unreachable" in O.is_valid_tree(5, 0, d, [-1, 0, 0, 1, 3], src, dst, w)
    assert "Dijkstra says" in O.is_valid_tree(5, 0, [0, 1, 1, 3, O.INF], p, src, dst, w)
    # perturbed_parents draws among the tight in-neighbours only
    rng = np.random.default_rng(3)
    seen = {int(O.perturbed_parents(rng, 5, 0, d, src, dst, w)[3]) for _ in range(40)}
    assert seen == {1, 2}


# --------------------------------------------------------------------------------------------
# compute()
# --------------------------------------------------------------------------------------------


def build(n, src, dst, w, **kw):
    return engines.Graph.from_edges(src, dst, w, num_vertices=n, **kw)


@settings(max_examples=H.examples(100))
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES),
       wclass=st.sampled_from(H.WEIGHT_CLASSES), n=st.integers(1, 60), K=st.integers(1, 3),
       multi=st.booleans(), delta=st.one_of(st.just(0), st.integers(1, 300)))
def test_compute_matches_oracles(seed, shape, wclass, n, K, multi, delta):
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, K, wclass, multi=multi)
    g = build(n, src, dst, w)
    s = int(rng.integers(0, n))
    for k in range(K):
        r = H.check_compute(g, s, objective=k, delta=delta)
        assert r.options.objective == k
        assert r.source == s and r.backend == "host"


def test_compute_offsets_int64_same_bytes():
    rng = np.random.default_rng(7)
    n, src, dst, w = H.random_graph(rng, "sparse", 60, 2, "tiny", multi=True)
    g32 = build(n, src, dst, w)
    g64 = build(n, src, dst, w, offset_dtype=np.int64)
    assert g64.offset_dtype == np.int64
    for k in range(2):
        a = sssp.compute(g32, 3, objective=k)
        b = H.check_compute(g64, 3, objective=k)
        H.assert_result_bytes_equal(a, b)


def test_compute_single_vertex():
    g = build(1, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 1), np.int64))
    r = H.check_compute(g, 0)
    d, p = r.to_numpy()
    assert d.tolist() == [0] and p.tolist() == [-1]
    g2 = build(1, np.array([0]), np.array([0]), np.array([[5]]))  # only a self-loop
    H.check_compute(g2, 0)


# --------------------------------------------------------------------------------------------
# update(): canonical and perturbed inputs, closed form
# --------------------------------------------------------------------------------------------


@settings(max_examples=H.examples(200))
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES),
       n=st.integers(2, 40), kind=st.sampled_from(H.BATCH_KINDS), multi=st.booleans())
def test_update_from_perturbed_tree_matches_closed_form(seed, shape, n, kind, multi):
    """algorithm.md §13.4: tiny weights give many ties; each tie parent is moved to a random tight
    one."""
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, 1, "tiny", multi=multi)
    g = build(n, src, dst, w)
    s = int(rng.integers(0, n))
    base = H.Tracked(sssp.compute(g, s), 0, True)
    pert = H.import_perturbed(rng, g, base)
    canon = H.Tracked(sssp.compute(g, s), 0, True)
    arrays = H.random_batch(rng, kind, H.ref_of(g), pert.result.to_numpy()[1], s, "tiny")
    H.check_update(g, arrays, [pert, canon])
    # distances equal compute() from a non-canonical input too
    fresh = sssp.compute(g, s)
    np.testing.assert_array_equal(pert.result.to_numpy()[0], fresh.to_numpy()[0])


def test_from_arrays_canonicalizes_by_default():
    rng = np.random.default_rng(3)
    n, src, dst, w = H.random_graph(rng, "grid", 49, 1, "tiny")
    g = build(n, src, dst, w)
    ref = H.ref_of(g)
    d, p = O.canonical_tree(n, 0, *ref.edges(0))
    pert = O.perturbed_parents(rng, n, 0, d, *ref.edges(0))
    assert not np.array_equal(pert, p)  # the grid has many ties
    r = sssp.Result.from_arrays(g, 0, d, pert.astype(np.int32))
    H.assert_tree_equals(r, d, p, "from_arrays canonicalize=True")
    r2 = sssp.Result.from_arrays(g, 0, d, pert.astype(np.int32), canonicalize=False)
    H.assert_tree_equals(r2, d, pert, "from_arrays canonicalize=False")
    assert r.graph_version == g.version


def test_source_as_head_and_push_target():
    # 0 -> 1 -> 2, source 1; insert (2, 1) and (0, 1) lighter: the source never gets relaxed
    g = build(3, np.array([0, 1]), np.array([1, 2]), np.array([5, 5]))
    t = H.Tracked(sssp.compute(g, 1), 0, True)
    arrays = (np.array([2, 0, 1]), np.array([1, 1, 0]), np.array([[1], [1], [1]]),
              np.zeros(0, np.int64), np.zeros(0, np.int64))
    H.check_update(g, arrays, [t])
    d, p = t.result.to_numpy()
    assert d.tolist() == [1, 0, 5] and p.tolist() == [1, -1, 1]


def test_growth_new_vertices_become_reachable():
    g = build(2, np.array([0]), np.array([1]), np.array([3]))
    t = H.Tracked(sssp.compute(g, 0), 0, True)
    arrays = (np.array([1, 5, 1]), np.array([5, 4, 4]), np.array([[1], [1], [7]]),
              np.array([3]), np.array([0]))  # deletion in the new empty row 3: missing
    stats, app = H.check_update(g, arrays, [t])
    d, p = t.result.to_numpy()
    assert d.tolist() == [0, 3, O.INF, O.INF, 5, 4]
    assert p.tolist() == [-1, 0, -1, -1, 5, 1]
    assert app.summary["inserted_vertices"] == 4 and app.summary["ignored_deletions"] == 1


def test_empty_batch_changes_nothing_but_version():
    rng = np.random.default_rng(11)
    n, src, dst, w = H.random_graph(rng, "sparse", 20, 2, "mid")
    g = build(n, src, dst, w)
    ts = [H.Tracked(sssp.compute(g, 0, objective=k), k, True) for k in range(2)]
    before = [t.result.to_numpy() for t in ts]
    stats, _ = H.check_update(g, H.empty_batch_arrays(2), ts)
    for t, (d, p), st_ in zip(ts, before, stats):
        H.assert_tree_equals(t.result, d, p.astype(np.int64))
        assert st_.invalidated == 0 and st_.affected == 0
    # an empty batch may carry any K
    H.check_update(g, H.empty_batch_arrays(1), ts)


def test_self_loop_insert_and_delete():
    g = build(3, np.array([0, 1, 1]), np.array([1, 2, 1]), np.array([2, 2, 1]))
    t = H.Tracked(sssp.compute(g, 0), 0, True)
    arrays = (np.array([2, 0]), np.array([2, 0]), np.array([[1], [9]]), np.array([1, 1]),
              np.array([1, 1]))
    stats, app = H.check_update(g, arrays, [t])
    assert app.summary == dict(inserted_edges=2, updated_edges=0, deleted_edges=1,
                               ignored_deletions=1, inserted_vertices=0, num_vertices_after=3)


def test_only_missing_deletions():
    g = build(4, np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([1, 1, 1]))
    t = H.Tracked(sssp.compute(g, 0), 0, True)
    # (2, 1) does not exist; P_in[1] == 0 != 2, so no root: nothing invalidated
    arrays = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 1), np.int64),
              np.array([2, 3, 0]), np.array([1, 0, 3]))
    stats, app = H.check_update(g, arrays, [t])
    assert stats[0].invalidated == 0 and stats[0].affected == 0
    assert app.summary["ignored_deletions"] == 3
    # a missing deletion that names a tree edge still makes a root (it is still listed):
    # delete (0,1) twice: the first removes it, the second is missing but listed.
    arrays = (np.array([0]), np.array([1]), np.array([[1]]), np.array([0, 0]), np.array([1, 1]))
    stats, app = H.check_update(g, arrays, [t])
    assert stats[0].invalidated == 3  # subtree of 1: {1, 2, 3}
    assert app.summary["ignored_deletions"] == 1


def test_clone_is_independent_and_probe_is_called():
    rng = np.random.default_rng(21)
    n, src, dst, w = H.random_graph(rng, "sparse", 30, 1, "tiny")
    g = build(n, src, dst, w)
    r = sssp.compute(g, 0)
    c = r.clone()
    H.assert_result_bytes_equal(r, c)
    assert c.graph_version == r.graph_version

    calls = []

    class Probe:
        def engine_start(self, stream):
            calls.append(("start", stream))

        def engine_stop(self, stream):
            calls.append(("stop", stream))

    before = c.to_numpy()
    arrays = H.random_batch(rng, "combo", H.ref_of(g), r.to_numpy()[1], 0, "tiny")
    st_ = sssp.update(g, H.make_batch(arrays), r, probe=Probe())
    assert calls == [("start", None), ("stop", None)]
    assert st_ == r.stats
    # the clone did not move: same arrays, old version, now stale for update()
    after = c.to_numpy()
    assert before[0].tobytes() == after[0].tobytes() and before[1].tobytes() == after[1].tobytes()
    assert c.graph_version == g.version - 1
    with pytest.raises(engines.errors.StaleResultError):
        sssp.update(g, engines.Batch.empty(1), c)
    H.assert_result_bytes_equal(r, sssp.compute(g, 0))
    # results expose read-only views
    with pytest.raises(ValueError):
        r.distances[0] = 5
    with pytest.raises(ValueError):
        r.parents[0] = 5


def test_options_stats_and_summary_types():
    import dataclasses

    o = sssp.Options()
    assert (o.delta, o.objective, o.cuda_engine, o.validate_inputs) == (0, 0, "automatic", True)
    rng = np.random.default_rng(2)
    n, src, dst, w = H.random_graph(rng, "hub", 20, 2, "mid")
    g = build(n, src, dst, w)
    r = sssp.compute(g, 1, options=sssp.Options(objective=1, delta=5))
    assert r.options.objective == 1 and r.options.delta == 5
    H.assert_tree_equals(r, *O.canonical_tree(n, 1, *H.ref_of(g).edges(1)))
    r2 = sssp.compute(g, 1, options=sssp.Options(objective=1), delta=9)  # overrides win
    assert r2.options.delta == 9 and r2.options.objective == 1
    st_ = sssp.update(g, engines.Batch([0], [1], [[1, 1]], [], []), r)
    with pytest.raises(dataclasses.FrozenInstanceError):
        st_.invalidated = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        st_.batch.inserted_edges = 3
    assert isinstance(st_, sssp.Stats) and isinstance(st_.batch, engines.ApplySummary)
    assert sssp.INFINITE_DISTANCE == 2**61 - 1
