"""Batches of edge changes, their validation and the event list both appliers consume
(docs/algorithm.md §3.2-§3.3).

The semantics are dynG's MOSP-compatible defaults (D3): deletions first, each removing the first
alive copy of its pair; an insertion of an existing pair overwrites (upserts) the first alive copy;
new pairs are appended to their row in batch order; self-loops are kept; the vertex count grows to
cover every insertion id; missing deletions are counted and still listed as changed edges.

A batch reaches an applier as :class:`BatchEvents`: one list of ``L = D + I`` events, the ``D``
in-range deletions in batch order followed by the ``I`` insertions in batch order. Both appliers
(the host one, ``engines.graph.host_apply``, and the device one, ``engines.graph.device_apply``) walk
each row's events in this order, so "deletions first, then insertions, batch order within a row"
is one fact of this list, not a rule each applier re-implements. Building it is O(batch).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arguments import VERTEX_MAX, as_array, beyond_int64, integer_dtype, weight_matrix
from .errors import InvalidArgumentError, NotSupportedError

#: ``np.maximum.reduce`` / ``np.minimum.reduce``: the reductions ``ndarray.max`` / ``min`` end in,
#: without their Python wrappers.
_reduce_max = np.maximum.reduce
_reduce_min = np.minimum.reduce


def _filled(cls, **fields):
    """An instance of the frozen dataclass ``cls`` as its constructor builds it (``fields``, every
    field in field order, in the instance dictionary: equality, hash and repr are the
    dataclass's), without the frozen ``__init__``'s one ``object.__setattr__`` per field (about a
    microsecond on a small update's path, which makes a BatchEvents and an ApplySummary)."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def _as_int_array(values, name: str, ndim: int) -> np.ndarray:
    """Copy an array-like into an int64 array, rejecting non-integers with a clear message."""
    arr = as_array(values, name, "a flat sequence of integers (vertex ids)")
    if arr.size == 0:
        shape = arr.shape if arr.ndim == ndim else (0,) * ndim
        if ndim == 2 and arr.ndim == 2:
            shape = arr.shape
        return np.zeros(shape, dtype=np.int64)
    if arr.ndim != ndim:
        raise InvalidArgumentError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if not integer_dtype(arr.dtype):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.trunc(arr)):
            # the range before the cast: a float beyond int64 (1e19) would wrap to -2^63 in it and be
            # reported as that negative id; in float64, which holds the limit (float16 does not)
            arr = arr.astype(np.float64)
            check_ids(arr, name)
            arr = arr.astype(np.int64)
        else:
            raise InvalidArgumentError(f"{name} must hold integers, got dtype {arr.dtype}")
    if beyond_int64(arr) is not None:
        raise InvalidArgumentError(f"{name} holds a value above the int64 range")
    return np.array(arr, dtype=np.int64, copy=True)


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


def _checked_top(ids: np.ndarray, name: str) -> int:
    """The largest id of ``ids`` (-1 for none), after ``check_ids``' rule: two reductions, and the
    masks that name the first bad id only when one is out of range."""
    if ids.size == 0:
        return -1
    top = int(_reduce_max(ids))
    if top >= VERTEX_MAX or int(_reduce_min(ids)) < 0:
        check_ids(ids, name)  # raises, naming the first negative id, else the first too large
    return top


class Batch:
    """A batch of edge insertions (upserts) and deletions; immutable once built.

    ``insert_weights`` is ``(num_insertions, K)`` (1-D allowed for K = 1). A weight change is an
    insertion of an existing pair. Value rules (integer ids >= 0, weights in [1, 2^31 - 1]) are
    checked here; graph-dependent rules (K, ids fitting after growth) when applied.
    """

    # _top_insert / _top_delete: the largest id of the insertions / deletions (-1 for none), found
    # by the id checks here, so that applying the batch to a graph (batch_events: the vertex count
    # after it, the deletions that fall out of range) reads them instead of reducing the arrays again
    __slots__ = ("insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst", "_k", "_top_insert",
                 "_top_delete")

    def __init__(self, insert_src=(), insert_dst=(), insert_weights=None, delete_src=(), delete_dst=(),
                 *, delete_vertices=None):
        asked = None if delete_vertices is None else as_array(delete_vertices, "delete_vertices", "vertex ids")
        if asked is not None and asked.size:
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
            shape = np.shape(as_array(insert_weights, "insert_weights",
                                      "a (num_insertions, K) or (num_insertions,) array of integers"))
            if n_ins == 0 and len(shape) == 2 and shape[1] == 0:
                w = np.zeros((0, 0), dtype=np.int64)  # no insertions and no column: K unknown
            else:
                w = weight_matrix(insert_weights, "insert_weights", n_ins, f"the batch has {n_ins} insertions",
                                  "(num_insertions, K) or (num_insertions,)")
            # K is known from a 2-D array, or from 1-D weights that are not empty
            k = int(w.shape[1]) if len(shape) == 2 or n_ins else None
        dsrc = _as_int_array(delete_src, "delete_src", 1)
        ddst = _as_int_array(delete_dst, "delete_dst", 1)
        if dsrc.shape != ddst.shape:
            raise InvalidArgumentError(
                f"delete_src and delete_dst differ in length ({dsrc.shape[0]} vs {ddst.shape[0]})"
            )
        tops = [_checked_top(arr, name) for arr, name in ((isrc, "insert_src"), (idst, "insert_dst"),
                                                          (dsrc, "delete_src"), (ddst, "delete_dst"))]
        for arr in (isrc, idst, w, dsrc, ddst):
            arr.setflags(write=False)
        fields = dict(insert_src=isrc, insert_dst=idst, insert_weights=w, delete_src=dsrc, delete_dst=ddst, _k=k,
                      _top_insert=max(tops[0], tops[1]), _top_delete=max(tops[2], tops[3]))
        for name, value in fields.items():
            object.__setattr__(self, name, value)  # past __setattr__, which refuses every assignment

    def __setattr__(self, name, value):
        # the checks above are the only ones: the appliers trust these arrays, and a negative id
        # set afterwards reached the host applier's kernels and committed a corrupt graph
        raise AttributeError(f"a Batch is immutable; build a new Batch instead of setting {name}")

    def __delattr__(self, name):
        raise AttributeError(f"a Batch is immutable; {name} cannot be deleted")

    def __reduce__(self):
        # copies and pickles are rebuilt (and checked again) by __init__: slot assignment is refused
        weights = None if self._k is None else self.insert_weights  # no column count stays none
        return Batch, (self.insert_src, self.insert_dst, weights, self.delete_src, self.delete_dst)

    @classmethod
    def empty(cls, num_weights: int = 1) -> "Batch":
        # checked here: np.zeros raised its bare ValueError for a negative count, TypeError for text
        if isinstance(num_weights, bool) or not isinstance(num_weights, (int, np.integer)) or num_weights < 0:
            raise InvalidArgumentError(f"num_weights must be an integer >= 0, got {num_weights!r}")
        return cls([], [], np.zeros((0, int(num_weights)), dtype=np.int64), [], [])

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
    """Counters of one commit (algorithm.md §3.3)."""

    inserted_edges: int
    updated_edges: int
    deleted_edges: int
    ignored_deletions: int
    inserted_vertices: int
    num_vertices_after: int


def apply_summary(inserted, updated, deleted, ignored, inserted_vertices, vertices_after) -> ApplySummary:
    """An ``ApplySummary`` built the fast way (``_filled``): every device commit's record makes one
    (engines/graph/device_apply.py)."""
    return _filled(ApplySummary, inserted_edges=inserted, updated_edges=updated, deleted_edges=deleted,
                   ignored_deletions=ignored, inserted_vertices=inserted_vertices, num_vertices_after=vertices_after)


@dataclass(frozen=True, eq=False)
class ApplyDelta:
    """The per-edge classification of one commit, the input of the algorithm (algorithm.md §3.3)."""

    insert_src: np.ndarray
    insert_dst: np.ndarray
    delete_src: np.ndarray
    delete_dst: np.ndarray
    weight_increased: np.ndarray  # bool (num_insertions, K)
    num_vertices_before: int
    num_vertices_after: int


def validate_for_graph(batch: Batch, num_vertices: int, num_weights: int) -> int:
    """Graph-dependent checks (algorithm.md §3.3 step 1); returns n_after. Raises before anything
    changes."""
    if not isinstance(batch, Batch):
        raise InvalidArgumentError(f"expected an engines.Batch, got {type(batch).__name__}")
    if batch.num_insertions:
        if batch.num_weights != num_weights:
            raise InvalidArgumentError(
                f"the batch carries {batch.num_weights} weight columns but the graph has {num_weights}"
            )
        top = batch._top_insert  # the largest insertion id, found when the batch was built
        if top + 1 > VERTEX_MAX:
            raise InvalidArgumentError(f"insertion id {top} makes the vertex count overflow int32")
        return max(int(num_vertices), top + 1)
    return int(num_vertices)


@dataclass(frozen=True, eq=False)
class BatchEvents:
    """A validated batch as the event list of algorithm.md §3.3 steps 3-5, for a graph of ``n_old``
    vertices.

    ``src[j], dst[j]`` (int32) for ``j < num_deletions`` are the in-range deletions in batch order;
    ``j >= num_deletions`` are the insertions in batch order, with ``weights[j - num_deletions]``
    (int32, ``(I, K)``, insertion-major as in the batch). ``out_of_range`` counts the deletions
    that step 3 dropped (an id >= ``n_after``); they count in ``ignored_deletions``.
    """

    src: np.ndarray
    dst: np.ndarray
    weights: np.ndarray
    num_deletions: int
    num_insertions: int
    out_of_range: int
    n_old: int
    n_after: int

    @property
    def size(self) -> int:
        return self.num_deletions + self.num_insertions

    def host_delta(self, weight_increased) -> "ApplyDelta":
        """The classification with host arrays (``weight_increased`` ``(I, K)`` bool)."""
        d = self.num_deletions
        return ApplyDelta(self.src[d:], self.dst[d:], self.src[:d], self.dst[:d],
                          weight_increased=weight_increased,
                          num_vertices_before=self.n_old, num_vertices_after=self.n_after)


def batch_events(batch: Batch, num_vertices: int, num_weights: int) -> BatchEvents:
    """Validate ``batch`` for a graph (algorithm.md §3.3 step 1) and build its event list (step 3's
    filter).

    Raises ``InvalidArgumentError`` before anything changes. O(batch).
    """
    n_after = validate_for_graph(batch, num_vertices, num_weights)
    dsrc, ddst = batch.delete_src, batch.delete_dst
    deletions = dsrc.shape[0]
    kept = deletions
    # Step 3's filter keeps a deletion whose two ids are below n_after. Every deletion is kept
    # exactly when the largest of all their ids (found when the batch was built) is below n_after;
    # the mask is built only when some deletion falls out (a small update calls this once, and the
    # mask, its count and the "and" cost three NumPy calls more).
    if deletions and not batch._top_delete < n_after:
        in_range = (dsrc < n_after) & (ddst < n_after)
        kept = int(np.count_nonzero(in_range))
        dsrc, ddst = dsrc[in_range], ddst[in_range]
    # concatenate casts as it copies (same-kind int64 -> int32, the values astype would give:
    # every id fits int32, Batch checked it), one array fewer than concatenate then astype
    src = np.concatenate((dsrc, batch.insert_src), dtype=np.int32)
    dst = np.concatenate((ddst, batch.insert_dst), dtype=np.int32)
    insertions = batch.insert_src.shape[0]
    if insertions:
        weights = np.ascontiguousarray(batch.insert_weights, dtype=np.int32)
    else:
        weights = np.zeros((0, int(num_weights)), dtype=np.int32)
    src.setflags(write=False)
    dst.setflags(write=False)
    weights.setflags(write=False)
    return _filled(BatchEvents, src=src, dst=dst, weights=weights, num_deletions=kept,
                   num_insertions=int(insertions), out_of_range=deletions - kept, n_old=int(num_vertices),
                   n_after=int(n_after))


__all__ = ["Batch", "ApplySummary", "ApplyDelta", "BatchEvents", "apply_summary", "batch_events", "validate_for_graph"]
