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
from engines.sssp.cuda import appends, fused, passes, push, runtime
from engines.sssp.plan import DEFAULT_PUSH_EXPANSION
from .. import harness as H
from conformance import oracles as O
from . import ops_support as S
from .test_push_width import SHAPES, distance_only, shape_edges

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


def modules_loaded(define: str) -> set[str]:
    """The engines that have a module with ``define`` compiled in this process."""
    return {engine for (engine, _device, defines) in runtime._modules if define in defines}


def _wide_modules_loaded() -> set[str]:
    return modules_loaded("SSSP_WIDE_PASSES")


def replay_golden_with(monkeypatch, env: str, define: str | None, shard: str, solo: str,
                       value: str = "1") -> None:
    """Every golden case of ``shard`` replayed as the golden replay does (conformance.replay:
    update() from the stored input tree, then compute(); distances, parents, invalidated, affected,
    the apply summary and the synchronizations) on every plain-push configuration with the switch
    ``env`` set to ``value`` (its module has ``define``) and the solo push at ``solo``. Shared by
    the plain-push variants' tests (here, test_block_append.py, test_push_chain.py); ``define``
    None for a switch that selects no module (a kernel argument's bit: test_push_precheck.py)."""
    from conformance.replay import Config, replay

    monkeypatch.setenv(env, value)
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
    if define is not None:
        assert ("operators" if solo == "0" else "fused") in modules_loaded(define)


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_corpus_gives_the_stored_bytes(monkeypatch, shard, solo):
    replay_golden_with(monkeypatch, passes.WIDE_ENV, "SSSP_WIDE_PASSES", shard, solo)


def chains_with(monkeypatch, env: str, define: str | None, shape: str, words: str, solo: str, seed: int,
                value: str = "1") -> None:
    """compute() of ``shape`` (packed or distance-only words) with delta 1 and 10^6 against the
    canonical tree, then a chain of updates against the host's bytes, on every plain-push
    configuration with the switch ``env`` set to ``value`` (its module has ``define``). Shared
    as replay_golden_with is."""
    monkeypatch.setenv(env, value)
    monkeypatch.setenv(fused.SOLO_ENV, solo)
    configs = _configs()
    rng = np.random.default_rng(sorted(SHAPES).index(shape) + seed)
    n, src, dst, w = shape_edges(shape, words, rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)

    for delta in (1, 10**6):  # short near lists (one-block pushes under solo) and long ones
        results = S.compute_all(graph, 0, engines=configs, delta=delta)
        S.assert_conformant(results, what=f"{shape} compute delta {delta} {env} solo {solo}")
        exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
        for name in configs:
            H.assert_tree_equals(results[name], exp_d, exp_p, f"{shape} compute {name} {env}")
            assert bool(results[name].stats.packed_parents) == (words == "packed")

    # a chain of updates from the last compute(): subtree deletions (pointer jumping,
    # invalidation), increases, mixed batches with insertions
    for step, kind in enumerate(("tree_delete", "mixed", "tree_increase", "mixed", "growth")):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"{shape} step {step} {kind} {env}")
    if define is not None:
        loaded = modules_loaded(define)
        assert "operators" in loaded and (not S.fused_available() or "fused" in loaded)


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_randomized_chains_give_the_reference_bytes(monkeypatch, shape, words, solo):
    chains_with(monkeypatch, passes.WIDE_ENV, "SSSP_WIDE_PASSES", shape, words, solo, seed=3401)


def switch_sides(monkeypatch, env: str, values: tuple[str, str], graph_arrays, configs, rng,
                 delta: int) -> dict:
    """compute() and a chain of updates with the switch ``env`` at each of ``values`` (off, on),
    on two copies of one graph ``(n, src, dst, w)`` (one update() call reads the switch once for
    all its results) given the same batches: equal bytes and equal compared statistics on every
    configuration after compute() and after each update. ``{value: {name: result}}`` after the
    last. Shared by the module variants' tests (here, test_push_chain.py)."""
    n, src, dst, w = graph_arrays
    graphs = {value: engines.Graph.from_edges(src, dst, w, num_vertices=n) for value in values}
    sides = {}
    for value, graph in graphs.items():
        monkeypatch.setenv(env, value)
        sides[value] = S.compute_all(graph, 0, engines=configs, delta=delta)
    off, on = values
    for name in ("host",) + configs:
        H.assert_result_bytes_equal(sides[off][name], sides[on][name])
    for step, kind in enumerate(("tree_delete", "mixed", "tree_increase", "growth")):
        _, parents = sides[off]["host"].to_numpy()
        arrays = H.random_batch(rng, kind, H.ref_of(graphs[off]), parents, 0, "mid")
        stats = {}
        for value, graph in graphs.items():
            monkeypatch.setenv(env, value)
            stats[value] = S.update_all(graph, H.make_batch(arrays), sides[value])
        S.assert_conformant(sides[on], stats[on], update=True, what=f"{env}={on} step {step} {kind}")
        for name in ("host",) + configs:
            what = f"{env} step {step} {kind} {name}"
            H.assert_result_bytes_equal(sides[off][name], sides[on][name])
            for field in S.COMPARED_STATS:
                assert getattr(stats[off][name], field) == getattr(stats[on][name], field), what
    return sides


def test_the_wide_module_gives_the_default_modules_bytes(monkeypatch):
    """switch_sides with the wide passes off and on, packed and distance-only."""
    configs = _configs()
    rng = np.random.default_rng(34)
    n, src, dst, w = SHAPES["grid"](rng)
    for words in ("packed", "distance-only"):
        if words == "distance-only":
            n, src, dst, w = distance_only(n, src, dst, w)
        switch_sides(monkeypatch, passes.WIDE_ENV, ("0", "1"), (n, src, dst, w), configs, rng, delta=10)


@pytest.mark.parametrize("env", [passes.WIDE_ENV, appends.APPEND_ENV])
def test_the_batched_expansion_is_refused_before_anything_changes(monkeypatch, env):
    """The "batched" push has no module with a plain-push variant (the wide passes, the block
    appends: push.PlainPushVariant): compute() and update() raise the switch's error, update()
    before the commit (the graph keeps its version, the result is intact)."""
    rng = np.random.default_rng(5)
    n, src, dst, w = SHAPES["grid"](rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    options = {"backend": "cuda", "cuda_engine": "operators", "push_expansion": "batched"}
    monkeypatch.delenv(env, raising=False)
    before = engines.sssp.compute(graph, 0, **options)
    monkeypatch.setenv(env, "1")
    with pytest.raises(engines.errors.InvalidArgumentError, match=env):
        engines.sssp.compute(graph, 0, **options)
    d0, p0 = before.to_numpy()
    version = graph.version
    batch = H.make_batch(H.random_batch(rng, "mixed", H.ref_of(graph), p0, 0, "mid"))
    with pytest.raises(engines.errors.InvalidArgumentError, match=env):
        engines.sssp.update(graph, batch, before)
    assert graph.version == version and not before.poisoned
    d1, p1 = before.to_numpy()
    assert d1.tobytes() == d0.tobytes() and p1.tobytes() == p0.tobytes()
