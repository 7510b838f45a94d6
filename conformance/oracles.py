"""Independent oracles (docs/algorithm.md §13 item 1): the one copy used by the engine tests and by the
golden corpus generator (``python -m conformance generate``), imported as ``conformance.oracles``; it
lived in ``tests/`` until issue 29 (production never imports ``tests``).

Nothing here imports ``engines``: every rule is re-implemented from the spec text, as simply as
possible (plain Python loops over per-row lists, SciPy's Dijkstra for distances), so that a wrong
engine and a wrong oracle are unlikely to agree.

Conventions: a graph state is a :class:`RefGraph` (per-row lists of ``(v, weights tuple)`` in row
order, exactly the compact CSR of docs/algorithm.md §3.1); distances are int64 with ``INF``; parents
int64 with -1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

INF = (1 << 61) - 1  # docs/algorithm.md §2: 2^61 - 1
INF_HALF = INF // 2
OUTPUT_MAX = INF_HALF - 1
WEIGHT_MAX = (1 << 31) - 1

# docs/algorithm.md §4.3 table, hard-coded from the spec: n -> largest W that still packs.
PACKING_TABLE = {
    65537: 2147483647,
    65538: 2147450880,
    131071: 1073758208,
    131072: 536875008,
    1000000: 17592203,
    1971281: 4462122,
}


# --------------------------------------------------------------------------------------------
# Packing rule (docs/algorithm.md §4.1-§4.3), written independently of engines.sssp.packing.
# --------------------------------------------------------------------------------------------


def oracle_parent_bits(n: int) -> int:
    """Smallest b >= 1 with 2^b - 1 >= n."""
    b = 1
    while 2**b - 1 < n:
        b += 1
    return b


def oracle_packed(n: int, w: int) -> bool:
    """D1: packed iff W * max(n-1, 1) <= 2^(64-b) - 2."""
    b = oracle_parent_bits(n)
    return max(int(w), 1) * max(n - 1, 1) <= 2 ** (64 - b) - 2


# --------------------------------------------------------------------------------------------
# Graph state and the reference apply (docs/algorithm.md §3.3)
# --------------------------------------------------------------------------------------------


@dataclass
class RefGraph:
    """A compact CSR as Python lists: ``rows[u]`` is a list of ``(v, (w_0, ..., w_{K-1}))``.

    Entries are immutable tuples: ref_apply copies only the rows a batch touches (shallowly) and
    shares the others with G_t, instead of copying the whole graph (golden cases have n = 65538)."""

    num_weights: int
    rows: list = field(default_factory=list)

    @property
    def num_vertices(self) -> int:
        return len(self.rows)

    @property
    def num_edges(self) -> int:
        return sum(len(r) for r in self.rows)

    @classmethod
    def from_edge_list(cls, n, src, dst, weights):
        """Rows in input order (what Graph.from_edges promises); weights (m, K)."""
        weights = np.asarray(weights, dtype=np.int64)
        if weights.ndim == 1:
            weights = weights[:, None]
        rows = [[] for _ in range(n)]
        for u, v, w in zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), map(tuple, weights.tolist())):
            rows[u].append((v, w))
        return cls(num_weights=weights.shape[1], rows=rows)

    @classmethod
    def from_csr(cls, row_ptr, col_ind, weights_objective_major, num_weights):
        """Weights flat objective-major (K * m), as the engines' Graph stores them."""
        row_ptr = np.asarray(row_ptr, dtype=np.int64)
        n = row_ptr.shape[0] - 1
        src = np.repeat(np.arange(n), np.diff(row_ptr))  # CSR order is row order
        w = np.asarray(weights_objective_major, dtype=np.int64).reshape(num_weights, -1).T
        return cls.from_edge_list(n, src, np.asarray(col_ind, dtype=np.int64), w)

    def __post_init__(self):
        self._edge_cache = {}

    def csr(self):
        """(row_ptr int64, col_ind int64, weights int64 objective-major flat K*m)."""
        lengths = [len(r) for r in self.rows]
        row_ptr = np.zeros(len(self.rows) + 1, dtype=np.int64)
        row_ptr[1:] = np.cumsum(lengths)
        col = [v for row in self.rows for v, _ in row]
        w = [wt for row in self.rows for _, wt in row]
        col_ind = np.array(col, dtype=np.int64)
        wmat = np.array(w, dtype=np.int64).reshape(len(w), self.num_weights)
        return row_ptr, col_ind, np.ascontiguousarray(wmat.T).reshape(-1)

    def edges(self, k: int = 0):
        """(src, dst, w) int64 arrays of column k, in CSR order (cached: a RefGraph is not
        modified once built; ref_apply builds a new one)."""
        cache = self.__dict__.setdefault("_edge_cache", {})
        if k not in cache:
            lengths = [len(r) for r in self.rows]
            src = np.repeat(np.arange(len(self.rows), dtype=np.int64), lengths)
            dst = np.array([v for row in self.rows for v, _ in row], dtype=np.int64)
            w = np.array([wt[k] for row in self.rows for _, wt in row], dtype=np.int64)
            for a in (src, dst, w):
                a.setflags(write=False)
            cache[k] = (src, dst, w)
        return cache[k]

    def max_weight(self, k: int) -> int:
        w = self.edges(k)[2]
        return int(w.max()) if w.size else 0

    def first_weight(self, u: int, v: int):
        """Weights of the first (u,v) entry of row u, or None."""
        if u >= len(self.rows):
            return None
        for x, w in self.rows[u]:
            if x == v:
                return w
        return None


