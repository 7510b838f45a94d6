"""The wide O(n) passes on the GPU (kernels.cuh SSSP_WIDE_PASSES, issue 34 step 2;
``ENGINES_WIDE_PASSES=1``): several items per thread and ``__restrict__`` in the passes every run
makes over n (compute()'s unpack, the distance-only recovery; the update's pack, pointer jumping,
invalidation and unpack keep their loads and gain the qualifier), and no racy pre-check in a push
by one block. The same writes as the default module, so every run must return the host reference's
bytes: the golden corpus (update() and compute() of every case), randomized chains of batches on
the push-width shapes, packed and distance-only, with and without the fused solo push, on every
configuration of the plain push module (the "batched" expansion's modules have no wide variant;
such a run is refused before anything changes).
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines.sssp.cuda import fused, passes, push, runtime
from engines.sssp.plan import DEFAULT_PUSH_EXPANSION
from .. import harness as H
from conformance import oracles as O
from . import ops_support as S
from .test_push_width import SHAPES

pytestmark = S.GPU

#: Every configuration whose push has a wide module (passes.combines): all but the "batched"
#: expansion's.
WIDE_CONFIGS = tuple(
    c for c in S.ALL_CUDA_CONFIGS
    if passes.combines(push.module_defines(S.CUDA_CONFIGS[c].get("push_expansion",
                                                                  DEFAULT_PUSH_EXPANSION))))
#: The golden replay's spelling of the plain push's configurations (conformance.replay.Config).
REPLAY_CONFIGS = tuple(f"cuda:{engine}+{expansion}"
                       for engine in ("fused", "operators", "operators-host")
                       for expansion in ("group", "vertex"))
SOLO = ("0", "1024")  # ENGINES_FUSED_SOLO: off, and the lists of small updates in one block


def _configs() -> tuple[str, ...]:
    return tuple(c for c in WIDE_CONFIGS if S.fused_available() or not c.startswith("fused"))


def _wide_modules_loaded() -> set[str]:
    """The engines that have a wide-pass module compiled in this process."""
    return {engine for (engine, _device, defines) in runtime._modules if "SSSP_WIDE_PASSES" in defines}


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_corpus_gives_the_stored_bytes(monkeypatch, shard, solo):
    """Every golden case replayed as the golden replay does (conformance.replay: update() from the
    stored input tree, then compute(); distances, parents, invalidated, affected, the apply summary
    and the synchronizations) on every wide configuration."""
    from conformance.replay import Config, replay

    monkeypatch.setenv(passes.WIDE_ENV, "1")
    monkeypatch.setenv(fused.SOLO_ENV, solo)
    corpus = S.golden_corpus()
    cases = [c for c in corpus.cases if c["file"] == shard]
    assert cases, f"no cases in {shard}"
    # the solo push is the fused engine's alone: the operators configurations run with it off
    configs = [Config.of(text) for text in REPLAY_CONFIGS
               if (S.fused_available() or "fused" not in text) and ("fused" in text or solo == "0")]
    if not configs:
        pytest.skip("the fused engine does not run on this device")
    failures = [f"{o.config} {o.case}: {'; '.join(o.mismatches[:3])}"
                for o in replay(corpus, cases, configs) if o.mismatches]
    assert not failures, f"{len(failures)} runs differ:\n" + "\n".join(failures[:20])
    assert ("operators" if solo == "0" else "fused") in _wide_modules_loaded()


def _distance_only(n, src, dst, w):
    """The same shape in at least 70,000 vertices with one extra edge of weight 2^31 - 1 into the
    source (never relaxed): the words keep plain distances and the run recovers the parents
    (algorithm.md §4.3, §4.4), the wide recovery passes."""
    n = max(n, 70_000)
    assert not O.oracle_packed(n, O.WEIGHT_MAX)
    return (n, np.append(src, n - 1), np.append(dst, 0), np.append(w, O.WEIGHT_MAX))


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_randomized_chains_give_the_reference_bytes(monkeypatch, shape, words, solo):
    monkeypatch.setenv(passes.WIDE_ENV, "1")
    monkeypatch.setenv(fused.SOLO_ENV, solo)
    configs = _configs()
    rng = np.random.default_rng(sorted(SHAPES).index(shape) + 3401)
    n, src, dst, w = SHAPES[shape](rng)
    if words == "distance-only":
        n, src, dst, w = _distance_only(n, src, dst, w)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)

    for delta in (1, 10**6):  # short near lists (one-block pushes under solo) and long ones
        results = S.compute_all(graph, 0, engines=configs, delta=delta)
        S.assert_conformant(results, what=f"{shape} compute delta {delta} wide solo {solo}")
        exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
        for name in configs:
            H.assert_tree_equals(results[name], exp_d, exp_p, f"{shape} compute {name} wide")
            assert bool(results[name].stats.packed_parents) == (words == "packed")

    # a chain of updates from the last compute(): subtree deletions (pointer jumping,
    # invalidation), increases, mixed batches with insertions
    for step, kind in enumerate(("tree_delete", "mixed", "tree_increase", "mixed", "growth")):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"{shape} step {step} {kind} wide")
    loaded = _wide_modules_loaded()
    assert "operators" in loaded and (not S.fused_available() or "fused" in loaded)


def test_the_wide_module_gives_the_default_modules_bytes(monkeypatch):
    """compute() and a chain of updates with the switch off and on, on two copies of one graph
    (one update() call reads the switch once for all its results) given the same batches: equal
    bytes and equal compared statistics on every configuration, packed and distance-only."""
    configs = _configs()
    rng = np.random.default_rng(34)
    n, src, dst, w = SHAPES["grid"](rng)
    for words in ("packed", "distance-only"):
        if words == "distance-only":
            n, src, dst, w = _distance_only(n, src, dst, w)
        graphs = {wide: engines.Graph.from_edges(src, dst, w, num_vertices=n) for wide in ("0", "1")}
        sides = {}
        for wide, graph in graphs.items():
            monkeypatch.setenv(passes.WIDE_ENV, wide)
            sides[wide] = S.compute_all(graph, 0, engines=configs, delta=10)
        for name in ("host",) + configs:
            H.assert_result_bytes_equal(sides["0"][name], sides["1"][name])
        for step, kind in enumerate(("tree_delete", "mixed", "tree_increase", "growth")):
            _, parents = sides["0"]["host"].to_numpy()
            arrays = H.random_batch(rng, kind, H.ref_of(graphs["0"]), parents, 0, "mid")
            stats = {}
            for wide, graph in graphs.items():
                monkeypatch.setenv(passes.WIDE_ENV, wide)
                stats[wide] = S.update_all(graph, H.make_batch(arrays), sides[wide])
            for name in ("host",) + configs:
                what = f"{words} step {step} {kind} {name}"
                H.assert_result_bytes_equal(sides["0"][name], sides["1"][name])
                for field in S.COMPARED_STATS:
                    assert getattr(stats["0"][name], field) == getattr(stats["1"][name], field), what


def test_the_batched_expansion_is_refused_before_anything_changes(monkeypatch):
    """The "batched" push has no wide module: compute() and update() raise the switch's error,
    update() before the commit (the graph keeps its version, the result is intact)."""
    rng = np.random.default_rng(5)
    n, src, dst, w = SHAPES["grid"](rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    options = {"backend": "cuda", "cuda_engine": "operators", "push_expansion": "batched"}
    monkeypatch.delenv(passes.WIDE_ENV, raising=False)
    before = engines.sssp.compute(graph, 0, **options)
    monkeypatch.setenv(passes.WIDE_ENV, "1")
    with pytest.raises(engines.errors.InvalidArgumentError, match=passes.WIDE_ENV):
        engines.sssp.compute(graph, 0, **options)
    d0, p0 = before.to_numpy()
    version = graph.version
    batch = H.make_batch(H.random_batch(rng, "mixed", H.ref_of(graph), p0, 0, "mid"))
    with pytest.raises(engines.errors.InvalidArgumentError, match=passes.WIDE_ENV):
        engines.sssp.update(graph, batch, before)
    assert graph.version == version and not before.poisoned
    d1, p1 = before.to_numpy()
    assert d1.tobytes() == d0.tobytes() and p1.tobytes() == p0.tobytes()


#: More new near-list entries per iteration than one block's queue holds (kernels.cuh
#: SSSP_BLOCK_QUEUE): a broom, the source's out-edges to every handle vertex, each handle's to a
#: bristle of its own.
BROOM_HANDLES = 3_000


@pytest.mark.parametrize("solo", SOLO)
def test_a_one_block_grid_overflows_the_block_queue_and_loses_nothing(monkeypatch, solo):
    """The wide module's block-aggregated appends (kernels.cuh SSSP_BLOCK_APPEND) with every push
    in one block (ENGINES_FUSED_MAX_BLOCKS=1, ENGINES_OPERATORS_LOOP_BLOCKS=1): an iteration lists
    3,000 vertices, so its queue of 1,024 fills and the rest go straight to the list. compute()
    against SciPy's tree (the spec's parent rule), then a chain of updates against the host's
    bytes."""
    monkeypatch.setenv(passes.WIDE_ENV, "1")
    monkeypatch.setenv(fused.SOLO_ENV, solo)
    monkeypatch.setenv(fused.MAX_BLOCKS_ENV, "1")
    monkeypatch.setenv("ENGINES_OPERATORS_LOOP_BLOCKS", "1")
    rng = np.random.default_rng(1024)
    h = BROOM_HANDLES
    handles = np.arange(1, h + 1)
    src = np.concatenate([np.zeros(h, dtype=np.int64), handles, handles + h])
    dst = np.concatenate([handles, handles + h, rng.integers(1, 2 * h + 1, h)])
    w = rng.integers(1, 50, src.size)
    n = 2 * h + 1
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
    assert "operators" in _wide_modules_loaded()
