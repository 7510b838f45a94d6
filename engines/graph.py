"""The directed CSR graph with K objective-major weight columns (algorithm.md §3.1).

Arrays are never modified in place: a commit builds new arrays and publishes them at once, so a
failed apply leaves the graph as it was, a snapshot is a handful of references, and caches (the
in-CSR, the device mirrors) key on ``state_id``, which is unique per content state.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .batch import VERTEX_MAX, ApplyDelta, ApplySummary, Batch, apply_batch, check_weights, validate_for_graph
from .errors import InvalidArgumentError

INT32_MAX = (1 << 31) - 1
_state_ids = itertools.count(1)


class InEdges(NamedTuple):
    """The transpose of the graph with one weight column: in-edges of v are
    ``src[ptr[v]:ptr[v+1]]`` with weights ``weight[...]`` (row order is free, §3.1)."""

    ptr: np.ndarray
    src: np.ndarray
    weight: np.ndarray


@dataclass(frozen=True)
class GraphSnapshot:
    """A graph state to come back to (A/B rounds restore the pre-batch graph this way)."""

    row_ptr: np.ndarray
    col_ind: np.ndarray
    weights: np.ndarray
    version: int
    state_id: int


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _offset_dtype_for(num_edges: int, forced) -> np.dtype:
    if forced is not None:
        forced = np.dtype(forced)
        if forced not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise InvalidArgumentError(f"offset_dtype must be int32 or int64, got {forced}")
        if forced == np.int32 and num_edges > INT32_MAX:
            raise InvalidArgumentError(f"{num_edges} edges do not fit int32 offsets")
        return forced
    return np.dtype(np.int32) if num_edges <= INT32_MAX else np.dtype(np.int64)


def _weights_matrix(weights, num_edges: int) -> np.ndarray:
    """Per-edge weights ``(m, K)`` or ``(m,)`` -> objective-major ``(K, m)`` int32, checked."""
    raw = np.asarray(weights)
    if raw.ndim == 1:
        raw = raw.reshape(-1, 1)
    if raw.ndim != 2:
        raise InvalidArgumentError(f"weights must be (m, K) or (m,), got shape {np.shape(weights)}")
    if raw.shape[0] != num_edges:
        raise InvalidArgumentError(f"weights has {raw.shape[0]} rows but there are {num_edges} edges")
    if raw.shape[1] < 1:
        raise InvalidArgumentError("weights needs at least one column (K >= 1)")
    if raw.size and (raw.dtype == np.bool_ or not np.issubdtype(raw.dtype, np.integer)):
        if not (np.issubdtype(raw.dtype, np.floating) and np.all(raw == np.trunc(raw))):
            raise InvalidArgumentError(f"weights must be integers, got dtype {raw.dtype}")
    w = np.asarray(raw, dtype=np.int64) if raw.size else np.zeros(raw.shape, dtype=np.int64)
    check_weights(w, "weights")
    return np.ascontiguousarray(w.T, dtype=np.int32)


def _ids(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1:
        raise InvalidArgumentError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidArgumentError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    neg = arr < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise InvalidArgumentError(f"{name}[{i}] = {int(arr[i])} is a negative vertex id")
    return arr


class Graph:
    """A directed multigraph in compact CSR form with K int32 weight columns.

    Build it with :meth:`from_csr` or :meth:`from_edges`. Rows may hold parallel edges and
    self-loops in append order; distances and parents never depend on row order.
    """

    def __init__(self, row_ptr: np.ndarray, col_ind: np.ndarray, weights_km: np.ndarray, *,
                 offset_dtype=None, _version: int = 0):
        # Internal constructor: arguments already validated by from_csr / from_edges.
        self._forced_offset = None if offset_dtype is None else np.dtype(offset_dtype)
        self._version = _version
        self.device_cache: dict = {}  # device mirrors, owned by engines.sssp.cuda
        self._reuse = None  # see reuse_applied_batches()
        self._publish(row_ptr, col_ind, weights_km, next(_state_ids))

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_csr(cls, row_ptr, col_ind, weights, *, offset_dtype=None) -> "Graph":
        """A graph from CSR arrays; ``weights`` per edge, ``(m, K)`` or ``(m,)``."""
        ptr = _ids(row_ptr, "row_ptr")
        col = _ids(col_ind, "col_ind")
        if ptr.shape[0] < 1:
            raise InvalidArgumentError("row_ptr needs at least one entry (n + 1 offsets)")
        n = ptr.shape[0] - 1
        if n > VERTEX_MAX:
            raise InvalidArgumentError(f"{n} vertices do not fit int32 vertex ids")
        if ptr[0] != 0:
            raise InvalidArgumentError(f"row_ptr[0] = {int(ptr[0])}, expected 0")
        steps = np.diff(ptr)
        if (steps < 0).any():
            i = int(np.flatnonzero(steps < 0)[0])
            raise InvalidArgumentError(f"row_ptr decreases at row {i} ({int(ptr[i])} -> {int(ptr[i + 1])})")
        if ptr[-1] != col.shape[0]:
            raise InvalidArgumentError(
                f"row_ptr[-1] = {int(ptr[-1])} but col_ind has {col.shape[0]} entries (mismatched lengths)"
            )
        if col.shape[0] and col.max() >= n:
            i = int(np.flatnonzero(col >= n)[0])
            raise InvalidArgumentError(f"col_ind[{i}] = {int(col[i])} is not a vertex (n = {n})")
        w = _weights_matrix(weights, col.shape[0])
        return cls(ptr, col.astype(np.int32), w, offset_dtype=offset_dtype)

    @classmethod
    def from_edges(cls, src, dst, weights, *, num_vertices=None, symmetrize=False, offset_dtype=None) -> "Graph":
        """A graph from an edge list, input order kept within each row.

        ``symmetrize`` adds (v, u) with the same weights for every (u, v); self-loops once.
        """
        s = _ids(src, "src")
        d = _ids(dst, "dst")
        if s.shape != d.shape:
            raise InvalidArgumentError(f"src and dst differ in length ({s.shape[0]} vs {d.shape[0]})")
        w = _weights_matrix(weights, s.shape[0])
        top = int(max(s.max(), d.max())) + 1 if s.shape[0] else 0
        if num_vertices is None:
            n = top
        else:
            n = int(num_vertices)
            if n < top:
                raise InvalidArgumentError(f"num_vertices = {n} but an edge names vertex {top - 1}")
        if n > VERTEX_MAX:
            raise InvalidArgumentError(f"{n} vertices do not fit int32 vertex ids")
        if symmetrize:
            rev = s != d
            s, d = np.concatenate([s, d[rev]]), np.concatenate([d, s[rev]])
            w = np.concatenate([w, w[:, rev]], axis=1)
        order = np.argsort(s, kind="stable")
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(s, minlength=n), out=ptr[1:])
        return cls(ptr, d[order].astype(np.int32), np.ascontiguousarray(w[:, order]), offset_dtype=offset_dtype)

    # -- state --------------------------------------------------------------------------------

    def _publish(self, row_ptr, col_ind, weights_km, state_id: int) -> None:
        """Install a complete new state at once (the commit point of §3.3 step 6)."""
        m = int(col_ind.shape[0])
        off = _offset_dtype_for(m, self._forced_offset)
        self._row_ptr = _readonly(np.ascontiguousarray(row_ptr, dtype=off))
        self._col_ind = _readonly(np.ascontiguousarray(col_ind, dtype=np.int32))
        self._weights = _readonly(np.ascontiguousarray(weights_km, dtype=np.int32).reshape(-1))
        self._k = int(weights_km.shape[0])
        self._state_id = state_id
        self._cache: dict = {}

    @property
    def num_vertices(self) -> int:
        return int(self._row_ptr.shape[0] - 1)

    @property
    def num_edges(self) -> int:
        return int(self._col_ind.shape[0])

    @property
    def num_weights(self) -> int:
        return self._k

    @property
    def version(self) -> int:
        return self._version

    @property
    def state_id(self) -> int:
        return self._state_id

    @property
    def vertex_dtype(self) -> np.dtype:
        return np.dtype(np.int32)

    @property
    def offset_dtype(self) -> np.dtype:
        return self._row_ptr.dtype

    @property
    def row_ptr(self) -> np.ndarray:
        return self._row_ptr

    @property
    def col_ind(self) -> np.ndarray:
        return self._col_ind

    @property
    def weights(self) -> np.ndarray:
        """All weights, objective-major: column k of edge e is ``weights[k * m + e]``."""
        return self._weights

    def _check_objective(self, k: int) -> int:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= int(k) < self._k:
            raise InvalidArgumentError(f"objective {k!r} is out of range [0, {self._k})")
        return int(k)

    def weight_column(self, k: int) -> np.ndarray:
        k = self._check_objective(k)
        m = self.num_edges
        return self._weights[k * m:(k + 1) * m]

    def _cached(self, key, build):
        value = self._cache.get(key)
        if value is None:
            value = build()
            self._cache[key] = value
        return value

    def edge_sources(self) -> np.ndarray:
        """The tail of every edge in CSR order (int32), cached per state."""
        def build():
            lens = np.diff(self._row_ptr.astype(np.int64))
            return _readonly(np.repeat(np.arange(self.num_vertices, dtype=np.int32), lens))
        return self._cached("edge_sources", build)

    def _transpose(self):
        def build():
            order = np.argsort(self._col_ind, kind="stable")
            ptr = np.zeros(self.num_vertices + 1, dtype=np.int64)
            np.cumsum(np.bincount(self._col_ind, minlength=self.num_vertices), out=ptr[1:])
            return _readonly(order), _readonly(ptr.astype(self.offset_dtype)), _readonly(self.edge_sources()[order])
        return self._cached("transpose", build)

    def in_edges(self, k: int) -> InEdges:
        """The in-CSR with column-k weights, built on demand and cached per state."""
        k = self._check_objective(k)

        def build():
            order, ptr, src = self._transpose()
            return InEdges(ptr, src, _readonly(self.weight_column(k)[order]))
        return self._cached(("in_edges", k), build)

    def max_weight(self, k: int) -> int:
        col = self.weight_column(k)
        return self._cached(("max_weight", int(k)), lambda: int(col.max()) if col.shape[0] else 0)

    def weight_sum(self, k: int) -> int:
        col = self.weight_column(k)
        return self._cached(("weight_sum", int(k)), lambda: int(col.sum(dtype=np.int64)))

    # -- changes ------------------------------------------------------------------------------

    def apply(self, batch: Batch) -> tuple[ApplySummary, ApplyDelta]:
        """Apply a batch (§3.3): validate, build the new CSR completely, then commit.

        Results bound to this graph that are not passed through ``engines.sssp.update`` become
        stale, since the version moves on.
        """
        n_after = validate_for_graph(batch, self.num_vertices, self._k)
        memo = self._reuse
        if memo and memo["batch"] is batch and memo["from_state"] == self._state_id:
            # The same immutable batch on the same state gives the same arrays: publish them again
            # with the same state id, so caches and device mirrors of that state stay valid.
            self._publish(*memo["arrays"], memo["state_id"])
            self._cache = memo["cache"]
            self._version += 1
            return memo["summary"], memo["delta"]
        weights_km = self._weights.reshape(self._k, self.num_edges)
        from_state = self._state_id
        new, summary, delta = apply_batch(self._row_ptr, self._col_ind, weights_km, batch, n_after)
        self._publish(new.row_ptr, new.col_ind, new.weights, next(_state_ids))
        self._version += 1
        if memo is not None:
            memo.clear()
            memo.update(from_state=from_state, batch=batch, arrays=(new.row_ptr, new.col_ind, new.weights),
                        state_id=self._state_id, cache=self._cache, summary=summary, delta=delta)
        return summary, delta

    def reuse_applied_batches(self, enabled: bool = True) -> None:
        """Remember the last commit so that applying the same Batch object to the same state
        again (an A/B round after a restore) republishes its result instead of rebuilding it.

        Off by default. Results are unchanged (a batch is immutable and apply is a pure function of
        state and batch); only the host time of repeated applies goes away.
        """
        self._reuse = {} if enabled else None

    def snapshot(self) -> GraphSnapshot:
        k, m = self._k, self.num_edges
        return GraphSnapshot(self._row_ptr, self._col_ind, self._weights.reshape(k, m), self._version, self._state_id)

    def restore(self, snapshot: GraphSnapshot) -> None:
        """Return to a snapshot's arrays, version and state id (arrays are shared, never copied)."""
        if snapshot.state_id == self._state_id:
            return
        self._publish(snapshot.row_ptr, snapshot.col_ind, snapshot.weights, snapshot.state_id)
        self._version = snapshot.version

    def copy(self) -> "Graph":
        """An independent graph with the same content and version (arrays are immutable, so shared)."""
        g = Graph.__new__(Graph)
        g._forced_offset = self._forced_offset
        g._version = self._version
        g.device_cache = {}
        g._reuse = None
        g._publish(self._row_ptr, self._col_ind, self._weights.reshape(self._k, self.num_edges), self._state_id)
        return g

    def __repr__(self) -> str:
        return (f"Graph(n={self.num_vertices}, m={self.num_edges}, K={self._k}, version={self._version}, "
                f"offsets={self.offset_dtype})")


__all__ = ["Graph", "GraphSnapshot", "InEdges"]
