"""The slack layout of the device graph (``ENGINES_APPLY_LAYOUT=slack``; engines/graph/slack_apply.py,
device_graph.py, device_apply.cu apply_sync_rows / apply_rebuild_slack): rows with rooms of their
own, edited where they are; rows that outgrow their room move to the side's tail; a compaction
lays them out tight again once the tail has run far.

The graph it leaves must be the host twin's byte for byte (its rows read back to back, the room
between them checked: no row id, weight 0): the device-graph tests (random chains, the golden
corpus, the real graphs) run again here under the slack layout, under both launches of the apply,
and so do update() chains through both CUDA engines; then what only the layout has: rows that move
again and again, compactions, restores between commits (the target a commit ahead of the restored
state), snapshots and copies of a slack graph, growth of the vertex count. Every plan is recorded
with the way it brought its target up to date.
"""

from __future__ import annotations

import numpy as np
import pytest

from engines import sssp
from engines.graph import device_graph, slack_apply

from .. import harness as H
from . import apply_again as A
from . import ops_support as S
from . import test_device_graph as D

pytestmark = S.GPU

(test_slack_random_chains, test_slack_golden_cases, test_slack_real_graphs,
 test_slack_update_chains, test_slack_mixed_results) = A.TESTS

#: Per commit of a test: how its target was brought up to date (device_graph.SYNC_KINDS or "compact").
_kinds: list = []


@pytest.fixture(autouse=True, params=["python", "graph"])
def slack_layout(request, monkeypatch):
    """Every graph of this module's tests goes to the device in the slack layout (both launches of
    the apply); afterwards some commit must have been made, and every capture must have worked."""
    A.skip_python_launch(request, request.param)
    monkeypatch.setenv(device_graph.LAYOUT_ENV, "slack")
    _kinds.clear()
    original = slack_apply.choose

    def recorded(*args, **kwargs):
        choice = original(*args, **kwargs)
        _kinds.append(choice.kind)
        return choice

    monkeypatch.setattr(slack_apply, "choose", recorded)
    with S.recording_plans(monkeypatch, request.param, lambda steps: None):
        yield request.param
    assert _kinds, "no commit took the slack layout"


def _on_device(rng, n: int, k: int):
    """A random graph in the slack layout on the device and its host twin."""
    graph = D._graph(rng, n, k)
    twin = D.host_twin(graph)
    graph.to_device()
    return graph, twin


def _restore(graph, twin, snap, twin_snap) -> None:
    graph.restore(snap)
    twin.restore(twin_snap)


def _chain(rng, graph, twin, sizes, what: str) -> None:
    for step, (deletions, insertions) in enumerate(sizes):
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, deletions, insertions))
        D._apply_both(graph, twin, batch, f"{what} step {step} ({deletions} deletions, {insertions} insertions)")


def test_a_steady_chain_copies_only_the_last_commits_rows(slack_layout):
    """After the first commits (each set laid out once), commits bring their target up to date by
    the rows of the commit before it; the state equals the host twin's at every step."""
    rng = np.random.default_rng(D._seed("steady slack", slack_layout))
    graph, twin = _on_device(rng, 2000, 2)
    assert graph._device.slack and graph._device.current.slack
    _chain(rng, graph, twin, [(20, 20)] * 12, "steady")
    # two full copies while the sets are made; later a set may be made again (larger) as rows that
    # moved push the tail past its headroom, at most twice in twelve commits; never a compaction
    assert _kinds[:2] == ["full", "full"] and "compact" not in _kinds, _kinds
    assert _kinds.count("full") <= 4 and _kinds.count("rows_of_source") >= 8, _kinds


