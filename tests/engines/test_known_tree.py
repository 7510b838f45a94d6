"""The library's own trees (``Result._tree_known``, issue 35): a tree from ``compute()`` /
``update()`` lets the host update search the roots' subtrees down the out-edges instead of walking
all n parent chains for a cycle (host_region.flag_known_subtrees). The bytes and counters must be
those of the walk, the distances SciPy's, and a tree a user hands in must still be checked: a
rootless cycle is ``parent_cycle`` and poisons the result, whatever result the arrays end up in.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engines
from engines import errors, sssp
from engines.sssp import host_region

from .. import harness as H

COUNTERS = ("invalidated", "affected", "iterations", "epochs", "pushes", "packed_parents")


@contextlib.contextmanager
def knobs(limit=None, fraction=None):
    """Set the known search's give-up share (``limit``; 1.0 also turns off the walk-at-once guess
    on the number of roots, so the search always runs) and RECOMPUTE_FRACTION for a block."""
    from engines.sssp import host

    saved = host_region.KNOWN_SEARCH_LIMIT, host_region.KNOWN_ROOT_SPAN, host.RECOMPUTE_FRACTION
    if limit is not None:
        host_region.KNOWN_SEARCH_LIMIT = limit
        host_region.KNOWN_ROOT_SPAN = 0 if limit == 1.0 else saved[1]
    if fraction is not None:
        host.RECOMPUTE_FRACTION = fraction
    try:
        yield
    finally:
        host_region.KNOWN_SEARCH_LIMIT, host_region.KNOWN_ROOT_SPAN, host.RECOMPUTE_FRACTION = saved


def scipy_distances(graph, source: int, objective: int) -> np.ndarray:
    """SciPy's Dijkstra on the lightest copy of every arc; unreachable as INF."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n = graph.num_vertices
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(graph.row_ptr, dtype=np.int64)))
    dst = np.asarray(graph.col_ind, dtype=np.int64)
    w = np.asarray(graph.weight_column(objective), dtype=np.int64)
    if src.size:
        order = np.lexsort((w, dst, src))  # per pair, the lightest copy first
        src, dst, w = src[order], dst[order], w[order]
        first = np.ones(src.size, dtype=bool)
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        src, dst, w = src[first], dst[first], w[first]
    matrix = csr_matrix((w.astype(np.float64), (src, dst)), shape=(n, n))
    dist = dijkstra(matrix, indices=source, min_only=True)
    out = np.full(n, H.O.INF, dtype=np.int64)
    finite = ~np.isinf(dist)
    out[finite] = dist[finite].astype(np.int64)  # exact: the distances stay below 2**53 here
    return out


def assert_same(a, b, sa, sb, counters=COUNTERS):
    da, pa = a.to_numpy()
    db, pb = b.to_numpy()
    assert np.array_equal(da, db) and np.array_equal(pa, pb)
    for name in counters:
        assert getattr(sa, name) == getattr(sb, name), name


@settings(max_examples=H.examples(120), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES), n=st.integers(1, 60),
       K=st.integers(1, 2), wclass=st.sampled_from(H.WEIGHT_CLASSES), multi=st.booleans(),
       limit=st.sampled_from([0.0, 0.125, 1.0]), fallback=st.sampled_from([None, 2.0, 1e-9]),
       kinds=st.lists(st.sampled_from(H.BATCH_KINDS), min_size=2, max_size=5))
def test_known_chain_equals_the_walk_and_scipy(seed, shape, n, K, wclass, multi, limit, fallback, kinds):
    """A compute() result (known) and its copy treated as a user's tree (walked) ride the same
    chain of batches in one update(): the same bytes after every batch, and SciPy's distances.
    ``limit`` 0 makes every known search give up and walk, 1.0 never. ``fallback`` sets
    RECOMPUTE_FRACTION: 2.0 (never recompute: the same counters too), the default, or any
    invalidation (the known tree recomputes without the survivors check, the walked one only
    where the check allows: bytes, invalidated and affected equal)."""
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, K, wclass, multi=multi)
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    s = int(rng.integers(0, n))
    k = int(rng.integers(0, K))
    known = sssp.compute(g, s, objective=k)
    walked = known.clone()
    assert known._tree_known and walked._tree_known  # clone carries the mark
    walked._tree_known = False
    counters = COUNTERS if fallback == 2.0 else ("invalidated", "affected", "packed_parents")
    with knobs(limit, fallback):
        for kind in kinds:
            arrays = H.random_batch(rng, kind, H.ref_of(g), known.to_numpy()[1], s, wclass)
            sa, sb = sssp.update(g, H.make_batch(arrays), known, walked)
            assert known._tree_known and not walked._tree_known
            assert_same(known, walked, sa, sb, counters)
            assert np.array_equal(known.to_numpy()[0], scipy_distances(g, s, k))
            fresh = sssp.compute(g, s, objective=k)  # a known tree is canonical (algorithm.md §5.12)
            assert_same(known, fresh, sa, fresh.stats, ())


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES), n=st.integers(1, 60),
       multi=st.booleans(), limit=st.sampled_from([0.0, 0.125, 1.0]))
