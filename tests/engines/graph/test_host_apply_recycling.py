"""The host commit writing into recycled buffers (``engines.graph.host_apply.Spares``).

A graph hands the entry buffers of a state it replaces to its next commit only when nothing else
holds them. These tests drive a graph through random chains of commits, snapshots, restores and
arrays held by the caller, and check that every state equals the list oracle's byte for byte and
that no array anyone still holds ever changes; then that recycling does happen in the steady
state it was built for (restore, commit, restore, commit ...).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines import Batch, Graph
from engines.errors import InvalidArgumentError

from .apply_oracle import ListGraph, list_apply


def graph_of(n, edges, k):
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] for e in edges], dtype=np.int64).reshape(len(edges), k)
    return Graph.from_edges(src, dst, w, num_vertices=n)


def state_of(g: Graph):
    """Copies of every host array of the graph's state, out side then in side."""
    out, inn = g._host_out(), g._host_in()
    return [np.array(a, copy=True) for a in (*out, *inn)]


def assert_state(g: Graph, lg: ListGraph):
    out, inn = g._host_out(), g._host_in()
    for got, want, side in ((out, lg.arrays("out"), "out"), (inn, lg.arrays("in"), "in")):
        assert got[0].dtype == g.offset_dtype
        np.testing.assert_array_equal(got[0], want[0].astype(got[0].dtype), err_msg=f"{side} ptr")
        for a, b, what in ((got[1], want[1], "keys"), (got[2], want[2], "weights")):
            assert a.dtype == b.dtype and a.shape == b.shape, f"{side} {what}"
            assert a.flags.c_contiguous and not a.flags.writeable
            np.testing.assert_array_equal(a, b, err_msg=f"{side} {what}")


def data_ptr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@st.composite
def batches(draw, lg: ListGraph, k: int):
    """Pairs from a small pool (existing pairs, absent ones, ids past n), so that re-weights,
    duplicate events, deletions of missing edges and new vertices are all common."""
    n = lg.n
    existing = [(u, v) for u in range(n) for v, _ in lg.out[u]]
    fresh = st.tuples(st.integers(0, n + 2), st.integers(0, n + 2))
    pool = draw(st.lists(st.one_of(st.sampled_from(existing), fresh) if existing else fresh,
                         min_size=1, max_size=6))
    pair = st.sampled_from(pool)
    dels = draw(st.lists(pair, max_size=8))
    ins = draw(st.lists(pair, max_size=8))
    w = draw(st.lists(st.lists(st.integers(1, 9), min_size=k, max_size=k),
                      min_size=len(ins), max_size=len(ins)))
    return Batch([u for u, _ in ins], [v for _, v in ins], np.array(w, np.int64).reshape(len(ins), k),
                 [u for u, _ in dels], [v for _, v in dels])


ACTIONS = ("apply", "apply", "apply", "snapshot", "restore", "hold", "release", "bad")


