"""update() refuses a batch whose growth needs more host memory than is available, before the
commit (engines/graph/growth.py, engines/sssp/api.py): OutOfMemoryError naming the id, the vertex
count, the bytes needed and available; the graph and every result stay as they were. A growth that
fits updates as before, and a batch without growth never asks for the available memory."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.arguments import VERTEX_MAX
from engines.errors import OutOfMemoryError
from engines.graph import growth
from engines.sssp import api

from .host_memory import plenty_checked


def _graph():
    rng = np.random.default_rng(7)
    n, m = 40, 160
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    return engines.Graph.from_edges(src, dst, np.stack([rng.integers(1, 50, m), rng.integers(1, 9, m)], axis=1))


def _scipy_distances(graph, source: int, objective: int) -> np.ndarray:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n = graph.num_vertices
    src = np.repeat(np.arange(n), np.diff(np.asarray(graph.row_ptr, dtype=np.int64)))
    dst = np.asarray(graph.col_ind, dtype=np.int64)
    w = np.asarray(graph.weight_column(objective), dtype=np.float64)
    best = {}
    for a, b, c in zip(src.tolist(), dst.tolist(), w.tolist()):
        best[a, b] = min(c, best.get((a, b), np.inf))
    keys = list(best)
    matrix = csr_matrix(([best[k] for k in keys], ([k[0] for k in keys], [k[1] for k in keys])), shape=(n, n))
    dist = dijkstra(matrix, indices=source)
    out = np.full(n, -1, dtype=np.int64)
    out[np.isfinite(dist)] = dist[np.isfinite(dist)].astype(np.int64)
    return out


def _state(g, results):
    return (g.version, g.state_id, g.num_vertices, g.row_ptr.tobytes(), g.col_ind.tobytes(), g.weights.tobytes(),
            [(r.graph_version, r.poisoned, [a.tobytes() for a in r.to_numpy()]) for r in results])


def test_an_insertion_at_a_large_id_raises_and_changes_nothing(monkeypatch):
    monkeypatch.setattr(growth, "available_host_bytes", lambda: 2_000_000_000)
    g = _graph()
    results = [sssp.compute(g, 0), sssp.compute(g, 3, objective=1)]
    before = _state(g, results)
    top = VERTEX_MAX - 1
    with pytest.raises(OutOfMemoryError) as info:
        sssp.update(g, engines.Batch([0, 5], [7, top], [[1, 1], [2, 2]]), *results)
    text = str(info.value)
    # int32 offsets of two CSRs (8) + two results' int64 distances and int32 parents (24) + the host
    # engine's workspace (18): 50 bytes a vertex, 2^31 of them
    per_vertex = 8 + 2 * 12 + 18
    assert f"inserting vertex id {top}" in text
    assert f"from 40 to {VERTEX_MAX} vertices" in text
    assert f"about {growth.human_bytes(per_vertex << 31)} of host memory ({per_vertex} bytes per vertex)" in text
    assert "107.4 GB" in text and "only 2.0 GB is available" in text
    assert "Nothing was changed: the graph and every result are as they were" in text
    assert _state(g, results) == before
    sssp.update(g, engines.Batch([1], [2], [[3, 3]]), *results)  # still usable from the old version
    assert not any(r.poisoned for r in results)


def test_a_growth_that_fits_gives_the_same_result(monkeypatch):
    asked = plenty_checked(monkeypatch)  # every growth checked
    g = _graph()
    r0, r1 = sssp.compute(g, 0), sssp.compute(g, 5, objective=1)
    batch = engines.Batch([0, 3, 61, 61, 70], [61, 61, 70, 2, 4], [[1, 2], [4, 1], [2, 2], [1, 1], [3, 3]],
                          [0, 1], [int(g.col_ind[0]), int(g.col_ind[g.row_ptr[1]])])
    sssp.update(g, batch, r0, r1)
    assert asked == [1]
    assert g.num_vertices == 71
    for r, k in ((r0, 0), (r1, 1)):
        fresh = sssp.compute(g, r.source, objective=k)
        d, p = r.to_numpy()
        np.testing.assert_array_equal(d, fresh.to_numpy()[0])
        np.testing.assert_array_equal(p, fresh.to_numpy()[1])
        want = _scipy_distances(g, r.source, k)
        got = d.copy()
        got[want < 0] = -1
        np.testing.assert_array_equal(got, want)
        assert (d[want < 0] > 2**40).all()  # unreachable stays INF


def test_no_growth_never_asks_for_the_available_memory(monkeypatch):
    def refuse():
        raise AssertionError("the available memory was asked for")

    monkeypatch.setattr(growth, "available_host_bytes", refuse)
    g = _graph()
    r = sssp.compute(g, 0)
    n = g.num_vertices
    sssp.update(g, engines.Batch([0, 1], [n - 1, 2], [[5, 5], [1, 1]]), r)  # inserts, no growth
    sssp.update(g, engines.Batch([], [], None, [0], [n - 1]), r)  # a deletion
    sssp.update(g, engines.Batch.empty(2), r)
    sssp.update(g, engines.Batch([0], [n + 100], [[1, 1]]), r)  # growth under the floor: no call either
    assert g.num_vertices == n + 101 and g.version == 4 and not r.poisoned
    np.testing.assert_array_equal(r.to_numpy()[0], sssp.compute(g, 0).to_numpy()[0])


def test_the_estimate_counts_only_host_results():
    g = _graph()
    r = sssp.compute(g, 0)
    item = api._Pending(r, r._options, "host")
    assert api._growth_bytes_per_vertex([item]) == 8 + 4 + api._HOST_ENGINE_BYTES_PER_VERTEX


def test_the_estimate_covers_what_a_growing_host_update_allocates():
    """The bytes per vertex the check asks for (the graph's new offsets, the host result's arrays,
    the host engine's workspace) cover the NumPy allocations a growing update of a host result
    makes at its peak (tracemalloc; on a graph whose first updates already made its in-CSR and
    spare edge buffers, which the first two commits make, growing or not). Measured 29.1 bytes per
    vertex against the estimate's 38 (2026-12-07), at 4, 5 and 6 times the vertex count, and the
    same 29.1 with NUMBA_DISABLE_JIT=1 (the compiled kernels' own arrays then count too: they
    allocate none of the new size); a process's RSS grew by 24 bytes per vertex for an 8-fold
    growth to 8 M vertices. An array of the new vertex count added to the update without its bytes
    in the estimate fails this (so does the estimate without the host engine's 18 bytes)."""
    import tracemalloc

    rng = np.random.default_rng(11)
    n, m = 20_000, 80_000
    g = engines.Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(1, 100, (m, 3)))
    r = sssp.compute(g, 0)
    for _ in range(2):  # the in-CSR and both sets of spare edge buffers, made by the first commits
        k = 800
        sssp.update(g, engines.Batch(insert_src=rng.integers(0, n, k), insert_dst=rng.integers(0, n, k),
                                     insert_weights=rng.integers(1, 100, (k, 3))), r)
    for grown in (4 * n, 5 * n):
        batch = engines.Batch(insert_src=[0], insert_dst=[grown - 1], insert_weights=[[5, 5, 5]])
        estimate = g.growth_bytes_per_vertex(g.events_for(batch)) + api._growth_bytes_per_vertex(
            [api._Pending(r, r._options, "host")])
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            sssp.update(g, batch, r)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        assert g.num_vertices == grown
        assert 0.5 * estimate * grown < peak <= estimate * grown, (peak / grown, estimate)
