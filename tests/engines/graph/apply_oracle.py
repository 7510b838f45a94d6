"""Two oracles for ``engines.graph.host_apply``, written so that a wrong applier and a wrong oracle are
unlikely to agree.

- :class:`ListGraph` / :func:`list_apply`: per-row Python lists edited one change at a time,
  exactly as docs/algorithm.md §3.3 words it (each deletion in batch order removes the first (u, v)
  entry of row u; each insertion in batch order overwrites the first (u, v) entry of row u or
  appends). The in-rows start as the canonical transpose and are edited by the same words with the
  roles swapped. It does not use ``BatchEvents`` or anything else of ``engines`` beyond the batch's
  raw arrays.
- :func:`sorted_apply`: the previous host apply (it sorted all m entries per commit), kept
  verbatim as a second, structurally different oracle for the out side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.batch import ApplyDelta, ApplySummary, Batch


# -- the list oracle -----------------------------------------------------------------------------

@dataclass
class ListGraph:
    """``out[u]`` = list of ``[v, weights list]`` in row order; ``inn[v]`` = ``[u, weights]``."""

    out: list
    inn: list
    k: int

    @classmethod
    def from_csr(cls, row_ptr, col_ind, weights_km) -> "ListGraph":
        row_ptr = [int(x) for x in row_ptr]
        n = len(row_ptr) - 1
        k = int(np.asarray(weights_km).shape[0])
        w = np.asarray(weights_km)
        out = [[] for _ in range(n)]
        inn = [[] for _ in range(n)]
        for u in range(n):
            for e in range(row_ptr[u], row_ptr[u + 1]):
                out[u].append([int(col_ind[e]), [int(w[c, e]) for c in range(k)]])
        # canonical transpose: in-edges of v in out-edge index order
        for u in range(n):
            for v, ws in out[u]:
                inn[v].append([u, list(ws)])
        return cls(out, inn, k)

    def copy(self) -> "ListGraph":
        return ListGraph([[[v, list(w)] for v, w in row] for row in self.out],
                         [[[u, list(w)] for u, w in row] for row in self.inn], self.k)

    @property
    def n(self) -> int:
        return len(self.out)

    def arrays(self, side: str = "out"):
        """``(ptr int64, keys int32, weights int32 (K, m))`` of one side."""
        rows = self.out if side == "out" else self.inn
        ptr = [0]
        keys = []
        cols = [[] for _ in range(self.k)]
        for row in rows:
            for key, ws in row:
                keys.append(key)
                for c in range(self.k):
                    cols[c].append(ws[c])
            ptr.append(len(keys))
        return (np.array(ptr, dtype=np.int64), np.array(keys, dtype=np.int32),
                np.array(cols, dtype=np.int32).reshape(self.k, len(keys)))

    def scalars(self):
        """(max_weight, weight_sum) per column by a full scan."""
        mx = [0] * self.k
        sm = [0] * self.k
        for row in self.out:
            for _, ws in row:
                for c in range(self.k):
                    mx[c] = max(mx[c], ws[c])
                    sm[c] += ws[c]
        return tuple(mx), tuple(sm)


def _first(row, key):
    for idx, (x, _) in enumerate(row):
        if x == key:
            return idx
    return -1


@dataclass
class ListApply:
    graph: ListGraph
    summary: dict
    weight_increased: np.ndarray
    max_weight: tuple
    weight_sum: tuple


def list_apply(g: ListGraph, ins_src, ins_dst, ins_w, del_src, del_dst) -> ListApply:
    """algorithm.md §3.3 steps 2-6 and the classification, one change at a time; ``g`` is not
    modified."""
    old = g
    g = g.copy()
    k = g.k
    n_old = g.n
    ins_src = [int(x) for x in ins_src]
    ins_dst = [int(x) for x in ins_dst]
    ins_w = [[int(x) for x in row] for row in np.asarray(ins_w)] if ins_src else []
    n_after = max([n_old] + [1 + max(u, v) for u, v in zip(ins_src, ins_dst)])
    for _ in range(n_after - n_old):
        g.out.append([])
        g.inn.append([])
    deleted = ignored = inserted = updated = 0
    for u, v in zip(del_src, del_dst):
        u, v = int(u), int(v)
        if u >= n_after or v >= n_after:
            ignored += 1
            continue
        i = _first(g.out[u], v)
        j = _first(g.inn[v], u)
        assert (i < 0) == (j < 0)
        if i < 0:
            ignored += 1
            continue
        del g.out[u][i]
        del g.inn[v][j]
        deleted += 1
    for u, v, ws in zip(ins_src, ins_dst, ins_w):
        i = _first(g.out[u], v)
        j = _first(g.inn[v], u)
        assert (i < 0) == (j < 0)
        if i >= 0:
            g.out[u][i][1] = list(ws)
            g.inn[v][j][1] = list(ws)
            updated += 1
        else:
            g.out[u].append([v, list(ws)])
            g.inn[v].append([u, list(ws)])
            inserted += 1
    wi = np.zeros((len(ins_src), k), dtype=bool)
    for i, (u, v) in enumerate(zip(ins_src, ins_dst)):
        if u >= n_old:
            continue
        a = _first(old.out[u], v)
        b = _first(g.out[u], v)
        if a < 0 or b < 0:
            continue
        for c in range(k):
            wi[i, c] = g.out[u][b][1][c] > old.out[u][a][1][c]
    summary = dict(inserted_edges=inserted, updated_edges=updated, deleted_edges=deleted,
                   ignored_deletions=ignored, inserted_vertices=n_after - n_old,
                   num_vertices_after=n_after)
    mx, sm = g.scalars()
    return ListApply(g, summary, wi, mx, sm)


# -- the previous host apply (sorts all m entries), verbatim -------------------------------------

@dataclass(frozen=True, eq=False)
class AppliedCsr:
    """The new CSR built by :func:`sorted_apply`, not yet published."""

    row_ptr: np.ndarray  # int64, n_after + 1
    col_ind: np.ndarray  # int32
    weights: np.ndarray  # int32 (K, m_new)


def _first_in_groups(sorted_keys: np.ndarray) -> np.ndarray:
    """Boolean mask of the first element of each run of equal keys in a sorted array."""
    first = np.ones(sorted_keys.shape[0], dtype=bool)
    if sorted_keys.shape[0] > 1:
        first[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return first


def _rank_in_groups(sorted_keys: np.ndarray) -> np.ndarray:
    """0-based position of each element within its run of equal keys (sorted array)."""
    n = sorted_keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(_first_in_groups(sorted_keys))
    run_start = np.repeat(starts, np.diff(np.append(starts, n)))
    return np.arange(n, dtype=np.int64) - run_start


def sorted_apply(row_ptr: np.ndarray, col_ind: np.ndarray, weights: np.ndarray, batch: Batch,
                 n_after: int) -> tuple[AppliedCsr, ApplySummary, ApplyDelta]:
    """Apply ``batch`` to the CSR (``weights`` is ``(K, m)``) and classify every change.

    Pure function: the inputs are not modified, so a failure leaves the graph as it was.
    """
    n_old = row_ptr.shape[0] - 1
    m_old = col_ind.shape[0]
    k_cols = weights.shape[0]
    row_ptr64 = row_ptr.astype(np.int64, copy=False)
    row_len = np.diff(row_ptr64)
    edge_src = np.repeat(np.arange(n_old, dtype=np.int64), row_len)
    # One int64 key per (u, v) pair, ordered by row then column: u * n_after + v < 2^62.
    stride = np.int64(max(n_after, 1))
    old_keys = edge_src * stride + col_ind.astype(np.int64)
    # Stable: within one pair the copies stay in row (physical) order.
    order = np.argsort(old_keys, kind="stable")
    sorted_keys = old_keys[order]

    # Step 3: filter deletions naming ids beyond the grown vertex count.
    dsrc, ddst = batch.delete_src, batch.delete_dst
    in_range = (dsrc < n_after) & (ddst < n_after)
    ignored = int((~in_range).sum())
    dsrc, ddst = dsrc[in_range], ddst[in_range]

    # Step 4: the j-th deletion of a pair (batch order) removes the j-th copy in row order.
    alive = np.ones(m_old, dtype=bool)
    deleted = 0
    if dsrc.shape[0]:
        dkeys = dsrc * stride + ddst
        dorder = np.argsort(dkeys, kind="stable")
        drank = np.empty_like(dorder)
        drank[dorder] = _rank_in_groups(dkeys[dorder])
        left = np.searchsorted(sorted_keys, dkeys, side="left")
        right = np.searchsorted(sorted_keys, dkeys, side="right")
        hit = drank < (right - left)
        victims = order[left[hit] + drank[hit]]
        alive[victims] = False
        deleted = int(hit.sum())
        ignored += int((~hit).sum())

    # Step 5: upserts of the first alive copy, else one appended entry per new pair.
    isrc, idst = batch.insert_src, batch.insert_dst
    n_ins = isrc.shape[0]
    new_weights = weights[:, alive] if k_cols else np.zeros((0, int(alive.sum())), dtype=np.int32)
    survivor_index = np.cumsum(alive) - 1  # old edge index -> index among survivors
    weight_increased = np.zeros((n_ins, k_cols), dtype=bool)
    inserted = updated = 0
    app_src = np.zeros(0, dtype=np.int64)
    app_dst = np.zeros(0, dtype=np.int64)
    app_w = np.zeros((k_cols, 0), dtype=np.int32)
    if n_ins:
        ikeys = isrc * stride + idst
        iorder = np.argsort(ikeys, kind="stable")
        skeys = ikeys[iorder]
        group_first = _first_in_groups(skeys)
        group_last = np.append(group_first[1:], True)
        pair_keys = skeys[group_first]  # unique pairs, sorted
        last_ins = iorder[group_last]  # the last insertion of each pair wins
        pair_of_ins = np.empty(n_ins, dtype=np.int64)
        pair_of_ins[iorder] = np.cumsum(group_first) - 1
        pair_count = np.diff(np.append(np.flatnonzero(group_first), n_ins))
        # First alive old copy of each pair (copies are in row order inside `order`).
        alive_sorted = alive[order]
        akeys = sorted_keys[alive_sorted]
        aidx = order[alive_sorted]
        afirst = _first_in_groups(akeys)
        first_alive_key, first_alive_edge = akeys[afirst], aidx[afirst]
        pos = np.searchsorted(first_alive_key, pair_keys)
        pos_c = np.minimum(pos, max(first_alive_key.shape[0] - 1, 0))
        has_alive = np.zeros(pair_keys.shape[0], dtype=bool)
        if first_alive_key.shape[0]:
            has_alive = (pos < first_alive_key.shape[0]) & (first_alive_key[pos_c] == pair_keys)
        final_w = batch.insert_weights[last_ins].T.astype(np.int32)  # (K, pairs)
        # Upserts onto surviving old entries.
        tgt = survivor_index[first_alive_edge[pos_c[has_alive]]]
        new_weights[:, tgt] = final_w[:, has_alive]
        updated = int(pair_count[has_alive].sum())
        # Appends: one entry per new pair, in batch order of its first insertion.
        new_pairs = np.flatnonzero(~has_alive)
        first_ins = iorder[group_first][new_pairs]
        batch_order = np.argsort(first_ins, kind="stable")
        new_pairs, first_ins = new_pairs[batch_order], first_ins[batch_order]
        app_src, app_dst = isrc[first_ins], idst[first_ins]
        app_w = final_w[:, new_pairs]
        inserted = int(new_pairs.shape[0])
        updated += int((pair_count[new_pairs] - 1).sum())
        # weight_increased: first copy of G_t against first copy of G_{t+1}, per column.
        if k_cols and m_old:
            lo = np.searchsorted(sorted_keys, pair_keys, side="left")
            lo_c = np.minimum(lo, m_old - 1)
            existed = (lo < m_old) & (sorted_keys[lo_c] == pair_keys)
            old_first_w = weights[:, order[lo_c]]  # (K, pairs); meaningful where existed
            increased = existed[None, :] & (final_w > old_first_w)
            weight_increased = increased.T[pair_of_ins]

    # Step 6: the new CSR. Survivors keep their order; appended entries follow per row.
    alive_per_row = np.bincount(edge_src[alive], minlength=n_after) if m_old else np.zeros(n_after, dtype=np.int64)
    app_per_row = np.bincount(app_src, minlength=n_after) if app_src.shape[0] else np.zeros(n_after, dtype=np.int64)
    new_ptr = np.zeros(n_after + 1, dtype=np.int64)
    np.cumsum(alive_per_row + app_per_row, out=new_ptr[1:])
    m_new = int(new_ptr[-1])
    new_col = np.empty(m_new, dtype=np.int32)
    new_w = np.empty((k_cols, m_new), dtype=np.int32)
    s_src = edge_src[alive]
    s_rank = _rank_in_groups(s_src)  # survivors are in row order already
    s_pos = new_ptr[s_src] + s_rank
    new_col[s_pos] = col_ind[alive]
    new_w[:, s_pos] = new_weights
    if app_src.shape[0]:
        a_order = np.argsort(app_src, kind="stable")  # batch order within each row
        a_rank = np.empty_like(a_order)
        a_rank[a_order] = _rank_in_groups(app_src[a_order])
        a_pos = new_ptr[app_src] + alive_per_row[app_src] + a_rank
        new_col[a_pos] = app_dst
        new_w[:, a_pos] = app_w

    summary = ApplySummary(
        inserted_edges=inserted,
        updated_edges=updated,
        deleted_edges=deleted,
        ignored_deletions=ignored,
        inserted_vertices=int(n_after - n_old),
        num_vertices_after=int(n_after),
    )
    vt = np.int32
    delta = ApplyDelta(
        insert_src=isrc.astype(vt),
        insert_dst=idst.astype(vt),
        delete_src=dsrc.astype(vt),
        delete_dst=ddst.astype(vt),
        weight_increased=weight_increased,
        num_vertices_before=int(n_old),
        num_vertices_after=int(n_after),
    )
    for arr in (delta.insert_src, delta.insert_dst, delta.delete_src, delta.delete_dst, delta.weight_increased):
        arr.setflags(write=False)
    return AppliedCsr(new_ptr, new_col, new_w), summary, delta
