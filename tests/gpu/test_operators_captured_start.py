"""The operators engine's captured start (``ENGINES_OPERATORS_CAPTURED_START=1``, issue 27;
docs/algorithm.md §10.2): an update's invalidation, heads and device-loop start replay inside the
captured prologue, their per-update values (two generations, the head count) uploaded with the
control block's initial record. Every result is compared with the host reference's bytes; the
operators engine's own tests run again here with the switch on (imported below: pytest collects
them in this module, under its autouse fixture), and what only the captured start has is checked
on its own: no launch of those kernels from Python in a steady state, a stamp restart at either
generation, and the post-commit errors of both loop modes.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp.cuda import operators, workspace
from engines.sssp.packing import default_delta

from .. import harness as H
from . import ops_support as S
from .test_conformance import _check_recovery, _cycle_case, _expect_post_commit_error
# re-run with the captured start on (collected here, under this module's fixture)
from .test_host_path import test_the_operators_prologue_is_one_graph_per_buffer_layout  # noqa: F401
from .test_operators import (  # noqa: F401
    test_random_chains_against_the_host,
    test_scratch_clean_and_generation_reset,
    test_single_vertex_graph,
    test_source_as_head_and_push_target_and_growth,
    test_unreachable_input_parent_is_rewritten_and_counted,
)

pytestmark = S.GPU

OPERATORS_CONFIGS = ("operators", "operators-host")


@pytest.fixture(autouse=True)
def captured_start(monkeypatch):
    monkeypatch.setenv(operators.CAPTURED_START_ENV, "1")
    assert operators.captured_start_enabled()


def _random_batch(rng, kind, graph, results):
    _, parents = results["host"].to_numpy()
    return H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))


def _fixed_bound_stream(rng, n: int, count: int, size: int):
    """A graph whose every tenth arc weighs 10 (the maximum, never deleted nor re-weighted) and
    the others 1-9, and ``count`` batches of ``size`` deletions of other arcs and ``size // 2``
    insertions of weight 9 elsewhere: the packing bound and the vertex count never change, while
    the edge count and the weight sum, hence the default delta, do."""
    _, src, dst, _ = H.random_graph(rng, "sparse", n, 1, "mid")
    weights = rng.integers(1, 10, len(src))
    weights[::10] = 10
    protected = set(zip(src[::10].tolist(), dst[::10].tolist()))
    others = np.flatnonzero(weights < 10)
    graph = engines.Graph.from_edges(src, dst, weights, num_vertices=n)
    batches = []
    for _ in range(count):
        e = rng.choice(others, size=size, replace=False)
        pairs = []
        while len(pairs) < size // 2:
            u, v = (int(x) for x in rng.integers(0, n, 2))
            if (u, v) not in protected:
                pairs.append((u, v))
        new_src, new_dst = (np.array(c) for c in zip(*pairs))
        batches.append(engines.Batch(new_src, new_dst, np.full((size // 2, 1), 9), src[e], dst[e]))
    return graph, batches


@pytest.mark.parametrize("config", OPERATORS_CONFIGS)
def test_a_steady_stream_replays_its_start_without_python_launches_or_captures(config, monkeypatch):
    """Past the first updates (one capture per buffer set), the invalidation, the heads and the
    loop's start are never launched from Python and the prologue is never captured again, though
    the default delta changes from batch to batch (it travels in the block); results are the
    host's."""
    launched, prologue_captures = [], []
    real_over, real_single = operators._Launcher.over, operators._Launcher.single
    real_cached_graph = operators._cached_graph

    def over(self, kernel, work, *args, stream=None):
        if stream is None:  # a launch on the run's stream, not into a capture
            launched.append(kernel)
        return real_over(self, kernel, work, *args, stream=stream)

    def single(self, kernel, *args, stream=None):
        if stream is None:
            launched.append(kernel)
        return real_single(self, kernel, *args, stream=stream)

    def cached_graph(key, enqueue, device):
        if key[0] == "prologue" and key not in operators._CAPTURED:
            prologue_captures.append(key)
        return real_cached_graph(key, enqueue, device)

    monkeypatch.setattr(operators._Launcher, "over", over)
    monkeypatch.setattr(operators._Launcher, "single", single)
    monkeypatch.setattr(operators, "_cached_graph", cached_graph)
    rng = np.random.default_rng(61)
    graph, batches = _fixed_bound_stream(rng, 1500, 12, 20)
    results = S.compute_all(graph, 0, engines=(config,))
    ws = workspace.get(results[config].device, np.dtype(results[config].to_numpy()[1].dtype))
    deltas = set()
    for i, batch in enumerate(batches):
        if i == 4:  # warmed up: both buffer sets captured
            launched.clear()
            prologue_captures.clear()
            capacity = ws.change_capacity
        if i >= 4:
            deltas.add(default_delta(graph.num_vertices, graph.num_edges, graph.weight_sum(0)))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"batch {i}")
    assert len(deltas) > 1  # the stream does change the default delta
    start = {"ops_control_init", "ops_invalidate", "ops_heads", "ops_loop_init"}
    assert not start & set(launched), launched
    if ws.change_capacity == capacity:
        assert not prologue_captures, prologue_captures
    if config == "operators-host":  # the host loop still launches its phases from Python
        assert "ops_unpack_update" in launched


