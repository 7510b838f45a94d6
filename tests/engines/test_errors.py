"""Errors (algorithm.md §8, §13.6): pre-commit checks leave graph and results untouched;
post-commit ``invalid_input`` / ``parent_cycle`` poison the result; ``from_arrays`` reports the
first violation in vertex order."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import engines
from engines import errors, sssp

from .. import harness as H
from conformance import oracles as O

E = np.zeros(0, np.int64)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def small_graph(K=2):
    rng = np.random.default_rng(99)
    n, src, dst, w = H.random_graph(rng, "sparse", 12, K, "mid")
    return engines.Graph.from_edges(src, dst, w, num_vertices=n)


def state_of(g, results):
    return (g.version, g.state_id, np.array(g.row_ptr), np.array(g.col_ind), np.array(g.weights),
            [(r.graph_version, *r.to_numpy(), r.stats) for r in results])


def assert_untouched(g, results, before):
    after = state_of(g, results)
    assert after[0] == before[0] and after[1] == before[1]
    for a, b in zip(after[2:5], before[2:5]):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    for (va, da, pa, sa), (vb, db, pb, sb) in zip(after[5], before[5]):
        assert va == vb and da.tobytes() == db.tobytes() and pa.tobytes() == pb.tobytes()
        assert sa == sb


def assert_poisoned(r):
    for use in (lambda: r.distances, lambda: r.parents, lambda: r.options, lambda: r.stats,
                lambda: r.to_numpy(), lambda: r.clone(), lambda: r.set_options(delta=3)):
        with pytest.raises(errors.StaleResultError):
            use()
    assert isinstance(r.source, int) and r.backend == "host" and isinstance(r.graph_version, int)


def assert_still_works(g, results):
    """The results and graph go on: a valid update, checked against the oracles."""
    tracked = [H.Tracked(r, r.options.objective, True) for r in results]
    for t in tracked:  # canonical iff equal to compute()
        fresh = sssp.compute(g, t.result.source, objective=t.objective)
        t.canonical = fresh.to_numpy()[1].tobytes() == t.result.to_numpy()[1].tobytes()
    H.check_update(g, (np.array([0]), np.array([1]), np.ones((1, g.num_weights), np.int64), E, E),
                   tracked)


def expect_before_commit(g, results, exc, call, match=None):
    before = state_of(g, results)
    with pytest.raises(exc, match=match):
        call()
    assert_untouched(g, results, before)
    if results:
        assert_still_works(g, results)


# --------------------------------------------------------------------------------------------
# Graph construction
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("src,dst,w", [
    ([0, -1], [1, 2], [1, 1]),          # negative id
    ([0, 1], [1, -2], [1, 1]),
    ([0, 1], [1, 2], [1, 0]),           # weight 0
    ([0, 1], [1, 2], [1, -5]),
    ([0, 1], [1, 2], [1, 2**31]),       # above 2^31 - 1
    ([0, 1], [1], [1, 1]),              # mismatched lengths
    ([0, 1], [1, 2], [1]),
    ([0, 1.5], [1, 2], [1, 1]),         # not an integer
])
def test_from_edges_rejects(src, dst, w):
    with pytest.raises(errors.InvalidArgumentError):
        engines.Graph.from_edges(src, dst, w)


def test_from_edges_rejects_ids_beyond_num_vertices_and_bad_csr():
    with pytest.raises(errors.InvalidArgumentError):
        engines.Graph.from_edges([0, 5], [1, 2], [1, 1], num_vertices=3)
    with pytest.raises(errors.InvalidArgumentError):  # row_ptr not ending at m
        engines.Graph.from_csr([0, 1, 3], [1, 0], [1, 1])
    with pytest.raises(errors.InvalidArgumentError):  # column id out of range
        engines.Graph.from_csr([0, 1, 2], [1, 7], [1, 1])
    with pytest.raises(errors.InvalidArgumentError):  # decreasing row_ptr
        engines.Graph.from_csr([0, 2, 1, 2], [1, 0], [1, 1])
    with pytest.raises(errors.InvalidArgumentError):  # weight 0 via CSR
        engines.Graph.from_csr([0, 1, 2], [1, 0], [1, 0])


def test_unknown_keywords_raise_type_error():
    g = small_graph()
    r = sssp.compute(g, 0)
    with pytest.raises(TypeError):
        engines.Graph.from_edges([0], [1], [1], bogus=1)
    with pytest.raises(TypeError):
        sssp.compute(g, 0, bogus=1)
    with pytest.raises(TypeError):
        sssp.update(g, engines.Batch.empty(2), r, bogus=1)
    with pytest.raises(TypeError):
        r.set_options(bogus=1)
    d, p = r.to_numpy()
    with pytest.raises(TypeError):
        sssp.Result.from_arrays(g, 0, d, p, bogus=1)
    assert g.version == 0 and r.graph_version == 0


# --------------------------------------------------------------------------------------------
# Pre-commit errors of update(): nothing changes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: engines.Batch([0, -1], [1, 2], [[1, 1], [1, 1]], E, E),
    lambda: engines.Batch(E, E, np.zeros((0, 2), np.int64), [0], [-3]),
    lambda: engines.Batch([0], [1], [[0, 1]], E, E),
    lambda: engines.Batch([0], [1], [[1, 2**31]], E, E),
    lambda: engines.Batch([0, 1], [1], [[1, 1], [1, 1]], E, E),
    lambda: engines.Batch([0], [1], [[1, 1], [1, 1]], E, E),
    lambda: engines.Batch(E, E, np.zeros((0, 2), np.int64), [0, 1], [1]),
    lambda: engines.Batch([0], [1], [[1, 1, 1]], E, E),      # K = 3 on a K = 2 graph
    lambda: engines.Batch([0], [1], [5], E, E),              # K = 1 on a K = 2 graph
    lambda: engines.Batch([0], [2**31 - 1], [[1, 1]], E, E),  # 1 + id does not fit int32
])
def test_update_rejects_bad_batches_without_changes(make):
    g = small_graph()
    rs = [sssp.compute(g, 0, objective=0), sssp.compute(g, 3, objective=1)]
    expect_before_commit(g, rs, errors.InvalidArgumentError,
                         lambda: sssp.update(g, make(), *rs))


def test_vertex_deletions_not_supported():
    g = small_graph()
    rs = [sssp.compute(g, 0)]
    expect_before_commit(g, rs, errors.NotSupportedError,
                         lambda: sssp.update(g, engines.Batch(delete_vertices=[3]), *rs))


def test_size_check_before_the_commit():
    # growth to n = 2^30 + 1 with W = 2^31 - 1 makes W * (n - 1) > 2^60 - 2
    g = small_graph()
    rs = [sssp.compute(g, 0)]
    b = engines.Batch([0], [2**30], [[O.WEIGHT_MAX, 1]], E, E)
    expect_before_commit(g, rs, errors.InvalidArgumentError, lambda: sssp.update(g, b, *rs))


def test_stale_results_and_bad_result_lists():
    g = small_graph()
    r = sssp.compute(g, 0)
    other = small_graph()
    r_other = sssp.compute(other, 0)
    b = engines.Batch([0], [1], [[1, 1]], E, E)
    expect_before_commit(g, [r], errors.InvalidArgumentError, lambda: sssp.update(g, b, r, r))
    expect_before_commit(g, [r], errors.InvalidArgumentError, lambda: sssp.update(g, b))
    expect_before_commit(g, [r], errors.StaleResultError, lambda: sssp.update(g, b, r, r_other))
    # a result of an old version (the graph changed without it)
    old = sssp.compute(g, 2)
    g.apply(engines.Batch.empty(2))
    with pytest.raises(errors.StaleResultError):
        sssp.update(g, b, old)
    r_new = sssp.compute(g, 0)
    expect_before_commit(g, [r_new], errors.StaleResultError, lambda: sssp.update(g, b, r_new, old))


@pytest.mark.parametrize("kw", [dict(objective=2), dict(objective=-1), dict(delta=-1),
                                dict(objective=1.5), dict(operators_loop="graph"),
                                dict(operators_loop=None)])
def test_compute_rejects_bad_options(kw):
    g = small_graph()
    with pytest.raises(errors.InvalidArgumentError):
        sssp.compute(g, 0, **kw)
    assert g.version == 0


def test_operators_loop_is_an_option_of_every_result():
    g = small_graph()
    r = sssp.compute(g, 0, operators_loop="device")  # the host engine ignores it
    assert r.options.operators_loop == "device"
    r.set_options(operators_loop="host")
    assert r.options.operators_loop == "host"
    with pytest.raises(errors.InvalidArgumentError, match="operators_loop must be one of host, device"):
        r.set_options(operators_loop="Device")


def test_update_launch_is_an_option_of_every_result():
    """How a CUDA update enqueues the device apply (device_apply.LAUNCHES): "graph" by default,
    "python" accepted; anything else rejected without changing the result's options; the host
    backend accepts it and its updates are unchanged by it."""
    from engines.graph.device_apply import LAUNCHES

    assert sssp.Options().update_launch == "graph" and set(LAUNCHES) == {"python", "graph"}
    g = small_graph()
    r = sssp.compute(g, 0, update_launch="python")
    assert r.options.update_launch == "python"
    r.set_options(update_launch="graph")
    assert r.options.update_launch == "graph"
    with pytest.raises(errors.InvalidArgumentError, match="update_launch must be one of python, graph"):
        r.set_options(update_launch="cuda-graph")
    assert r.options.update_launch == "graph"
    with pytest.raises(errors.InvalidArgumentError, match="update_launch"):
        sssp.compute(g, 0, update_launch=None)
    plain = sssp.compute(g, 0)
    batch = engines.Batch([0], [g.num_vertices - 1], np.ones((1, g.num_weights), dtype=np.int64))
    h = g.copy()
    sssp.update(g, batch, r)
    sssp.update(h, batch, sssp.compute(h, 0))
    assert [a.tobytes() for a in r.to_numpy()] == [a.tobytes() for a in sssp.compute(h, 0).to_numpy()]
    assert plain.options.update_launch == "graph"


def test_compute_rejects_bad_source_and_backend():
    g = small_graph()
    for s in (-1, g.num_vertices, None):
        with pytest.raises(errors.InvalidArgumentError):
            sssp.compute(g, s)
    with pytest.raises((errors.InvalidArgumentError, errors.NotSupportedError)):
        sssp.compute(g, 0, backend="tpu")
    try:
        import cupy  # noqa: F401
        has_cupy = True
    except Exception:
        has_cupy = False
    if not has_cupy:
        with pytest.raises(errors.NotSupportedError):
            sssp.compute(g, 0, backend="cuda")
        assert sssp.compute(g, 0, backend="auto").backend == "host"


def test_set_options_cannot_change_the_objective():
    g = small_graph()
    r = sssp.compute(g, 0)
    with pytest.raises(errors.InvalidArgumentError):
        r.set_options(objective=1)
    r.set_options(delta=17)
    assert r.options.delta == 17 and r.options.objective == 0


# --------------------------------------------------------------------------------------------
# from_arrays checks
# --------------------------------------------------------------------------------------------


def path_graph(n=40):
    src = np.arange(n - 1)
    return engines.Graph.from_edges(src, src + 1, np.full(n - 1, 2), num_vertices=n)


def first_vertex_named(exc_info, first, later):
    msg = str(exc_info.value)
    assert re.search(rf"\b{first}\b", msg), msg
    assert not re.search(rf"\b{later}\b", msg), msg


@pytest.mark.parametrize("violate", ["unreachable_parent", "distance_above", "negative",
                                     "no_parent", "parent_unreachable", "cycle"])
def test_from_arrays_reports_the_first_vertex(violate):
    n = 40
    g = path_graph(n)
    d = np.arange(n, dtype=np.int64) * 2
    p = np.arange(-1, n - 1, dtype=np.int64)
    d[30:] = O.INF
    p[30:] = -1
    for v in (13, 27):  # 13 is reported, not 27
        if violate == "unreachable_parent":
            d[v] = O.INF
            d[v + 1:30] = O.INF  # keep later vertices consistent
            p[v + 1:30] = -1
            p[v] = v - 1
        elif violate == "distance_above":
            d[v] = 2 * (n - 1) + 1
        elif violate == "negative":
            d[v] = -1
        elif violate == "no_parent":
            p[v] = -1
        elif violate == "parent_unreachable":
            p[v] = 35
        elif violate == "cycle":
            p[v] = v + 1
    with pytest.raises(errors.InvalidArgumentError) as ei:
        sssp.Result.from_arrays(g, 0, d, p)
    first_vertex_named(ei, 13, 27)


def test_from_arrays_source_checks_and_always_checks():
    n = 10
    g = path_graph(n)
    d = np.arange(n, dtype=np.int64) * 2
    p = np.arange(-1, n - 1, dtype=np.int64)
    bad_d = d.copy()
    bad_d[0] = 1
    with pytest.raises(errors.InvalidArgumentError):
        sssp.Result.from_arrays(g, 0, bad_d, p)
    bad_p = p.copy()
    bad_p[0] = 3
    with pytest.raises(errors.InvalidArgumentError):
        sssp.Result.from_arrays(g, 0, d, bad_p)
    # always checked, even with validate=False
    for args in [(g, n, d, p), (g, -1, d, p), (g, 0, d[:-1], p), (g, 0, d, p[:-1]),
                 (g, 0, d, np.where(np.arange(n) == 4, n, p)),
                 (g, 0, d, np.where(np.arange(n) == 4, -2, p)),
                 (g, 0, d.astype(np.float64) + 0.5, p)]:
        with pytest.raises(errors.InvalidArgumentError):
            sssp.Result.from_arrays(*args, validate=False)
    # without validation a non-tree imports; values >= INF/2 become INF
    d2 = d.copy()
    d2[9] = O.INF_HALF
    p2 = p.copy()
    p2[9] = -1
    r = sssp.Result.from_arrays(g, 0, d2, p2, validate=False)
    assert r.to_numpy()[0][9] == O.INF
    r = sssp.Result.from_arrays(g, 0, d, np.where(np.arange(n) == 5, 7, p), validate=False,
                                canonicalize=False)
    assert r.to_numpy()[1][5] == 7
    # canonicalization without validation: P = min(P, lowest tight in-neighbour); a -1 stays
    raw = p.copy()
    raw[5] = -1
    raw[7] = 2   # not tight, but lower than the tight 6: min keeps it
    raw[8] = 9   # not tight, higher than the tight 7: replaced
    r = sssp.Result.from_arrays(g, 0, d, raw, validate=False)
    got = r.to_numpy()[1]
    assert (got[5], got[7], got[8]) == (-1, 2, 7)
    # validate_inputs=False in the options is what validate=None defers to
    r = sssp.Result.from_arrays(g, 0, d, np.where(np.arange(n) == 5, 7, p), validate_inputs=False,
                                canonicalize=False)
    assert r.to_numpy()[1][5] == 7


# --------------------------------------------------------------------------------------------
# Post-commit errors: poisoning
# --------------------------------------------------------------------------------------------


def cycle_graph():
    # 0 -> 1 -> 2 -> 3 -> 4 -> 2, unit weights; a bogus tree with the cycle 2 <- 4 <- 3 <- 2
    src = np.array([0, 1, 2, 3, 4])
    dst = np.array([1, 2, 3, 4, 2])
    g = engines.Graph.from_edges(src, dst, np.ones(5, np.int64), num_vertices=6)
    d = np.array([0, 1, 2, 3, 4, O.INF], dtype=np.int64)
    p = np.array([-1, 0, 4, 2, 3, -1], dtype=np.int64)
    return g, d, p


def import_raw(g, d, p):
    return sssp.Result.from_arrays(g, 0, d, p, validate=False, canonicalize=False)


def check_post_commit_error(g, bad, batch_arrays, reason, healthy=()):
    version = g.version
    ref_old = H.ref_of(g)
    app = O.ref_apply(ref_old, *batch_arrays)
    healthy_inputs = [h.to_numpy() for h in healthy]
    with pytest.raises(errors.InvalidArgumentError) as ei:
        sssp.update(g, H.make_batch(batch_arrays), *healthy[:1], bad, *healthy[1:])
    assert not isinstance(ei.value, errors.StaleResultError)
    assert getattr(ei.value, "reason", reason) == reason
    assert g.version == version + 1
    H.assert_graph_matches(g, app.graph)  # the commit happened
    assert_poisoned(bad)
    with pytest.raises(errors.StaleResultError):
        sssp.update(g, engines.Batch.empty(g.num_weights), bad)
    assert g.version == version + 1
    # the other results were updated (algorithm.md §8.5)
    for h, (d_in, p_in) in zip(healthy, healthy_inputs):
        assert h.graph_version == g.version
        H.assert_tree_equals(h, *O.canonical_tree(g.num_vertices, h.source,
                                                  *H.ref_of(g).edges(h.options.objective)))
    # a new compute() works, and so does its next update
    fresh = H.check_compute(g, 0)
    H.check_update(g, (np.array([0]), np.array([2]), np.array([[1]]), E, E),
                   [H.Tracked(fresh, 0, True)])


def test_parent_cycle_without_root_poisons():
    g, d, p = cycle_graph()
    bad = import_raw(g, d, p)
    good = sssp.compute(g, 0)
    # deleting (0,1) makes 1 a root; the cycle 2-3-4 has no root
    check_post_commit_error(g, bad, (E, E, np.zeros((0, 1), np.int64), np.array([0]),
                                     np.array([1])), "parent_cycle", healthy=(good,))


def test_parent_cycle_with_only_a_weight_increase_in_the_changed_list():
    g, d, p = cycle_graph()
    bad = import_raw(g, d, p)
    # an upsert raising (0,1): changed list non-empty through weight_increased
    check_post_commit_error(g, bad, (np.array([0]), np.array([1]), np.array([[5]]), E, E),
                            "parent_cycle")


def test_cycle_through_a_root_is_no_error():
    g, d, p = cycle_graph()
    bad = import_raw(g, d, p)
    st_ = sssp.update(g, engines.Batch(E, E, np.zeros((0, 1), np.int64), [4], [2]), bad)
    assert st_.invalidated == 3  # 2, 3, 4
    assert bad.graph_version == g.version
    bad.to_numpy()


def test_cycle_not_detected_with_empty_changed_list():
    g, d, p = cycle_graph()
    bad = import_raw(g, d, p)
    # insertions that raise nothing: no changed edge, so no cycle check
    sssp.update(g, engines.Batch([5], [0], [[1]], E, E), bad)
    assert bad.graph_version == g.version
    bad.to_numpy()
    bad2 = import_raw(g, *cycle_graph()[1:])  # same tree, now n matches: 6 vertices
    sssp.update(g, engines.Batch.empty(1), bad2)
    bad2.to_numpy()


@pytest.mark.parametrize("value", [-1, "above"])
def test_invalid_input_poisons_and_wins_over_a_cycle(value):
    g, d, p = cycle_graph()
    # bound of the update below: W = 1, n = 6 -> 5
    d = d.copy()
    d[1] = -1 if value == -1 else 6
    bad = import_raw(g, d, p)  # cycle 2-3-4 and a bad distance
    check_post_commit_error(g, bad, (E, E, np.zeros((0, 1), np.int64), np.array([0]),
                                     np.array([1])), "invalid_input")


def test_invalid_input_even_with_an_empty_batch():
    g, d, p = cycle_graph()
    p = np.array([-1, 0, 1, 2, 3, -1])
    d = d.copy()
    d[3] = 2**40  # far above the bound 5, below INF/2
    bad = import_raw(g, d, p)
    check_post_commit_error(g, bad, H.empty_batch_arrays(1), "invalid_input")


def test_bound_uses_the_update_w_and_grown_n():
    """A distance above G_t's bound but within the update's bound (heavier insertion, growth) is
    valid input: no error."""
    g, d, p = cycle_graph()
    p = np.array([-1, 0, 1, 2, 3, -1])
    d = d.copy()
    d[4] = 9  # above 1 * 5, within 2 * 6 after the batch below (distances then get repaired)
    r = import_raw(g, d, p)
    sssp.update(g, engines.Batch([6], [5], [[2]], E, E), r)
    assert r.graph_version == g.version
    assert r.to_numpy()[0].shape == (7,)


# --------------------------------------------------------------------------------------------
# Randomized: parent_cycle exactly when the changed list is non-empty and P_in has a rootless
# cycle; invalid_input whenever a distance is negative or above the bound, and it wins.
# --------------------------------------------------------------------------------------------


@settings(max_examples=H.examples(150))
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 25), kind=st.sampled_from(H.BATCH_KINDS),
       bad_distance=st.sampled_from([None, "negative", "above"]), cycles=st.integers(0, 3))
def test_random_garbage_trees_report_exactly(seed, n, kind, bad_distance, cycles):
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, "sparse", n, 1, "tiny", multi=True)
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    s = int(rng.integers(0, n))
    d, p = sssp.compute(g, s).to_numpy()
    p = p.astype(np.int64)
    # plant some parent cycles among random vertices
    for _ in range(cycles):
        length = int(rng.integers(1, min(n, 5) + 1))
        vs = rng.choice(n, size=length, replace=False)
        p[vs] = np.roll(vs, 1)
    d = d.copy()
    ref_old = H.ref_of(g)
    arrays = H.random_batch(rng, kind, ref_old, p, s, "tiny")
    app = O.ref_apply(ref_old, *arrays)
    W = O.update_max_weight(ref_old, arrays[2], 0)
    bound = W * max(app.num_vertices_after - 1, 1)
    if bad_distance == "negative":
        d[int(rng.integers(0, n))] = -int(rng.integers(1, 10))
    elif bad_distance == "above":
        d[int(rng.integers(0, n))] = bound + int(rng.integers(1, 10))
    r = import_raw(g, d, p)
    cf, ct, _ = O.change_lists(app, 0)
    try:
        O.invalidated_set(O.grow(d, p, app.num_vertices_after)[1], cf, ct)
        expected = None
    except O.RootlessCycle:
        expected = "parent_cycle"
    if bad_distance is not None:
        expected = "invalid_input"
    event(f"expected {expected}")
    version = g.version
    if expected is None:
        st_ = sssp.update(g, H.make_batch(arrays), r)
        assert r.graph_version == g.version and st_.batch is not None
    else:
        with pytest.raises(errors.InvalidArgumentError) as ei:
            sssp.update(g, H.make_batch(arrays), r)
        assert not isinstance(ei.value, errors.StaleResultError)
        assert getattr(ei.value, "reason", expected) == expected
        assert_poisoned(r)
    assert g.version == version + 1
    H.assert_graph_matches(g, app.graph)
    # a fresh compute() is correct after whatever happened
    H.check_compute(g, s)


def test_several_failing_results_raise_the_first_and_poison_each():
    g, d, p = cycle_graph()
    cyc = import_raw(g, d, p)
    d_bad = d.copy()
    d_bad[1] = -5
    neg = import_raw(g, d_bad, np.array([-1, 0, 1, 2, 3, -1]))
    good = sssp.compute(g, 0)
    batch = engines.Batch(E, E, np.zeros((0, 1), np.int64), [0], [1])
    with pytest.raises(errors.InvalidArgumentError) as ei:
        sssp.update(g, batch, cyc, good, neg)
    assert getattr(ei.value, "reason", "parent_cycle") == "parent_cycle"
    assert_poisoned(cyc)
    assert_poisoned(neg)
    assert good.graph_version == g.version == 1
    H.assert_tree_equals(good, *O.canonical_tree(6, 0, *H.ref_of(g).edges(0)))
    # argument order decides which error is raised
    g, d, p = cycle_graph()
    cyc = import_raw(g, d, p)
    neg = import_raw(g, d_bad, np.array([-1, 0, 1, 2, 3, -1]))
    with pytest.raises(errors.InvalidArgumentError) as ei:
        sssp.update(g, batch, neg, cyc)
    assert getattr(ei.value, "reason", "invalid_input") == "invalid_input"