@settings(deadline=None, max_examples=120)
@given(st.data())
def test_chains_with_snapshots_and_held_arrays(data):
    k = data.draw(st.sampled_from([1, 3]))
    n = data.draw(st.integers(0, 6))
    edges = data.draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0)),
                                         st.lists(st.integers(1, 9), min_size=k, max_size=k)),
                               max_size=14 if n else 0))
    g = graph_of(n, edges, k)
    lg = ListGraph.from_csr(g.row_ptr, g.col_ind, g._host_out()[2])
    snapshots = []  # (GraphSnapshot, ListGraph, copies of its arrays)
    held = []       # (an array the caller holds, a copy of its content then)
    for _ in range(data.draw(st.integers(4, 12))):
        action = data.draw(st.sampled_from(ACTIONS))
        if action == "apply":
            batch = data.draw(batches(lg, k))
            ref = list_apply(lg, batch.insert_src, batch.insert_dst, batch.insert_weights,
                             batch.delete_src, batch.delete_dst)
            summary, _ = g.apply(batch)
            assert summary.__dict__ == ref.summary
            lg = ref.graph
            assert_state(g, lg)
        elif action == "snapshot":
            snapshots.append((g.snapshot(), lg, state_of(g)))
        elif action == "restore" and snapshots:
            snap, lg, _ = snapshots[data.draw(st.integers(0, len(snapshots) - 1))]
            g.restore(snap)
            assert_state(g, lg)
        elif action == "hold":
            which = data.draw(st.sampled_from(["col_ind", "weights", "slice", "in_edges", "in_src"]))
            if which == "col_ind":
                a = g.col_ind
            elif which == "weights":
                a = g.weights
            elif which == "slice":
                a = np.asarray(g._host_out()[2])[:, 1:]
            elif which == "in_edges":
                a = g.in_edges(k - 1).weight
            else:
                a = g._host_in()[1]
            held.append((a, np.array(a, copy=True)))
        elif action == "release" and held:
            held.pop(data.draw(st.integers(0, len(held) - 1)))
        elif action == "bad":  # rejected before the commit: nothing changes
            before = state_of(g)
            with pytest.raises(InvalidArgumentError):
                g.apply(Batch([0], [0], np.ones((1, k + 1), np.int64)))
            for a, b in zip(before, state_of(g)):
                np.testing.assert_array_equal(a, b)
        for a, copy in held:
            np.testing.assert_array_equal(a, copy, err_msg="an array the caller holds changed")
        for snap, _, copies in snapshots:
            for a, copy in zip((*snap.host_out, *(snap.host_in or ())), copies):
                np.testing.assert_array_equal(a, copy, err_msg="a snapshot's array changed")


def random_graph(seed=3, n=3000, m=12000, k=3):
    rng = np.random.default_rng(seed)
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(1, 50, (m, k)))
    dels = rng.integers(0, m, 300)
    batch = Batch(rng.integers(0, n + 10, 400), rng.integers(0, n, 400), rng.integers(1, 50, (400, k)),
                  np.asarray(g.edge_sources())[dels], np.asarray(g.col_ind)[dels])
    return g, batch


def entry_pointers(g: Graph) -> set:
    out, inn = g._host_out(), g._host_in()
    return {data_ptr(out[1]), data_ptr(out[2]), data_ptr(inn[1]), data_ptr(inn[2])}


def test_restore_then_commit_reuses_the_retired_buffers():
    g, batch = random_graph()
    g.in_edges(0)
    snap = g.snapshot()
    g.apply(batch)
    first = entry_pointers(g)
    g.restore(snap)  # the committed state is retired: nothing else holds it
    g.apply(batch)
    assert entry_pointers(g) == first
    g.apply(batch)  # a commit without restore: the state before last is not retired yet ...
    assert entry_pointers(g).isdisjoint(first)
    g.apply(batch)  # ... but is now: the retired one serves the commit after
    assert entry_pointers(g) == first


def test_a_held_array_is_never_reused():
    g, batch = random_graph()
    g.in_edges(0)
    snap = g.snapshot()
    g.apply(batch)
    col, copy = g.col_ind, np.array(g.col_ind, copy=True)
    in_w = g.in_edges(1).weight
    in_copy = np.array(in_w, copy=True)
    g.restore(snap)
    g.apply(batch)
    g.restore(snap)
    g.apply(Batch([0, 1], [1, 2], [[7, 7, 7], [8, 8, 8]]))
    np.testing.assert_array_equal(col, copy)
    np.testing.assert_array_equal(in_w, in_copy)
    assert not np.shares_memory(col, g.col_ind) and not np.shares_memory(in_w, g.in_edges(1).weight)


