"""Lane-local chain following on the GPU (kernels.cuh SSSP_PUSH_CHAIN, issues 27 and 34;
``ENGINES_PUSH_CHAIN=<hops>`` with ``ENGINES_BLOCK_APPEND=1``, chains.py): a lane relaxes the
first vertex it lowers below the threshold itself, and so on along a chain, instead of listing it
for the next push iteration. Other relaxations in another order, so every run must return the host
reference's bytes: the golden corpus (update() and compute() of every case), randomized chains of
batches on the push-width shapes, packed and distance-only, with and without the fused solo push,
a real road network's stream against the host; and on a path, where one lane does all the work,
the push iterations must fall exactly as the rule says (so the chains do follow), and not with a
degree cap the path's vertices exceed.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines.sssp.cuda import appends, chains, fused
from .. import harness as H
from conformance import oracles as O
from . import ops_support as S
from .test_push_width import SHAPES
from .test_wide_passes import _configs, chains_with, modules_loaded, replay_golden_with, switch_sides

pytestmark = S.GPU

#: (ENGINES_PUSH_CHAIN, ENGINES_FUSED_SOLO): one hop and three, and three with the solo push
#: (which runs the chains in one block)
SETTINGS = [("1", "0"), ("3", "0"), ("3", "1024")]


@pytest.fixture
def with_appends(monkeypatch):
    """The chains run with the block appends only (chains.module_defines)."""
    monkeypatch.setenv(appends.APPEND_ENV, "1")
    monkeypatch.delenv(chains.DEGREE_ENV, raising=False)
    return monkeypatch


@pytest.mark.parametrize("hops, solo", SETTINGS)
@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_corpus_gives_the_stored_bytes(with_appends, shard, hops, solo):
    replay_golden_with(with_appends, chains.CHAIN_ENV, "SSSP_PUSH_CHAIN", shard, solo, value=hops)


@pytest.mark.parametrize("hops, solo", SETTINGS)
@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_randomized_chains_give_the_reference_bytes(with_appends, shape, words, hops, solo):
    chains_with(with_appends, chains.CHAIN_ENV, "SSSP_PUSH_CHAIN", shape, words, solo, seed=3403,
                value=hops)


PATH = 2_000


def _path(rng, n=PATH, extra_out_edge=False):
    """0 -> 1 -> ... -> n-1 with weights in [1, 3]; with ``extra_out_edge`` every vertex from 1 to
    n - 2 also has an edge back to 0 (never relaxed: 0 is the source), so its out-degree is 2."""
    src = np.arange(n - 1, dtype=np.int64)
    dst = src + 1
    w = rng.integers(1, 4, size=src.size)
    if extra_out_edge:
        back = np.arange(1, n - 1, dtype=np.int64)
        src, dst = np.concatenate([src, back]), np.concatenate([dst, np.zeros_like(back)])
        w = np.concatenate([w, np.ones_like(back)])
    return n, src, dst, w


@pytest.mark.parametrize("hops", [1, 4, 16])
def test_a_path_takes_a_push_iteration_per_hops_plus_one_vertices(with_appends, hops):
    """compute() on a path with delta past its length (every offer below the threshold): without
    chains each push iteration lowers one vertex, so the n vertices take n iterations; with
    ``hops`` the lane that lowers a vertex follows hops vertices and lists the next, so the pushed
    vertices are 0, hops + 1, 2 (hops + 1), ...: (n - 1) // (hops + 1) + 1 iterations. One lane
    does all the work, so the counts are exact on every engine; the tree is the canonical one."""
    configs = _configs()
    n, src, dst, w = _path(np.random.default_rng(hops))
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
    with_appends.setenv(chains.CHAIN_ENV, "0")
    plain = S.compute_all(graph, 0, engines=configs, delta=10**6)
    with_appends.setenv(chains.CHAIN_ENV, str(hops))
    chained = S.compute_all(graph, 0, engines=configs, delta=10**6)
    for name in configs:
        H.assert_tree_equals(chained[name], exp_d, exp_p, f"path {name} hops {hops}")
        H.assert_result_bytes_equal(plain[name], chained[name])
        assert plain[name].stats.iterations == n, (name, plain[name].stats)
        assert chained[name].stats.iterations == (n - 1) // (hops + 1) + 1, (name, chained[name].stats)
    assert "operators" in modules_loaded("SSSP_PUSH_CHAIN")


def test_a_vertex_wider_than_the_cap_is_listed_not_followed(with_appends):
    """The same path with a second out-edge at every inner vertex: under
    ENGINES_PUSH_CHAIN_DEGREE=1 no inner vertex is followed (each is listed, as without chains),
    only the last, which has no out-edge: n - 1 iterations; under 2 the chains follow again
    (bench/chain_model.py gives the same counts, tests/bench/test_chain_model.py)."""
    configs = _configs()
    n, src, dst, w = _path(np.random.default_rng(7), extra_out_edge=True)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
    with_appends.setenv(chains.CHAIN_ENV, "4")
    for degree, iterations in (("1", n - 1), ("2", (n - 1) // 5 + 1)):
        with_appends.setenv(chains.DEGREE_ENV, degree)
        results = S.compute_all(graph, 0, engines=configs, delta=10**6)
        for name in configs:
            H.assert_tree_equals(results[name], exp_d, exp_p, f"comb {name} degree {degree}")
            assert results[name].stats.iterations == iterations, (name, degree, results[name].stats)


@pytest.mark.parametrize("delta", [3, 40])
def test_chains_that_cross_the_threshold_send_to_the_far_pile(with_appends, delta):
    """A grid with a small delta: chains lower vertices at and past the threshold (the far pile,
    then epochs); compute() against SciPy's canonical tree and a chain of updates against the
    host's bytes, with the chain module's compared statistics equal to the default module's."""
    configs = _configs()
    rng = np.random.default_rng(delta)
    n, src, dst, w = SHAPES["grid"](rng)
    exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
    # the canonical tree and the epochs of compute() with chains, on a copy of its own (switch_sides
    # updates its copies)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    with_appends.setenv(chains.CHAIN_ENV, "8")
    chained = S.compute_all(graph, 0, engines=configs, delta=delta)
    for name in configs:
        H.assert_tree_equals(chained[name], exp_d, exp_p, f"grid {name} delta {delta}")
        assert chained[name].stats.epochs > 0, chained[name].stats
    switch_sides(with_appends, chains.CHAIN_ENV, ("0", "8"), (n, src, dst, w), configs, rng, delta=delta)


