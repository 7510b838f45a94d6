"""Randomized chains of batches (algorithm.md §13.3), every step checked against the oracles:
graph arrays and apply summary (algorithm.md §3.3), distances (Dijkstra), parents (closed form of
algorithm.md §5.12), ``invalidated``, ``affected``, ``packed_parents``, and ``update() ==
compute()`` bytes from a canonical tree. Several results ride in one ``update()``: every objective,
a perturbed (non-canonical) import, and results with ``delta`` forced to 1..300.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engines
from engines import sssp

from .. import harness as H

KIND_GROUPS = {
    "insert_only": ("insert", "growth", "selfloop"),
    "delete_only": ("delete", "tree_delete", "missing", "disconnect"),
    "reweight": ("reweight", "tree_increase", "raise_parallel"),
    "any": H.BATCH_KINDS,
}


def run_chain(seed, shape, n, K, wclass, multi, symmetrize, kinds, delta_mode, offsets64=False,
              propagation="auto"):
    with H.host_propagation(propagation):
        _run_chain(seed, shape, n, K, wclass, multi, symmetrize, kinds, delta_mode, offsets64)


def _run_chain(seed, shape, n, K, wclass, multi, symmetrize, kinds, delta_mode, offsets64):
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, K, wclass, multi=multi)
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n, symmetrize=symmetrize,
                                 offset_dtype=np.int64 if offsets64 else None)
    s = int(rng.integers(0, n))
    tracked = []
    for k in range(K):
        delta = int(rng.integers(1, 301)) if delta_mode else 0
        tracked.append(H.Tracked(H.check_compute(g, s, objective=k, delta=delta), k, True))
    # a perturbed import of one objective and a second source
    k = int(rng.integers(0, K))
    tracked.append(H.import_perturbed(rng, g, H.Tracked(sssp.compute(g, s, objective=k), k, True)))
    s2 = int(rng.integers(0, n))
    tracked.append(H.Tracked(sssp.compute(g, s2, objective=k), k, True))
    ref = H.ref_of(g)
    for kind in kinds:
        if delta_mode:
            for t in tracked:
                t.result.set_options(delta=int(rng.integers(1, 301)))
        if rng.random() < 0.5:  # re-perturb the non-canonical result
            tracked[K] = H.import_perturbed(rng, g, tracked[K])
        # tree-edge kinds aim at the tree of a random result (the perturbed one included)
        parents = tracked[int(rng.integers(0, len(tracked)))].result.to_numpy()[1]
        arrays = H.random_batch(rng, kind, ref, parents, s, wclass)
        _, app = H.check_update(g, arrays, tracked, ref_old=ref)
        ref = app.graph


chain_args = dict(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from(H.SHAPES),
    n=st.integers(1, 60),
    K=st.integers(1, 3),
    wclass=st.sampled_from(H.WEIGHT_CLASSES),
    multi=st.booleans(),
    symmetrize=st.booleans(),
    delta_mode=st.booleans(),
    offsets64=st.booleans(),
    propagation=st.sampled_from(["auto", "numpy"]),
)


@settings(max_examples=H.examples(250))
@given(kinds=st.lists(st.sampled_from(KIND_GROUPS["any"]), min_size=3, max_size=5), **chain_args)
@pytest.mark.slow
def test_random_chains_mixed(kinds, **kw):
    run_chain(kinds=kinds, **kw)


@settings(max_examples=H.examples(80))
@given(kinds=st.lists(st.sampled_from(KIND_GROUPS["insert_only"]), min_size=3, max_size=5),
       **chain_args)
def test_random_chains_insert_only(kinds, **kw):
    run_chain(kinds=kinds, **kw)


@settings(max_examples=H.examples(80))
@given(kinds=st.lists(st.sampled_from(KIND_GROUPS["delete_only"]), min_size=3, max_size=5),
       **chain_args)
def test_random_chains_delete_only(kinds, **kw):
    run_chain(kinds=kinds, **kw)


@settings(max_examples=H.examples(80))
@given(kinds=st.lists(st.sampled_from(KIND_GROUPS["reweight"]), min_size=3, max_size=5),
       **chain_args)
def test_random_chains_reweight(kinds, **kw):
    run_chain(kinds=kinds, **kw)


@settings(max_examples=H.examples(30))
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES),
       wclass=st.sampled_from(H.WEIGHT_CLASSES))
def test_chain_delete_all_then_rebuild(seed, shape, wclass):
    """Delete everything, then re-insert: every vertex but the source goes unreachable and back."""
    run_chain(seed, shape, 20, 2, wclass, True, False,
              ["delete_all", "insert", "growth", "reinsert", "delete_all"], False)


@settings(max_examples=H.examples(25))
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES),
       n=st.integers(200, 1500), wclass=st.sampled_from(H.WEIGHT_CLASSES),
       multi=st.booleans(), delta_mode=st.booleans(),
       propagation=st.sampled_from(["auto", "numpy"]))
def test_medium_chains_of_combined_batches(seed, shape, n, wclass, multi, delta_mode, propagation):
    """Larger graphs and batches mixing several kinds: long frontiers, many epochs."""
    run_chain(seed, shape, n, 2, wclass, multi, False, ["combo", "combo", "tree_delete", "combo"],
              delta_mode, propagation=propagation)
