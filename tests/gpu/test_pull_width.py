"""The pull's lane groups on the GPU (kernels.cuh pull_candidates): a candidate's in-edges spread
over up to a warp of lanes when the candidates are few, one lane each when they fill the grid.
Whatever the grouping, every engine returns the host reference's bytes: candidates with in-degrees
below, at and far above a warp (ties between in-neighbours included, so the key-minimum's parent
rule is what decides), a handful of candidates (the widest groups), thousands (narrower ones) and more than half a grid of
an H100 or H200 (one lane each, the loop as it was before the groups).
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


def _fan_in_graph(rng, hubs: int, degrees):
    """A star 0 -> h for the hubs h = 1..hubs (weight 1: the tree edges that the batch deletes), and
    every hub fed by ``degrees[h - 1]`` in-edges from a pool of vertices hung off the source, with
    few distinct weights (ties)."""
    pool = 4000
    src, dst, w = [], [], []
    src += [0] * hubs; dst += list(range(1, hubs + 1)); w += [1] * hubs
    pool_ids = np.arange(hubs + 1, hubs + 1 + pool)
    src += [0] * pool; dst += pool_ids.tolist(); w += rng.integers(1, 4, pool).tolist()
    for h in range(1, hubs + 1):
        feeders = rng.choice(pool_ids, size=int(degrees[h - 1]), replace=False)
        src += feeders.tolist(); dst += [h] * len(feeders); w += rng.integers(50, 53, len(feeders)).tolist()
    n = hubs + 1 + pool
    return engines.Graph.from_edges(np.asarray(src), np.asarray(dst), np.asarray(w), num_vertices=n), hubs


@pytest.mark.parametrize("hubs", [3, 40, 3000, 20000])
@pytest.mark.parametrize("degree", [1, 31, 32, 33, 700])
def test_grouped_pull_gives_the_reference_bytes(hubs, degree):
    if hubs * degree > 10**6:
        pytest.skip("20,000 candidates (one lane each) are checked at the smaller in-degrees")
    rng = np.random.default_rng(hubs * 1000 + degree)
    degrees = np.full(hubs, degree) if degree < 700 else rng.integers(100, 700, hubs)
    graph, hubs = _fan_in_graph(rng, hubs, degrees)
    results = S.compute_all(graph, 0)
    S.assert_conformant(results, what="compute")
    # delete the star's edges: every hub loses its parent and pulls from its in-neighbours
    batch = engines.Batch(delete_src=np.zeros(hubs, np.int64), delete_dst=np.arange(1, hubs + 1))
    stats = S.update_all(graph, batch, results)
    S.assert_conformant(results, stats, update=True, what=f"{hubs} hubs, in-degree {degree}")
    assert stats["host"].invalidated == hubs