@dataclass
class RefApply:
    graph: RefGraph  # G_{t+1}
    graph_before: RefGraph  # G_t, untouched
    insert_weights: np.ndarray  # (num_insertions, K) int64, batch order
    summary: dict
    insert_src: np.ndarray
    insert_dst: np.ndarray
    delete_src: np.ndarray
    delete_dst: np.ndarray
    weight_increased: np.ndarray
    num_vertices_before: int
    num_vertices_after: int


def ref_apply(g: RefGraph, ins_src, ins_dst, ins_w, del_src, del_dst) -> RefApply:
    """docs/algorithm.md §3.3 step by step with Python lists; the input batch is assumed valid."""
    ins_src = [int(x) for x in np.asarray(ins_src).reshape(-1)]
    ins_dst = [int(x) for x in np.asarray(ins_dst).reshape(-1)]
    del_src = [int(x) for x in np.asarray(del_src).reshape(-1)]
    del_dst = [int(x) for x in np.asarray(del_dst).reshape(-1)]
    K = g.num_weights
    insert_weights = np.asarray(ins_w, dtype=np.int64).reshape(len(ins_src), K)
    ins_w = [tuple(r) for r in insert_weights.tolist()]

    n_old = g.num_vertices
    n_after = max([n_old] + [1 + x for x in ins_src + ins_dst])
    # G_{t+1} copies the rows the batch may touch and shares the others with g, which is safe
    # because a RefGraph is never modified once built (and cheap on graphs with many rows).
    rows = g.rows + [[] for _ in range(n_after - n_old)]
    for u in {u for u in del_src + ins_src if u < n_old}:
        rows[u] = list(rows[u])
    new = RefGraph(K, rows)

    deleted = ignored = inserted = updated = 0
    passed_src, passed_dst = [], []
    # Step 3: filtering
    for u, v in zip(del_src, del_dst):
        if u >= n_after or v >= n_after:
            ignored += 1
            continue
        passed_src.append(u)
        passed_dst.append(v)
    # Step 4: deletions first, batch order (per row order is the same as global batch order)
    for u, v in zip(passed_src, passed_dst):
        row = new.rows[u]
        for j, (x, _) in enumerate(row):
            if x == v:
                del row[j]
                deleted += 1
                break
        else:
            ignored += 1  # missing deletion: counted, still listed
    # Step 5: insertions, upsert of the first alive copy
    for u, v, w in zip(ins_src, ins_dst, ins_w):
        row = new.rows[u]
        for j, (x, _) in enumerate(row):
            if x == v:
                row[j] = (v, tuple(w))
                updated += 1
                break
        else:
            row.append((v, tuple(w)))
            inserted += 1

    wi = np.zeros((len(ins_src), K), dtype=bool)
    for i, (u, v) in enumerate(zip(ins_src, ins_dst)):
        if u >= n_old:
            continue
        old = g.first_weight(u, v)
        now = new.first_weight(u, v)
        if old is None or now is None:
            continue
        for k in range(K):
            wi[i, k] = now[k] > old[k]

    summary = dict(
        inserted_edges=inserted,
        updated_edges=updated,
        deleted_edges=deleted,
        ignored_deletions=ignored,
        inserted_vertices=n_after - n_old,
        num_vertices_after=n_after,
    )
    return RefApply(
        graph=new,
        graph_before=g,
        insert_weights=insert_weights,
        summary=summary,
        insert_src=np.array(ins_src, dtype=np.int64),
        insert_dst=np.array(ins_dst, dtype=np.int64),
        delete_src=np.array(passed_src, dtype=np.int64),
        delete_dst=np.array(passed_dst, dtype=np.int64),
        weight_increased=wi,
        num_vertices_before=n_old,
        num_vertices_after=n_after,
    )


