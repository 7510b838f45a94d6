"""The update's host path on the GPU: the change-list views a workspace cuts once per buffer and
the reserve that returns early in a steady state (engines/sssp/cuda/workspace.py), checked against
the buffers they stand for, with every update's results equal to the host reference's."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines.sssp.cuda import runtime, workspace

from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


@pytest.mark.parametrize("engine", S.CUDA_ENGINES)
def test_the_change_views_are_cut_once_per_buffer_and_follow_its_growth(engine):
    S.skip_unless_it_runs(engine)
    rng = np.random.default_rng(43)
    n, src, dst, w = H.random_graph(rng, "sparse", 2000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = S.compute_all(graph, 0, engines=(engine,))
    device = results[engine].device
    ws = workspace.get(device, np.dtype(results[engine].to_numpy()[1].dtype))

    def run(kind):
        _, parents = results["host"].to_numpy()
        stats = S.update_all(graph, H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid")),
                             results)
        S.assert_conformant(results, stats, update=True)

    run("mixed")
    views = ws.change_views()
    cap = ws.change_capacity
    assert all(v.size == cap for v in views[:3]) and views[3].size == 1
    base = ws.changes_device.data.ptr
    item = ws.changes_device.itemsize
    assert [v.data.ptr for v in views[:3]] == [base, base + cap * item, base + 2 * cap * item]
    ws.reserve(n, cap, runtime.stream(device))  # within capacity: the early return
    assert ws.change_views() is views
    run("mixed")
    if ws.change_capacity == cap:
        assert ws.change_views() is views  # a steady state: the same views
    ws.reserve(n, cap + 1, runtime.stream(device))  # growth cuts new views of the new buffer
    grown = ws.change_views()
    assert grown is not views and all(v.size == ws.change_capacity > cap for v in grown[:3])
    assert grown[0].data.ptr == ws.changes_device.data.ptr
    run("mixed")
    run("tree_delete")


def test_the_operators_prologue_is_one_graph_per_buffer_layout(monkeypatch):
    """The operators engine's launches up to the invalidation replay one captured graph while the
    buffers stay (a steady stream of batches), another once the change lists grew, and an empty
    batch (no sized staging: the count zeroed on the stream) and a batch of deletions only give the
    host's trees. The graphs each update asks for are recorded where they are looked up."""
    from engines.sssp.cuda import operators

    asked = []
    real_cached_graph = operators._cached_graph

    def recording(key, enqueue, device):
        if key[0] == "prologue":
            asked.append(key)
        return real_cached_graph(key, enqueue, device)

    monkeypatch.setattr(operators, "_cached_graph", recording)
    rng = np.random.default_rng(47)
    n, src, dst, w = H.random_graph(rng, "sparse", 1500, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = S.compute_all(graph, 0, engines=("operators",))
    device = results["operators"].device
    ws = workspace.get(device, np.dtype(results["operators"].to_numpy()[1].dtype))

    def run(batch):
        before = len(asked)
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True)
        assert len(asked) == before + 1, "the update did not run the captured prologue once"
        return asked[-1]

    def random(kind):
        _, parents = results["host"].to_numpy()
        return H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))

    def addresses(key):
        """The buffers a prologue graph fixed (the scalars, e.g. the packing bound that a heavier
        inserted weight raises, may change between batches): the launches' and the staging's
        runtime.capture_key, (scalars, addresses) each, are the key's last two entries."""
        staged = () if key[-1] is None else key[-1][1][1]
        return key[-2][1] + staged

    for _ in range(3):
        run(random("mixed"))
    capacity = ws.change_capacity
    steady = {addresses(run(random("mixed"))) for _ in range(4)}
    if ws.change_capacity == capacity:  # the same buffers (every mixed batch has changes)
        assert len(steady) == 1
    empty = run(engines.Batch.empty(graph.num_weights))
    assert empty[8] == 0 and empty[-1] is None  # no rounds, no staging
    run(random("tree_delete"))
    # grown change lists: their new addresses make a new graph, which the next update replays
    ws.reserve(n, ws.change_capacity + 1, runtime.stream(device))
    capacity = ws.change_capacity
    grown = addresses(run(random("mixed")))
    assert grown not in steady
    again = addresses(run(random("mixed")))
    if ws.change_capacity == capacity:
        assert again == grown