def test_a_road_network_stream_gives_the_host_bytes(with_appends, real_graphs_dir):
    """luxembourg_osm (the streaming benchmark's graph), 30 batches of the mixed, tree-deletion
    and combined mixes (algorithm.md §13.3) with two hops, every result equal to the host's after
    every batch."""
    from ..engines.test_real_graphs import load_real_graph

    graph, _, _ = load_real_graph(real_graphs_dir, "luxembourg_osm")
    with_appends.setenv(chains.CHAIN_ENV, "2")
    configs = _configs()
    results = S.compute_all(graph, 0, engines=configs)
    S.assert_conformant(results, what="luxembourg compute")
    rng = np.random.default_rng(2027)
    for step in range(30):
        kind = ("mixed", "tree_delete", "combo")[step % 3]
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"luxembourg step {step} {kind}")
    assert "operators" in modules_loaded("SSSP_PUSH_CHAIN")


@pytest.mark.parametrize("setting", [{chains.CHAIN_ENV: "2", appends.APPEND_ENV: "0"},
                                     {chains.CHAIN_ENV: "2", chains.DEGREE_ENV: "0"},
                                     {chains.CHAIN_ENV: "300"}])
def test_a_refused_setting_changes_nothing(monkeypatch, setting):
    """Chains without the block appends, a degree of 0, too many hops: compute() and update()
    raise the switch's error, update() before the commit (the graph keeps its version, the
    result is intact)."""
    rng = np.random.default_rng(11)
    n, src, dst, w = SHAPES["grid"](rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    options = {"backend": "cuda", "cuda_engine": "operators"}
    for name in (chains.CHAIN_ENV, chains.DEGREE_ENV, appends.APPEND_ENV):
        monkeypatch.delenv(name, raising=False)
    before = engines.sssp.compute(graph, 0, **options)
    monkeypatch.setenv(appends.APPEND_ENV, "1")
    for name, value in setting.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(engines.errors.InvalidArgumentError, match="ENGINES_"):
        engines.sssp.compute(graph, 0, **options)
    d0, p0 = before.to_numpy()
    version = graph.version
    batch = H.make_batch(H.random_batch(rng, "mixed", H.ref_of(graph), p0, 0, "mid"))
    with pytest.raises(engines.errors.InvalidArgumentError, match="ENGINES_"):
        engines.sssp.update(graph, batch, before)
    assert graph.version == version and not before.poisoned
    d1, p1 = before.to_numpy()
    assert d1.tobytes() == d0.tobytes() and p1.tobytes() == p0.tobytes()
    if S.fused_available():
        with pytest.raises(engines.errors.InvalidArgumentError, match="ENGINES_"):
            engines.sssp.compute(graph, 0, backend="cuda", cuda_engine="fused")


def test_chains_run_only_in_lists_short_enough_for_the_widest_group(with_appends):
    """kernels.cuh push_list's rule on the engines: a source with 16 leaves, each the start of a
    path of 10 more vertices, 4 hops, delta past every distance. On one block (256 threads: the
    fused grid under ENGINES_FUSED_MAX_BLOCKS=1, the device loop's under
    ENGINES_OPERATORS_LOOP_BLOCKS=1) iteration 1 (a list of one) follows every leaf's chain, but
    the 16-vertex lists after it get groups of 16 lanes, not 32: no chains, a vertex an iteration,
    8 iterations. The operators host loop launches each push with the widest groups (push.py
    launch_threads), so its chains run on: 3 iterations (bench/chain_model.py gives 8 and 3 for 256
    and 512 threads). Without chains: 12."""
    with_appends.setenv(fused.MAX_BLOCKS_ENV, "1")
    with_appends.setenv("ENGINES_OPERATORS_LOOP_BLOCKS", "1")
    n, src, dst = H.leaves_with_paths(16, 10)
    w = np.ones(src.size, dtype=np.int64)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
    configs = tuple(c for c in ("fused", "operators", "operators-host") if c in _configs())
    expected = {"fused": 8, "operators": 8, "operators-host": 3}
    for hops, counts in (("0", dict.fromkeys(expected, 12)), ("4", expected)):
        with_appends.setenv(chains.CHAIN_ENV, hops)
        results = S.compute_all(graph, 0, engines=configs, delta=10**6)
        for name in configs:
            H.assert_tree_equals(results[name], exp_d, exp_p, f"leaves {name} hops {hops}")
            assert results[name].stats.iterations == counts[name], (name, hops, results[name].stats)
