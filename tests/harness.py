"""Test harness shared by the engine tests: random graphs and batches, and one function that runs
an ``update()`` and checks everything observable against the oracles of ``conformance/oracles.py``.

Only the checks call the engine; the expected values always come from the oracles.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass

import numpy as np

import engines
from engines import sssp

from bench import generators
from conformance import oracles as O

WEIGHT_CLASSES = ("tiny", "mid", "huge")

#: SSSPAB_EXAMPLES_SCALE=5 runs five times the hypothesis examples of the default (CI) budget.
EXAMPLES_SCALE = float(os.environ.get("SSSPAB_EXAMPLES_SCALE", "1"))


def examples(count: int) -> int:
    """Hypothesis example count of a test, scaled by SSSPAB_EXAMPLES_SCALE."""
    return max(1, int(round(count * EXAMPLES_SCALE)))
SHAPES = ("sparse", "dense", "grid", "chain", "hub")
BATCH_KINDS = (
    "insert", "delete", "mixed", "reweight", "tree_increase", "tree_delete", "local",
    "disconnect", "growth", "selfloop", "empty", "delete_all", "missing", "beyond",
    "duplicates", "reinsert", "raise_parallel", "combo",
)
COMBO_PARTS = tuple(k for k in BATCH_KINDS if k not in ("combo", "delete_all", "empty"))


# --------------------------------------------------------------------------------------------
# Random content
# --------------------------------------------------------------------------------------------


def draw_weights(rng, size, wclass):
    if wclass == "tiny":
        return rng.integers(1, 4, size=size, dtype=np.int64)
    if wclass == "mid":
        return rng.integers(1, 101, size=size, dtype=np.int64)
    w = rng.integers(1, O.WEIGHT_MAX + 1, size=size, dtype=np.int64)
    # make the extremes and ties likely too
    pick = rng.random(size=size)
    w = np.where(pick < 0.15, O.WEIGHT_MAX, w)
    w = np.where((pick >= 0.15) & (pick < 0.3), rng.integers(1, 4, size=size), w)
    return w


def random_graph(rng, shape, n, K, wclass, *, multi=False):
    """(n, src, dst, weights (m, K)) of one of the graph shapes of docs/algorithm.md §13.3."""
    if shape == "sparse":
        src, dst = generators.uniform_arcs(rng, n, int(rng.integers(n, 3 * n + 1)))
    elif shape == "dense":
        n = min(n, 64)  # keep dense graphs small: m grows as n^2
        pairs = np.array([(u, v) for u in range(n) for v in range(n) if u != v], dtype=np.int64)
        if pairs.size == 0:
            pairs = np.zeros((0, 2), dtype=np.int64)
        keep = rng.random(len(pairs)) < 0.6
        src, dst = pairs[keep, 0], pairs[keep, 1]
    elif shape == "grid":
        cols = max(1, int(np.sqrt(n)))
        rows = max(1, n // cols)
        n = rows * cols
        pairs = generators.grid_pairs(rows, cols, by_vertex=True)
        src, dst = generators.both_directions(pairs[:, 0], pairs[:, 1], interleaved=True)
    elif shape == "chain":
        src = np.arange(n - 1, dtype=np.int64)
        dst = src + 1
        extra = int(rng.integers(0, max(1, n // 3) + 1))
        src = np.concatenate([src, rng.integers(0, n, size=extra)])
        dst = np.concatenate([dst, rng.integers(0, n, size=extra)])
    elif shape == "hub":
        hub = 0
        others = np.arange(1, n, dtype=np.int64)
        src = np.concatenate([np.full(others.size, hub), others[rng.random(others.size) < 0.5]])
        dst = np.concatenate([others, np.full(src.size - others.size, hub)])
        extra = int(rng.integers(0, n + 1))
        src = np.concatenate([src, rng.integers(0, n, size=extra)])
        dst = np.concatenate([dst, rng.integers(0, n, size=extra)])
    else:  # pragma: no cover
        raise ValueError(shape)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if multi and src.size:
        src, dst = generators.with_copies_and_loops(rng, n, src, dst, max(1, src.size // 4), max(1, n // 5))
    elif src.size:
        src, dst = generators.simple_arcs(n, src, dst)  # simple graph: no self-loops, no parallel pairs
    w = draw_weights(rng, (src.size, K), wclass)
    return n, src, dst, w


def leaves_with_paths(leaves: int, length: int):
    """(n, src, dst): vertex 0 with ``leaves`` out-edges, each leaf the start of a path of
    ``length`` more vertices (the push chains' short-list rule: tests/bench/test_chain_model.py,
    tests/gpu/test_push_chain.py)."""
    src, dst = [], []
    for leaf in range(1, leaves + 1):
        path = [leaf] + [leaves + 1 + (leaf - 1) * length + j for j in range(length)]
        src += [0] + path[:-1]
        dst += [leaf] + path[1:]
    return leaves + 1 + leaves * length, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)


def empty_batch_arrays(K):
    return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, K), np.int64),
            np.zeros(0, np.int64), np.zeros(0, np.int64))


def random_batch(rng, kind, ref: O.RefGraph, parents, source, wclass):
    """Batch arrays (ins_src, ins_dst, ins_w (i, K), del_src, del_dst) of one batch mix of
    algorithm.md §13.3.

    ``parents`` is a current valid tree (used for the tree-edge kinds).
    """
    n = ref.num_vertices
    K = ref.num_weights
    src, dst, _ = ref.edges(0)
    m = src.size
    isrc, idst, dsrc, ddst = [], [], [], []
    iw = []

    def ins(u, v, w=None):
        isrc.append(int(u))
        idst.append(int(v))
        iw.append(draw_weights(rng, K, wclass) if w is None else np.asarray(w, dtype=np.int64))

    def dele(u, v):
        dsrc.append(int(u))
        ddst.append(int(v))

    def rand_edges(count):
        if m == 0:
            return []
        return [(int(src[e]), int(dst[e])) for e in rng.integers(0, m, size=count)]

    tree_edges = [(int(parents[v]), v) for v in range(min(n, len(parents))) if parents[v] >= 0]

    if kind == "insert":
        for _ in range(int(rng.integers(1, 9))):
            ins(rng.integers(0, n), rng.integers(0, n))
    elif kind == "delete":
        for u, v in rand_edges(int(rng.integers(1, 9))):
            dele(u, v)
        for _ in range(int(rng.integers(0, 3))):
            dele(rng.integers(0, n), rng.integers(0, n))
    elif kind == "mixed":
        for u, v in rand_edges(int(rng.integers(0, 6))):
            dele(u, v)
        for _ in range(int(rng.integers(0, 6))):
            ins(rng.integers(0, n), rng.integers(0, n))
        for u, v in rand_edges(int(rng.integers(0, 4))):
            ins(u, v)
        for u, v in [tree_edges[i] for i in rng.integers(0, len(tree_edges), size=2)] if tree_edges else []:
            dele(u, v)
    elif kind == "reweight":
        for u, v in rand_edges(int(rng.integers(1, 9))):
            ins(u, v)
    elif kind == "tree_increase":
        if tree_edges:
            for i in rng.integers(0, len(tree_edges), size=int(rng.integers(1, 6))):
                u, v = tree_edges[i]
                if ref.first_weight(u, v) is None:  # a garbage tree (error tests): no such edge
                    ins(u, v)
                    continue
                old = np.asarray(ref.first_weight(u, v), dtype=np.int64)
                bump = draw_weights(rng, K, wclass)
                new = np.minimum(old + bump, O.WEIGHT_MAX)
                # leave some columns unchanged or lowered, so weight_increased differs per column
                lower = rng.random(K) < 0.25
                new = np.where(lower, np.maximum(old - 1, 1), new)
                ins(u, v, new)
    elif kind == "tree_delete":
        if tree_edges:
            for i in rng.integers(0, len(tree_edges), size=int(rng.integers(1, 5))):
                dele(*tree_edges[i])
    elif kind == "local":
        x = int(rng.integers(0, n))
        outs = [v for v, _ in ref.rows[x]]
        for v in outs[: int(rng.integers(0, 3))]:
            dele(x, v)
        near = outs + [x]
        for _ in range(int(rng.integers(1, 5))):
            ins(near[int(rng.integers(0, len(near)))], near[int(rng.integers(0, len(near)))])
    elif kind == "disconnect":
        for x in rng.integers(0, n, size=int(rng.integers(1, 3))):
            for u in range(n):
                for v, _ in ref.rows[u]:
                    if v == x:
                        dele(u, v)
    elif kind == "growth":
        g = int(rng.integers(1, 4))
        for j in range(g):
            new_v = n + j
            ins(rng.integers(0, n), new_v)
            if rng.random() < 0.5:
                ins(new_v, rng.integers(0, n + g))
        if rng.random() < 0.5:
            dele(n + g - 1, rng.integers(0, n))  # a deletion in a new (empty) row: missing
    elif kind == "selfloop":
        for _ in range(int(rng.integers(1, 4))):
            x = rng.integers(0, n)
            ins(x, x)
        for _ in range(int(rng.integers(0, 3))):
            x = rng.integers(0, n)
            dele(x, x)
    elif kind == "empty":
        pass
    elif kind == "combo":
        # several kinds in one batch (deletions still come first when applied)
        parts = [random_batch(rng, COMBO_PARTS[int(i)], ref, parents, source, wclass)
                 for i in rng.integers(0, len(COMBO_PARTS), size=int(rng.integers(2, 7)))]
        return tuple(np.concatenate([p[j] for p in parts]) for j in range(5))
    elif kind == "delete_all":
        for u, v in zip(src.tolist(), dst.tolist()):
            dele(u, v)
    elif kind == "missing":
        present = set(zip(src.tolist(), dst.tolist()))
        for _ in range(int(rng.integers(1, 5))):
            u, v = int(rng.integers(0, n)), int(rng.integers(0, n))
            if (u, v) not in present:
                dele(u, v)
    elif kind == "beyond":
        if rng.random() < 0.5:
            ins(rng.integers(0, n), n)  # grows by one
        for _ in range(int(rng.integers(1, 4))):
            big = n + 1 + int(rng.integers(0, 5))
            if rng.random() < 0.5:
                dele(big, rng.integers(0, n))
            else:
                dele(rng.integers(0, n), big)
        for u, v in rand_edges(1):
            dele(u, v)
    elif kind == "duplicates":
        for u, v in rand_edges(2):
            dele(u, v)
            dele(u, v)
        u, v = int(rng.integers(0, n)), int(rng.integers(0, n))
        for _ in range(int(rng.integers(2, 4))):
            ins(u, v)
    elif kind == "reinsert":
        for u, v in rand_edges(int(rng.integers(1, 4))):
            dele(u, v)
            ins(u, v)
    elif kind == "raise_parallel":
        counts = {}
        for u, v in zip(src.tolist(), dst.tolist()):
            counts[(u, v)] = counts.get((u, v), 0) + 1
        multi = [p for p, c in counts.items() if c > 1]
        pairs = multi if multi else list(counts)
        if pairs:
            for i in rng.integers(0, len(pairs), size=int(rng.integers(1, 4))):
                u, v = pairs[i]
                old = np.asarray(ref.first_weight(u, v), dtype=np.int64)
                ins(u, v, np.minimum(old + draw_weights(rng, K, wclass), O.WEIGHT_MAX))
    else:  # pragma: no cover
        raise ValueError(kind)
    iw_arr = np.array(iw, dtype=np.int64).reshape(len(isrc), K)
    return (np.array(isrc, dtype=np.int64), np.array(idst, dtype=np.int64), iw_arr,
            np.array(dsrc, dtype=np.int64), np.array(ddst, dtype=np.int64))


# --------------------------------------------------------------------------------------------
# Engine-side helpers and checks
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def host_propagation(path):
    """Run the host engine's propagation with ``path`` ("auto"/"numba" or "numpy", the near-far
    schedule where ``delta`` matters); results must not depend on it (algorithm.md §7.1 schedule
    freedom)."""
    from engines.sssp import host

    saved = host.PROPAGATION
    host.PROPAGATION = path
    try:
        yield
    finally:
        host.PROPAGATION = saved


def make_batch(arrays):
    isrc, idst, iw, dsrc, ddst = arrays
    return engines.Batch(isrc, idst, iw, dsrc, ddst)


def ref_of(graph) -> O.RefGraph:
    return O.RefGraph.from_csr(np.asarray(graph.row_ptr), np.asarray(graph.col_ind),
                               np.asarray(graph.weights), graph.num_weights)


def assert_graph_matches(graph, ref: O.RefGraph):
    row_ptr, col_ind, weights = ref.csr()
    assert graph.num_vertices == ref.num_vertices
    assert graph.num_edges == ref.num_edges
    assert graph.num_weights == ref.num_weights
    np.testing.assert_array_equal(np.asarray(graph.row_ptr).astype(np.int64), row_ptr)
    np.testing.assert_array_equal(np.asarray(graph.col_ind).astype(np.int64), col_ind)
    np.testing.assert_array_equal(np.asarray(graph.weights).astype(np.int64), weights)


def summary_dict(summary):
    return {f.name: int(getattr(summary, f.name)) for f in dataclasses.fields(summary)}


def assert_result_bytes_equal(a, b):
    da, pa = a.to_numpy()
    db, pb = b.to_numpy()
    assert da.dtype == db.dtype and pa.dtype == pb.dtype
    assert da.tobytes() == db.tobytes(), "distances differ"
    assert pa.tobytes() == pb.tobytes(), "parents differ"


def assert_tree_equals(result, exp_d, exp_p, what=""):
    d, p = result.to_numpy()
    assert d.dtype == np.int64, d.dtype
    assert p.dtype == np.int32, p.dtype
    bad = np.flatnonzero(d != exp_d)
    assert bad.size == 0, (f"{what}: distances differ at {bad[:10].tolist()}: got "
                           f"{d[bad[:10]].tolist()} expected {exp_d[bad[:10]].tolist()}")
    bad = np.flatnonzero(p.astype(np.int64) != exp_p)
    assert bad.size == 0, (f"{what}: parents differ at {bad[:10].tolist()}: got "
                           f"{p[bad[:10]].tolist()} expected {exp_p[bad[:10]].tolist()}")


def check_compute(graph, source, objective=0, **overrides):
    """compute() vs Dijkstra and the canonical tree; returns the result."""
    ref = ref_of(graph)
    r = sssp.compute(graph, source, objective=objective, **overrides)
    src, dst, w = ref.edges(objective)
    n = ref.num_vertices
    d, p = O.canonical_tree(n, source, src, dst, w)
    assert_tree_equals(r, d, p, "compute")
    st = r.stats
    assert st.invalidated == 0 and st.affected == 0
    assert st.batch is None
    assert st.engine_used == "host" and st.host_syncs == 0 and st.sync_budget == 0
    W = max(1, ref.max_weight(objective))
    assert st.packed_parents == O.oracle_packed(n, W)
    assert r.graph_version == graph.version
    return r


@dataclass
class Tracked:
    """One result followed through a chain; ``canonical`` says whether its input is canonical."""

    result: object
    objective: int
    canonical: bool


def import_perturbed(rng, graph, tracked: Tracked):
    """Replace the tracked result by a perturbed (non-canonical, valid) import of its tree."""
    r = tracked.result
    d, _ = r.to_numpy()
    ref = ref_of(graph)
    src, dst, w = ref.edges(tracked.objective)
    p = O.perturbed_parents(rng, ref.num_vertices, r.source, d, src, dst, w)
    new = sssp.Result.from_arrays(graph, r.source, d, p.astype(np.int32), canonicalize=False,
                                  objective=tracked.objective, delta=r.options.delta)
    got_d, got_p = new.to_numpy()
    np.testing.assert_array_equal(got_p.astype(np.int64), p)  # canonicalize=False keeps them
    canon = O.canonical_parents(ref.num_vertices, r.source, d, src, dst, w)
    return Tracked(new, tracked.objective, bool(np.array_equal(canon, p)))


def check_update(graph, arrays, tracked: list, *, ref_old: O.RefGraph | None = None):
    """Run update(graph, batch, *results) and check everything against the oracles."""
    if ref_old is None:
        ref_old = ref_of(graph)
    version = graph.version
    inputs = [t.result.to_numpy() for t in tracked]
    isrc, idst, iw, dsrc, ddst = arrays
    app = O.ref_apply(ref_old, isrc, idst, iw, dsrc, ddst)

    stats = sssp.update(graph, make_batch(arrays), *[t.result for t in tracked])
    if len(tracked) == 1:
        assert not isinstance(stats, tuple)
        stats = (stats,)
    assert isinstance(stats, tuple) and len(stats) == len(tracked)

    assert graph.version == version + 1
    assert_graph_matches(graph, app.graph)
    n = app.num_vertices_after
    for t, (d_in, p_in), st in zip(tracked, inputs, stats):
        k = t.objective
        r = t.result
        exp = O.expected_update(app, k, r.source, d_in, p_in)
        assert_tree_equals(r, exp.distances, exp.parents, f"update objective {k}")
        assert r.graph_version == graph.version
        assert st is r.stats or st == r.stats
        assert summary_dict(st.batch) == app.summary
        assert st.packed_parents == exp.packed
        assert st.invalidated == exp.invalidated, (st.invalidated, exp.invalidated)
        assert st.affected == exp.affected
        assert st.engine_used == "host"
        assert st.host_syncs == 0 and st.sync_budget == 0
        if t.canonical:
            fresh = sssp.compute(graph, r.source, objective=k)
            assert_result_bytes_equal(r, fresh)
        # the output of a valid tree is a valid tree: canonical iff it was, or it became so
        canon = O.canonical_parents(n, r.source, exp.distances, *app.graph.edges(k))
        t.canonical = bool(np.array_equal(canon, exp.parents))
    return stats, app
