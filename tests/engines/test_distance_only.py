"""Distance-only mode (algorithm.md §4.3, §4.4, §13 item 5), triggered by the one packing rule:
n >= 65538 and W = 2^31 - 1. compute() and chains of update() against the oracles; a
non-canonical input tree comes out canonical."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp

from .. import harness as H
from conformance import oracles as O


def heavy_sparse_graph(rng, n, K=2):
    m = 3 * n
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    w = H.draw_weights(rng, (m, K), "tiny")  # many ties
    heavy = rng.integers(0, m, size=4)
    w[heavy, :] = O.WEIGHT_MAX
    # a long path as well, so that hop distances are not all tiny
    path = np.arange(0, 2000, dtype=np.int64)
    src = np.concatenate([src, path[:-1]])
    dst = np.concatenate([dst, path[1:]])
    w = np.concatenate([w, np.ones((path.size - 1, K), dtype=np.int64)])
    return src, dst, w


@pytest.mark.parametrize("propagation", ["auto", "numpy"])
@pytest.mark.slow
def test_distance_only_compute_and_update_chain(propagation):
    with H.host_propagation(propagation):
        _distance_only_chain()


def _distance_only_chain():
    n = 65538
    rng = np.random.default_rng(65538)
    src, dst, w = heavy_sparse_graph(rng, n)
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    assert not O.oracle_packed(n, O.WEIGHT_MAX)
    canon = [H.Tracked(H.check_compute(g, 0, objective=k), k, True) for k in range(2)]
    for t in canon:
        assert t.result.stats.packed_parents is False
    ref = H.ref_of(g)
    for step, kind in enumerate(["mixed", "tree_delete", "tree_increase", "growth"]):
        pert = H.import_perturbed(rng, g, H.Tracked(sssp.compute(g, 0, objective=1), 1, True))
        assert not pert.canonical
        arrays = H.random_batch(rng, kind, ref, canon[0].result.to_numpy()[1], 0, "tiny")
        stats, app = H.check_update(g, arrays, canon + [pert], ref_old=ref)
        ref = app.graph
        for st_ in stats:
            assert st_.packed_parents is False
        assert pert.canonical, "distance-only output must be canonical"


def test_distance_only_non_canonical_import_with_no_root():
    """Only insertion heads, no invalidation: every non-canonical parent is still rewritten."""
    n = 65538
    rng = np.random.default_rng(7)
    src, dst, w = heavy_sparse_graph(rng, n, K=1)
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    pert = H.import_perturbed(rng, g, H.Tracked(sssp.compute(g, 0), 0, True))
    before = pert.result.to_numpy()
    arrays = (np.array([n - 1]), np.array([n - 2]), np.array([[3]]), np.zeros(0, np.int64),
              np.zeros(0, np.int64))
    stats, _ = H.check_update(g, arrays, [pert])
    assert stats[0].invalidated == 0
    assert stats[0].affected > 1  # the perturbed parents were rewritten
    assert pert.canonical
    assert not np.array_equal(before[1], pert.result.to_numpy()[1])
