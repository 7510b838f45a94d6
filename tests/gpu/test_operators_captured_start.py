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


def _pair(graph, config):
    return {"host": sssp.compute(graph, 0, backend="host"),
            config: sssp.compute(graph, 0, backend="cuda", **S.CUDA_CONFIGS[config])}


def _random_batch(rng, kind, graph, results):
    _, parents = results["host"].to_numpy()
    return H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))


@pytest.mark.parametrize("config", OPERATORS_CONFIGS)
def test_a_steady_stream_launches_nothing_of_the_start_from_python(config, monkeypatch):
    """Past the first updates (captures), the invalidation, the heads and the loop's start are
    never launched from Python: they run in the replayed prologue; results are the host's."""
    launched = []
    real_over, real_single = operators._Launcher.over, operators._Launcher.single

    def over(self, kernel, work, *args, stream=None):
        if stream is None:  # a launch on the run's stream, not into a capture
            launched.append(kernel)
        return real_over(self, kernel, work, *args, stream=stream)

    def single(self, kernel, *args, stream=None):
        if stream is None:
            launched.append(kernel)
        return real_single(self, kernel, *args, stream=stream)

    monkeypatch.setattr(operators._Launcher, "over", over)
    monkeypatch.setattr(operators._Launcher, "single", single)
    rng = np.random.default_rng(61)
    n, src, dst, w = H.random_graph(rng, "sparse", 1500, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = _pair(graph, config)
    for kind in ("mixed", "mixed", "tree_delete", "mixed"):
        stats = S.update_all(graph, _random_batch(rng, kind, graph, results), results)
        S.assert_conformant(results, stats, update=True, what=kind)
    launched.clear()
    for kind in ("mixed", "tree_delete", "mixed", "mixed"):
        stats = S.update_all(graph, _random_batch(rng, kind, graph, results), results)
        S.assert_conformant(results, stats, update=True, what=kind)
    start = {"ops_control_init", "ops_invalidate", "ops_heads", "ops_loop_init"}
    assert not start & set(launched), launched
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
    results = _pair(graph, config)
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
    _check_recovery(graph, "operators")


@pytest.mark.parametrize("config", OPERATORS_CONFIGS)
def test_invalid_input_is_reported_over_a_cycle_and_the_engine_recovers(config):
    graph, d, p = _cycle_case()
    d = d.copy()
    d[6] = 8  # above the bound W * (n - 1) = 7
    _expect_post_commit_error(graph, _imported(graph, d, p, config),
                              engines.Batch(delete_src=[0], delete_dst=[1]), "invalid_input")
    _check_recovery(graph, "operators")


@pytest.mark.parametrize("config", OPERATORS_CONFIGS)
def test_the_switch_changes_no_byte_and_no_statistic(config, monkeypatch):
    """The same chain of batches on two copies of a graph, one updated with the captured start and
    one without: equal trees (the host's) and equal statistics, host synchronizations included."""
    rng = np.random.default_rng(71)
    n, src, dst, w = H.random_graph(rng, "sparse", 800, 1, "mid")
    graphs = {k: engines.Graph.from_edges(src, dst, w, num_vertices=n) for k in ("on", "off")}
    results = {"host": sssp.compute(graphs["on"], 0, backend="host")}
    results.update({k: sssp.compute(graphs[k], 0, backend="cuda", **S.CUDA_CONFIGS[config]) for k in graphs})
    for kind in ("mixed", "tree_delete", "mixed", "tree_increase", "mixed"):
        batch = _random_batch(rng, kind, graphs["on"], results)
        on, _ = sssp.update(graphs["on"], batch, results["on"], results["host"])  # switch on
        monkeypatch.setenv(operators.CAPTURED_START_ENV, "0")
        off = sssp.update(graphs["off"], batch, results["off"])
        monkeypatch.setenv(operators.CAPTURED_START_ENV, "1")
        S.assert_conformant(results, what=kind)
        assert S.stats_dict(on) == S.stats_dict(off), kind
