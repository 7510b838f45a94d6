"""Batches of edge changes and their application to a CSR graph (algorithm.md §3.2-§3.3).

The semantics are dynG's MOSP-compatible defaults (D3): deletions first, each removing the first
alive copy of its pair; an insertion of an existing pair overwrites (upserts) the first alive copy;
new pairs are appended to their row in batch order; self-loops are kept; the vertex count grows to
cover every insertion id; missing deletions are counted and still listed as changed edges.

Everything is vectorized with NumPy: a 50,000-change batch on a graph of millions of edges applies
in well under a second, because each step is a sort, a search or a scatter over whole arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InvalidArgumentError, NotSupportedError

WEIGHT_MAX = (1 << 31) - 1
VERTEX_MAX = (1 << 31) - 1  # int32 vertex ids; the largest id is VERTEX_MAX - 1 so n fits too


def _as_int_array(values, name: str, ndim: int) -> np.ndarray:
    """Copy an array-like into an int64 array, rejecting non-integers with a clear message."""
    arr = np.asarray(values)
    if arr.size == 0:
        shape = arr.shape if arr.ndim == ndim else (0,) * ndim
        if ndim == 2 and arr.ndim == 2:
            shape = arr.shape
        return np.zeros(shape, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.trunc(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InvalidArgumentError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise InvalidArgumentError(f"{name} holds a value above the int64 range")
    arr = np.array(arr, dtype=np.int64, copy=True)
    if arr.ndim != ndim:
        raise InvalidArgumentError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    return arr


def check_weights(weights: np.ndarray, name: str) -> None:
    """Weights are integers in [1, 2^31 - 1]; name the first offending entry otherwise."""
    if weights.size == 0:
        return
    bad = (weights < 1) | (weights > WEIGHT_MAX)
    if bad.any():
        idx = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), weights.shape)
        raise InvalidArgumentError(
            f"{name}{list(idx)} = {int(weights[idx])} is outside the weight range [1, {WEIGHT_MAX}]"
        )


def check_ids(ids: np.ndarray, name: str) -> None:
    """Vertex ids are >= 0 and fit the int32 vertex type."""
    if ids.size == 0:
        return
    neg = ids < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise InvalidArgumentError(f"{name}[{i}] = {int(ids[i])} is a negative vertex id")
    big = ids >= VERTEX_MAX
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise InvalidArgumentError(
            f"{name}[{i}] = {int(ids[i])} does not fit the int32 vertex type (ids < {VERTEX_MAX})"
        )


class Batch:
    """A batch of edge insertions (upserts) and deletions; immutable once built.

    ``insert_weights`` is ``(num_insertions, K)`` (1-D allowed for K = 1). A weight change is an
    insertion of an existing pair. Value rules (integer ids >= 0, weights in [1, 2^31 - 1]) are
    checked here; graph-dependent rules (K, ids fitting after growth) when applied.
    """

    __slots__ = ("insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst", "_k")

    def __init__(self, insert_src=(), insert_dst=(), insert_weights=None, delete_src=(), delete_dst=(),
                 *, delete_vertices=None):
        if delete_vertices is not None and np.asarray(delete_vertices).size:
            raise NotSupportedError("vertex deletions are not supported; delete the vertex's edges instead")
        isrc = _as_int_array(insert_src, "insert_src", 1)
        idst = _as_int_array(insert_dst, "insert_dst", 1)
        if isrc.shape != idst.shape:
            raise InvalidArgumentError(
                f"insert_src and insert_dst differ in length ({isrc.shape[0]} vs {idst.shape[0]})"
            )
        n_ins = isrc.shape[0]
        if insert_weights is None:
            if n_ins:
                raise InvalidArgumentError("insert_weights is required when the batch has insertions")
            w = np.zeros((0, 0), dtype=np.int64)
            k = None
        else:
            raw = np.asarray(insert_weights)
            if raw.ndim == 1:
                w = _as_int_array(raw, "insert_weights", 1).reshape(-1, 1)
                k = 1 if raw.size or n_ins else None
            elif raw.ndim == 2:
                w = _as_int_array(raw, "insert_weights", 2)
                k = int(w.shape[1])
            else:
                raise InvalidArgumentError(
                    f"insert_weights must be (num_insertions, K) or 1-D, got shape {raw.shape}"
                )
            if w.shape[0] != n_ins:
                raise InvalidArgumentError(
                    f"insert_weights has {w.shape[0]} rows but the batch has {n_ins} insertions"
                )
            if n_ins and w.shape[1] < 1:
                raise InvalidArgumentError("insert_weights needs at least one weight column")
        dsrc = _as_int_array(delete_src, "delete_src", 1)
        ddst = _as_int_array(delete_dst, "delete_dst", 1)
        if dsrc.shape != ddst.shape:
            raise InvalidArgumentError(
                f"delete_src and delete_dst differ in length ({dsrc.shape[0]} vs {ddst.shape[0]})"
            )
        for arr, name in ((isrc, "insert_src"), (idst, "insert_dst"), (dsrc, "delete_src"), (ddst, "delete_dst")):
            check_ids(arr, name)
        check_weights(w, "insert_weights")
        for arr in (isrc, idst, w, dsrc, ddst):
            arr.setflags(write=False)
        self.insert_src, self.insert_dst, self.insert_weights = isrc, idst, w
        self.delete_src, self.delete_dst = dsrc, ddst
        self._k = k

    @classmethod
    def empty(cls, num_weights: int = 1) -> "Batch":
        return cls([], [], np.zeros((0, num_weights), dtype=np.int64), [], [])

    @property
    def num_insertions(self) -> int:
        return int(self.insert_src.shape[0])

    @property
    def num_deletions(self) -> int:
        return int(self.delete_src.shape[0])

    @property
    def num_weights(self) -> int | None:
        """K of ``insert_weights``; None for a batch whose weights carry no column count."""
        return self._k

    def __len__(self) -> int:
        return self.num_insertions + self.num_deletions

    def __repr__(self) -> str:
        return f"Batch(insertions={self.num_insertions}, deletions={self.num_deletions}, K={self._k})"


@dataclass(frozen=True)
class ApplySummary:
    """Counters of one commit (§3.3)."""

    inserted_edges: int
    updated_edges: int
    deleted_edges: int
    ignored_deletions: int
    inserted_vertices: int
    num_vertices_after: int


@dataclass(frozen=True, eq=False)
class ApplyDelta:
    """The per-edge classification of one commit, the input of the algorithm (§3.3)."""

    insert_src: np.ndarray
    insert_dst: np.ndarray
    delete_src: np.ndarray
    delete_dst: np.ndarray
    weight_increased: np.ndarray  # bool (num_insertions, K)
    num_vertices_before: int
    num_vertices_after: int


@dataclass(frozen=True)
class AppliedCsr:
    """The new CSR built by :func:`apply_batch`, not yet published."""

    row_ptr: np.ndarray  # int64, n_after + 1
    col_ind: np.ndarray  # int32
    weights: np.ndarray  # int32 (K, m_new)


def validate_for_graph(batch: Batch, num_vertices: int, num_weights: int) -> int:
    """Graph-dependent checks (§3.3 step 1); returns n_after. Raises before anything changes."""
    if not isinstance(batch, Batch):
        raise InvalidArgumentError(f"expected an engines.Batch, got {type(batch).__name__}")
    if batch.num_insertions:
        if batch.num_weights != num_weights:
            raise InvalidArgumentError(
                f"the batch carries {batch.num_weights} weight columns but the graph has {num_weights}"
            )
        top = int(max(batch.insert_src.max(), batch.insert_dst.max()))
        if top + 1 > VERTEX_MAX:
            raise InvalidArgumentError(f"insertion id {top} makes the vertex count overflow int32")
        return max(int(num_vertices), top + 1)
    return int(num_vertices)


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


def apply_batch(row_ptr: np.ndarray, col_ind: np.ndarray, weights: np.ndarray, batch: Batch,
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


__all__ = ["Batch", "ApplySummary", "ApplyDelta", "AppliedCsr", "apply_batch", "validate_for_graph"]
