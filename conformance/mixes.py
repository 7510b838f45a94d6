"""Graph presets and the ten batch mixes the golden corpus is generated from.

Every function is a pure function of a seeded ``numpy.random.Generator`` and its inputs, so the
corpus is reproducible. Batches are plain arrays ``(ins_src, ins_dst, ins_w (k, K), del_src,
del_dst)``, int64; the graph is ``(row_ptr, col_ind, weights (m, K))`` of the pre-batch state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from bench import generators

from . import oracles

WEIGHT_MAX = (1 << 31) - 1


@dataclass
class GraphArrays:
    row_ptr: np.ndarray  # int64 (n + 1)
    col_ind: np.ndarray  # int64 (m)
    weights: np.ndarray  # int64 (m, K)

    @property
    def n(self) -> int:
        return self.row_ptr.shape[0] - 1

    @property
    def m(self) -> int:
        return self.col_ind.shape[0]

    @property
    def K(self) -> int:
        return self.weights.shape[1]

    def sources(self) -> np.ndarray:
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.row_ptr))

    @cached_property
    def ref(self):
        """This graph as the oracles' ``RefGraph``, built once: one preset graph serves ten mixes, and
        a RefGraph is never modified."""
        weights_objective_major = np.ascontiguousarray(self.weights.T).reshape(-1)
        return oracles.RefGraph.from_csr(self.row_ptr, self.col_ind, weights_objective_major, self.K)


def csr_from_edges(n, src, dst, weights) -> GraphArrays:
    """CSR keeping the input order of the edges within each row (``bench.generators``)."""
    return GraphArrays(*generators.csr_from_edges(n, src, dst, weights))


def draw_weights(rng, size, K, lo, hi) -> np.ndarray:
    return rng.integers(lo, hi + 1, size=(size, K), dtype=np.int64)


def random_graph(rng, n, m, K, lo, hi, *, parallel=0.0, self_loops=0.0) -> GraphArrays:
    """Uniform random directed edges; a fraction repeated as parallel copies, some self-loops."""
    src, dst = generators.uniform_arcs(rng, n, m)
    if n > 1:
        loops = src == dst
        dst[loops] = (dst[loops] + 1) % n
    src, dst = generators.with_copies_and_loops(rng, n, src, dst, int(round(parallel * m)),
                                                int(round(self_loops * m)))
    return csr_from_edges(n, src, dst, draw_weights(rng, src.shape[0], K, lo, hi))


def grid_graph(rng, rows, cols, K, lo, hi) -> GraphArrays:
    """A road-like 4-neighbour grid, both directions stored with independent weights, row-major ids."""
    und = generators.grid_pairs(rows, cols)
    src, dst = generators.both_directions(und[:, 0], und[:, 1])
    return csr_from_edges(rows * cols, src, dst, draw_weights(rng, src.shape[0], K, lo, hi))


# -- batch mixes --------------------------------------------------------------------------------


@dataclass
class MixContext:
    rng: np.random.Generator
    graph: GraphArrays
    d_in: np.ndarray
    p_in: np.ndarray
    source: int
    objective: int
    wlo: int
    whi: int
    size: int  # number of changes to aim for

    def weights(self, count) -> np.ndarray:
        return draw_weights(self.rng, count, self.graph.K, self.wlo, self.whi)

    def first_edges(self, mask=None):
        """(src, dst, edge index) of the first copy of every (u, v) pair, self-loops excluded."""
        g = self.graph
        src, dst = g.sources(), g.col_ind
        idx = np.arange(g.m)
        keep = src != dst
        if mask is not None:
            keep &= mask
        src, dst, idx = src[keep], dst[keep], idx[keep]
        key = src * (g.n + 1) + dst
        _, first = np.unique(key, return_index=True)
        first.sort()
        return src[first], dst[first], idx[first]

    def reachable(self) -> np.ndarray:
        return np.flatnonzero((self.d_in < oracles.INF) & (np.arange(self.graph.n) != self.source))


def _pairs(rng, pool, count):
    """``count`` random ordered pairs of distinct vertices from ``pool`` (repeats allowed)."""
    if pool.size < 2 or count <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    a = pool[rng.integers(0, pool.size, size=count)]
    b = pool[rng.integers(0, pool.size, size=count)]
    same = a == b
    while same.any():
        b[same] = pool[rng.integers(0, pool.size, size=int(same.sum()))]
        same = a == b
    return a.astype(np.int64), b.astype(np.int64)


def _batch(ins_src=(), ins_dst=(), ins_w=None, del_src=(), del_dst=(), K=1):
    ins_src = np.asarray(ins_src, dtype=np.int64)
    w = np.zeros((0, K), np.int64) if ins_w is None else np.asarray(ins_w, dtype=np.int64).reshape(-1, K)
    return (ins_src, np.asarray(ins_dst, dtype=np.int64), w, np.asarray(del_src, dtype=np.int64),
            np.asarray(del_dst, dtype=np.int64))


def _uniform(ctx: MixContext, *, safe: bool, pool=None, edge_mask=None):
    g, rng = ctx.graph, ctx.rng
    pool = np.arange(g.n) if pool is None else pool
    n_ins = int(round(ctx.size * 0.5))
    n_del = ctx.size - n_ins
    isrc, idst = _pairs(rng, pool, n_ins)
    es, ed, _ = ctx.first_edges(edge_mask)
    if es.size and n_del:
        pick = rng.integers(0, es.size, size=n_del)
        dsrc, ddst = es[pick], ed[pick]
    else:
        dsrc = ddst = np.zeros(0, np.int64)
    ins_w = ctx.weights(isrc.size)
    if safe:
        dsrc, ddst = safe_filter(g, ctx.source, isrc, idst, ins_w, dsrc, ddst)
    return _batch(isrc, idst, ins_w, dsrc, ddst, g.K)


def _reach_mask(n, row_ptr, col_ind, source) -> np.ndarray:
    mat = csr_matrix((np.ones(col_ind.shape[0]), col_ind, row_ptr), shape=(n, n))
    order = breadth_first_order(mat, source, directed=True, return_predecessors=False)
    mask = np.zeros(n, dtype=bool)
    mask[order] = True
    return mask


def safe_filter(g: GraphArrays, source, isrc, idst, ins_w, dsrc, ddst):
    """Drop every deletion touching a vertex the batch would disconnect, until none is lost (inputs.md §3)."""
    before = _reach_mask(g.n, g.row_ptr, g.col_ind, source)
    while dsrc.size:
        applied = oracles.ref_apply(g.ref, isrc, idst, ins_w, dsrc, ddst).graph
        row_ptr, col_ind, _ = applied.csr()
        after = _reach_mask(applied.num_vertices, row_ptr, col_ind, source)
        lost = np.zeros(after.shape[0], dtype=bool)
        lost[: g.n] = before & ~after[: g.n]
        if not lost.any():
            break
        keep = ~(lost[dsrc] | lost[ddst])
        dsrc, ddst = dsrc[keep], ddst[keep]
    return dsrc, ddst


def mix_uniform_safe(ctx):
    return _uniform(ctx, safe=True)


def mix_uniform_unsafe(ctx):
    return _uniform(ctx, safe=False)


def mix_deletions_only(ctx):
    """Deletions of existing edges (with repeats), plus some missing pairs and ids out of range."""
    g, rng = ctx.graph, ctx.rng
    es, ed, _ = ctx.first_edges()
    n_exist = max(1, int(ctx.size * 0.8)) if es.size else 0
    pick = rng.integers(0, es.size, size=n_exist) if n_exist else np.zeros(0, np.int64)
    ms, md = _pairs(rng, np.arange(g.n), ctx.size - n_exist)
    dsrc = np.concatenate([es[pick], ms, [g.n + 3]])
    ddst = np.concatenate([ed[pick], md, [0]])
    return _batch(del_src=dsrc, del_dst=ddst, K=g.K)


def mix_insertions_only(ctx):
    """New edges and upserts of existing ones; half of the batches also grow the graph by two reachable vertices."""
    g, rng = ctx.graph, ctx.rng
    isrc, idst = _pairs(rng, np.arange(g.n), ctx.size)
    es, ed, _ = ctx.first_edges()
    if es.size:
        pick = rng.integers(0, es.size, size=max(1, ctx.size // 4))
        isrc, idst = np.concatenate([isrc, es[pick]]), np.concatenate([idst, ed[pick]])
    if rng.random() < 0.5:
        anchor = int(rng.choice(np.append(ctx.reachable(), ctx.source)))
        isrc = np.concatenate([isrc, [anchor, g.n]])
        idst = np.concatenate([idst, [g.n, g.n + 1]])
    return _batch(isrc, idst, ctx.weights(isrc.size), K=g.K)


def _tree_edges(ctx, count):
    """(parent, child, first edge index of the pair) of ``count`` random tree edges."""
    rng = ctx.rng
    reach = ctx.reachable()
    reach = reach[ctx.p_in[reach] >= 0]
    if reach.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    child = rng.choice(reach, size=min(count, reach.size), replace=False)
    parent = ctx.p_in[child]
    es, ed, ei = ctx.first_edges()
    key = es * (ctx.graph.n + 1) + ed
    order = np.argsort(key)
    # a tree edge is a tight edge, so the pair exists and is no self-loop
    pos = np.searchsorted(key[order], parent * (ctx.graph.n + 1) + child)
    return parent.astype(np.int64), child.astype(np.int64), ei[order[pos]]


def mix_tree_increase(ctx):
    """Upserts that raise the objective's weight of tree edges (flagged as weight increases)."""
    g = ctx.graph
    parent, child, idx = _tree_edges(ctx, ctx.size)
    w = ctx.weights(parent.size)
    k = ctx.objective
    old = g.weights[idx, k]
    w[:, k] = np.minimum(old + ctx.rng.integers(1, ctx.whi + 1, size=old.size), WEIGHT_MAX)
    return _batch(parent, child, w, K=g.K)