def test_rows_that_outgrow_their_room_move_to_the_tail(slack_layout):
    """Insertions piled into a few rows, commit after commit: those rows leave their rooms for the
    tail again and again (the tail moves), and the state equals the host twin's."""
    rng = np.random.default_rng(D._seed("outgrow rooms", slack_layout))
    graph, twin = _on_device(rng, 300, 1)
    tails = []
    for step in range(10):
        hubs = rng.integers(0, 300, size=3)
        src = np.repeat(hubs, 15).astype(np.int64)
        dst = rng.integers(0, 300, size=src.size).astype(np.int64)
        w = rng.integers(1, 100, size=(src.size, 1)).astype(np.int64)
        empty = np.zeros(0, dtype=np.int64)
        batch = H.make_batch((src, dst, w, empty, empty))
        D._apply_both(graph, twin, batch, f"hub insertions {step}")
        tails.append(graph._device.current.tail_ub)
    assert tails[-1] > tails[0], tails


def test_a_compaction_lays_the_rows_out_again(monkeypatch, slack_layout):
    """With compaction as soon as the tail passes the edges, commits alternate between compacting
    and editing in place; every state equals the host twin's."""
    monkeypatch.setattr(slack_apply, "COMPACT_AT", 1.0)
    monkeypatch.setattr(slack_apply, "COMPACT_MIN", 0)
    rng = np.random.default_rng(D._seed("compaction", slack_layout))
    graph, twin = _on_device(rng, 400, 2)
    _chain(rng, graph, twin, [(30, 60), (60, 30), (5, 200), (100, 10), (40, 40), (0, 300), (50, 50)], "compacting")
    assert "compact" in _kinds and set(_kinds) - {"compact"}, _kinds


def test_restore_then_update_copies_the_targets_own_rows_back(slack_layout):
    """The benchmark's loop (restore a snapshot, apply a batch, again): the commit after a restore
    writes the set that is one commit ahead of the snapshot, bringing it back by its own commit's
    rows; the snapshot's bytes never change."""
    rng = np.random.default_rng(D._seed("restore loop", slack_layout))
    graph, twin = _on_device(rng, 1500, 2)
    _chain(rng, graph, twin, [(10, 10)] * 3, "warm-up")
    snap, twin_snap = graph.snapshot(), twin.snapshot()
    _kinds.clear()
    for step in range(6):
        _restore(graph, twin, snap, twin_snap)
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, 25, 25))
        D._apply_both(graph, twin, batch, f"restore then apply {step}")
    assert _kinds[0] == "same" and set(_kinds[1:]) == {"rows_of_target"}, _kinds
    _restore(graph, twin, snap, twin_snap)
    D.assert_no_problems(D.graph_problems(graph, twin), "the snapshot after the loop")


def test_restore_loop_with_new_vertices(slack_layout):
    """The restore loop with batches that add vertices: the set one commit ahead has rows the
    snapshot has not (they are copied back as empty rows), and every state equals the twin's."""
    rng = np.random.default_rng(D._seed("restore growth", slack_layout))
    graph, twin = _on_device(rng, 120, 1)
    _chain(rng, graph, twin, [(5, 5)] * 2, "warm-up")
    snap, twin_snap = graph.snapshot(), twin.snapshot()
    for step, kind in enumerate(("growth", "mixed", "outgrow", "growth", "all_rules")):
        _restore(graph, twin, snap, twin_snap)
        D._apply_both(graph, twin, H.make_batch(D.batch_arrays(rng, kind, twin, "mid")), f"{kind} {step}")


def test_an_empty_graph_snapshot_and_copy(slack_layout):
    """A graph of no vertices in the slack layout: its snapshot and copy, then batches that add
    vertices to each."""
    rng = np.random.default_rng(D._seed("empty slack", slack_layout))
    graph = engines_graph_of_no_vertices()
    twin = D.host_twin(graph)
    graph.to_device()
    snap, twin_snap = graph.snapshot(), twin.snapshot()
    other, other_twin = graph.copy(), twin.copy()
    for step, (g, t) in enumerate(((graph, twin), (other, other_twin), (graph, twin))):
        if step == 2:
            _restore(graph, twin, snap, twin_snap)
        size = int(rng.integers(1, 6))
        src = rng.integers(0, 4, size=size).astype(np.int64)
        dst = rng.integers(0, 4, size=size).astype(np.int64)
        w = rng.integers(1, 100, size=(size, 1)).astype(np.int64)
        empty = np.zeros(0, dtype=np.int64)
        D._apply_both(g, t, H.make_batch((src, dst, w, empty, empty)), f"growth from nothing {step}")