@pytest.mark.parametrize("engine", S.CUDA_ENGINES)
def test_the_commit_record_is_read_while_the_engine_runs(engine, monkeypatch):
    """Each engine asks for the commit's record (DeviceChangeLists.resolve_ready) after enqueuing
    its run and before its first wait, so an arrived record is converted while the GPU works. The
    test makes the record arrive first (it waits for the apply's event inside the hook, which the
    engine itself never does) and checks that the conversion came before the engine's wait, with
    the host's results."""
    S.skip_unless_it_runs(engine)
    from engines.graph import device_apply

    order = []
    real_ready = device_apply.DeviceChangeLists.resolve_ready
    real_resolve = device_apply.PendingCommit.resolve

    def ready(self):
        self.pending.scratch.record_ready.synchronize()  # the test's own wait: the record is there
        order.append("asked")
        return real_ready(self)

    def resolve(self):
        if not self.resolved:
            order.append("resolved")
        return real_resolve(self)

    def waiting(real):
        def wait(*args, **kwargs):
            order.append("wait")
            return real(*args, **kwargs)
        return wait

    monkeypatch.setattr(device_apply.DeviceChangeLists, "resolve_ready", ready)
    monkeypatch.setattr(device_apply.PendingCommit, "resolve", resolve)
    for name in ("synchronize", "wait_record", "wait_readback"):
        monkeypatch.setattr(runtime, name, waiting(getattr(runtime, name)))
    rng = np.random.default_rng(53)
    n, src, dst, w = H.random_graph(rng, "sparse", 900, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    # the engine first in the update: the host reference's stats would resolve the record before it
    results = dict(reversed(S.compute_all(graph, 0, engines=(engine,)).items()))
    for kind in ("mixed", "tree_delete", "mixed"):
        _, parents = results["host"].to_numpy()
        order.clear()
        stats = S.update_all(graph, H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid")),
                             results)
        S.assert_conformant(results, stats, update=True, what=kind)
        assert "asked" in order and "resolved" in order, order
        assert order.index("asked") < order.index("resolved") < order.index("wait"), order


@pytest.mark.parametrize("engine", S.CUDA_ENGINES)
def test_the_graph_view_follows_the_edge_count_around_the_same_buffers(engine):
    """The engines' device view of the graph is kept per buffer set, vertex count and objective; a
    batch that moves the edge count gives a view with the new count around the same columns (their
    first num_edges entries the graph's), and every result still equals the host's."""
    S.skip_unless_it_runs(engine)
    rng = np.random.default_rng(47)
    n, src, dst, w = H.random_graph(rng, "sparse", 2000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = S.compute_all(graph, 0, engines=(engine,))
    seen = {}
    for kind in ("insert", "delete", "mixed", "insert", "tree_delete"):
        _, parents = results["host"].to_numpy()
        stats = S.update_all(graph, H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid")),
                             results)
        S.assert_conformant(results, stats, update=True, what=kind)
        device = graph._device
        view = device.view(0)
        assert (view.num_vertices, view.num_edges) == (graph.num_vertices, graph.num_edges)
        assert device.view(0) is view  # asked again without a change: the same record
        cur = device.current
        assert view.out_index.data.ptr == cur.key["out"].data.ptr and view.out_index.size == cur.m_cap
        assert view.in_weight.data.ptr == cur.weight["in"][0].data.ptr
        assert view.out_ptr.size == graph.num_vertices + 1
        # each row ends where the next begins: the ends are the offsets' own memory, one entry on
        for ptr, end in ((view.out_ptr, view.out_end), (view.in_ptr, view.in_end)):
            assert end.size == graph.num_vertices and end.dtype == ptr.dtype
            assert end.data.ptr == ptr.data.ptr + ptr.dtype.itemsize
        np.testing.assert_array_equal(view.out_index[:view.num_edges].get(), np.asarray(graph.col_ind))
        seen.setdefault(cur.serial, set()).add(view.num_edges)
    assert any(len(counts) > 1 for counts in seen.values())  # one set served several edge counts
