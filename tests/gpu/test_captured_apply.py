"""The device apply replayed as a captured CUDA graph (``Options.update_launch = "graph"``).

The captured commit must give the bytes of the one-by-one launches and of the host applier. The
device-graph tests of ``test_device_graph.py`` (random chains, the golden corpus, restores, bad
batches, out of memory, a steady state allocating nothing) run again here with every commit
captured (``device_apply.DEFAULT_LAUNCH`` set to "graph" for this module), and each checks that a
graph really was captured (``capture_problem`` is None). Then what only the captured launch has:
one capture serves every batch that fits the reserved capacity; a batch beyond it captures again
with the same bytes; restore() and growth change the plan; and update() through both CUDA
engines with ``update_launch="graph"`` equals the host reference along hypothesis chains.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engines
from engines import sssp
from engines.graph import device_apply

from .. import harness as H
from . import ops_support as S
from . import test_device_graph as D

pytestmark = S.GPU

# The device-graph tests, collected again in this module with every commit captured.
test_captured_random_chains = D.test_random_chains_device_apply_equals_host_apply
test_captured_golden_cases = D.test_golden_cases_device_apply_equals_host_apply
test_captured_snapshot_restore = D.test_snapshot_restore_on_device_returns_the_exact_state
test_captured_invalid_batch = D.test_invalid_batch_on_device_graph_changes_nothing
test_captured_out_of_memory = D.test_device_out_of_memory_changes_nothing
test_captured_steady_state_allocates_nothing = D.test_steady_state_device_commit_allocates_nothing

_scratches: list = []


@pytest.fixture(autouse=True)
def captured_by_default(monkeypatch):
    """Every commit of this module's tests is captured, and every capture must have worked."""
    monkeypatch.setattr(device_apply, "DEFAULT_LAUNCH", "graph")
    original = device_apply.ApplyScratch.__init__

    def tracked(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _scratches.append(self)

    monkeypatch.setattr(device_apply.ApplyScratch, "__init__", tracked)
    _scratches.clear()
    yield
    problems = [s.capture_problem for s in _scratches if s.capture_problem is not None]
    assert not problems, f"capture failed, the commits ran one by one: {problems[0]}"


def _scratch(graph) -> device_apply.ApplyScratch:
    return graph._device.scratch


def _reweights(rng, twin, count: int) -> engines.Batch:
    """``count`` insertions of existing pairs (upserts: the edge count stays, so the buffer sets
    keep their capacities and addresses)."""
    src = np.repeat(np.arange(twin.num_vertices), np.diff(np.asarray(twin.row_ptr, dtype=np.int64)))
    pick = rng.integers(0, src.size, size=count)
    weights = rng.integers(1, 50, size=(count, twin.num_weights))
    return engines.Batch(src[pick], np.asarray(twin.col_ind)[pick], weights)


def test_one_capture_serves_every_batch_within_capacity():
    """Upsert batches of 1 to 300 events on one graph whose buffer sets have room for them (a
    set's room is for the upper bound m + insertions): once each buffer parity was captured, no
    batch captures again (the sizes travel on the device); a batch beyond the reserved event
    capacity makes a new scratch layout (and here a larger buffer set), so each parity is
    captured once more and then never again; every state equals the host twin's."""
    rng = np.random.default_rng(D._seed("capacity"))
    graph = D._graph(rng, 400, 2)
    twin = D.host_twin(graph)
    graph.to_device()
    for _ in range(2):  # both buffer sets reserve room for the upper bound m + 300 (one by one)
        batch = _reweights(rng, twin, 300)
        commit = graph.commit(graph.events_for(batch), launch="python")
        D.assert_no_problems(D.commit_problems((commit.summary(), commit.delta()), twin.apply(batch)),
                             "warm-up")
    assert _scratch(graph).captures == 0
    sizes = [1, 2, 300, 17, 120, 5, 250, 64]
    for step, count in enumerate(sizes):
        D._apply_both(graph, twin, _reweights(rng, twin, count), f"batch {step} of {count}")
        assert _scratch(graph).captures == min(step + 1, 2), f"after batch {step}"
    scratch = _scratch(graph)
    capacity = scratch.event_cap
    D._apply_both(graph, twin, _reweights(rng, twin, capacity + 1), "beyond capacity")
    assert scratch.event_cap > capacity
    assert scratch.captures == 3
    for step, count in enumerate((9, 300, 33)):
        D._apply_both(graph, twin, _reweights(rng, twin, count), f"after growth {step}")
    assert scratch.captures == 4
    assert 0 < len(scratch.captured) <= device_apply.MAX_CAPTURED


@pytest.mark.parametrize("floor", [64, 4096])
def test_a_smaller_capacity_floor_gives_the_same_bytes(monkeypatch, floor):
    """ENGINES_APPLY_MIN_EVENTS (device_apply.min_events): small batches reserve the floor instead
    of MIN_EVENTS (a captured commit then sorts fewer keys), a batch past it grows the capacity
    and captures again, and every state equals the host twin's; update() through both CUDA
    engines on a graph with that floor returns the host reference's bytes."""
    monkeypatch.setenv(device_apply.MIN_EVENTS_ENV, str(floor))
    rng = np.random.default_rng(D._seed("floor", floor))
    graph = D._graph(rng, 400, 2)
    twin = D.host_twin(graph)
    graph.to_device()
    for step, count in enumerate((5, 40, floor, 3)):
        D._apply_both(graph, twin, _reweights(rng, twin, count), f"batch {step} of {count}")
    scratch = _scratch(graph)
    assert scratch.event_cap == floor
    captures = scratch.captures
    D._apply_both(graph, twin, _reweights(rng, twin, floor + 30), "past the floor")
    assert scratch.event_cap > floor and scratch.captures > captures
    for step, count in enumerate((7, 90)):
        D._apply_both(graph, twin, _reweights(rng, twin, count), f"after growth {step}")

    rng = np.random.default_rng(D._seed("floor update", floor))
    graph = D._graph(rng, 300, 1)
    twin = D.host_twin(graph)  # draws the batches (a host graph kept at the same state)
    configs = tuple(c for c in ("fused", "operators") if S.fused_available() or c != "fused")
    results = {"host": sssp.compute(graph, 0, backend="host")}
    for name in configs:
        results[name] = sssp.compute(graph, 0, backend="cuda", update_launch="graph", **S.CUDA_CONFIGS[name])
    for step in range(4):
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, 20, 20))
        twin.apply(batch)
        S.update_all(graph, batch, results)
        for name in configs:
            H.assert_result_bytes_equal(results["host"], results[name])
    assert _scratch(graph).event_cap == floor