def update_max_weight(g_old: RefGraph, ins_w, k: int) -> int:
    """docs/algorithm.md §3.5 W: max(1, column max of G_t, every insertion's column-k weight)."""
    ins_w = np.asarray(ins_w, dtype=np.int64)
    w = max(1, g_old.max_weight(k))
    if ins_w.size:
        w = max(w, int(ins_w.reshape(ins_w.shape[0], -1)[:, k].max()))
    return w


# --------------------------------------------------------------------------------------------
# Distances, tight parents and trees (docs/algorithm.md §2, §13 items 1 and 4)
# --------------------------------------------------------------------------------------------

FLOAT_EXACT = 2**53  # SciPy's Dijkstra sums in float64: every integer below this is exact


def min_weight_pairs(n, src, dst, w):
    """Per-pair minima without self-loops: (u, v, w) unique pairs."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    keep = src != dst
    src, dst, w = src[keep], dst[keep], w[keep]
    if src.size == 0:
        return src, dst, w
    order = np.lexsort((w, dst, src))
    src, dst, w = src[order], dst[order], w[order]
    first = np.ones(src.size, dtype=bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    return src[first], dst[first], w[first]


def dijkstra_distances(n: int, src, dst, w, source: int) -> np.ndarray:
    """D* with SciPy on the min-weight simple graph; INF where unreachable (int64).

    Raises OverflowError unless every finite distance is below 2^53: only then is each float sum
    SciPy formed on the way exact (a sum that reaches 2^53 stays at or above it, so it can neither
    win nor hide a distance below it). Checked on the result, not on W * (n - 1), so that large
    graphs with small distances stay usable.
    """
    u, v, ww = min_weight_pairs(n, src, dst, w)
    mat = sp.csr_matrix((ww.astype(np.float64), (u, v)), shape=(n, n))
    d = dijkstra(mat, directed=True, indices=source)
    out = np.full(n, INF, dtype=np.int64)
    fin = np.isfinite(d)
    if fin.any() and d[fin].max() >= FLOAT_EXACT:
        raise OverflowError("a distance reaches 2^53: SciPy's float64 Dijkstra may have rounded")
    out[fin] = np.rint(d[fin]).astype(np.int64)
    return out


def tight_mask(dist, src, dst, w):
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    du = dist[src]
    fin = du < INF
    return fin & (np.where(fin, du, 0) + w == dist[dst])


def lowest_tight_parent(n, dist, src, dst, w, *, among=None):
    """Per vertex, the lowest-id tight in-neighbour (restricted to mask ``among`` if given); -1 if none."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    t = tight_mask(dist, src, dst, w)
    if among is not None:
        t &= among[src]
    best = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, dst[t], src[t])
    best[best == np.iinfo(np.int64).max] = -1
    return best