def mix_reweight(ctx):
    """Upserts of existing edges with fresh weights: some rise, some fall, some stay."""
    g, rng = ctx.graph, ctx.rng
    es, ed, _ = ctx.first_edges()
    if es.size == 0:
        return _batch(K=g.K)
    pick = rng.integers(0, es.size, size=ctx.size)
    return _batch(es[pick], ed[pick], ctx.weights(pick.size), K=g.K)


def subtree_sizes(d_in, p_in) -> np.ndarray:
    """Size of every vertex's subtree in the input tree (distances strictly grow along tree edges)."""
    n = p_in.shape[0]
    size = np.ones(n, dtype=np.int64)
    reach = np.flatnonzero(d_in < oracles.INF)
    for v in reach[np.argsort(-d_in[reach], kind="stable")].tolist():
        p = p_in[v]
        if p >= 0:
            size[p] += size[v]
    return size


def mix_targeted(ctx):
    """Delete the tree edges above the largest subtrees, and re-attach a few of their vertices."""
    g, rng = ctx.graph, ctx.rng
    size = subtree_sizes(ctx.d_in, ctx.p_in)
    cand = ctx.reachable()
    cand = cand[ctx.p_in[cand] >= 0]
    if cand.size == 0:
        return _batch(K=g.K)
    top = cand[np.argsort(-size[cand], kind="stable")][: max(1, ctx.size // 4)]
    dsrc, ddst = ctx.p_in[top].astype(np.int64), top.astype(np.int64)
    n_ins = max(1, ctx.size - top.size)
    isrc = rng.integers(0, g.n, size=n_ins)
    idst = top[rng.integers(0, top.size, size=n_ins)]
    clash = isrc == idst
    isrc[clash] = (isrc[clash] + 1) % g.n
    return _batch(isrc, idst, ctx.weights(n_ins), dsrc, ddst, g.K)


def hop_ball(g: GraphArrays, centre: int, radius: int) -> np.ndarray:
    """Vertices within ``radius`` hops of ``centre``, ignoring edge direction (inputs.md §3)."""
    mat = csr_matrix((np.ones(g.m), g.col_ind, g.row_ptr), shape=(g.n, g.n))
    und = (mat + mat.T).tocsr()
    seen = np.zeros(g.n, dtype=bool)
    seen[centre] = True
    frontier = np.array([centre])
    for _ in range(radius):
        nxt = np.unique(und[frontier].indices)
        nxt = nxt[~seen[nxt]]
        if nxt.size == 0:
            break
        seen[nxt] = True
        frontier = nxt
    return np.flatnonzero(seen)


def _local_region(ctx, radius):
    g = ctx.graph
    for _ in range(8):
        ball = hop_ball(g, int(ctx.rng.integers(0, g.n)), radius)
        if ball.size >= 2:
            return ball
    return np.arange(g.n)


def mix_local(ctx, radius=3):
    """Every endpoint inside one hop ball around a random centre (inputs.md local batch, unsafe)."""
    g = ctx.graph
    ball = _local_region(ctx, radius)
    inside = np.zeros(g.n, dtype=bool)
    inside[ball] = True
    mask = inside[g.sources()] & inside[g.col_ind]
    return _uniform(ctx, safe=False, pool=ball, edge_mask=mask)


def mix_local_reweight(ctx, radius=3):
    """Upserts of the edges inside one hop ball."""
    g, rng = ctx.graph, ctx.rng
    ball = _local_region(ctx, radius)
    inside = np.zeros(g.n, dtype=bool)
    inside[ball] = True
    es, ed, _ = ctx.first_edges(inside[g.sources()] & inside[g.col_ind])
    if es.size == 0:
        return _batch(K=g.K)
    pick = rng.integers(0, es.size, size=ctx.size)
    return _batch(es[pick], ed[pick], ctx.weights(pick.size), K=g.K)


def mix_disconnecting(ctx, radius=2):
    """Delete every copy of every edge entering a region without the source: the region is cut off."""
    g = ctx.graph
    reach = ctx.reachable()
    centre = int(ctx.rng.choice(reach)) if reach.size else int(ctx.rng.integers(0, g.n))
    ball = hop_ball(g, centre, radius)
    ball = ball[ball != ctx.source]
    inside = np.zeros(g.n, dtype=bool)
    inside[ball] = True
    src, dst = g.sources(), g.col_ind
    entering = ~inside[src] & inside[dst]
    # one deletion per physical copy removes every parallel copy of the pair
    return _batch(del_src=src[entering], del_dst=dst[entering], K=g.K)


MIXES = {
    "uniform_safe": mix_uniform_safe,
    "uniform_unsafe": mix_uniform_unsafe,
    "deletions_only": mix_deletions_only,
    "insertions_only": mix_insertions_only,
    "tree_increase": mix_tree_increase,
    "reweight": mix_reweight,
    "targeted": mix_targeted,
    "local": mix_local,
    "local_reweight": mix_local_reweight,
    "disconnecting": mix_disconnecting,
}