@pytest.mark.parametrize("duplicate", [lambda g: pickle.loads(pickle.dumps(g)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_graph_with_spares_pickles_and_copies(duplicate):
    g, batch = random_graph()
    snap = g.snapshot()
    g.apply(batch)
    g.restore(snap)  # the pool now holds the retired state's buffers
    twin = duplicate(g)
    assert twin._spares is not g._spares and not twin._spares._free
    g.apply(batch)
    twin.apply(batch)
    for a, b in zip(state_of(g), state_of(twin)):
        np.testing.assert_array_equal(a, b)


def local_batch(rng, g: Graph, lo: int, k: int = 3, size: int = 60, same_m: bool = False) -> Batch:
    """Insertions and deletions among the rows from ``lo`` on (both ends), so that every entry
    before row ``lo`` on both sides is the old one; ``same_m``: as many deletions of existing
    edges as insertions of absent pairs (m unchanged, every weight column at its old place)."""
    n = g.num_vertices
    src_all, col = np.asarray(g.edge_sources()), np.asarray(g.col_ind)
    inside = np.flatnonzero((src_all >= lo) & (col >= lo))
    dels = rng.choice(inside, size, replace=False)
    u = rng.integers(lo, n, size)
    v = rng.integers(lo, n, size)
    if same_m:  # fresh pairs: upserts would keep m lower than the deletions make it
        u = np.full(size, n - 1)
        v = (np.arange(size) + lo) % n
        keep = ~np.isin(u.astype(np.int64) * n + v, src_all.astype(np.int64) * n + col)
        u, v = u[keep], v[keep]
        dels = dels[:u.size]
    return Batch(u, v, rng.integers(1, 50, (u.size, k)), src_all[dels], col[dels])


def fresh_copy_state(g: Graph, batch: Batch):
    """The state ``batch`` gives from ``g``'s current one without any recycled buffer (the
    applier is pure: ``g`` is untouched)."""
    from engines.graph.host_apply import HostCsr, apply_host

    out, inn = g._host_out(), g._host_in()
    new = apply_host(HostCsr(*out, *inn), g.events_for(batch), g._scalars, None,
                     offset_dtype=g.offset_dtype)[0]
    return [np.array(a, copy=True) for a in (new.row_ptr, new.col_ind, new.weights, new.in_ptr, new.in_src,
                                             new.in_weights)]


@pytest.mark.parametrize("same_m", [False, True], ids=["m-changes", "m-kept"])
def test_a_recycled_buffer_keeps_the_prefix_it_is_known_to_hold(monkeypatch, same_m):
    """Spares.known_prefix: after a restore (the buffer holds a sibling of the new state) and
    along a chain (it holds the state before the current one), the entries before the first
    touched row are left where they are, and every state is still the full copy's bytes."""
    from engines.graph import host_apply as ah

    skips = []
    real = ah.Spares.known_prefix

    def spy(self, out, src):
        got = real(self, out, src)
        skips.append(got)
        return got

    monkeypatch.setattr(ah.Spares, "known_prefix", spy)
    rng = np.random.default_rng(5)
    g, _ = random_graph()
    g.in_edges(0)
    snap = g.snapshot()
    batch = local_batch(rng, g, 2000, same_m=same_m)
    want = fresh_copy_state(g, batch)
    for _ in range(3):  # restore, commit: the sibling case
        g.restore(snap)
        g.apply(batch)
        for a, b in zip(state_of(g), want):
            np.testing.assert_array_equal(a, b)
    assert any(p > 0 for p, _ in skips[-4:])
    assert all(every for p, every in skips[-4:] if p) == True  # noqa: E712 (same layout each time)
    skips.clear()
    for step in range(6):  # a chain: the buffer holds the state before the current one
        batch = local_batch(rng, g, 1500 + 200 * step, same_m=same_m)
        want = fresh_copy_state(g, batch)
        g.apply(batch)
        for a, b in zip(state_of(g), want):
            np.testing.assert_array_equal(a, b)
    assert sum(p > 0 for p, _ in skips) >= 8
    if same_m:
        assert any(every for p, every in skips if p)


def test_a_buffer_rewritten_since_is_not_trusted():
    """The chain case of Spares.known_prefix holds only while the buffer still has the content
    the current state was written from: here it was rewritten with a state of another lineage
    (one whose low rows differ) and retired again before it serves the next commit."""
    rng = np.random.default_rng(11)
    g, _ = random_graph()
    g.in_edges(0)
    snap0 = g.snapshot()
    g.apply(local_batch(rng, g, 2000))          # S1: fresh buffers
    g.apply(local_batch(rng, g, 2200))          # S2: written from S1's buffers
    snap2 = g.snapshot()
    g.restore(snap0)
    g.apply(local_batch(rng, g, 0, size=300))   # S3 = S0 + low rows, into S1's retired buffers
    g.restore(snap2)                            # S3 retired
    batch = local_batch(rng, g, 2400)
    want = fresh_copy_state(g, batch)
    g.apply(batch)
    for a, b in zip(state_of(g), want):
        np.testing.assert_array_equal(a, b)