@pytest.mark.parametrize("config", OPERATORS_CONFIGS)
@pytest.mark.parametrize("generation", [workspace.GENERATION_LIMIT, workspace.GENERATION_LIMIT + 1])
def test_a_stamp_restart_at_either_generation(config, generation):
    """The workspace's counter where the update's second generation (LIMIT) or its first
    (LIMIT + 1) restarts the stamps: both generations follow the restart, results are the host's
    and the scratch is clean."""
    rng = np.random.default_rng(67)
    n, src, dst, w = H.random_graph(rng, "grid", 400, 1, "tiny")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = S.compute_all(graph, 0, engines=(config,))
    ws = workspace.get(results[config].device, np.dtype(results[config].to_numpy()[1].dtype))
    ws.generation = generation
    for kind in ("mixed", "tree_delete", "tree_increase"):
        stats = S.update_all(graph, _random_batch(rng, kind, graph, results), results)
        S.assert_conformant(results, stats, update=True, what=kind)
        assert int(ws.flag.sum()) == 0 and int(ws.in_far.sum()) == 0
    assert ws.generation < 1000  # restarted once, early


def _imported(graph, d, p, config):
    r = sssp.Result.from_arrays(graph, 0, d, p, canonicalize=False, validate=False, backend="host")
    c = r.clone(backend="cuda")
    c.set_options(**S.CUDA_CONFIGS[config])
    return c


@pytest.mark.parametrize("config", OPERATORS_CONFIGS)
def test_a_parent_cycle_is_reported_and_the_engine_recovers(config):
    graph, d, p = _cycle_case()
    _expect_post_commit_error(graph, _imported(graph, d, p, config),
                              engines.Batch(delete_src=[0], delete_dst=[1]), "parent_cycle")
    _check_recovery(graph, config)


@pytest.mark.parametrize("config", OPERATORS_CONFIGS)
def test_invalid_input_is_reported_over_a_cycle_and_the_engine_recovers(config):
    graph, d, p = _cycle_case()
    d = d.copy()
    d[6] = 8  # above the bound W * (n - 1) = 7
    _expect_post_commit_error(graph, _imported(graph, d, p, config),
                              engines.Batch(delete_src=[0], delete_dst=[1]), "invalid_input")
    _check_recovery(graph, config)


@pytest.mark.parametrize("config", OPERATORS_CONFIGS)
def test_the_switch_changes_no_byte_and_no_deterministic_statistic(config, monkeypatch):
    """The same chain of batches on two copies of a graph, one updated with the captured start and
    one without: equal trees (the host's) and equal deterministic statistics (the push
    iterations, epochs and syncs depend on the schedule, docs/algorithm.md §5.9, §5.12: each run's
    are checked against the sync model instead)."""
    rng = np.random.default_rng(71)
    n, src, dst, w = H.random_graph(rng, "sparse", 800, 1, "mid")
    graphs = {k: engines.Graph.from_edges(src, dst, w, num_vertices=n) for k in ("on", "off")}
    results = {"host": sssp.compute(graphs["on"], 0, backend="host")}
    results.update({k: sssp.compute(graphs[k], 0, backend="cuda", **S.CUDA_CONFIGS[config]) for k in graphs})
    for kind in ("mixed", "tree_delete", "mixed", "tree_increase", "mixed"):
        batch = _random_batch(rng, kind, graphs["on"], results)
        on, host = sssp.update(graphs["on"], batch, results["on"], results["host"])  # switch on
        monkeypatch.setenv(operators.CAPTURED_START_ENV, "0")
        off = sssp.update(graphs["off"], batch, results["off"])
        monkeypatch.setenv(operators.CAPTURED_START_ENV, "1")
        # the bytes of both copies against the host's; the statistics under the engine's own name
        # (assert_conformant reads a result's key as its engine)
        S.assert_conformant(results, {"host": host, config: on}, update=True, what=kind)
        S.check_stats_shape(off, config, update=True)
        fixed = ("invalidated", "affected", "packed_parents", "engine_used", "batch")
        assert [getattr(on, f) for f in fixed] == [getattr(off, f) for f in fixed], kind