def canonical_parents(n, source, dist, src, dst, w):
    """Lowest-id tight in-neighbour of each reachable non-source vertex, -1 elsewhere."""
    p = lowest_tight_parent(n, dist, src, dst, w)
    p[source] = -1
    p[dist >= INF] = -1
    return p


def canonical_tree(n, source, src, dst, w):
    """(D*, canonical parents)."""
    d = dijkstra_distances(n, src, dst, w, source)
    return d, canonical_parents(n, source, d, src, dst, w)


def is_valid_tree(n, source, dist, parents, src, dst, w) -> str | None:
    """None if (dist, parents) is a valid shortest-path tree (docs/algorithm.md §2), else the first problem found.

    Valid: Dijkstra's distances, no parent for the source and the unreachable vertices, and for
    every other vertex a parent u with a tight edge (u, v) (any of them, not only the lowest).
    """
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
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    tight = tight_mask(dist, src, dst, w)
    tight_pairs = src[tight] * (n + 1) + dst[tight]  # one int64 key per (u, v)
    need = np.flatnonzero(~unreach & (np.arange(n) != source))
    bad = need[~np.isin(parents[need] * (n + 1) + need, tight_pairs)]
    if bad.size:
        return f"parent {int(parents[bad[0]])} of vertex {int(bad[0])} is not a tight in-neighbour"
    return None


