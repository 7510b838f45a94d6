"""The one packing rule (docs/algorithm.md §4.3, D1): the table, the boundary on both sides, and the
W of algorithm.md §3.5 that an update uses (every insertion counts; not recomputed on G_{t+1})."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp

from .. import harness as H
from conformance import oracles as O


@pytest.mark.parametrize("n,w_last", sorted(O.PACKING_TABLE.items()))
def test_oracle_rule_matches_the_spec_table(n, w_last):
    assert O.oracle_packed(n, w_last)
    assert not O.oracle_packed(n, w_last + 1)  # the rule's boundary, even past the largest int32 weight


@pytest.mark.parametrize("n,w_last", sorted(O.PACKING_TABLE.items()))
def test_engine_packing_module_matches_the_spec_table(n, w_last):
    from engines.sssp import packing

    assert packing.decide_packing(w_last, n).packed
    if w_last < O.WEIGHT_MAX:
        assert not packing.decide_packing(w_last + 1, n).packed
    assert packing.INFINITE_DISTANCE == O.INF == sssp.INFINITE_DISTANCE


def sparse_graph_with_heavy(rng, n, heavy_per_column, wclass="tiny"):
    """A sparse random graph (low hop diameter), column k holding one edge of weight heavy[k]."""
    m = 3 * n
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    K = len(heavy_per_column)
    w = H.draw_weights(rng, (m, K), wclass)
    for k, h in enumerate(heavy_per_column):
        w[rng.integers(0, m), k] = h
    return src, dst, w


@pytest.mark.parametrize("n,w_last", [(131072, 536875008), (65538, 2147450880)])
def test_compute_boundary_both_sides(n, w_last):
    rng = np.random.default_rng(n)
    src, dst, w = sparse_graph_with_heavy(rng, n, [w_last, w_last + 1])
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    assert g.max_weight(0) == w_last and g.max_weight(1) == w_last + 1
    a = H.check_compute(g, 0, objective=0)
    b = H.check_compute(g, 0, objective=1)
    assert a.stats.packed_parents is True
    assert b.stats.packed_parents is False


@pytest.mark.slow
def test_update_w_counts_every_insertion_and_is_not_recomputed(rng):
    """n = 131072: the column max stays at the last packing value, but
    (1) an insertion of 536875009 later overwritten in the same batch still makes the update
        distance-only, although G_{t+1}'s max packs;
    (2) deleting that heavy edge again: the update uses G_t's W (distance-only), compute() packs.
    A perturbed (non-canonical) input makes the mode visible in the parents."""
    n, w_last = 131072, 536875008
    src, dst, w = sparse_graph_with_heavy(rng, n, [w_last])
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    base = H.Tracked(sssp.compute(g, 0), 0, True)
    assert base.result.stats.packed_parents
    pert = H.import_perturbed(rng, g, base)
    assert not pert.canonical

    u, v = 5, 7
    arrays = (np.array([u, u]), np.array([v, v]), np.array([[w_last + 1], [3]]),
              np.zeros(0, np.int64), np.zeros(0, np.int64))
    stats, app = H.check_update(g, arrays, [pert, base])
    assert g.max_weight(0) == w_last
    assert stats[0].packed_parents is False and stats[1].packed_parents is False
    assert H.check_compute(g, 0).stats.packed_parents is True
    assert pert.canonical  # distance-only output is canonical whatever the input

    # put a heavy edge in, then delete it: the delete-update still runs distance-only
    heavy = (np.array([11]), np.array([13]), np.array([[w_last + 1]]),
             np.zeros(0, np.int64), np.zeros(0, np.int64))
    H.check_update(g, heavy, [base])
    pert = H.import_perturbed(rng, g, base)
    arrays = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 1), np.int64),
              np.array([11]), np.array([13]))
    stats, _ = H.check_update(g, arrays, [pert])
    assert stats[0].packed_parents is False
    assert g.max_weight(0) == w_last
    assert H.check_compute(g, 0).stats.packed_parents is True

    # now packed again: a perturbed input keeps some non-canonical parents (closed form)
    pert = H.import_perturbed(rng, g, H.Tracked(sssp.compute(g, 0), 0, True))
    arrays = (np.array([17]), np.array([19]), np.array([[2]]), np.zeros(0, np.int64),
              np.zeros(0, np.int64))
    stats, _ = H.check_update(g, arrays, [pert])
    assert stats[0].packed_parents is True
    assert not pert.canonical
