"""Independent oracles that every golden case is checked against when it is generated.

Nothing here calls the engines: each rule is re-derived from algorithm.md with plain NumPy/SciPy
(SciPy's Dijkstra for distances, a per-row list model of the batch semantics), so a corpus case
is stored only when the host reference and these oracles agree.

Conventions: per-edge weights are ``(m, K)`` int64; distances int64 with ``INF``; parents int64
with -1 (callers compare values, the engines' dtypes are checked elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

INF = (1 << 61) - 1  # algorithm.md §2
INF_HALF = INF // 2
FLOAT_EXACT = 1 << 53  # SciPy sums distances in float64: exact below this


class OracleMismatch(AssertionError):
    """The host reference disagrees with an oracle: the case must not enter the corpus."""


# -- packing (§4.1-§4.3) ------------------------------------------------------------------------


def parent_bits(n: int) -> int:
    b = 1
    while (1 << b) - 1 < n:
        b += 1
    return b


def packs(max_weight: int, n: int) -> bool:
    """D1: packed iff W * max(n - 1, 1) <= 2^(64 - b) - 2."""
    return max(int(max_weight), 1) * max(n - 1, 1) <= (1 << (64 - parent_bits(n))) - 2


# -- the batch semantics as per-row lists (§3.3) -------------------------------------------------


@dataclass
class AppliedBatch:
    row_ptr: np.ndarray  # int64 (n + 1)
    col_ind: np.ndarray  # int64 (m)
    weights: np.ndarray  # int64 (m, K)
    summary: dict
    weight_increased: np.ndarray  # bool (num_insertions, K)
    delete_src: np.ndarray  # deletions that passed the id filter, missing ones included
    delete_dst: np.ndarray
    insert_src: np.ndarray  # every insertion, batch order
    insert_dst: np.ndarray
    n_old: int


def _rows(row_ptr, col_ind, weights, touched):
    """Per-row lists ``[[v, weights tuple, alive], ...]`` for the touched rows of G_t only."""
    rows = {}
    for u in touched:
        lo, hi = int(row_ptr[u]), int(row_ptr[u + 1])
        rows[u] = [[int(col_ind[e]), tuple(int(x) for x in weights[e]), True] for e in range(lo, hi)]
    return rows


def _first(row, v):
    for entry in row:
        if entry[2] and entry[0] == v:
            return entry
    return None


def reference_apply(row_ptr, col_ind, weights, ins_src, ins_dst, ins_w, del_src, del_dst) -> AppliedBatch:
    """Apply a batch the slow, obvious way: deletions first, first alive copy, upsert the first copy."""
    row_ptr = np.asarray(row_ptr, dtype=np.int64)
    col_ind = np.asarray(col_ind, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.int64)
    if weights.ndim == 1:
        weights = weights.reshape(-1, 1)
    K = weights.shape[1]
    n_old = row_ptr.shape[0] - 1
    ins_src, ins_dst = (np.asarray(a, dtype=np.int64) for a in (ins_src, ins_dst))
    del_src, del_dst = (np.asarray(a, dtype=np.int64) for a in (del_src, del_dst))
    ins_w = np.asarray(ins_w, dtype=np.int64).reshape(ins_src.shape[0], -1) if ins_src.size else np.zeros((0, K), np.int64)
    n_after = max(n_old, int(ins_src.max(initial=-1)) + 1, int(ins_dst.max(initial=-1)) + 1)
    keep = (del_src < n_after) & (del_dst < n_after)
    ignored = int((~keep).sum())
    fdel_src, fdel_dst = del_src[keep], del_dst[keep]
    touched = sorted(set(fdel_src.tolist()) | set(ins_src.tolist()))
    old_rows = _rows(row_ptr, col_ind, weights, [u for u in touched if u < n_old])
    rows = {u: [list(e) for e in old_rows.get(u, [])] for u in touched}
    deleted = 0
    for u, v in zip(fdel_src.tolist(), fdel_dst.tolist()):
        entry = _first(rows[u], v)
        if entry is None:
            ignored += 1
        else:
            entry[2] = False
            deleted += 1
    rows = {u: [e for e in r if e[2]] for u, r in rows.items()}
    inserted = updated = 0
    for i, (u, v) in enumerate(zip(ins_src.tolist(), ins_dst.tolist())):
        entry = _first(rows[u], v)
        w = tuple(int(x) for x in ins_w[i])
        if entry is None:
            rows[u].append([v, w, True])
            inserted += 1
        else:
            entry[1] = w
            updated += 1
    increased = np.zeros((ins_src.shape[0], K), dtype=bool)
    for i, (u, v) in enumerate(zip(ins_src.tolist(), ins_dst.tolist())):
        if u >= n_old:
            continue
        old = _first(old_rows[u], v)
        new = _first(rows[u], v)
        if old is not None and new is not None:
            increased[i] = np.array(new[1]) > np.array(old[1])
    lengths = np.zeros(n_after, dtype=np.int64)
    lengths[:n_old] = np.diff(row_ptr)
    for u, r in rows.items():
        lengths[u] = len(r)
    new_ptr = np.zeros(n_after + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_ptr[1:])
    new_col = np.empty(int(new_ptr[-1]), dtype=np.int64)
    new_w = np.empty((int(new_ptr[-1]), K), dtype=np.int64)
    # untouched rows are copied as blocks; touched rows from their lists
    is_touched = np.zeros(n_after, dtype=bool)
    is_touched[list(rows)] = True
    old_rows_idx = np.flatnonzero(~is_touched[:n_old])
    if old_rows_idx.size:
        starts, ends = row_ptr[old_rows_idx], row_ptr[old_rows_idx + 1]
        counts = ends - starts
        src_pos = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        dst_start = new_ptr[old_rows_idx]
        dst_pos = np.repeat(dst_start - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        new_col[dst_pos] = col_ind[src_pos]
        new_w[dst_pos] = weights[src_pos]
    for u, r in rows.items():
        base = int(new_ptr[u])
        for j, (v, w, _) in enumerate(r):
            new_col[base + j] = v
            new_w[base + j] = w
    summary = dict(inserted_edges=inserted, updated_edges=updated, deleted_edges=deleted,
                   ignored_deletions=ignored, inserted_vertices=n_after - n_old, num_vertices_after=n_after)
    return AppliedBatch(new_ptr, new_col, new_w, summary, increased, fdel_src, fdel_dst, ins_src, ins_dst, n_old)


# -- distances and canonical parents (§2, §13 item 1) -------------------------------------------


def edge_list(row_ptr, col_ind, weight_column):
    row_ptr = np.asarray(row_ptr, dtype=np.int64)
    src = np.repeat(np.arange(row_ptr.shape[0] - 1, dtype=np.int64), np.diff(row_ptr))
    return src, np.asarray(col_ind, dtype=np.int64), np.asarray(weight_column, dtype=np.int64)


def dijkstra_distances(n: int, src, dst, w, source: int) -> np.ndarray:
    """SciPy's Dijkstra on the minimum weight of every pair (parallel copies), INF when unreachable."""
    keep = src != dst  # a self-loop never shortens a path
    s, d, ww = src[keep], dst[keep], w[keep]
    if s.size:
        order = np.lexsort((ww, d, s))
        s, d, ww = s[order], d[order], ww[order]
        first = np.ones(s.size, dtype=bool)
        first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
        s, d, ww = s[first], d[first], ww[first]
    if int(ww.max(initial=0)) * max(n - 1, 1) >= FLOAT_EXACT:
        raise OracleMismatch("path lengths may exceed 2^53: SciPy's float64 Dijkstra would not be exact")
    mat = sp.csr_matrix((ww.astype(np.float64), (s, d)), shape=(n, n))
    dist = dijkstra(mat, directed=True, indices=source)
    out = np.full(n, INF, dtype=np.int64)
    fin = np.isfinite(dist)
    out[fin] = dist[fin].astype(np.int64)
    return out


