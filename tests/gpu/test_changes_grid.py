"""The change lists' staging over a grid (``ENGINES_CHANGES_GRID``, device_apply.cu
write_changes) on the GPU: the lists a grid of blocks writes must be one block's (the switch at 0),
byte for byte, and the host's (algorithm.md §3.4: every deletion, then every weight-increased insertion, in batch
order; heads = every insertion's target), for batches of one block's events and of many blocks'
(deletions only, insertions only, no weight raised, every re-weight raised), launched from Python and
captured; and update() chains through both CUDA engines with batches of several blocks' events
must stay byte-equal to the host reference under both launches of the apply.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.graph import device_apply
from engines.sssp.api import change_lists
from engines.sssp.cuda import runtime, workspace

from .. import harness as H
from . import ops_support as S
from . import test_device_graph as D

pytestmark = S.GPU


def _recording_kernels(monkeypatch) -> list:
    """The staging kernels' names and grids (CuPy's dimension tuples) as launched
    (device_apply._changes_kernel wrapped)."""
    launched = []
    original = device_apply._changes_kernel

    def recording(scratch, sized):
        fn = original(scratch, sized)

        def launch(dims, block, args, stream=None):
            launched.append(("apply_changes" + ("_sized" if sized else ""), tuple(dims)))
            return fn(dims, block, args, stream=stream)

        return launch

    monkeypatch.setattr(device_apply, "_changes_kernel", recording)
    return launched


def _staged(graph, events, objective: int, grid: bool, captured: bool, monkeypatch):
    """The change lists of ``events`` (committed on ``graph``) as the engines' workspace receives
    them: ``(from, to, heads, count)`` on the host."""
    monkeypatch.setenv(device_apply.CHANGES_GRID_ENV, "1" if grid else "0")
    from engines.sssp import cuda

    commit = graph.commit(events)
    lists = cuda.changes_for(commit, objective)
    ws = workspace.get(0, np.int32)
    s = runtime.stream(0)
    ws.reserve(graph.num_vertices, max(lists.upper, 1), s)
    if captured:
        views, launch = lists.captured_staging(ws)
        if launch is not None:
            fn, args, dims = launch
            fn(*dims, args, stream=s)
    else:
        views = lists.stage(ws, s)
    s.synchronize()
    count = int(views[3].get()[0])
    return (views[0][:count].get(), views[1][:count].get(), views[2][: events.num_insertions].get(), count,
            commit)


@pytest.mark.parametrize("captured", [False, True])
@pytest.mark.parametrize("deletions, insertions, increased", [
    (30, 40, "mixed"), (20_000, 0, "mixed"), (0, 20_000, "mixed"), (9_000, 11_000, "none"), (9_000, 11_000, "all"),
    (23_117, 25_000, "mixed")])
def test_the_grid_writes_the_one_blocks_lists_and_the_hosts(monkeypatch, captured, deletions, insertions,
                                                            increased):
    rng = np.random.default_rng(D._seed("changes grid", deletions, insertions, increased, captured))
    graph = D._graph(rng, 3000, 2)
    twin = D.host_twin(graph)
    graph.to_device()
    isrc, idst, iw, dsrc, ddst = D.fixed_size_arrays(rng, twin, deletions, insertions)
    if increased != "mixed":  # every re-weight up (101: above every weight) or none (1)
        iw = np.full_like(iw, 101 if increased == "all" else 1)
    batch = H.make_batch((isrc, idst, iw, dsrc, ddst))
    snapshot = graph.snapshot()
    launched = _recording_kernels(monkeypatch)
    got = {}
    for grid in (False, True):
        graph.restore(snapshot)
        got[grid] = _staged(graph, graph.events_for(batch), 1, grid, captured, monkeypatch)
    # one block, then one block per CHANGES_PER_BLOCK events (the reserved capacity's when
    # captured), so a switch not honoured fails here on a batch of several blocks
    events = graph.events_for(batch).size
    cap = graph._device.scratch.event_cap
    sized = "_sized" if captured else ""
    blocks = device_apply.changes_blocks(cap if captured else events, 0, True)
    assert launched == [("apply_changes" + sized, (1,)), ("apply_changes" + sized, (blocks,))], launched
    if events > 2 * device_apply.CHANGES_PER_BLOCK:
        assert blocks > 1
    delta = twin.apply(batch)[1]
    want = change_lists(delta, 1)
    for grid, (frm, to, heads, count, _) in got.items():
        assert count == want.changed_from.size, grid
        assert np.array_equal(frm, want.changed_from) and np.array_equal(to, want.changed_to), grid
        assert np.array_equal(heads, want.heads), grid
    if increased == "none":  # no insertion raised a weight: the deletions alone
        assert got[True][3] == delta.delete_src.size


@pytest.mark.parametrize("launch", ["python", "graph"])
def test_update_chains_with_grid_staging_equal_the_host(monkeypatch, launch):
    """Batches of 2,000 to 30,000 changes (one to eight blocks of the grid) on a 20,000-vertex graph
    through both CUDA engines, every state byte-equal to the host reference's."""
    monkeypatch.setenv(device_apply.CHANGES_GRID_ENV, "1")
    rng = np.random.default_rng(D._seed("grid chains", launch))
    n, src, dst, w = H.random_graph(rng, "sparse", 20_000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    twin = D.host_twin(graph)  # before the graph moves to the device
    launched = _recording_kernels(monkeypatch)
    configs = ("fused", "operators") if S.fused_available() else ("operators",)
    results = {"host": sssp.compute(graph, 0, backend="host")}
    for name in configs:
        results[name] = sssp.compute(graph, 0, backend="cuda", update_launch=launch, **S.CUDA_CONFIGS[name])
    for size in (2_000, 30_000, 9_000, 30_000):
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, size // 2, size - size // 2))
        twin.apply(batch)
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True)
    assert launched and all(name.startswith("apply_changes") for name, _ in launched)
    assert max(dims[0] for _, dims in launched) > 1  # some batch staged over several blocks