def engines_graph_of_no_vertices():
    import engines

    empty = np.zeros(0, dtype=np.int64)
    return engines.Graph.from_edges(empty, empty, np.zeros((0, 1), dtype=np.int64), num_vertices=0)


def test_growth_of_the_vertex_count_and_copies(slack_layout):
    """Batches that add vertices (rows with no room yet), a copy of the graph that goes its own
    way, and the host download of both: each equals its host twin."""
    rng = np.random.default_rng(D._seed("slack growth", slack_layout))
    graph, twin = _on_device(rng, 100, 2)
    for step, kind in enumerate(("growth", "outgrow", "all_rules", "growth")):
        D._apply_both(graph, twin, H.make_batch(D.batch_arrays(rng, kind, twin, "mid")), f"{kind} {step}")
    other, other_twin = graph.copy(), twin.copy()
    assert other._device.slack
    D._apply_both(other, other_twin, H.make_batch(D.batch_arrays(rng, "mixed", other_twin, "mid")), "the copy")
    D._apply_both(graph, twin, H.make_batch(D.batch_arrays(rng, "mixed", twin, "mid")), "the original")
    D.assert_no_problems(D.graph_problems(graph.copy().to_host(), twin), "to_host of a slack graph")


def test_update_through_both_engines_on_a_slack_graph(slack_layout):
    """compute() and a chain of update() calls on a slack graph, fused and operators, equal the host
    reference's results byte for byte (the engines read the rows through their starts and ends)."""
    rng = np.random.default_rng(D._seed("slack engines", slack_layout))
    graph, twin = _on_device(rng, 800, 1)
    configs = tuple(c for c in ("fused", "operators") if S.fused_available() or c != "fused")
    results = {"host": sssp.compute(twin, 0, backend="host")}
    for name in configs:
        results[name] = sssp.compute(graph, 0, backend="cuda", update_launch=slack_layout, **S.CUDA_CONFIGS[name])
        H.assert_result_bytes_equal(results["host"], results[name])
    for step in range(8):
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, 30, 30))
        twin.apply(batch)
        for name in configs:
            sssp.update(graph, batch, results[name])
        expected = sssp.compute(twin, 0, backend="host")
        for name in configs:
            H.assert_result_bytes_equal(expected, results[name])


@pytest.mark.parametrize("layout", ["packed", "slack"])
def test_a_snapshot_of_the_other_layout_is_uploaded_again(monkeypatch, layout, slack_layout):
    """A device snapshot taken under one layout, restored into a graph that went to the device again
    under the other: it is uploaded in the graph's layout, and commits from it are right."""
    rng = np.random.default_rng(D._seed("other layout", layout, slack_layout))
    monkeypatch.setenv(device_graph.LAYOUT_ENV, layout)
    graph, twin = _on_device(rng, 200, 1)
    snap, twin_snap = graph.snapshot(), twin.snapshot()
    graph.to_host()
    monkeypatch.setenv(device_graph.LAYOUT_ENV, "packed" if layout == "slack" else "slack")
    graph.to_device()
    D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, 10, 10)), "in the other layout")
    _restore(graph, twin, snap, twin_snap)
    assert graph._device.current.slack == graph._device.slack
    uploaded = graph._device.current
    D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, 10, 10)), "after the restore")
    _restore(graph, twin, snap, twin_snap)  # the upload in this layout serves the next restore too
    assert graph._device.current is uploaded
    D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, 10, 10)), "after the second restore")
    _kinds.append("checked")  # a packed graph's commits make no slack choice