def perturbed_parents(rng, n, source, dist, src, dst, w):
    """A valid tree with each parent a uniformly random tight in-neighbour (non-canonical).

    Draws exactly one random number per tight edge into a non-source vertex: the golden corpus
    depends on this stream staying the same.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    t = tight_mask(dist, src, dst, w) & (dst != source)
    ts, td = src[t], dst[t]
    keys = rng.random(ts.size)
    order = np.lexsort((keys, td))
    ts, td = ts[order], td[order]
    p = np.full(n, -1, dtype=np.int64)
    if td.size:
        first = np.ones(td.size, dtype=bool)
        first[1:] = td[1:] != td[:-1]
        p[td[first]] = ts[first]
    p[source] = -1
    return p


# --------------------------------------------------------------------------------------------
# Change lists, invalidation and the closed form of docs/algorithm.md §5.12
# --------------------------------------------------------------------------------------------


def change_lists(app: RefApply, k: int):
    """docs/algorithm.md §3.4: (changed_from, changed_to, heads)."""
    inc = app.weight_increased[:, k] if app.weight_increased.size else np.zeros(0, dtype=bool)
    cf = np.concatenate([app.delete_src, app.insert_src[inc]]).astype(np.int64)
    ct = np.concatenate([app.delete_dst, app.insert_dst[inc]]).astype(np.int64)
    return cf, ct, app.insert_dst.astype(np.int64)


class RootlessCycle(Exception):
    pass


def invalidated_set(p_in, changed_from, changed_to):
    """Union of the old-tree subtrees of the roots (docs/algorithm.md §5.5 determinism), as a bool mask.

    Raises RootlessCycle when the changed list is non-empty and P_in has a cycle without a root.
    """
    p_in = [int(x) for x in p_in]
    n = len(p_in)
    if len(changed_to) == 0:
        return np.zeros(n, dtype=bool)
    roots = set()
    for f, t in zip(changed_from.tolist(), changed_to.tolist()):
        if p_in[t] == f:
            roots.add(t)
    undecided, flagged, clean, on_path = 0, 1, 2, 3
    state = [undecided] * n
    for v in range(n):
        # walk up from v until the chain ends, reaches a decided vertex or a root, or loops
        path = []
        x = v
        while x != -1 and state[x] == undecided and x not in roots:
            state[x] = on_path
            path.append(x)
            x = p_in[x]
        if x == -1:
            result = clean
        elif state[x] == on_path:
            raise RootlessCycle(f"cycle through vertex {x}")
        elif state[x] == undecided:  # a root, reached for the first time
            result = flagged
            path.append(x)
        else:
            result = state[x]
        for y in path:
            state[y] = result
    return np.array(state) == flagged


def grow(d_in, p_in, n):
    d = np.full(n, INF, dtype=np.int64)
    p = np.full(n, -1, dtype=np.int64)
    d[: len(d_in)] = d_in
    p[: len(p_in)] = p_in
    d[d >= INF_HALF] = INF
    return d, p


def candidates_mask(flagged, heads, source):
    """C of docs/algorithm.md §5.12: the invalidated vertices plus the non-source insertion heads
    (docs/algorithm.md §5.7)."""
    cand = flagged.copy()
    heads = np.asarray(heads, dtype=np.int64)
    cand[heads[heads != source]] = True
    return cand


def closed_form(n, source, src, dst, w, d_star, d_in, p_in, flagged, heads, packed):
    """docs/algorithm.md §5.12 closed form from D*, S0, C, I; returns (D, P) int64."""
    d_in, p_in = grow(d_in, p_in, n)
    canon = lowest_tight_parent(n, d_star, src, dst, w)
    out_d = d_star.copy()
    out_p = np.full(n, -1, dtype=np.int64)
    reach = d_star < INF
    if not packed:
        out_p[reach] = canon[reach]
        out_p[source] = -1
        out_d[source] = 0
        return out_d, out_p
    s0 = np.where(flagged, INF, d_in)
    cand = candidates_mask(flagged, heads, source)
    improve = d_star < s0
    low_in_i = lowest_tight_parent(n, d_star, src, dst, w, among=improve)
    for v in range(n):
        if v == source:
            out_p[v] = -1
            out_d[v] = 0
        elif not reach[v]:
            out_p[v] = -1
        elif cand[v] or improve[v]:
            out_p[v] = canon[v]
        else:
            p = int(p_in[v])
            q = int(low_in_i[v])
            out_p[v] = p if q < 0 else min(p, q)
    return out_d, out_p


def affected_count(d_in, p_in, d_out, p_out):
    n = len(d_out)
    d_in, p_in = grow(d_in, p_in, n)
    return int(np.count_nonzero((d_in != d_out) | (p_in != p_out)))


@dataclass
class ExpectedUpdate:
    """Everything update() must return for one result, derived from the spec alone."""

    distances: np.ndarray  # int64
    parents: np.ndarray  # int64, -1 for none
    invalidated: int  # |F|
    candidates: int  # |C|
    affected: int
    packed: bool  # docs/algorithm.md §4.3 with W of docs/algorithm.md §3.5


def expected_update(app: RefApply, k: int, source: int, d_in, p_in) -> ExpectedUpdate:
    """The update of (d_in, p_in) over the batch ``app`` on objective k: D* by Dijkstra on
    G_{t+1}, F from the change lists, packing from W of G_t and the insertions, then docs/algorithm.md §5.12."""
    n = app.num_vertices_after
    src, dst, w = app.graph.edges(k)
    d_star = dijkstra_distances(n, src, dst, w, source)
    changed_from, changed_to, heads = change_lists(app, k)
    flagged = invalidated_set(grow(d_in, p_in, n)[1], changed_from, changed_to)
    packed = oracle_packed(n, update_max_weight(app.graph_before, app.insert_weights, k))
    d, p = closed_form(n, source, src, dst, w, d_star, d_in, p_in, flagged, heads, packed)
    return ExpectedUpdate(
        distances=d,
        parents=p,
        invalidated=int(flagged.sum()),
        candidates=int(candidates_mask(flagged, heads, source).sum()),
        affected=affected_count(d_in, p_in, d, p),
        packed=packed,
    )
