"""The operators engine on its own (docs/algorithm.md §6, §12.3 and §5 [ops]): the control-block
layout as the compiler sees it, scratch hygiene after every run, the generation reset, edge cases,
and randomized chains with forced deltas against the host reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engines
from engines import sssp

from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


def _workspace():
    from engines.sssp.cuda import runtime, workspace

    return workspace.get(runtime.current_device(), np.int32)


def test_control_block_layout_matches_the_numpy_mirror():
    import cupy

    from engines.sssp.cuda import operators, runtime, workspace

    device = runtime.current_device()
    module = operators.load_module(device)
    dtype = workspace.operators_control_dtype(np.int32)
    for offset_dtype in (np.int32, np.int64):
        fn = module.function("ops_control_layout", np.int32, offset_dtype)
        block = cupy.zeros(dtype.itemsize, dtype=cupy.uint8)
        out = cupy.full(37, -1, dtype=cupy.int64)
        fn((1,), (1,), (block, out))
        got = out.get().tolist()
        names = ("minimum", "threshold", "affected", "candidates", "frontier", "near", "far",
                 "invalidated", "overflow", "active")
        assert got[:10] == [dtype.fields[k][1] for k in names]
        assert got[10] == dtype.itemsize
        loop = ("phase", "near_slot", "far_slot", "generation", "iterations", "epochs", "step_count",
                "pushes", "loop_done_blocks", "loop_fault", "loop_delta", "loop_bound",
                "loop_no_parent", "loop_bits", "loop_source", "loop_n", "loop_finish",
                "loop_count_affected", "loop_input_error", "loop_distances", "loop_parents",
                "loop_push_shift", "update_generation", "update_loop_generation", "update_heads",
                "update_delta")
        assert got[11:] == [dtype.fields[k][1] for k in loop]


def _assert_scratch_clean():
    """Every successful run leaves flag and in_far all zero (algorithm.md §5.1)."""
    ws = _workspace()
    assert int(ws.flag.sum()) == 0
    assert int(ws.in_far.sum()) == 0


def _pair(graph, source=0, **options):
    return {"host": sssp.compute(graph, source, backend="host", **options),
            "operators": sssp.compute(graph, source, backend="cuda", cuda_engine="operators",
                                      **options)}


@pytest.mark.parametrize("below_limit", [2, 20, 40])
def test_scratch_clean_and_generation_reset(below_limit):
    """The 2^30 rule at the start of a run (2) and between two replays of the device loop (20,
    40: the first replay fits, a later one passes the limit, maybe with a phase that already
    holds its generation)."""
    from engines.sssp.cuda import workspace

    rng = np.random.default_rng(5)
    n, src, dst, w = H.random_graph(rng, "grid", 400, 1, "tiny")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = _pair(graph, delta=3)
    S.assert_conformant(results)
    _assert_scratch_clean()
    ws = _workspace()
    # force the 2^30 rule mid-run: the stamps are re-zeroed stream-ordered, results unchanged
    ws.generation = workspace.GENERATION_LIMIT - below_limit
    for kind in ("tree_delete", "mixed", "tree_increase"):
        _, parents = results["host"].to_numpy()
        arrays = H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "tiny")
        stats = S.update_all(graph, H.make_batch(arrays), results)
        S.assert_conformant(results, stats, update=True, what=kind)
        _assert_scratch_clean()
    assert ws.generation < workspace.GENERATION_LIMIT - below_limit


def test_single_vertex_graph():
    graph = engines.Graph.from_edges([0], [0], [5], num_vertices=1)
    results = _pair(graph)
    S.assert_conformant(results)
    stats = S.update_all(graph, engines.Batch([0], [0], [[2]], [0], [0]), results)
    S.assert_conformant(results, stats, update=True)
    d, p = results["operators"].to_numpy()
    assert d.tolist() == [0] and p.tolist() == [-1]


def test_source_as_head_and_push_target_and_growth():
    # 0 -> 1 -> 2 -> 0; inserting x -> 0 makes the source a head and an out-neighbour of pushes
    graph = engines.Graph.from_edges([0, 1, 2], [1, 2, 0], [4, 4, 4], num_vertices=3)
    results = _pair(graph)
    batches = [
        engines.Batch([2, 1], [0, 0], [[1], [1]]),                       # heads: the source only
        engines.Batch([0, 3, 4], [3, 4, 1], [[1], [1], [1]]),            # growth, new vertices reachable
        engines.Batch(delete_src=[7, 0, 9], delete_dst=[0, 2, 9]),       # beyond n / missing only
        engines.Batch([0, 0], [2, 2], [[9], [2]], [0], [1]),             # duplicate upserts, a deletion
    ]
    for batch in batches:
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True)
        _assert_scratch_clean()


def test_unreachable_input_parent_is_rewritten_and_counted():
    # an imported unreachable vertex with a parent: (INF, -1) after any update, counted as affected
    graph = engines.Graph.from_edges([0, 2], [1, 3], [1, 1], num_vertices=4)
    INF = sssp.INFINITE_DISTANCE
    d = np.array([0, 1, INF, INF], dtype=np.int64)
    p = np.array([-1, 0, -1, 2], dtype=np.int32)
    results = S.import_all(graph, 0, d, p, engines=("operators",), validate=False)
    stats = S.update_all(graph, engines.Batch.empty(), results)
    S.assert_conformant(results, stats, update=True)
    assert stats["operators"].affected == 1


@settings(max_examples=25)
@given(seed=st.integers(0, 2**31 - 1),
       shape=st.sampled_from(H.SHAPES),
       n=st.integers(2, 120),
       wclass=st.sampled_from(H.WEIGHT_CLASSES),
       multi=st.booleans(),
       delta=st.sampled_from([0, 1, 2, 5, 17, 300, 10**6]),
       offsets=st.sampled_from([np.int32, np.int64]))
def test_random_chains_against_the_host(seed, shape, n, wclass, multi, delta, offsets):
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, 1, wclass, multi=multi)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n, offset_dtype=offsets)
    source = int(rng.integers(0, n))
    results = _pair(graph, source, delta=delta)
    S.assert_conformant(results, what="compute")
    if rng.random() < 0.5:
        results = S.perturb_all(rng, graph, results)
    for step in range(3):
        kind = H.BATCH_KINDS[int(rng.integers(0, len(H.BATCH_KINDS)))]
        _, parents = results["host"].to_numpy()
        arrays = H.random_batch(rng, kind, H.ref_of(graph), parents, source, wclass)
        stats = S.update_all(graph, H.make_batch(arrays), results)
        S.assert_conformant(results, stats, update=True, what=f"step {step} {kind}")
    _assert_scratch_clean()