def tight_edges(dist, src, dst, w, source):
    du = dist[src]
    return (du < INF) & (dst != source) & (du + w == dist[dst])


def lowest_tight_parents(n, source, dist, src, dst, w, *, among=None) -> np.ndarray:
    """Lowest-id tight in-neighbour of every vertex (restricted to ``among`` if given), else -1."""
    tight = tight_edges(dist, src, dst, w, source)
    if among is not None:
        tight &= among[src]
    best = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, dst[tight], src[tight])
    best[best == np.iinfo(np.int64).max] = -1
    return best


def canonical_tree(n, source, src, dst, w):
    dist = dijkstra_distances(n, src, dst, w, source)
    parents = lowest_tight_parents(n, source, dist, src, dst, w)
    parents[source] = -1
    parents[dist >= INF] = -1
    return dist, parents


def is_valid_tree(n, source, dist, parents, src, dst, w) -> str | None:
    """None if (dist, parents) is a valid shortest-path tree (§2), else the first problem."""
    dist = np.asarray(dist, dtype=np.int64)
    parents = np.asarray(parents, dtype=np.int64)
    ref = dijkstra_distances(n, src, dst, w, source)
    if not np.array_equal(ref, dist):
        v = int(np.flatnonzero(ref != dist)[0])
        return f"distance of {v} is {dist[v]}, Dijkstra says {ref[v]}"
    if parents[source] != -1:
        return "the source has a parent"
    unreach = dist >= INF
    if (parents[unreach] != -1).any():
        return f"unreachable vertex {int(np.flatnonzero(unreach & (parents != -1))[0])} has a parent"
    tight = tight_edges(dist, src, dst, w, source)
    # (parent, child) is acceptable iff some tight edge parent -> child exists
    key = src[tight] * (n + 1) + dst[tight]
    need = np.flatnonzero(~unreach & (np.arange(n) != source))
    have = np.isin(parents[need] * (n + 1) + need, key)
    bad = need[~have]
    if bad.size:
        return f"parent {int(parents[bad[0]])} of vertex {int(bad[0])} is not a tight in-neighbour"
    return None