def test_growth_of_the_vertex_count_captures_a_new_plan():
    """Insertions naming new vertices change the row count, hence the plan: captured again, and
    the bytes equal the host twin's."""
    rng = np.random.default_rng(D._seed("growth"))
    graph = D._graph(rng, 120, 1)
    twin = D.host_twin(graph)
    graph.to_device()
    D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, 5, 5)), "first")
    before = _scratch(graph).captures
    n = graph.num_vertices
    grow = engines.Batch([0, n + 3], [n + 5, 1], np.array([[7], [9]]))
    D._apply_both(graph, twin, grow, "growth")
    assert graph.num_vertices == n + 6
    assert _scratch(graph).captures == before + 1


def test_python_and_graph_launches_interleave_on_one_graph():
    """Commits alternating between the two launches share the scratch (arena, zeroed buffers):
    every state equals the host twin's."""
    rng = np.random.default_rng(D._seed("interleave"))
    graph = D._graph(rng, 300, 3)
    twin = D.host_twin(graph)
    graph.to_device()
    for step in range(6):
        batch = H.make_batch(D.batch_arrays(rng, D.KINDS[step % len(D.KINDS)], twin, "mid"))
        launch = ("python", "graph")[step % 2]
        commit = graph.commit(graph.events_for(batch), launch=launch)
        got = (commit.summary(), commit.delta())
        want = twin.apply(batch)
        D.assert_no_problems(D.commit_problems(got, want) + D.graph_problems(graph, twin), f"{launch} {step}")


@settings(max_examples=H.examples(15), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.sampled_from(H.SHAPES),
       n=st.integers(2, 60),
       kinds=st.lists(st.sampled_from(H.BATCH_KINDS), min_size=3, max_size=6))
def test_update_chains_with_graph_launch_equal_the_host(seed, shape, n, kinds):
    """Chains of small batches through ``sssp.update`` with ``update_launch="graph"`` on the fused
    and the operators engines (one update for all results, so one captured commit), byte-equal to
    the host reference's results after every batch, with valid statistics."""
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    engines_here = ("fused", "operators") if S.fused_available() else ("operators",)
    results = {"host": sssp.compute(graph, 0, backend="host")}
    for engine in engines_here:
        results[engine] = sssp.compute(graph, 0, backend="cuda", update_launch="graph", **S.CUDA_CONFIGS[engine])
    staged = False  # whether any batch had events: a chain of empty batches commits nothing
    for kind in kinds:
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        staged = staged or graph.events_for(batch).size > 0
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True)
    # (hypothesis found kinds=["empty"] * 3 on the device with 6858dc1's floor and the old one: nothing to capture)
    scratch = graph._device.scratch
    assert (scratch.captures >= 1) if staged else (scratch is None or scratch.captures == 0)


def test_update_launch_graph_only_when_every_cuda_result_asks():
    """One CUDA result with the default launch among graph-launch ones: the commit launches one by
    one (nothing captured); all asking for "graph": captured."""
    rng = np.random.default_rng(D._seed("mixed-options"))
    n, src, dst, w = H.random_graph(rng, "sparse", 200, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    a = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators", update_launch="graph")
    b = sssp.compute(graph, 1, backend="cuda", cuda_engine="operators", update_launch="python")
    host = sssp.compute(graph, 0, backend="host")
    batch = H.make_batch(H.random_batch(rng, "mixed", H.ref_of(graph), host.to_numpy()[1], 0, "mid"))
    sssp.update(graph, batch, a, b, host)
    assert _scratch(graph).captures == 0
    b.set_options(update_launch="graph")
    batch = H.make_batch(H.random_batch(rng, "mixed", H.ref_of(graph), host.to_numpy()[1], 0, "mid"))
    sssp.update(graph, batch, a, b, host)
    assert _scratch(graph).captures == 1
    H.assert_result_bytes_equal(host, a)
    H.assert_result_bytes_equal(sssp.compute(graph, 1, backend="host"), b)
