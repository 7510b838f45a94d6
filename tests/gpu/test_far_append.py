"""The far pile's block queue on the GPU (kernels.cuh push_list, the push argument's
SSSP_FAR_QUEUE_BIT, issue 34; ``ENGINES_FAR_APPEND=1`` with the block appends,
``ENGINES_BLOCK_APPEND=1``): a fused push iteration's far-pile entries queued per block in shared
memory and reserved with one atomic per block, as the near list's are (the operators engine runs
beside it without the queue). The same entries in another order,
so every run must return the host reference's bytes: the golden corpus, randomized chains of
batches on the push-width shapes (packed and distance-only, with and without the fused solo
push), and a one-block grid whose iterations send more vertices to the far pile than the block's
queue holds, against SciPy's tree; on every configuration of the plain push module.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines.sssp.cuda import appends, fused
from .. import harness as H
from conformance import oracles as O
from . import ops_support as S
from .test_block_append import BROOM_HANDLES, broom_arcs
from .test_push_width import SHAPES
from .test_wide_passes import SOLO, _configs, chains_with, modules_loaded, replay_golden_with

pytestmark = S.GPU


@pytest.fixture
def far_queue(monkeypatch):
    monkeypatch.setenv(appends.APPEND_ENV, "1")
    monkeypatch.setenv(appends.FAR_ENV, "1")
    return monkeypatch


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_corpus_gives_the_stored_bytes(far_queue, shard, solo):
    replay_golden_with(far_queue, appends.FAR_ENV, "SSSP_BLOCK_APPEND", shard, solo)


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_randomized_chains_give_the_reference_bytes(far_queue, shape, words, solo):
    chains_with(far_queue, appends.FAR_ENV, "SSSP_BLOCK_APPEND", shape, words, solo, seed=3403)


@pytest.mark.parametrize("solo", SOLO)
def test_a_one_block_grid_overflows_the_far_queue_and_loses_nothing(far_queue, solo):
    """Every push in one block (ENGINES_FUSED_MAX_BLOCKS=1, ENGINES_OPERATORS_LOOP_BLOCKS=1) on a
    broom whose bristles are far: with delta 1 the handles' offers to their bristles lie above the
    threshold, so one iteration sends 3,000 vertices to the far pile and its queue of 1,024 fills
    (the rest go straight to the pile). compute() against SciPy's tree (the spec's parent rule),
    every run with epochs, then a chain of updates against the host's bytes."""
    far_queue.setenv("ENGINES_PUSH_CHAIN", "0")  # every lowered vertex through the queues
    far_queue.setenv(fused.SOLO_ENV, solo)
    far_queue.setenv(fused.MAX_BLOCKS_ENV, "1")
    far_queue.setenv("ENGINES_OPERATORS_LOOP_BLOCKS", "1")
    rng = np.random.default_rng(1025)
    h = BROOM_HANDLES
    n, src, dst = broom_arcs(rng, h)
    # the handles at distance 1 (near), every bristle at least 100 beyond them (far with delta 1)
    w = np.concatenate([np.ones(h, dtype=np.int64), rng.integers(100, 200, h), rng.integers(1, 50, h)])
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    configs = _configs()
    results = S.compute_all(graph, 0, engines=configs, delta=1)
    exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
    for name in ("host",) + configs:
        H.assert_tree_equals(results[name], exp_d, exp_p, f"far broom compute {name}")
    for name in configs:
        assert results[name].stats.epochs > 0, (name, results[name].stats)
    for step, kind in enumerate(("tree_delete", "mixed", "tree_increase", "mixed")):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"far broom step {step} {kind}")
    assert "operators" in modules_loaded("SSSP_BLOCK_APPEND")
