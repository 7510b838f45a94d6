"""Multi-hop pointer jumping on the GPU (kernels.cuh SSSP_MULTI_HOP_JUMP, issues 27, 34;
``ENGINES_MULTI_HOP_JUMP=1``): a vertex follows up to SSSP_JUMP_HOPS ancestors a round. The
flagged set is the default module's, so every run must return the host reference's bytes: the
golden corpus (update() and compute() of every case), randomized chains of batches on the
push-width shapes, packed and distance-only, on every plain-push configuration; the parent-cycle
errors as the default module reports them; and on a deep tree the rounds (a statistic the fused
engine's grid_syncs carry) within the multi-hop bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp.cuda import fused, jumps

from . import ops_support as S
from .test_conformance import _check_recovery, _cycle_case, _expect_post_commit_error, _import
from .test_push_width import SHAPES
from .test_wide_passes import SOLO, chains_with, replay_golden_with

pytestmark = S.GPU

DEFINE = "SSSP_MULTI_HOP_JUMP"
HOPS = 3  # kernels.cuh SSSP_JUMP_HOPS (the two change together)


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_corpus_gives_the_stored_bytes(monkeypatch, shard, solo):
    replay_golden_with(monkeypatch, jumps.JUMP_ENV, DEFINE, shard, solo)


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_randomized_chains_give_the_reference_bytes(monkeypatch, shape, words, solo):
    chains_with(monkeypatch, jumps.JUMP_ENV, DEFINE, shape, words, solo, seed=4451)


@pytest.mark.parametrize("engine", ["fused", "operators"])
def test_a_parent_cycle_is_still_reported(monkeypatch, engine):
    """A cycle with no root keeps jumping in the last round with several hops a round too."""
    S.skip_unless_it_runs(engine)
    monkeypatch.setenv(jumps.JUMP_ENV, "1")
    graph, d, p = _cycle_case()
    _expect_post_commit_error(graph, _import(graph, d, p, engine),
                              engines.Batch(delete_src=[0], delete_dst=[1]), "parent_cycle")
    _check_recovery(graph, engine)


def test_a_deep_path_settles_within_the_multi_hop_bound(monkeypatch):
    """A path of 2^14 vertices cut after the source: every vertex below the cut is flagged, which
    takes about log2 of the depth one-hop rounds and about log4 of it with three hops a round
    (at most that many: a racy read only takes a vertex farther). The fused engine's grid
    barriers carry the rounds (fused.grid_syncs: 6 fixed + rounds + the near-far loop's)."""
    S.skip_unless_it_runs("fused")
    monkeypatch.setenv(jumps.JUMP_ENV, "1")
    monkeypatch.setenv(fused.SOLO_ENV, "0")  # every push iteration a grid barrier
    n = 1 << 14
    src = np.arange(n - 1)
    graph = engines.Graph.from_edges(src, src + 1, np.ones(n - 1, dtype=np.int64), num_vertices=n)
    results = {"host": sssp.compute(graph, 0, backend="host"),
               "fused": sssp.compute(graph, 0, backend="cuda", cuda_engine="fused", delta=1)}
    stats = S.update_all(graph, engines.Batch(delete_src=[0], delete_dst=[1]), results)
    S.assert_conformant(results, stats, update=True)
    st = stats["fused"]
    assert st.invalidated == n - 1 and st.packed_parents
    rounds = st.grid_syncs - 6 - st.iterations - 2 * st.epochs
    # the depth below the cut is n - 2; after r rounds every vertex within (HOPS + 1)^r - 1 of the
    # root is flagged, so ceil(log4 (n - 1)) rounds suffice (a racy read only goes farther); one
    # more as a margin. The one-hop kernel takes about log2 n = 14.
    bound = math.ceil(math.log(n - 1, HOPS + 1)) + 1
    assert 1 <= rounds <= bound, (rounds, bound, st)