def perturb_tie_parents(rng, n, source, dist, src, dst, w) -> np.ndarray:
    """A valid tree whose every parent is a random tight in-neighbour (§13 item 4)."""
    tight = tight_edges(dist, src, dst, w, source)
    ts, td = src[tight], dst[tight]
    parents = np.full(n, -1, dtype=np.int64)
    if ts.size:
        order = np.lexsort((rng.random(ts.size), td))
        ts, td = ts[order], td[order]
        first = np.ones(td.size, dtype=bool)
        first[1:] = td[1:] != td[:-1]
        parents[td[first]] = ts[first]
    parents[source] = -1
    return parents


# -- the update's deterministic outputs (§3.4, §5.5, §5.12) -------------------------------------


def invalidated_mask(p_in, changed_from, changed_to) -> np.ndarray:
    """F: every vertex whose input parent chain reaches a root (roots included)."""
    n = p_in.shape[0]
    roots = np.zeros(n, dtype=bool)
    if changed_to.size:
        hit = p_in[changed_to] == changed_from
        roots[changed_to[hit]] = True
    mark = roots.copy()
    if not mark.any():
        return mark
    has_parent = p_in >= 0
    children_order = np.argsort(np.where(has_parent, p_in, n), kind="stable")
    counts = np.bincount(p_in[has_parent], minlength=n)
    starts = np.concatenate([[0], np.cumsum(counts)])
    frontier = np.flatnonzero(roots)
    while frontier.size:
        lo, hi = starts[frontier], starts[frontier + 1]
        lens = hi - lo
        idx = np.repeat(lo - np.cumsum(lens) + lens, lens) + np.arange(lens.sum())
        kids = children_order[idx]
        kids = kids[~mark[kids]]
        kids = np.unique(kids)
        mark[kids] = True
        frontier = kids
    return mark


@dataclass
class UpdateOracle:
    distances: np.ndarray
    parents: np.ndarray
    invalidated: int
    affected: int
    candidates: int
    packed: bool


def update_oracle(applied: AppliedBatch, k: int, source: int, d_in, p_in, max_weight: int) -> UpdateOracle:
    """The closed form of §5.12 (packed) or the canonical tree (distance-only), from first principles."""
    n = applied.row_ptr.shape[0] - 1
    d0 = np.full(n, INF, dtype=np.int64)
    p0 = np.full(n, -1, dtype=np.int64)
    d0[: d_in.shape[0]] = d_in
    p0[: p_in.shape[0]] = p_in
    unreach_in = d0 >= INF_HALF
    d0[unreach_in], p0[unreach_in] = INF, -1
    up = applied.weight_increased[:, k] if applied.weight_increased.size else np.zeros(0, dtype=bool)
    ins_src, ins_dst = applied.insert_src, applied.insert_dst
    changed_from = np.concatenate([applied.delete_src, ins_src[up]])
    changed_to = np.concatenate([applied.delete_dst, ins_dst[up]])
    F = invalidated_mask(p0, changed_from, changed_to)
    s0d = np.where(F, INF, d0)
    C = F.copy()
    C[ins_dst] = True
    C[source] = F[source]  # heads: the source is removed (§5.7)
    src, dst, w = edge_list(applied.row_ptr, applied.col_ind, applied.weights[:, k])
    dstar = dijkstra_distances(n, src, dst, w, source)
    packed = packs(max_weight, n)
    lowest = lowest_tight_parents(n, source, dstar, src, dst, w)
    if packed:
        improved = dstar < s0d
        low_in_I = lowest_tight_parents(n, source, dstar, src, dst, w, among=improved)
        parents = np.where(C | improved, lowest, p0)
        rest = ~(C | improved) & (low_in_I >= 0)
        parents[rest] = np.minimum(p0[rest], low_in_I[rest])
    else:
        parents = lowest.copy()
    parents[dstar >= INF] = -1
    parents[source] = -1
    affected = int(((dstar != d0) | (parents != p0)).sum())
    return UpdateOracle(dstar, parents, int(F.sum()), affected, int(C.sum()), packed)