def test_flag_known_subtrees_equals_the_walk(seed, shape, n, multi, limit):
    """On a compute() tree and any roots: the walk's flags, no cycle."""
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, 1, "tiny", multi=multi)
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    parents = sssp.compute(g, int(rng.integers(0, n))).to_numpy()[1]
    roots = rng.integers(0, n, size=int(rng.integers(0, n + 1)))
    with knobs(limit):
        flag, cycle = host_region.flag_known_subtrees(parents, roots, g.row_ptr, g.col_ind)
    ref_flag, ref_cycle = host_region.invalidate_walk(parents, roots.astype(np.int64))
    assert cycle is False and ref_cycle is False
    assert np.array_equal(flag, ref_flag)


# -- a user's tree is still checked ---------------------------------------------------------------

def cycle_case():
    # 0 -> 1 -> 2 -> 3 -> 4 -> 2, unit weights; a bogus tree with the rootless cycle 2 <- 4 <- 3 <- 2
    g = engines.Graph.from_edges(np.array([0, 1, 2, 3, 4]), np.array([1, 2, 3, 4, 2]),
                                 np.ones(5, np.int64), num_vertices=6)
    d = np.array([0, 1, 2, 3, 4, H.O.INF], dtype=np.int64)
    p = np.array([-1, 0, 4, 2, 3, -1], dtype=np.int64)
    return g, d, p


DELETE_0_1 = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 1), np.int64),
              np.array([0]), np.array([1]))  # makes 1 a root; the cycle 2-3-4 has none


def assert_cycle_rejected(g, bad):
    with pytest.raises(errors.InvalidArgumentError) as ei:
        sssp.update(g, H.make_batch(DELETE_0_1), bad)
    assert getattr(ei.value, "reason", None) == "parent_cycle"
    assert bad.poisoned and not bad._tree_known
    with pytest.raises(errors.StaleResultError):
        bad.to_numpy()


def test_an_imported_tree_is_not_known_and_its_cycle_is_rejected():
    g, d, p = cycle_case()
    bad = sssp.Result.from_arrays(g, 0, d, p, validate=False, canonicalize=False)
    assert not bad._tree_known
    assert_cycle_rejected(g, bad)


def test_a_known_result_that_takes_an_imported_tree_is_checked_again():
    # copy_from and clone carry the mark of the arrays they copy, not of the result they land in
    g, d, p = cycle_case()
    imported = sssp.Result.from_arrays(g, 0, d, p, validate=False, canonicalize=False)
    mine = sssp.compute(g, 0)
    assert mine._tree_known
    mine.copy_from(imported)
    assert not mine._tree_known
    assert_cycle_rejected(g, mine)
    assert not imported.clone()._tree_known


def test_update_keeps_the_mark_and_a_known_tree_updates_like_a_walked_one():
    g, d, p = cycle_case()
    mine = sssp.compute(g, 0)
    sssp.update(g, H.make_batch(DELETE_0_1), mine)
    assert mine._tree_known and not mine.poisoned
    assert np.array_equal(mine.to_numpy()[0], scipy_distances(g, 0, 0))


# -- the golden corpus through the known search -------------------------------------------------

def _edge_consistent_and_acyclic(graph, parents) -> bool:
    """What a known tree guarantees: every parent edge p -> v is in the graph, and no cycle."""
    n = graph.num_vertices
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(graph.row_ptr, dtype=np.int64)))
    arcs = set(zip(rows.tolist(), np.asarray(graph.col_ind).tolist()))
    if any(int(p) >= 0 and (int(p), v) not in arcs for v, p in enumerate(parents)):
        return False
    return not host_region.invalidate_walk(np.asarray(parents), np.zeros(0, np.int64))[1]


def test_golden_corpus_through_the_known_search():
    """Every golden case whose input tree is one a known tree can be (parent edges in G_t, no
    cycle: all of them, canonical and perturbed) replayed with the mark forced on and the search
    never giving up: the corpus's update bytes, invalidated and affected. A known tree is also
    taken for canonical (the recompute fallback without its check): a perturbed one is replayed
    with the fallback off, a canonical one with it on every invalidating batch."""
    from conformance import golden
    from conformance.replay import build_inputs
    from conformance.store import load_corpus

    corpus = load_corpus(golden.DEFAULT_CORPUS)
    replayed = 0
    try:
        for case in corpus.cases:
            arrays = corpus.arrays(case)
            graph, batch = build_inputs(arrays, case)
            if not _edge_consistent_and_acyclic(graph, arrays["p_in"]):
                continue
            result = sssp.Result.from_arrays(graph, case["source"], arrays["d_in"], arrays["p_in"],
                                             canonicalize=False, objective=case["objective"],
                                             delta=case["delta"])
            result._tree_known = True
            with knobs(1.0, 1e-9 if case["input_tree"] == "canonical" else 2.0):
                stats = sssp.update(graph, batch, result)
            d_out, p_out = result.to_numpy()
            assert np.array_equal(d_out, arrays["d_out"]), case["name"]
            assert np.array_equal(p_out, arrays["p_out"]), case["name"]
            assert d_out.dtype == arrays["d_out"].dtype and p_out.dtype == arrays["p_out"].dtype
            assert stats.invalidated == case["expect"]["invalidated"], case["name"]
            assert stats.affected == case["expect"]["affected"], case["name"]
            replayed += 1
    finally:
        corpus.close()
    print(f"{replayed} golden cases replayed through the known search")
    assert replayed >= 500, replayed
