"""The edge-parallel push at the edges of its group-width choice (docs/algorithm.md §5.12, §5.9 (c);
issue 26): under the "group" expansion kernels.cuh push_group_shift spreads a near-list vertex's
out-edges over 32 lanes when the list is short and over fewer, down to one, as the list fills the
grid; "vertex" keeps one lane. Both expansions run here, on both engines and loops. Whatever the width,
every engine must return the host reference's bytes, and compute() must return SciPy's Dijkstra
distances with the canonical (lowest-id tight in-neighbour) parents.

The shapes force each width: a star (the centre alone in the near list, 10^5 out-edges over one
warp; then 10^5 leaves in one list), a chain (one vertex and one edge per iteration: one lane of
32 does all the work), a grid (lists of a few hundred). A one-block grid (256 threads) drives
the width to 1 for any list longer than 256, the default grid keeps 32 lanes for most lists.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from .. import harness as H
from conformance import oracles as O
from . import ops_support as S

pytestmark = S.GPU

STAR_LEAVES = 100_000


def _star(rng):
    """Centre 0 with STAR_LEAVES out-edges, each leaf one edge to a random other leaf."""
    leaves = np.arange(1, STAR_LEAVES + 1, dtype=np.int64)
    src = np.concatenate([np.zeros(STAR_LEAVES, dtype=np.int64), leaves])
    dst = np.concatenate([leaves, rng.integers(1, STAR_LEAVES + 1, size=STAR_LEAVES)])
    w = rng.integers(1, 50, size=src.size)
    return STAR_LEAVES + 1, src, dst, w


def _chain(rng, n=3000):
    """0 -> 1 -> ... -> n-1, plus a few long back edges that never win."""
    src = np.arange(n - 1, dtype=np.int64)
    dst = src + 1
    w = rng.integers(1, 4, size=src.size)
    back_src = rng.integers(1, n, size=20)
    back_dst = rng.integers(0, n, size=20)
    return (n, np.concatenate([src, back_src]), np.concatenate([dst, back_dst]),
            np.concatenate([w, np.full(20, 10**6)]))


def _grid(rng, side=120):
    """A directed side x side grid, both directions of every lattice edge."""
    ids = np.arange(side * side, dtype=np.int64).reshape(side, side)
    right = (ids[:, :-1].ravel(), ids[:, 1:].ravel())
    down = (ids[:-1, :].ravel(), ids[1:, :].ravel())
    src = np.concatenate([right[0], right[1], down[0], down[1]])
    dst = np.concatenate([right[1], right[0], down[1], down[0]])
    return side * side, src, dst, rng.integers(1, 20, size=src.size)


SHAPES = {"star": _star, "chain": _chain, "grid": _grid}


def distance_only(n, src, dst, w):
    """The same shape in at least 70,000 vertices (the extra ones unreachable) with one extra edge
    of weight 2^31 - 1 into the source (never relaxed): the packed words no longer fit, so the run
    keeps plain distances and recovers the parents (algorithm.md §4.3, §4.4)."""
    n = max(n, 70_000)
    assert not O.oracle_packed(n, O.WEIGHT_MAX)
    return (n, np.append(src, n - 1), np.append(dst, 0), np.append(w, O.WEIGHT_MAX))


def shape_edges(shape: str, words: str, rng):
    """``(n, src, dst, w)`` of ``shape`` drawn from ``rng``, made distance-only (``distance_only``)
    when ``words`` is "distance-only", as the randomized chains of every push variant build it."""
    n, src, dst, w = SHAPES[shape](rng)
    return distance_only(n, src, dst, w) if words == "distance-only" else (n, src, dst, w)


def _batch(rng, graph, parents, kind):
    """A batch of `kind` (harness.random_batch) on the current graph."""
    return H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))


@pytest.mark.parametrize("blocks", ["default", "1"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_width_gives_the_reference_bytes(monkeypatch, shape, blocks):
    if blocks != "default":
        monkeypatch.setenv("ENGINES_FUSED_MAX_BLOCKS", blocks)
        monkeypatch.setenv("ENGINES_OPERATORS_LOOP_BLOCKS", blocks)
    configs = tuple(c for c in S.ALL_CUDA_CONFIGS if S.fused_available() or not c.startswith("fused"))
    rng = np.random.default_rng(sorted(SHAPES).index(shape) + 13)
    n, src, dst, w = SHAPES[shape](rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)

    # delta 1 keeps the near lists short (the wide groups); a large delta fills them (narrow)
    for delta in (1, 10**6):
        results = S.compute_all(graph, 0, engines=configs, delta=delta)
        S.assert_conformant(results, what=f"{shape} compute delta {delta}")
        exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
        for name in configs:
            H.assert_tree_equals(results[name], exp_d, exp_p, f"{shape} compute {name}")

    # updates through the same widths: tree deletions invalidate subtrees, insertions lower words
    for kind in ("tree_delete", "mixed", "tree_increase"):
        _, parents = results["host"].to_numpy()
        stats = S.update_all(graph, _batch(rng, graph, parents, kind), results)
        S.assert_conformant(results, stats, update=True, what=f"{shape} {kind}")
