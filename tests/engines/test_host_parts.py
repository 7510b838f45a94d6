"""Unit tests of the host reference engine's internal pieces (algorithm.md §5.5-§5.9, §4.4, §7).

Each piece is checked against a plain-Python re-statement of its rule on small inputs; the two
propagation schedules (NumPy near-far, Numba heap) against each other; and the engine end to end
against SciPy's Dijkstra and against itself (update from a canonical tree == compute on G_{t+1}).
The public behaviour (api, oracles of algorithm.md §13) is tested elsewhere.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

import engines
from bench import generators
from engines import errors
from engines.sssp import host, host_steps, plan
from engines.sssp.host_schedule import propagate_near_far
from engines.sssp.packing import (
    INF_HALF,
    INF_WORD,
    INFINITE_DISTANCE,
    Packing,
    decide_packing,
    default_delta,
    pack,
    parent_bits,
    unpack,
)
from engines.sssp.plan import ChangeLists, Plan

try:
    from engines.sssp.host_kernels import propagate_heap
except ImportError:  # pragma: no cover - Numba is a project dependency
    propagate_heap = None

needs_numba = pytest.mark.skipif(propagate_heap is None, reason="Numba not importable")
INT32_MAX = (1 << 31) - 1


# ------------------------------------------------------------------------------------------------
# helpers: graphs, plans, change lists, and plain-Python oracles
# ------------------------------------------------------------------------------------------------


def random_graph(rng, n, m, wmax, K=1):
    src, dst = generators.uniform_arcs(rng, n, m)
    w = rng.integers(1, wmax + 1, (m, K))
    return engines.Graph.from_edges(src, dst, w, num_vertices=n)


def compute_plan(graph, source, k=0, delta=0):
    n = graph.num_vertices
    w = max(1, graph.max_weight(k))
    d = delta or default_delta(n, graph.num_edges, graph.weight_sum(k))
    return Plan(source=source, objective=k, num_vertices=n, max_weight=w, delta=d, packing=decide_packing(w, n))


def apply_with_plan(graph, batch, source, k=0):
    """Plan and change lists of algorithm.md §3.4, §3.5 (W and delta on G_t), then the commit."""
    w = max(1, graph.max_weight(k), int(batch.insert_weights[:, k].max()) if batch.num_insertions else 0)
    delta = default_delta(graph.num_vertices, graph.num_edges, graph.weight_sum(k))
    _, dl = graph.apply(batch)
    n = graph.num_vertices
    plan = Plan(source=source, objective=k, num_vertices=n, max_weight=w, delta=delta,
                packing=decide_packing(w, n))
    inc = dl.weight_increased[:, k] if dl.weight_increased.size else np.zeros(dl.insert_src.size, bool)
    changes = ChangeLists(
        changed_from=np.concatenate([dl.delete_src, dl.insert_src[inc]]).astype(np.int32),
        changed_to=np.concatenate([dl.delete_dst, dl.insert_dst[inc]]).astype(np.int32),
        heads=np.asarray(dl.insert_dst, dtype=np.int32),
    )
    return plan, changes


def grow(d, p, n):
    extra = n - d.shape[0]
    return (np.concatenate([d, np.full(extra, INFINITE_DISTANCE, np.int64)]),
            np.concatenate([p, np.full(extra, -1, p.dtype)]))


def edge_list(graph, k=0):
    return graph.edge_sources().astype(np.int64), graph.col_ind.astype(np.int64), graph.weight_column(k).astype(np.int64)


def scipy_tree(graph, source, k=0):
    """SciPy Dijkstra on the weight-min simple graph + the lowest-id tight in-neighbour."""
    n = graph.num_vertices
    src, dst, w = edge_list(graph, k)
    best = {}
    for u, v, c in zip(src.tolist(), dst.tolist(), w.tolist()):
        best[(u, v)] = min(c, best.get((u, v), c))
    keys = list(best)
    mat = csr_matrix(([float(best[e]) for e in keys], ([e[0] for e in keys], [e[1] for e in keys])), shape=(n, n))
    raw = dijkstra(mat, indices=source)
    d = np.full(n, INFINITE_DISTANCE, np.int64)
    fin = np.isfinite(raw)
    d[fin] = np.round(raw[fin]).astype(np.int64)
    p = np.full(n, -1, np.int64)
    for v in range(n):
        if v == source or d[v] == INFINITE_DISTANCE:
            continue
        tight = [u for u, x, c in zip(src.tolist(), dst.tolist(), w.tolist())
                 if x == v and d[u] != INFINITE_DISTANCE and d[u] + c == d[v]]
        p[v] = min(tight)
    return d, p.astype(np.int32)


def walk_invalidation(parents, roots):
    """Plain colour walk: flagged[v] iff the parent chain from v reaches a root before -1;
    cycle iff some chain never ends (a cycle without a root)."""
    n = len(parents)
    flagged = np.zeros(n, bool)
    cycle = False
    for v in range(n):
        x, steps = v, 0
        while True:
            if roots[x]:
                flagged[v] = True
                break
            x = int(parents[x])
            steps += 1
            if x < 0:
                break
            if steps > n:
                cycle = True
                break
    return flagged, cycle


def key_of(d, p):
    """Key order of algorithm.md §2: (distance, parent), parent -1 larger than every id."""
    return (d, INT32_MAX + 1 if p < 0 else p)


# ------------------------------------------------------------------------------------------------
# small building blocks
# ------------------------------------------------------------------------------------------------


def test_gather_rows_matches_python_loop():
    ptr = np.array([0, 3, 3, 4, 8, 8], dtype=np.int32)
    rows = np.array([3, 0, 1, 3, 4, 2])
    pos, lens = host_steps.gather_rows(ptr, rows)
    expected = [e for r in rows for e in range(ptr[r], ptr[r + 1])]
    assert pos.tolist() == expected
    assert lens.tolist() == [int(ptr[r + 1] - ptr[r]) for r in rows]
    pos, lens = host_steps.gather_rows(ptr, np.array([1, 4]))
    assert pos.size == 0 and lens.tolist() == [0, 0]


def test_unique_ids_keeps_each_id_once(rng):
    scratch = np.empty(50, np.int64)
    for _ in range(20):
        ids = rng.integers(0, 50, int(rng.integers(0, 80)))
        out = host_steps.unique_ids(ids, scratch)
        assert sorted(out.tolist()) == sorted(set(ids.tolist()))


@pytest.mark.parametrize("n,r", [(1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (1024, 10), (1025, 11)])
def test_ceil_log2(n, r):
    assert plan.ceil_log2(n) == r


def test_pointer_jumping_rounds_is_every_engines_limit():
    """R + 1 rounds, R = ceil(log2 n): the one limit the host, fused and operators engines use."""
    assert [plan.pointer_jumping_rounds(n) for n in (1, 2, 3, 4, 5, 8, 9)] == [1, 2, 3, 3, 4, 4, 5]
    for n in (1000, 1 << 20, (1 << 20) + 1, 1971281, 2**21, 2**21 + 1):
        assert plan.pointer_jumping_rounds(n) == math.ceil(math.log2(n)) + 1


@pytest.mark.parametrize("delta", [1, 7, plan.DEVICE_DELTA_CLAMP, plan.DEVICE_DELTA_CLAMP + 1, 1 << 63])
def test_device_delta_is_clamped(delta):
    run = plan.Plan(0, 0, 3, 1, delta, decide_packing(1, 3))
    assert run.device_delta == min(delta, 1 << 62)


def test_words_round_trip_packed_and_distance_only(rng):
    n = 40
    d = rng.integers(0, 1000, n).astype(np.int64)
    p = rng.integers(-1, n, n).astype(np.int32)
    d[::7] = INFINITE_DISTANCE
    p[::7] = -1
    packed = decide_packing(1000, n)
    words = host_steps.words_from_tree(d, p, packed)
    assert np.array_equal(words, pack(d, p, packed))
    d2, p2 = unpack(words, packed)
    assert np.array_equal(host_steps.word_distances(words, packed), d2)
    assert np.array_equal(host_steps.word_parents(words, packed, np.int32), p2)
    dist_only = Packing(packed=False, bits=0, bound=10**6)
    words = host_steps.words_from_tree(d, p, dist_only)
    assert np.array_equal(words[d < INF_HALF], d[d < INF_HALF].astype(np.uint64))
    assert np.all(words[d >= INF_HALF] == np.uint64(INF_WORD))
    assert np.array_equal(host_steps.word_distances(words, dist_only), d)


# ------------------------------------------------------------------------------------------------
# pointer jumping (algorithm.md §5.5): flagged set and parent_cycle against a colour walk
# ------------------------------------------------------------------------------------------------


@settings(max_examples=150)
@given(st.data())
def test_invalidate_subtrees_matches_colour_walk(data):
    n = data.draw(st.integers(1, 40))
    parents = np.array(data.draw(st.lists(st.integers(-1, n - 1), min_size=n, max_size=n)), dtype=np.int32)
    roots = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if data.draw(st.booleans()):
        roots[:] = False
        roots[data.draw(st.integers(0, n - 1))] = True
    flagged, cycle = host_steps.invalidate_subtrees(parents, roots)
    exp_flagged, exp_cycle = walk_invalidation(parents, roots)
    assert cycle == exp_cycle
    if not cycle:
        assert np.array_equal(flagged, exp_flagged)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 16, 17, 1000, 1025])
def test_longest_chain_is_no_cycle(n):
    """A path of n vertices (the worst case for the round count) ending at -1 or a root."""
    parents = np.arange(-1, n - 1, dtype=np.int32)  # v -> v - 1, 0 -> -1
    flagged, cycle = host_steps.invalidate_subtrees(parents, np.zeros(n, bool))
    assert not cycle and not flagged.any()
    roots = np.zeros(n, bool)
    roots[0] = True
    flagged, cycle = host_steps.invalidate_subtrees(parents, roots)
    assert not cycle and flagged.all()
    # the same path closed into a cycle through the root: flagged, no error
    parents[0] = n - 1
    flagged, cycle = host_steps.invalidate_subtrees(parents, roots)
    assert not cycle and flagged.all()
    # ... and without a root on it: a cycle
    flagged, cycle = host_steps.invalidate_subtrees(parents, np.zeros(n, bool))
    assert cycle


def test_self_parent_is_a_cycle_even_at_n_1():
    flagged, cycle = host_steps.invalidate_subtrees(np.array([0], np.int32), np.zeros(1, bool))
    assert cycle
    flagged, cycle = host_steps.invalidate_subtrees(np.array([0], np.int32), np.ones(1, bool))
    assert not cycle and flagged.all()


# ------------------------------------------------------------------------------------------------
# pull, push, recovery against plain Python
# ------------------------------------------------------------------------------------------------


def python_pull(words, cands, src, dst, w, packing):
    words = words.copy()
    base = words.copy()  # every pull reads the post-invalidation state
    lowered = []
    b = packing.bits
    for v in cands:
        best = int(base[v])
        for u, x, c in zip(src, dst, w):
            if x != v or base[u] == INF_WORD:
                continue
            nd = (int(base[u]) >> b) + c
            if nd > packing.bound:
                continue
            best = min(best, (nd << b) | u if packing.packed else nd)
        if best < int(base[v]):
            words[v] = best
            if (best >> b) < (int(base[v]) >> b):
                lowered.append(v)
    return words, sorted(lowered)


def python_push(words, near, src, dst, w, source, packing):
    words = words.copy()
    before = words.copy()
    b = packing.bits
    for u in near:
        if before[u] == INF_WORD:
            continue
        du = int(before[u]) >> b
        for uu, x, c in zip(src, dst, w):
            if uu != u or x == source:
                continue
            nd = du + c
            if nd > packing.bound:
                continue
            offer = (nd << b) | u if packing.packed else nd
            words[x] = min(int(words[x]), offer)
    lowered = [v for v in range(len(words)) if (int(words[v]) >> b) < (int(before[v]) >> b)]
    return words, lowered


def random_words(rng, n, packing, finite=0.6, dmax=60):
    d = rng.integers(0, dmax, n).astype(np.int64)
    p = rng.integers(-1, n, n).astype(np.int32)
    d[rng.random(n) > finite] = INFINITE_DISTANCE
    return host_steps.words_from_tree(d, p, packing)


@pytest.mark.parametrize("packed", [True, False])
def test_pull_and_push_match_python(rng, packed):
    for trial in range(30):
        n = int(rng.integers(2, 25))
        g = random_graph(rng, n, int(rng.integers(0, 4 * n)), int(rng.choice([2, 5, 30])))
        bound = int(rng.choice([20, 40, 10**6]))  # small bounds make dropped offers likely
        packing = Packing(True, parent_bits(n), bound) if packed else Packing(False, 0, bound)
        words = random_words(rng, n, packing)
        src, dst, w = (a.tolist() for a in edge_list(g))
        ie = g.in_edges(0)
        cands = np.flatnonzero(rng.random(n) < 0.5)
        got = words.copy()
        lowered = host_steps.pull(got, cands, ie.ptr, ie.src, ie.weight, packing)
        exp_words, exp_lowered = python_pull(words, cands.tolist(), src, dst, w, packing)
        assert np.array_equal(got, exp_words), trial
        assert sorted(lowered.tolist()) == exp_lowered

        source = int(rng.integers(0, n))
        near = np.flatnonzero(rng.random(n) < 0.5)
        got = words.copy()
        lowered = host_steps.push(got, near, g.row_ptr, g.col_ind, g.weight_column(0), source, packing,
                                  np.empty(n, np.int64))
        exp_words, exp_lowered = python_push(words, near.tolist(), src, dst, w, source, packing)
        assert np.array_equal(got, exp_words), trial
        assert sorted(lowered.tolist()) == exp_lowered


def test_parent_only_win_changes_word_but_does_not_requeue():
    # 0 -> 2 (w 5), 1 -> 2 (w 5); vertex 2 holds (6, parent 1) from an old tree; 0 offers (6, 0).
    g = engines.Graph.from_edges([0, 1], [2, 2], [6, 5], num_vertices=3)
    packing = Packing(True, parent_bits(3), 100)
    d = np.array([0, 1, 6], np.int64)
    p = np.array([-1, 0, 1], np.int32)
    words = host_steps.words_from_tree(d, p, packing)
    lowered = host_steps.push(words, np.array([0]), g.row_ptr, g.col_ind, g.weight_column(0), 0, packing,
                              np.empty(3, np.int64))
    assert lowered.size == 0
    assert host_steps.word_parents(words, packing, np.int32).tolist() == [-1, 0, 0]
    words = host_steps.words_from_tree(d, p, packing)
    ie = g.in_edges(0)
    lowered = host_steps.pull(words, np.array([2]), ie.ptr, ie.src, ie.weight, packing)
    assert lowered.size == 0
    assert host_steps.word_parents(words, packing, np.int32).tolist() == [-1, 0, 0]


def test_recover_parents_matches_python(rng):
    vmax = np.iinfo(np.int32).max
    for _ in range(30):
        n = int(rng.integers(1, 25))
        g = random_graph(rng, n, int(rng.integers(0, 4 * n)), 4)
        d = rng.integers(0, 8, n).astype(np.int64)
        d[rng.random(n) < 0.2] = INFINITE_DISTANCE
        source = int(rng.integers(0, n))
        ie = g.in_edges(0)
        got = host_steps.recover_parents(d, ie.ptr, ie.src, ie.weight, source, np.int32)
        src, dst, w = (a.tolist() for a in edge_list(g))
        for x in range(n):
            if x == source or d[x] >= INF_HALF:
                assert got[x] == -1
                continue
            tight = [u for u, v, c in zip(src, dst, w) if v == x and d[u] < INF_HALF and d[u] + c == d[x]]
            assert got[x] == (min(tight) if tight else vmax)


# ------------------------------------------------------------------------------------------------
# propagation: the two schedules give the same words from any start state
# ------------------------------------------------------------------------------------------------


@needs_numba
@pytest.mark.parametrize("packed", [True, False])
def test_near_far_and_heap_reach_the_same_words(rng, packed):
    for trial in range(40):
        n = int(rng.integers(1, 60))
        g = random_graph(rng, n, int(rng.integers(0, 5 * n)), int(rng.choice([1, 3, 100])))
        bound = int(rng.choice([50, 300, 10**9]))
        packing = Packing(True, parent_bits(n), bound) if packed else Packing(False, 0, bound)
        words = random_words(rng, n, packing, dmax=200)
        frontier = np.flatnonzero((rng.random(n) < 0.3) & (words != np.uint64(INF_WORD)))
        source = int(rng.integers(0, n))
        a, b = words.copy(), words.copy()
        propagate_near_far(a, frontier, g.row_ptr, g.col_ind, g.weight_column(0), source, packing,
                           int(rng.integers(1, 300)))
        propagate_heap(b, frontier, g.row_ptr, g.col_ind, g.weight_column(0), source, packing)
        assert np.array_equal(a, b), trial


def test_propagation_switch_rejects_unknown_value(monkeypatch):
    g = engines.Graph.from_edges([0], [1], [1])
    monkeypatch.setattr(host, "PROPAGATION", "fast")
    with pytest.raises(errors.InvalidArgumentError, match="PROPAGATION"):
        host.compute(g, compute_plan(g, 0))


# ------------------------------------------------------------------------------------------------
# the engine end to end
# ------------------------------------------------------------------------------------------------

MODES = ["numpy", pytest.param("numba", marks=needs_numba)]


@pytest.mark.parametrize("mode", MODES)
def test_compute_is_the_canonical_dijkstra_tree(rng, monkeypatch, mode):
    monkeypatch.setattr(host, "PROPAGATION", mode)
    for trial in range(25):
        n = int(rng.integers(1, 40))
        g = random_graph(rng, n, int(rng.integers(0, 4 * n)), int(rng.choice([2, 100, INT32_MAX])), K=2)
        source = int(rng.integers(0, n))
        k = int(rng.integers(0, 2))
        d, p, report = host.compute(g, compute_plan(g, source, k))
        exp_d, exp_p = scipy_tree(g, source, k)
        assert d.dtype == np.int64 and p.dtype == np.int32
        assert np.array_equal(d, exp_d) and np.array_equal(p, exp_p), trial
        assert (report.engine_used, report.invalidated, report.affected) == ("host", 0, 0)
        assert (report.host_syncs, report.sync_budget) == (0, 0)


def random_batch(rng, graph, parents, wmax, K=1):
    n = graph.num_vertices
    src, dst, _ = edge_list(graph)
    tree = np.flatnonzero(parents >= 0)
    nd = int(rng.integers(0, 8))
    pick = rng.integers(0, src.size, nd) if src.size else np.zeros(0, np.int64)
    del_src = np.concatenate([src[pick], parents[tree[:2]].astype(np.int64), rng.integers(0, n + 2, 1)])
    del_dst = np.concatenate([dst[pick], tree[:2], rng.integers(0, n + 2, 1)])
    ni = int(rng.integers(0, 8))
    ins_src = np.concatenate([rng.integers(0, n + 2, ni), src[pick[:1]]])
    ins_dst = np.concatenate([rng.integers(0, n + 2, ni), dst[pick[:1]]])
    ins_w = rng.integers(1, wmax + 1, (ins_src.size, K))
    return engines.Batch(ins_src, ins_dst, ins_w, del_src, del_dst)


@pytest.mark.parametrize("mode", MODES)
def test_update_from_canonical_tree_equals_compute(rng, monkeypatch, mode):
    monkeypatch.setattr(host, "PROPAGATION", mode)
    for trial in range(25):
        n = int(rng.integers(1, 40))
        wmax = int(rng.choice([2, 100, INT32_MAX]))
        g = random_graph(rng, n, int(rng.integers(0, 4 * n)), wmax)
        source = int(rng.integers(0, n))
        d, p, _ = host.compute(g, compute_plan(g, source))
        for step in range(3):
            plan, changes = apply_with_plan(g, random_batch(rng, g, p, wmax), source)
            d_in, p_in = grow(d, p, g.num_vertices)
            d, p = d_in.copy(), p_in.copy()
            report = host.update(g, d, p, plan, changes)
            exp_d, exp_p, _ = host.compute(g, compute_plan(g, source))
            assert np.array_equal(d, exp_d) and np.array_equal(p, exp_p), (trial, step)
            assert report.affected == int(np.sum((d != d_in) | (p != p_in)))
            roots = np.zeros(g.num_vertices, bool)
            hit = p_in[changes.changed_to] == changes.changed_from
            roots[changes.changed_to[hit]] = True
            assert report.invalidated == int(walk_invalidation(p_in, roots)[0].sum())


@pytest.mark.parametrize("mode", MODES)
def test_int64_offsets_give_the_same_bytes(rng, monkeypatch, mode):
    monkeypatch.setattr(host, "PROPAGATION", mode)
    for _ in range(10):
        n = int(rng.integers(2, 40))
        m = int(rng.integers(0, 4 * n))
        src, dst, w = rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(1, 50, m)
        narrow = engines.Graph.from_edges(src, dst, w, num_vertices=n)
        wide = engines.Graph.from_edges(src, dst, w, num_vertices=n, offset_dtype=np.int64)
        assert wide.row_ptr.dtype == np.int64
        d32, p32, _ = host.compute(narrow, compute_plan(narrow, 0))
        d64, p64, _ = host.compute(wide, compute_plan(wide, 0))
        assert np.array_equal(d32, d64) and np.array_equal(p32, p64)
        batch = random_batch(rng, narrow, p32, 50)
        outs = []
        for g, d, p in ((narrow, d32, p32), (wide, d64, p64)):
            plan, changes = apply_with_plan(g, batch, 0)
            d, p = grow(d, p, g.num_vertices)
            report = host.update(g, d, p, plan, changes)
            outs.append((d, p, report.invalidated, report.affected))
        assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])
        assert outs[0][2:] == outs[1][2:]


def test_distance_only_update_recovers_canonical_parents(rng):
    """n = 65538 with W = 2^31 - 1 does not pack (algorithm.md §4.3); a perturbed tie parent comes
    out canonical."""
    n = 65538
    m = 3 * n
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    w = rng.integers(1, 3, m)
    w[:3] = INT32_MAX
    g = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    plan = compute_plan(g, 0)
    assert not plan.packed
    d, p, _ = host.compute(g, plan)
    exp_d = scipy_distances(g, 0)
    assert np.array_equal(d, exp_d)
    # canonical: lowest-id tight in-neighbour everywhere
    e_src, e_dst, e_w = edge_list(g)
    tight = (d[e_src] < INF_HALF) & (d[e_src] + e_w == d[e_dst]) & (e_dst != 0)
    canon = np.full(n, INT32_MAX, np.int64)
    np.minimum.at(canon, e_dst[tight], e_src[tight])
    canon[(d >= INF_HALF)] = -1
    canon[0] = -1
    assert np.array_equal(p, canon.astype(np.int32))
    # perturb: the highest-id tight parent where there is a choice
    high = np.full(n, -1, np.int64)
    np.maximum.at(high, e_dst[tight], e_src[tight])
    tie = np.flatnonzero((high >= 0) & (high != canon))
    assert tie.size > 0
    p_pert = p.copy()
    p_pert[tie] = high[tie]
    batch = engines.Batch([n - 1], [n - 2], [[1]], [], [])
    plan, changes = apply_with_plan(g, batch, 0)
    d2, p2 = d.copy(), p_pert.copy()
    report = host.update(g, d2, p2, plan, changes)
    exp_d2, exp_p2, _ = host.compute(g, compute_plan(g, 0))
    assert np.array_equal(d2, exp_d2) and np.array_equal(p2, exp_p2)
    assert report.affected == int(np.sum((d2 != d) | (p2 != p_pert)))


def scipy_distances(graph, source):
    """SciPy Dijkstra on the weight-min simple graph (vectorized, for large graphs)."""
    n = graph.num_vertices
    src, dst, w = edge_list(graph)
    order = np.lexsort((w, dst, src))
    src, dst, w = src[order], dst[order], w[order]
    first = np.ones(src.size, bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    mat = csr_matrix((w[first].astype(float), (src[first], dst[first])), shape=(n, n))
    raw = dijkstra(mat, indices=source)
    d = np.full(n, INFINITE_DISTANCE, np.int64)
    fin = np.isfinite(raw)
    d[fin] = np.round(raw[fin]).astype(np.int64)
    return d


# ------------------------------------------------------------------------------------------------
# post-commit errors: raised before the arrays change, invalid_input first
# ------------------------------------------------------------------------------------------------


def error_setup():
    # 0 -> 1 -> 2 -> 3, weights 1; tree (0, 1, 2, 3) with parents (-1, 0, 1, 2)
    g = engines.Graph.from_edges([0, 1, 2], [1, 2, 3], [1, 1, 1], num_vertices=4)
    d = np.array([0, 1, 2, 3], np.int64)
    p = np.array([-1, 0, 1, 2], np.int32)
    return g, d, p


def run_update(g, d, p, changed_from, changed_to, heads=()):
    plan = compute_plan(g, 0)
    changes = ChangeLists(np.array(changed_from, np.int32), np.array(changed_to, np.int32), np.array(heads, np.int32))
    return host.update(g, d, p, plan, changes)


@pytest.mark.parametrize("bad", [-1, 4, INF_HALF - 1])
def test_invalid_input_raises_before_any_change(bad):
    g, d, p = error_setup()  # bound = 1 * 3
    d[2] = bad
    before = (d.copy(), p.copy())
    with pytest.raises(errors.InvalidArgumentError) as info:
        run_update(g, d, p, [], [], [3])
    assert info.value.reason == "invalid_input"
    assert np.array_equal(d, before[0]) and np.array_equal(p, before[1])


def test_parent_cycle_and_precedence():
    g, d, p = error_setup()
    p[2], p[3] = 3, 2  # rootless cycle 2 <-> 3
    before = (d.copy(), p.copy())
    with pytest.raises(errors.InvalidArgumentError) as info:
        run_update(g, d, p, [0], [1])
    assert info.value.reason == "parent_cycle"
    assert np.array_equal(d, before[0]) and np.array_equal(p, before[1])
    # an empty changed list runs no cycle check
    run_update(g, d.copy(), p.copy(), [], [], [3])
    # invalid_input wins over the cycle
    d[1] = -5
    with pytest.raises(errors.InvalidArgumentError) as info:
        run_update(g, d, p, [0], [1])
    assert info.value.reason == "invalid_input"


def test_cycle_through_a_root_is_invalidated_not_an_error():
    g, d, p = error_setup()
    p[2], p[3] = 3, 2
    report = run_update(g, d, p, [3], [2])  # P_in[2] == 3: vertex 2 is a root on the cycle
    assert report.invalidated == 2
    assert d.tolist() == [0, 1, 2, 3] and p.tolist() == [-1, 0, 1, 2]


# ------------------------------------------------------------------------------------------------
# performance at scale (algorithm.md §7.2): a 2-million-vertex road-like grid
# ------------------------------------------------------------------------------------------------


def road_like_grid(rng, side, keep=0.7):
    ids = np.arange(side * side).reshape(side, side)
    e = np.concatenate([np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], 1),
                        np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()], 1)])
    e = e[rng.random(len(e)) < keep]
    w = rng.integers(1, 101, (len(e), 3))
    return engines.Graph.from_edges(e[:, 0], e[:, 1], w, num_vertices=side * side, symmetrize=True)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_two_million_vertex_grid_within_a_minute(monkeypatch, mode):
    monkeypatch.setattr(host, "PROPAGATION", mode)
    rng = np.random.default_rng(1414)
    g = road_like_grid(rng, 1414)
    t0 = time.perf_counter()
    d, p, _ = host.compute(g, compute_plan(g, 0))
    assert time.perf_counter() - t0 < 60
    src = g.edge_sources()
    pick = rng.choice(g.num_edges, 25_000, replace=False)
    n = g.num_vertices
    batch = engines.Batch(rng.integers(0, n, 25_000), rng.integers(0, n, 25_000), rng.integers(1, 101, (25_000, 3)),
                          src[pick], g.col_ind[pick])
    plan, changes = apply_with_plan(g, batch, 0)
    t0 = time.perf_counter()
    host.update(g, d, p, plan, changes)
    assert time.perf_counter() - t0 < 60
    exp_d, exp_p, _ = host.compute(g, compute_plan(g, 0))
    assert np.array_equal(d, exp_d) and np.array_equal(p, exp_p)


def _time_two_million_vertex_grid() -> None:  # pragma: no cover - a measurement, not a test
    """``python -m tests.engines.test_host_parts``: timings of compute() and a 50K update per path."""
    rng = np.random.default_rng(1414)
    g0 = road_like_grid(rng, 1414)
    src = g0.edge_sources()
    pick = rng.choice(g0.num_edges, 25_000, replace=False)
    n = g0.num_vertices
    batch = engines.Batch(rng.integers(0, n, 25_000), rng.integers(0, n, 25_000), rng.integers(1, 101, (25_000, 3)),
                          src[pick], g0.col_ind[pick])
    print(f"graph: n={n} m={g0.num_edges} (avg out-degree {g0.num_edges / n:.2f}), batch 25K ins + 25K del")
    for mode in ("numpy", "numba"):
        host.PROPAGATION = mode
        g = g0.copy()
        host.compute(engines.Graph.from_edges([0], [1], [1]), compute_plan(engines.Graph.from_edges([0], [1], [1]), 0))
        t0 = time.perf_counter()
        d, p, rep = host.compute(g, compute_plan(g, 0))
        t_compute = time.perf_counter() - t0
        plan, changes = apply_with_plan(g, batch, 0)
        g.in_edges(0)  # built by the dispatch's upload in real runs; timed separately
        t0 = time.perf_counter()
        rep = host.update(g, d, p, plan, changes)
        t_update = time.perf_counter() - t0
        print(f"{mode}: compute {t_compute:.2f} s, update {t_update:.2f} s "
              f"(invalidated {rep.invalidated}, affected {rep.affected}, iterations {rep.iterations}, "
              f"epochs {rep.epochs})")


if __name__ == "__main__":  # pragma: no cover
    _time_two_million_vertex_grid()
