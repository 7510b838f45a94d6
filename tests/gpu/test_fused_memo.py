"""The captured fused update's launch memo (``ENGINES_FUSED_MEMO``, issue 27): a steady stream
replays its captured graph from a key of a few values instead of working the full capture key out
from the kernel's arguments.

Each test runs twice. With "check" the memo never replays, but every update works both keys out
and refuses (InternalError) a memo key that stands for two capture keys: the streams below (every
batch mix, growth of the graph and of the results, several results and objectives in one update, a
parent cycle and an invalid input, the grid's switches moved between updates, a result made again)
prove the memo key sound. With "on" the memo replays on a hit, and every result must still be the
host reference's bytes, with one synchronization per update.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp.cuda import fused

from .. import harness as H
from . import test_fused as F
from . import test_fused_capture as FC

pytestmark = pytest.mark.gpu

# The fused tests that update, collected again with the memo in each mode (the fixture below).
test_memo_three_batches = F.test_compute_then_three_batches
test_memo_several_results = F.test_several_fused_results_in_one_update
test_memo_parent_cycle = F.test_parent_cycle_poisons_then_the_device_recovers
test_memo_invalid_input = F.test_invalid_input_poisons_then_the_device_recovers
test_memo_steady_state_allocates_nothing = F.test_steady_state_update_allocates_nothing
test_memo_real_graphs = F.test_real_graphs
test_memo_distance_only = F.test_distance_only_mode
test_memo_packing_boundary = F.test_packing_boundary
test_memo_edge_cases = F.test_edge_cases
test_memo_grid = F.test_results_do_not_depend_on_the_grid
test_memo_steady_stream = FC.test_a_steady_stream_replays_its_captures
test_memo_growing_stream = FC.test_a_growing_stream_replays_its_captures_though_the_solo_limit_moves
test_memo_stages_the_change_lists = FC.test_the_graph_stages_the_change_lists_itself


@pytest.fixture(autouse=True, params=["on", "check"])
def memo(request, monkeypatch, cuda_device):
    """Every update of this module's tests is captured with the memo in the mode named; every
    capture must have worked."""
    monkeypatch.setenv(fused.CAPTURE_ENV, "1")
    monkeypatch.setenv(fused.MEMO_ENV, request.param)
    fused._capture_states.clear()
    yield request.param
    states = FC.finished_states(request)
    if states is not None and request.param == "check":
        assert sum(state.hits for state in states) == 0, "check replayed from the memo"


def _stream(rng, graph, host, result, count, kind="mixed", wclass="mid"):
    for i in range(count):
        F.update_pair(graph, F.next_arrays(rng, graph, host, kind, wclass), host, result, what=f"{kind} {i}")


def test_a_steady_stream_hits_the_memo(fused_engine, cuda_device, memo):
    """Same-sized batches on a graph that no longer grows: after the warm-up (capacities, both
    buffer sets) nearly every update is a hit when on, none when checking, and no new capture."""
    rng = np.random.default_rng(61)
    n, src, dst, w = H.random_graph(rng, "grid", 3000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    host, result = F.compute_pair(graph, 0)
    _stream(rng, graph, host, result, 8, kind="reweight")
    state = fused.capture_state(cuda_device)
    hits, made = state.hits, state.made
    _stream(rng, graph, host, result, 16, kind="reweight")
    assert state.memo, "nothing kept in the memo"
    if memo == "on":
        assert state.hits - hits >= 14, (hits, state.hits)
    assert state.made - made <= 2, (made, state.made)


def test_the_grid_switches_moved_between_updates(fused_engine, monkeypatch, memo):
    """ENGINES_FUSED_MAX_BLOCKS and ENGINES_FUSED_GRID change the grid, hence the captured graph,
    from one update to the next: the memo key follows them, the bytes stay the host's."""
    rng = np.random.default_rng(67)
    n, src, dst, w = H.random_graph(rng, "sparse", 6000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    host, result = F.compute_pair(graph, 0)
    for i, (rule, cap) in enumerate((("work", None), ("work", "2"), ("device", None), ("work", None),
                                     ("work", "2"), ("device", "5"), ("work", None))):
        monkeypatch.setenv(fused.GRID_ENV, rule)
        if cap is None:
            monkeypatch.delenv(fused.MAX_BLOCKS_ENV, raising=False)
        else:
            monkeypatch.setenv(fused.MAX_BLOCKS_ENV, cap)
        _stream(rng, graph, host, result, 2, kind="mixed")


def test_results_made_again_and_two_graphs(fused_engine, cuda_device, memo):
    """A result dropped and computed again (its arrays perhaps at the old addresses, perhaps not),
    a second graph of the same size updated in turn with the first, and a result of another
    source on the first: each update replays only a graph captured for its own buffers."""
    rng = np.random.default_rng(71)
    n, src, dst, w = H.random_graph(rng, "grid", 2000, 1, "mid")
    graphs = [engines.Graph.from_edges(src, dst, w, num_vertices=n) for _ in range(2)]
    pairs = [F.compute_pair(g, 0) for g in graphs]
    for round_ in range(3):
        for g, (host, result) in zip(graphs, pairs):
            _stream(rng, g, host, result, 2)
        host, result = pairs[0]
        del result
        pairs[0] = (host, F.fused_compute(graphs[0], 0))
        H.assert_result_bytes_equal(host, pairs[0][1])  # a compute's statistics are not an update's
    other_host, other = F.compute_pair(graphs[0], 5)
    for i in range(3):
        arrays = F.next_arrays(rng, graphs[0], pairs[0][0], "mixed", "mid")
        stats = sssp.update(graphs[0], H.make_batch(arrays), pairs[0][0], pairs[0][1], other_host, other)
        F.assert_same(pairs[0][0], pairs[0][1], stats[0], stats[1], what=f"source 0, {i}")
        F.assert_same(other_host, other, stats[2], stats[3], what=f"source 5, {i}")
