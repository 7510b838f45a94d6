"""Batch semantics of inputs.md §3, checked against independent SciPy/NumPy oracles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import breadth_first_order, dijkstra

from bench import batches as B
from bench import standins
from bench.graphfacts import adjacency
from bench.weights import build_graph

from .standin_checks import csr


def road_graph(n=6000, seed=11):
    und = standins.road_grid(n, int(n * 1.4), seed=seed)
    src, dst, row_ptr = csr(und)
    return build_graph(row_ptr, dst)


@pytest.fixture(scope="module")
def graph():
    return road_graph()


@pytest.fixture(scope="module")
def drawn(graph):
    specs = (B.BatchSpec("safe", 2000, safe=True), B.BatchSpec("unsafe", 2000, safe=False),
             B.BatchSpec("local", 400, safe=True, local=True))
    return B.draw_gate_batches(graph, radius=6, specs=specs)


def reachable(g, source=0):
    m = adjacency(g.num_vertices, np.asarray(g.row_ptr), np.asarray(g.col_ind))
    mask = np.zeros(g.num_vertices, bool)
    mask[breadth_first_order(m, source, directed=True, return_predecessors=False)] = True
    return mask


def edge_set(g):
    src = np.repeat(np.arange(g.num_vertices), np.diff(np.asarray(g.row_ptr)))
    return set(zip(src.tolist(), np.asarray(g.col_ind).tolist()))


def test_counts_follow_the_rounding_rule():
    assert B.BatchSpec("x", 50_000).num_insertions == 25_000
    assert B.BatchSpec("x", 7, insert_percent=50).num_insertions == 4   # round(3.5) half up
    assert B.BatchSpec("x", 10, insert_percent=33).num_insertions == 3
    assert [s.changes for s in B.BATCH_SPECS] == [50_000, 50_000, 10_000]


def test_insertions_and_deletions(graph, drawn):
    edges = edge_set(graph)
    for name, batch in drawn.items():
        f = batch.facts
        assert batch.insert_src.size == f["insertions"] == (200 if name == "local" else 1000)
        assert f["deletions_requested"] == f["insertions"]
        assert (batch.insert_src != batch.insert_dst).all()
        assert ((batch.insert_weights >= 1) & (batch.insert_weights <= 100)).all()
        assert batch.insert_weights.shape == (batch.insert_src.size, 3)
        exists = np.array([(u, v) in edges for u, v in zip(batch.insert_src.tolist(), batch.insert_dst.tolist())])
        assert exists.sum() == f["reweights"] and (~exists).sum() == f["new_insertions"]
        # new edges first, then the re-weights
        assert not (exists[:-1] & ~exists[1:]).any()
        # deletions are existing, non-loop edges
        pairs = list(zip(batch.delete_src.tolist(), batch.delete_dst.tolist()))
        assert all(p in edges and p[0] != p[1] for p in pairs)
        assert len(pairs) == f["deletions_kept"]
        assert f["digest"] == B.batch_digest(*batch.arrays().values())


def test_deletions_with_replacement():
    # a tiny graph forces repeats: 500 deletions from the 6 directed edges of a 4-vertex path
    row_ptr = np.array([0, 1, 3, 5, 6])
    col_ind = np.array([1, 0, 2, 1, 3, 2])
    g = build_graph(row_ptr, col_ind)
    b = B.draw_batch(B.BatchSpec("u", 1000, safe=False), g)
    pairs = list(zip(b.delete_src.tolist(), b.delete_dst.tolist()))
    assert len(pairs) == 500 and len(set(pairs)) == len(edge_set(g))


def test_safe_filter_keeps_every_reachable_vertex(graph, drawn):
    before = reachable(graph)
    for name in ("safe", "local"):
        trial = graph.copy()
        trial.apply(drawn[name].to_batch())
        after = reachable(trial)[: graph.num_vertices]
        assert not (before & ~after).any(), name
    # the unsafe batch (same draws, unfiltered) does lose vertices on a sparse road graph, and
    # the safe one kept a subset of its deletions
    trial = graph.copy()
    trial.apply(drawn["unsafe"].to_batch())
    assert (before & ~reachable(trial)[: graph.num_vertices]).any()
    assert drawn["safe"].facts["filter_rounds"] >= 1
    unsafe = list(zip(drawn["unsafe"].delete_src.tolist(), drawn["unsafe"].delete_dst.tolist()))
    kept = list(zip(drawn["safe"].delete_src.tolist(), drawn["safe"].delete_dst.tolist()))
    it = iter(unsafe)
    assert all(any(p == q for q in it) for p in kept)  # an order-preserving subsequence
    np.testing.assert_array_equal(drawn["safe"].insert_src, drawn["unsafe"].insert_src)


def test_local_batch_stays_in_the_region(graph, drawn):
    f = drawn["local"].facts
    m = adjacency(graph.num_vertices, np.asarray(graph.row_ptr), np.asarray(graph.col_ind))
    hops = dijkstra(m, directed=False, indices=f["centre"], unweighted=True)
    assert f["region_size"] == int((hops <= 6).sum()) >= 2
    b = drawn["local"]
    for ids in (b.insert_src, b.insert_dst, b.delete_src, b.delete_dst):
        assert (hops[ids] <= 6).all()


def test_deterministic_digests(graph, drawn):
    again = B.draw_batch(B.BatchSpec("safe", 2000, safe=True), graph)
    assert again.facts["digest"] == drawn["safe"].facts["digest"]
    other = B.draw_batch(B.BatchSpec("safe", 2000, safe=True), graph, seed=778)
    assert other.facts["digest"] != drawn["safe"].facts["digest"]


def test_identical_batches_detected_by_digest():
    # on a dense graph nothing becomes unreachable: safe equals unsafe, as on the reference rgg
    und = standins.rgg(3000, seed=2, radius_factor=1.2)
    src, dst, row_ptr = csr(und)
    g = build_graph(row_ptr, dst)
    specs = (B.BatchSpec("safe", 400, safe=True), B.BatchSpec("unsafe", 400, safe=False))
    out = B.draw_gate_batches(g, radius=3, specs=specs)
    assert out["safe"].facts["digest"] == out["unsafe"].facts["digest"]
    assert out["unsafe"].facts["identical_to"] == "safe" and "identical_to" not in out["safe"].facts
    assert out["safe"].facts["filter_rounds"] == 0


def test_edge_pairs_first_occurrence_without_loops():
    # row 0: 0->1, 0->0 (loop), 0->1 (parallel); row 1: 1->0
    pairs = B.edge_pairs(2, np.array([0, 3, 4]), np.array([1, 0, 1, 0]))
    assert list(zip(*(a.tolist() for a in pairs))) == [(0, 1), (1, 0)]


def test_batch_digest_is_reproducible_across_machines(graph):
    """Golden digest: same graph and parameters give the same batch everywhere (see
    test_standins.test_generators_are_reproducible_across_machines)."""
    batch = B.draw_batch(B.BatchSpec("safe", 2000, safe=True), graph)
    assert batch.facts["digest"] == "15cd9d5d48121f71dd41920408d08407f3693555a5e8fa19bac7865293882687"
