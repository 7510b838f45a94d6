"""``engines.graph.host_apply`` against two oracles (tests/engines/graph/apply_oracle.py): the per-row list
oracle of docs/algorithm.md §3.3 for both sides, the summary, ``weight_increased`` and the scalars;
the previous sorting apply for the out side. Every array is compared byte for byte (values and
dtype), since the device applier is held to the same bytes."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from bench import generators
from engines.graph.host_apply import HostCsr, WeightScalars, apply_host, canonical_in_csr, scalars_of
from engines.batch import Batch, batch_events
from engines.errors import InvalidArgumentError

from .apply_oracle import ListGraph, list_apply, sorted_apply

BIG = (1 << 31) - 1


# -- helpers -------------------------------------------------------------------------------------

def same(a, b, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert np.array_equal(a, b), f"{what}: {a.tolist()} != {b.tolist()}"


def csr_from_edges(n, edges, k, ptr_dtype=np.int64):
    """A fresh state from ``(u, v, weights)`` in row order, with the canonical in-CSR."""
    row_ptr, col, w = generators.csr_from_edges(  # keeps the given order inside a row
        n, np.array([e[0] for e in edges], dtype=np.int64), np.array([e[1] for e in edges], dtype=np.int64),
        np.array([list(e[2]) for e in edges], dtype=np.int64).reshape(len(edges), k), col_dtype=np.int32)
    w = np.ascontiguousarray(w.T, dtype=np.int32)
    in_ptr, in_src, in_w = canonical_in_csr(row_ptr, col, w, n)
    return HostCsr(row_ptr.astype(ptr_dtype), col, w, in_ptr.astype(ptr_dtype), in_src, in_w)


def batch_of(ins, dels, k):
    """``ins`` = [(u, v, weights)], ``dels`` = [(u, v)]."""
    return Batch([e[0] for e in ins], [e[1] for e in ins],
                 np.array([list(e[2]) for e in ins], dtype=np.int64).reshape(len(ins), k),
                 [d[0] for d in dels], [d[1] for d in dels])


def snapshot(csr):
    return [np.array(a, copy=True) for a in (csr.row_ptr, csr.col_ind, csr.weights, csr.in_ptr,
                                              csr.in_src, csr.in_weights)]


def assert_transpose(csr):
    """The in side is the transpose of the out side: per destination, the same multiset of
    (source, weights), and the same offsets."""
    n = csr.row_ptr.shape[0] - 1
    k = csr.weights.shape[0]
    expect = [collections.Counter() for _ in range(n)]
    for u in range(n):
        for e in range(csr.row_ptr[u], csr.row_ptr[u + 1]):
            expect[int(csr.col_ind[e])][(u, tuple(int(csr.weights[c, e]) for c in range(k)))] += 1
    for v in range(n):
        got = collections.Counter(
            (int(csr.in_src[i]), tuple(int(csr.in_weights[c, i]) for c in range(k)))
            for i in range(csr.in_ptr[v], csr.in_ptr[v + 1]))
        assert got == expect[v], f"in-row {v}"


def note_coverage(lg: ListGraph, batch: Batch, summary, new_lg: ListGraph):
    """Label what an example exercised (``pytest --hypothesis-show-statistics``), so that a
    strategy that stops producing a case is noticed."""
    pairs = [(u, v) for u in range(lg.n) for v, _ in lg.out[u]]
    ins = list(zip(batch.insert_src.tolist(), batch.insert_dst.tolist()))
    dels = set(zip(batch.delete_src.tolist(), batch.delete_dst.tolist()))
    labels = {
        "parallel copies": len(pairs) != len(set(pairs)),
        "self-loop": any(u == v for u, v in pairs + ins),
        "missing deletion": summary.ignored_deletions > 0,
        "filtered deletion": any(max(u, v) >= summary.num_vertices_after for u, v in dels),
        "delete then reinsert": any(p in dels for p in ins),
        "several upserts of a pair": len(ins) != len(set(ins)),
        "growth": summary.inserted_vertices > 0,
        "empty batch": len(batch) == 0,
        "empty graph": lg.n == 0,
        "row became empty": any(lg.out[u] and not new_lg.out[u] for u in range(lg.n)),
    }
    if not currently_in_test_context():
        return
    for name, hit in labels.items():
        if hit:
            event(name)


def check_step(csr, scalars, lg: ListGraph, batch: Batch, k: int):
    """Apply one batch with apply_host and both oracles; compare everything; return the new
    state, scalars and list graph."""
    before = snapshot(csr)
    n_old = csr.row_ptr.shape[0] - 1
    events = batch_events(batch, n_old, k)
    new, summary, wi, new_scalars = apply_host(csr, events, scalars)
    for a, b in zip(before, snapshot(csr)):
        same(a, b, "input modified")

    ref = list_apply(lg, batch.insert_src, batch.insert_dst, batch.insert_weights,
                     batch.delete_src, batch.delete_dst)
    optr, ocol, ow = ref.graph.arrays("out")
    iptr, isrc, iw = ref.graph.arrays("in")
    same(new.row_ptr, optr, "row_ptr")
    same(new.col_ind, ocol, "col_ind")
    same(new.weights, ow, "weights")
    same(new.in_ptr, iptr, "in_ptr")
    same(new.in_src, isrc, "in_src")
    same(new.in_weights, iw, "in_weights")
    assert new.weights.flags.c_contiguous and new.in_weights.flags.c_contiguous
    assert summary.__dict__ == ref.summary
    same(wi, ref.weight_increased, "weight_increased")
    assert new_scalars == WeightScalars(ref.max_weight, ref.weight_sum)
    assert new_scalars == scalars_of(new.weights)
    assert all(type(x) is int for x in new_scalars.max_weight + new_scalars.weight_sum)
    for a in (new.row_ptr, new.col_ind, new.weights, new.in_ptr, new.in_src, new.in_weights, wi):
        assert not a.flags.writeable

    # Second oracle for the out side: the previous sorting apply.
    old_csr, old_summary, old_delta = sorted_apply(np.asarray(csr.row_ptr), csr.col_ind, csr.weights,
                                                   batch, events.n_after)
    same(new.row_ptr, old_csr.row_ptr, "row_ptr vs sorted_apply")
    same(new.col_ind, old_csr.col_ind, "col_ind vs sorted_apply")
    same(new.weights, old_csr.weights, "weights vs sorted_apply")
    assert summary == old_summary
    same(wi, old_delta.weight_increased, "weight_increased vs sorted_apply")
    delta = events.host_delta(wi)
    same(delta.delete_src, old_delta.delete_src, "delete_src")
    same(delta.delete_dst, old_delta.delete_dst, "delete_dst")

    assert_transpose(new)
    note_coverage(lg, batch, summary, ref.graph)
    return new, new_scalars, ref.graph


# -- hypothesis strategies -----------------------------------------------------------------------

weights_st = st.one_of(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.just(BIG),
                       st.integers(1, BIG))


@st.composite
def graphs(draw):
    """Small n, so that parallel copies, self-loops and rows becoming empty are common."""
    k = draw(st.sampled_from([1, 2, 3]))
    n = draw(st.integers(0, 7))
    edges = []
    if n:
        edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                        st.lists(weights_st, min_size=k, max_size=k)), max_size=16))
    return n, edges, k


@st.composite
def batches(draw, lg: ListGraph, k: int):
    """Deletions and insertions drawn from one small pool of pairs (existing pairs, self-loops,
    absent pairs, pairs naming ids up to n + 3) so that delete-then-reinsert, several upserts of
    a pair, missing deletions, filtered deletions and growth all happen often."""
    n = lg.n
    existing = [(u, v) for u in range(n) for v, _ in lg.out[u]]
    hi = n + 3
    fresh = st.tuples(st.integers(0, hi - 1), st.integers(0, hi - 1))
    pool = draw(st.lists(st.one_of(st.sampled_from(existing), fresh) if existing else fresh,
                         min_size=1, max_size=6))
    pair = st.sampled_from(pool)
    dels = draw(st.lists(pair, max_size=8))
    ins_pairs = draw(st.lists(pair, max_size=8))
    # insertions may only grow n by a little (ids up to n + 2); deletions may name more
    ins_pairs = [(min(u, n + 1), min(v, n + 1)) for u, v in ins_pairs]
    ins = [(u, v, draw(st.lists(weights_st, min_size=k, max_size=k))) for u, v in ins_pairs]
    return batch_of(ins, dels, k)


# -- tests ---------------------------------------------------------------------------------------

@settings(deadline=None, max_examples=150)
@given(st.data())
@pytest.mark.slow
def test_chains_against_both_oracles(data):
    n, edges, k = data.draw(graphs())
    ptr_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    csr = csr_from_edges(n, edges, k, ptr_dtype)
    lg = ListGraph.from_csr(csr.row_ptr, csr.col_ind, csr.weights)
    same(lg.arrays("in")[1], csr.in_src, "canonical in_src")
    scalars = scalars_of(csr.weights)
    for _ in range(data.draw(st.integers(3, 5))):
        batch = data.draw(batches(lg, k))
        csr, scalars, lg = check_step(csr, scalars, lg, batch, k)


@settings(deadline=None, max_examples=60)
@given(graphs())
def test_canonical_in_csr_matches_stable_argsort(g):
    n, edges, k = g
    csr = csr_from_edges(n, edges, k)
    order = np.argsort(csr.col_ind, kind="stable")
    edge_src = np.repeat(np.arange(n, dtype=np.int32), np.diff(csr.row_ptr))
    ptr = generators.row_ptr_of(csr.col_ind, n)
    in_ptr, in_src, in_w = canonical_in_csr(csr.row_ptr.astype(np.int32), csr.col_ind, csr.weights, n)
    same(in_ptr, ptr, "in_ptr")
    same(in_src, edge_src[order], "in_src")
    same(in_w, csr.weights[:, order], "in_weights")


def test_canonical_in_csr_larger_graph():
    rng = np.random.default_rng(7)
    n, m, k = 3000, 20000, 3
    src = np.sort(rng.integers(0, n, m))
    row_ptr = generators.row_ptr_of(src, n)
    col = rng.integers(0, n, m).astype(np.int32)
    w = rng.integers(1, 100, (k, m)).astype(np.int32)
    order = np.argsort(col, kind="stable")
    in_ptr, in_src, in_w = canonical_in_csr(row_ptr, col, w, n)
    same(in_src, src.astype(np.int32)[order], "in_src")
    same(in_w, w[:, order], "in_weights")
    same(in_ptr[1:] - in_ptr[:-1], np.bincount(col, minlength=n).astype(np.int64), "in-degrees")


def test_by_hand_every_rule():
    #  row 0: (0,1) w(10,11), (0,2) w(20,21), (0,1) w(30,31); row 1: (1,2) w(5,6); row 2: (2,2) w(7,8)
    csr = csr_from_edges(3, [(0, 1, (10, 11)), (0, 2, (20, 21)), (0, 1, (30, 31)), (1, 2, (5, 6)),
                             (2, 2, (7, 8))], 2)
    same(csr.in_ptr, np.array([0, 0, 2, 5]), "in_ptr")
    same(csr.in_src, np.array([0, 0, 0, 1, 2], np.int32), "in_src")
    # delete (0,1) twice: the first and third entry; delete (1,2) and a missing (2,0); (9,0) is
    # beyond n_after and filtered. Insert (0,1) twice (append, then update the appended entry),
    # upsert (0,2) to a smaller value, insert (3,0) growing n, and (1,1) a self-loop.
    batch = batch_of([(0, 1, (1, 1)), (0, 2, (2, 50)), (3, 0, (4, 4)), (0, 1, (40, 3)), (1, 1, (9, 9))],
                     [(0, 1), (9, 0), (1, 2), (0, 1), (2, 0)], 2)
    lg = ListGraph.from_csr(csr.row_ptr, csr.col_ind, csr.weights)
    new, scalars, _ = check_step(csr, scalars_of(csr.weights), lg, batch, 2)
    same(new.row_ptr, np.array([0, 2, 3, 4, 5]), "row_ptr")
    same(new.col_ind, np.array([2, 1, 1, 2, 0], np.int32), "col_ind")
    same(new.weights, np.array([[2, 40, 9, 7, 4], [50, 3, 9, 8, 4]], np.int32), "weights")
    same(new.in_ptr, np.array([0, 1, 3, 5, 5]), "in_ptr")
    same(new.in_src, np.array([3, 0, 1, 0, 2], np.int32), "in_src")
    events = batch_events(batch, 3, 2)
    _, summary, wi, _ = apply_host(csr, events, scalars_of(csr.weights))
    assert summary.__dict__ == dict(inserted_edges=3, updated_edges=2, deleted_edges=3,
                                    ignored_deletions=2, inserted_vertices=1, num_vertices_after=4)
    # (0,1): old first copy (10,11) vs final (40,3); (0,2): (20,21) vs (2,50); (3,0), (1,1): new
    same(wi, np.array([[True, False], [False, True], [False, False], [True, False], [False, False]]), "wi")
    # the maximum 30 of column 0 was deleted: rescan; column 1's max 31 too
    assert scalars == WeightScalars((40, 50), (62, 74))


def test_upsert_first_alive_copy_after_deleting_the_first():
    csr = csr_from_edges(2, [(0, 1, (5,)), (0, 1, (6,)), (0, 1, (7,))], 1)
    batch = batch_of([(0, 1, (9,)), (0, 1, (2,))], [(0, 1)], 1)
    lg = ListGraph.from_csr(csr.row_ptr, csr.col_ind, csr.weights)
    new, scalars, _ = check_step(csr, scalars_of(csr.weights), lg, batch, 1)
    same(new.weights, np.array([[2, 7]], np.int32), "weights")
    _, _, wi, _ = apply_host(csr, batch_events(batch, 2, 1), scalars_of(csr.weights))
    same(wi, np.array([[False], [False]]), "wi")  # first copy of G_t is 5, final 2
    assert scalars == WeightScalars((7,), (9,))


def test_empty_graph_and_empty_batch():
    for k in (1, 2, 3):
        csr = csr_from_edges(0, [], k)
        lg = ListGraph.from_csr(csr.row_ptr, csr.col_ind, csr.weights)
        scalars = scalars_of(csr.weights)
        assert scalars == WeightScalars((0,) * k, (0,) * k)
        csr2, scalars2, lg2 = check_step(csr, scalars, lg, Batch.empty(k), k)
        same(csr2.row_ptr, np.zeros(1, np.int64), "row_ptr")
        csr3, scalars3, _ = check_step(csr2, scalars2, lg2,
                                       batch_of([(2, 0, (3,) * k)], [(0, 0), (5, 5)], k), k)
        same(csr3.row_ptr, np.array([0, 0, 0, 1]), "row_ptr")
        assert scalars3 == WeightScalars((3,) * k, (3,) * k)


def test_batch_without_insertions_may_carry_another_k():
    csr = csr_from_edges(3, [(0, 1, (4, 5)), (1, 2, (6, 7))], 2)
    batch = Batch([], [], np.zeros((0, 5), np.int64), [0], [1])
    events = batch_events(batch, 3, 2)
    new, summary, wi, scalars = apply_host(csr, events, scalars_of(csr.weights))
    assert wi.shape == (0, 2) and wi.dtype == np.bool_
    assert summary.deleted_edges == 1
    assert scalars == WeightScalars((6, 7), (6, 7))


def test_rows_becoming_empty_and_all_edges_removed():
    csr = csr_from_edges(3, [(0, 1, (3,)), (1, 2, (3,)), (2, 0, (1,))], 1)
    lg = ListGraph.from_csr(csr.row_ptr, csr.col_ind, csr.weights)
    new, scalars, lg = check_step(csr, scalars_of(csr.weights), lg,
                                  batch_of([], [(0, 1), (1, 2), (2, 0), (2, 0)], 1), 1)
    assert new.col_ind.shape == (0,) and new.weights.shape == (1, 0) and new.in_weights.shape == (1, 0)
    assert scalars == WeightScalars((0,), (0,))


def test_rejects_mismatched_state():
    csr = csr_from_edges(3, [(0, 1, (3,))], 1)
    with pytest.raises(InvalidArgumentError):
        apply_host(csr, batch_events(Batch.empty(1), 4, 1), scalars_of(csr.weights))
    with pytest.raises(InvalidArgumentError):
        apply_host(csr, batch_events(Batch.empty(1), 3, 1), WeightScalars((3, 3), (3, 3)))


def test_larger_random_chain_against_sorted_apply():
    """Many touched rows among many untouched runs (the block-copy path), hub rows with many
    events, and insertions growing n; checked against the previous sorting apply and the
    transpose, and the final state against a fresh scalar scan."""
    rng = np.random.default_rng(11)
    n, m, k = 3000, 9000, 3
    src = np.sort(rng.integers(0, n, m))
    src[:300] = 5  # a hub row
    src = np.sort(src)
    row_ptr = generators.row_ptr_of(src, n)
    col = rng.integers(0, n, m).astype(np.int32)
    col[rng.integers(0, m, 500)] = 7  # a hub in-row
    w = rng.integers(1, 50, (k, m)).astype(np.int32)
    in_ptr, in_src, in_w = canonical_in_csr(row_ptr, col, w, n)
    csr = HostCsr(row_ptr, col, w, in_ptr, in_src, in_w)
    scalars = scalars_of(w)
    lg = ListGraph.from_csr(row_ptr, col, w)
    for step in range(3):
        cur_n = csr.row_ptr.shape[0] - 1
        esrc = np.repeat(np.arange(cur_n), np.diff(csr.row_ptr))
        pick = rng.integers(0, csr.col_ind.shape[0], 400)
        dels = [(int(esrc[e]), int(csr.col_ind[e])) for e in pick] + [(5, int(x)) for x in rng.integers(0, cur_n, 50)]
        ups = rng.integers(0, csr.col_ind.shape[0], 300)
        ins = [(int(esrc[e]), int(csr.col_ind[e]), tuple(int(x) for x in rng.integers(1, 60, k))) for e in ups]
        ins += [(int(u), int(v), tuple(int(x) for x in rng.integers(1, 60, k)))
                for u, v in rng.integers(0, cur_n + 20, (300, 2))]
        ins += [(7, int(x), (1, 2, 3)) for x in rng.integers(0, cur_n, 50)]
        rng.shuffle(ins)
        batch = batch_of(ins, dels, k)
        csr, scalars, lg = check_step(csr, scalars, lg, batch, k)


def test_two_sides_on_threads_give_the_same_bytes(monkeypatch):
    """Large graphs edit the in side on a helper thread; forcing that path on a small chain must
    change nothing (the sides share no state)."""
    import engines.graph.host_apply as AH

    csr0 = csr_from_edges(6, [(0, 1, (3, 4)), (0, 1, (5, 6)), (1, 2, (7, 8)), (2, 2, (1, 1)),
                              (5, 0, (2, 9))], 2)
    batches_ = [batch_of([(0, 1, (9, 9)), (6, 6, (1, 1)), (2, 0, (4, 4))], [(0, 1), (2, 2), (9, 9)], 2),
                batch_of([(2, 2, (5, 5)), (0, 1, (1, 1)), (0, 1, (2, 2))], [(0, 1), (0, 1), (5, 0)], 2),
                Batch.empty(2)]
    results = []
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(AH, "_THREAD_MIN_EDGES", threshold)
        csr, scalars, lg = csr0, scalars_of(csr0.weights), ListGraph.from_csr(csr0.row_ptr, csr0.col_ind, csr0.weights)
        for b in batches_:
            csr, scalars, lg = check_step(csr, scalars, lg, b, 2)
        results.append((snapshot(csr), scalars))
    for a, b in zip(results[0][0], results[1][0]):
        same(a, b, "threaded vs serial")
    assert results[0][1] == results[1][1]


@settings(max_examples=300, deadline=None)
@given(column=st.lists(st.integers(1, 6), max_size=40), old_max=st.integers(1, 7),
       new_max=st.integers(0, 8))
def test_max_after_removal_is_the_column_max(column, old_max, new_max):
    """The rescan shortcut of apply_host's scalars: every entry the batch did not write is at most
    the old maximum and every written one at most ``new_max`` (the kernel's contract); then the
    shortcut gives ``column.max()`` (0 for an empty column) whatever the case: a write reaching the
    old maximum, the old maximum still held somewhere, or gone (the full scan)."""
    from engines.graph.host_apply import _max_after_removal

    col = np.array([min(x, old_max) for x in column] + ([new_max] if new_max and column else []),
                   dtype=np.int32)
    expected = int(col.max()) if col.size else 0
    assert _max_after_removal(col, old_max, new_max if col.size else 0) == expected


def test_int32_offsets_when_they_fit(monkeypatch):
    """offset_dtype=int32 gives the default's offsets as int32 (the rest byte for byte) while
    m + insertions fits int32, and int64 offsets once it might not (a lowered limit stands in for
    2**31 - 1); a graph keeps int32 offsets through commits with the same arrays as int64 ones."""
    import engines
    import engines.graph.host_apply as AH

    csr = csr_from_edges(6, [(0, 1, (3, 4)), (0, 1, (5, 6)), (1, 2, (7, 8)), (2, 2, (1, 1)),
                             (5, 0, (2, 9))], 2)
    events = batch_events(batch_of([(0, 1, (9, 9)), (6, 6, (1, 1)), (2, 0, (4, 4))], [(0, 1), (9, 9)], 2), 6, 2)
    wide = apply_host(csr, events, scalars_of(csr.weights))
    narrow = apply_host(csr, events, scalars_of(csr.weights), offset_dtype=np.int32)
    assert wide[0].row_ptr.dtype == wide[0].in_ptr.dtype == np.int64
    assert narrow[0].row_ptr.dtype == narrow[0].in_ptr.dtype == np.int32
    for a, b in zip(snapshot(wide[0]), snapshot(narrow[0])):
        assert np.array_equal(a, b)
    assert wide[1] == narrow[1] and np.array_equal(wide[2], narrow[2]) and wide[3] == narrow[3]
    monkeypatch.setattr(AH, "_INT32_MAX", 5 + 3 - 1)  # m = 5 plus 3 insertions no longer fits
    assert apply_host(csr, events, scalars_of(csr.weights), offset_dtype=np.int32)[0].row_ptr.dtype == np.int64
    monkeypatch.undo()

    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 40, 200), rng.integers(0, 40, 200)
    w = rng.integers(1, 9, (200, 2))
    graphs = [engines.Graph.from_edges(src, dst, w, num_vertices=40, offset_dtype=dt) for dt in (None, np.int64)]
    for _ in range(3):
        ins = rng.integers(0, 45, (30, 2))
        batch = Batch(ins[:, 0], ins[:, 1], rng.integers(1, 9, (30, 2)), rng.integers(0, 40, 20),
                      rng.integers(0, 40, 20))
        for g in graphs:
            g.commit(g.events_for(batch))
        assert graphs[0].row_ptr.dtype == graphs[0].in_edges(0).ptr.dtype == np.int32
        assert graphs[1].row_ptr.dtype == graphs[1].in_edges(0).ptr.dtype == np.int64
        for k in range(2):
            a, b = graphs[0].in_edges(k), graphs[1].in_edges(k)
            assert np.array_equal(a.ptr, b.ptr) and np.array_equal(a.src, b.src) and np.array_equal(a.weight, b.weight)
            assert np.array_equal(graphs[0].weight_column(k), graphs[1].weight_column(k))
        assert np.array_equal(graphs[0].row_ptr, graphs[1].row_ptr)
        assert np.array_equal(graphs[0].col_ind, graphs[1].col_ind)
