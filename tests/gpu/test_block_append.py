"""The block-aggregated near-list appends on the GPU (kernels.cuh SSSP_BLOCK_APPEND, issue 34;
``ENGINES_BLOCK_APPEND=1``, appends.py): a push iteration's new near-list entries queued per block
in shared memory and reserved with one atomic per block. The same entries as the default module in
another order, so every run must return the host reference's bytes: the golden corpus (update() and
compute() of every case), randomized chains of batches on the push-width shapes, packed and
distance-only, with and without the fused solo push, a one-block grid whose iterations overflow the
block's queue, on every configuration of the plain push module (the "batched" expansion's modules
have no appends variant; such a run is refused before anything changes).
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines.sssp.cuda import appends, fused
from .. import harness as H
from conformance import oracles as O
from . import ops_support as S
from .test_push_width import SHAPES
from .test_wide_passes import _configs, chains_with, modules_loaded, replay_golden_with

from tests.switch_env import set_switch

pytestmark = S.GPU

SOLO = ("0", "1024")  # ENGINES_FUSED_SOLO: off, and the lists of small updates in one block


@pytest.fixture(autouse=True)
def without_far_queue(monkeypatch):
    """The block appends with the far pile's entries appended lane by lane (ENGINES_FAR_APPEND=0):
    the far queue is on by default and test_far_append.py runs these cases with it."""
    monkeypatch.setenv(appends.FAR_ENV, "0")


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_corpus_gives_the_stored_bytes(monkeypatch, shard, solo):
    replay_golden_with(monkeypatch, appends.APPEND_ENV, "SSSP_BLOCK_APPEND", shard, solo)


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_randomized_chains_give_the_reference_bytes(monkeypatch, shape, words, solo):
    chains_with(monkeypatch, appends.APPEND_ENV, "SSSP_BLOCK_APPEND", shape, words, solo, seed=3402)


# the refusal with the "batched" expansion: test_wide_passes.py, for both plain-push variants


#: More new near-list entries per iteration than one block's queue holds (kernels.cuh
#: SSSP_BLOCK_QUEUE): a broom, the source's out-edges to every handle vertex, each handle's to a
#: bristle of its own.
BROOM_HANDLES = 3_000


def broom_arcs(rng, h=BROOM_HANDLES):
    """``(n, src, dst)`` of the broom: the source's arcs to the ``h`` handle vertices (the first
    ``h`` arcs), each handle's to a bristle of its own (the next ``h``), and each bristle's to a
    random handle or bristle (the last ``h``)."""
    handles = np.arange(1, h + 1)
    src = np.concatenate([np.zeros(h, dtype=np.int64), handles, handles + h])
    dst = np.concatenate([handles, handles + h, rng.integers(1, 2 * h + 1, h)])
    return 2 * h + 1, src, dst


@pytest.mark.parametrize("solo", SOLO)
def test_a_one_block_grid_overflows_the_block_queue_and_loses_nothing(monkeypatch, solo):
    """The block-aggregated appends (kernels.cuh SSSP_BLOCK_APPEND) with every push
    in one block (ENGINES_FUSED_MAX_BLOCKS=1, ENGINES_OPERATORS_LOOP_BLOCKS=1): an iteration lists
    3,000 vertices, so its queue of 1,024 fills and the rest go straight to the list. compute()
    against SciPy's tree (the spec's parent rule), then a chain of updates against the host's
    bytes."""
    monkeypatch.setenv(appends.APPEND_ENV, "1")
    # every lowered vertex through the queue, none kept by a chain, whatever the chains' default
    monkeypatch.setenv("ENGINES_PUSH_CHAIN", "0")
    monkeypatch.setenv(fused.SOLO_ENV, solo)
    monkeypatch.setenv(fused.MAX_BLOCKS_ENV, "1")
    monkeypatch.setenv("ENGINES_OPERATORS_LOOP_BLOCKS", "1")
    rng = np.random.default_rng(1024)
    h = BROOM_HANDLES
    n, src, dst = broom_arcs(rng, h)
    w = rng.integers(1, 50, src.size)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    configs = _configs()
    # delta 10^6: every offer is below the threshold, so each iteration's entries all go to the
    # next near list (the queue), none to the far pile
    results = S.compute_all(graph, 0, engines=configs, delta=10**6)
    exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
    for name in ("host",) + configs:
        H.assert_tree_equals(results[name], exp_d, exp_p, f"broom compute {name}")
    for name in configs:
        assert results[name].stats.pushes >= 2 * h, (name, results[name].stats)
    for step, kind in enumerate(("tree_delete", "mixed", "tree_increase", "mixed")):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"broom step {step} {kind}")
    assert "operators" in modules_loaded("SSSP_BLOCK_APPEND")


def _distinct_pairs(rng, n: int, count: int, avoid: set) -> tuple[np.ndarray, np.ndarray]:
    """``count`` distinct vertex pairs (u != v), none in ``avoid`` (pairs u * n + v)."""
    keys: set = set()
    while len(keys) < count:
        u, v = rng.integers(0, n, 2)
        key = int(u) * n + int(v)
        if u != v and key not in avoid:
            keys.add(key)
    keys_array = np.fromiter(keys, dtype=np.int64)
    return keys_array // n, keys_array % n


@pytest.mark.parametrize("chain", ["0", None])
def test_unset_the_batch_size_chooses_the_module(monkeypatch, chain):
    """ENGINES_BLOCK_APPEND unset (the default, appends.by_default): an update of at least
    appends.MIN_BATCH_CHANGES changes loads the appends' module on both engines, a small update the
    plain one on the fused engine and the appends' on the operators engine, compute() the plain one
    on both; with ENGINES_PUSH_CHAIN unset too (the shipped defaults) the operators engine's updates
    also load the chains (chains.OPERATORS_DEFAULT_HOPS), the fused engine's never. prepare()
    compiles what the run loads (compute() uncaptured), and every result is the host's bytes."""
    from engines.sssp.cuda import operators, runtime

    monkeypatch.delenv(appends.APPEND_ENV, raising=False)
    set_switch(monkeypatch, "ENGINES_PUSH_CHAIN", chain)
    loaded: list[tuple[str, tuple]] = []
    for module in (fused, operators):
        def recording(device, defines=(), _original=module.load_module, _engine=module.ENGINE):
            loaded.append((_engine, runtime.variant_defines(defines)))
            return _original(device, defines)
        monkeypatch.setattr(module, "load_module", recording)
    rng = np.random.default_rng(3403)
    n, half = 30_000, appends.MIN_BATCH_CHANGES // 2
    src, dst = _distinct_pairs(rng, n, 120_000, set())
    graph = engines.Graph.from_edges(src, dst, rng.integers(1, 100, src.size), num_vertices=n)
    configs = tuple(c for c in ("fused", "operators", "operators-host")
                    if S.fused_available() or c != "fused")

    results = S.compute_all(graph, 0, engines=configs)
    assert not any("SSSP_BLOCK_APPEND" in d or "SSSP_FUSED_CAPTURED" in d for _, d in loaded), loaded
    for changes in (2 * half, 100):  # a large batch, then a small one
        loaded.clear()
        pick = rng.choice(src.size, changes // 2, replace=False)
        existing = set((src * n + dst).tolist())
        ins_src, ins_dst = _distinct_pairs(rng, n, changes // 2, existing)
        batch = engines.Batch(insert_src=ins_src, insert_dst=ins_dst,
                              insert_weights=rng.integers(1, 100, ins_src.size),
                              delete_src=src[pick], delete_dst=dst[pick])
        S.update_all(graph, batch, results)
        for name in configs:
            H.assert_result_bytes_equal(results["host"], results[name])
        large = changes >= appends.MIN_BATCH_CHANGES
        running = {S.CUDA_CONFIGS[c]["cuda_engine"] for c in configs}
        # prepare and the run load the same variant: one kind per engine
        assert {e for e, d in loaded if "SSSP_BLOCK_APPEND" in d} == (
            {"fused", "operators"} if large else {"operators"}) & running, loaded
        assert {e for e, d in loaded if "SSSP_PUSH_CHAIN" in d} == (
            {"operators"} & running if chain is None else set()), loaded
        assert {e for e, _ in loaded} == running, loaded
        for engine in running:  # prepare() compiled the variant the run loaded
            assert len({d for e, d in loaded if e == engine}) == 1, (engine, loaded)
        keep = np.ones(src.size, dtype=bool)
        keep[pick] = False
        src, dst = np.concatenate([src[keep], ins_src]), np.concatenate([dst[keep], ins_dst])
