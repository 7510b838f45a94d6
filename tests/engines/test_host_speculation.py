"""compute()'s search started on a helper thread while a known tree's update invalidates
(host._speculate, issue 35): kept when the update recomputes, stopped otherwise. Either way the
bytes and every counter are those of the update without it; and the stoppable search itself
(host_kernels.propagate_heap's ``stop``, searching in chunks) gives the unchunked words and
expansions, or stops when told."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engines
from engines import sssp
from engines.sssp import host, host_kernels
from engines.sssp.packing import INF_WORD

from .. import harness as H
from .test_known_tree import COUNTERS, assert_same, knobs

pytestmark = pytest.mark.skipif(host._numba_propagate() is None, reason="needs the Numba propagation")


class Spy:
    """Counts what each speculation ended as."""

    def __init__(self, monkeypatch):
        self.kept = self.abandoned = 0
        result, abandon = host._Speculation.result, host._Speculation.abandon

        def kept(spec):
            self.kept += 1
            return result(spec)

        def abandoned(spec):
            self.abandoned += 1
            return abandon(spec)

        monkeypatch.setattr(host._Speculation, "result", kept)
        monkeypatch.setattr(host._Speculation, "abandon", abandoned)


@settings(max_examples=H.examples(80), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(H.SHAPES), n=st.integers(1, 60),
       wclass=st.sampled_from(H.WEIGHT_CLASSES), fallback=st.sampled_from([None, 1e-9, 0.99]),
       chunk=st.sampled_from([1, 3, 1 << 14]),
       kinds=st.lists(st.sampled_from(H.BATCH_KINDS), min_size=2, max_size=5))
def test_a_speculating_chain_equals_one_without(seed, shape, n, wclass, fallback, chunk, kinds):
    """Two copies of a graph and of its compute() result ride the same batches, one update
    speculating whenever there is a root (share 0), one never: the same bytes and counters after
    every batch (the recompute fraction: the default, any invalidation, almost all)."""
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, 1, wclass)
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    twin = g.copy()
    s = int(rng.integers(0, n))
    spec = sssp.compute(g, s)
    plain = sssp.compute(twin, s)
    saved = host.SPECULATE_ROOT_SHARE, host_kernels.STOP_CHUNK
    host_kernels.STOP_CHUNK = chunk
    try:
        with knobs(fraction=fallback):
            for kind in kinds:
                arrays = H.random_batch(rng, kind, H.ref_of(g), spec.to_numpy()[1], s, wclass)
                host.SPECULATE_ROOT_SHARE = 0.0
                sa = sssp.update(g, H.make_batch(arrays), spec)
                host.SPECULATE_ROOT_SHARE = None
                sb = sssp.update(twin, H.make_batch(arrays), plain)
                assert_same(spec, plain, sa, sb, COUNTERS)
    finally:
        host.SPECULATE_ROOT_SHARE, host_kernels.STOP_CHUNK = saved


def grid(side=40, seed=1):
    rng = np.random.default_rng(seed)
    v = np.arange(side * side).reshape(side, side)
    src = np.concatenate([v[:, :-1].ravel(), v[:, 1:].ravel(), v[:-1].ravel(), v[1:].ravel()])
    dst = np.concatenate([v[:, 1:].ravel(), v[:, :-1].ravel(), v[1:].ravel(), v[:-1].ravel()])
    return engines.Graph.from_edges(src, dst, rng.integers(1, 20, (src.size, 1)), num_vertices=side * side)


@pytest.mark.parametrize("fraction,outcome", [(1e-9, "kept"), (0.99, "abandoned")])
def test_the_speculation_is_kept_or_stopped(monkeypatch, fraction, outcome):
    """On a grid whose source (a corner) gets one of its two out-edges re-weighted (the root's
    subtree: part of the grid): the search is kept when the update recomputes, stopped when it
    repairs; same bytes and counters as without it."""
    spy = Spy(monkeypatch)
    monkeypatch.setattr(host, "RECOMPUTE_FRACTION", fraction)
    monkeypatch.setattr(host, "SPECULATE_ROOT_SHARE", 0.0)
    monkeypatch.setattr(host_kernels, "STOP_CHUNK", 4)
    g = grid()
    twin = g.copy()
    a, b = sssp.compute(g, 0), sssp.compute(twin, 0)
    heads = np.asarray(g.col_ind)[:1]
    batch = engines.Batch(np.zeros(heads.size, np.int64), heads, np.full((heads.size, 1), 25))
    sa = sssp.update(g, batch, a)
    monkeypatch.setattr(host, "SPECULATE_ROOT_SHARE", None)
    sb = sssp.update(twin, batch, b)
    assert_same(a, b, sa, sb, COUNTERS)
    assert 0 < sa.invalidated < 0.99 * g.num_vertices
    assert (spy.kept, spy.abandoned) == ((1, 0) if outcome == "kept" else (0, 1))


@pytest.mark.parametrize("chunk", [1, 2, 7, 1000])
def test_a_chunked_search_equals_the_whole_and_stops_when_told(monkeypatch, chunk):
    from engines.sssp.packing import decide_packing

    g = grid(30, seed=4)
    n = g.num_vertices
    packing = decide_packing(int(g.max_weight(0)), n)
    assert packing.packed
    args = (np.array([0]), g.row_ptr, g.col_ind, g.weight_column(0), 0, packing)

    def start():
        words = np.full(n, INF_WORD, dtype=np.uint64)
        words[0] = np.uint64(packing.no_parent)
        return words

    whole = start()
    counts = host_kernels.propagate_heap(whole, *args)
    monkeypatch.setattr(host_kernels, "STOP_CHUNK", chunk)
    chunked = start()
    got = host_kernels.propagate_heap(chunked, *args, stop=np.zeros(1, np.uint8))
    assert (got.iterations, got.epochs, got.pushes) == (counts.iterations, counts.epochs, counts.pushes)
    assert np.array_equal(chunked, whole)
    if chunk < n:
        assert host_kernels.propagate_heap(start(), *args, stop=np.ones(1, np.uint8)) is None
