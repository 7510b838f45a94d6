"""The directed CSR graph with K objective-major weight columns (algorithm.md §3.1, §3.6).

A graph state is its out-CSR, its in-CSR (the transpose, with the K columns in in-edge order) and
the scalars of algorithm.md §3.5 (largest weight and weight sum per column). Where it lives:

- **Host-resident** (a new graph): NumPy arrays, never modified in place; ``apply`` runs the host
  applier (``engines.graph.host_apply``, O(n + m + b log b)) and publishes new arrays at once.
- **Device-resident** (after ``to_device()``, or once a CUDA result was computed on it): the
  authoritative arrays are on one GPU (``engines.graph.device_graph``); ``apply`` validates the
  batch on the host in O(batch), uploads only the batch and builds the new CSRs on the device
  (``engines.graph.device_apply``) without waiting for it. The host arrays are then a view,
  downloaded at first access per state and cached.

The in-CSR order: a new graph lists the in-edges of v by out-edge index; every commit keeps the
surviving in-edges in order and appends the new ones at the end of their in-row in batch order
(the out-CSR's rule, applied to the transpose). Results never depend on it (algorithm.md §3.1); both
appliers follow it, so host and device states are equal byte for byte.

Every commit and every ``restore()`` gives the graph a state id that no other state of any graph
has had (a restore takes back the snapshot's own id): a result is accepted only for the exact state
it describes, never merely for an equal version number.
"""

from __future__ import annotations

import functools
import itertools
import operator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import growth
from .host_apply import HostCsr, Spares, WeightScalars, apply_host, canonical_in_csr, scalars_of
from ..arguments import VERTEX_MAX, article, as_array, flag, integer_dtype, weight_matrix
from ..batch import ApplyDelta, ApplySummary, Batch, BatchEvents, batch_events
from ..errors import InvalidArgumentError, NotSupportedError, OutOfMemoryError

# the most edges int32 CSR offsets hold (an offset limit; the vertex limit is arguments.VERTEX_MAX)
OFFSET32_MAX = (1 << 31) - 1
_state_ids = itertools.count(1)


class _Owner:
    """A Graph object's identity for its snapshots (Graph.restore): one per Graph object. An
    object rather than a counter's value, so that copy.deepcopy and pickle, which duplicate the
    graph's attributes, give the duplicate a new one (a counter's value travelled with them, and
    the duplicate took the original's snapshots; in another process it could also equal a graph's
    there), while a graph and its snapshot copied or pickled together keep theirs paired."""

    __slots__ = ()


class InEdges(NamedTuple):
    """The transpose of the graph with one weight column: in-edges of v are
    ``src[ptr[v]:ptr[v+1]]`` with weights ``weight[...]`` (order: see the module docstring)."""

    ptr: np.ndarray
    src: np.ndarray
    weight: np.ndarray


@dataclass(frozen=True, eq=False)
class GraphSnapshot:
    """A graph state to come back to (the A/B rounds restore the pre-batch graph this way).

    Holds the state's host arrays where they were at hand and, for a device-resident graph, a
    device copy of the state (``device_buffers``), so ``restore`` is a pointer swap on the device.
    """

    version: int
    state_id: int
    num_vertices: int
    num_edges: int
    num_weights: int
    scalars: WeightScalars
    host_out: tuple | None  # (row_ptr, col_ind, weights (K, m))
    host_in: tuple | None  # (in_ptr, in_src, in_weights (K, m))
    device: int | None
    device_buffers: object | None
    owner: object  # the Graph object it was taken of (its Graph._owner)
    # device copies made when a host snapshot is restored on a device-resident graph: the first
    # restore uploads, later ones swap pointers (keyed by device id)
    uploaded: dict = field(default_factory=dict, repr=False)

    def buffers_on(self, device: int):
        if self.device_buffers is not None and self.device == device:
            return self.device_buffers
        return self.uploaded.get(int(device))


class Commit:
    """The outcome of one commit: the summary and the classification, possibly still on the way
    from the device (``pending``); the dispatch hands ``pending`` to the CUDA engines."""

    def __init__(self, events: BatchEvents, *, summary: ApplySummary | None = None,
                 weight_increased: np.ndarray | None = None, pending=None):
        self.events = events
        self._summary = summary
        self._weight_increased = weight_increased
        self.pending = pending

    def summary(self) -> ApplySummary:
        if self._summary is None:
            self._summary = self.pending.resolve()["summary"]
        return self._summary

    def weight_increased(self) -> np.ndarray:
        if self._weight_increased is None:
            w = self.pending.weight_increased()
            w.setflags(write=False)
            self._weight_increased = w
        return self._weight_increased

    def delta(self) -> ApplyDelta:
        """The classification with host arrays (downloads ``weight_increased`` from a device)."""
        return self.events.host_delta(self.weight_increased())


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


#: The two offset dtypes, made once: ``np.dtype(np.int32)`` returns this same object, and a
#: comparison that finds the very object needs no dtype conversion (every commit compares).
_INT32, _INT64 = np.dtype(np.int32), np.dtype(np.int64)


def _offset_dtype_for(num_edges: int, forced) -> np.dtype:
    if forced is not None:
        forced = np.dtype(forced)
        if forced not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise InvalidArgumentError(f"offset_dtype must be int32 or int64, got {forced}")
        if forced == np.int32 and num_edges > OFFSET32_MAX:
            raise InvalidArgumentError(f"{num_edges} edges do not fit int32 offsets")
        return forced
    return _INT32 if num_edges <= OFFSET32_MAX else _INT64


def _offset_dtype_argument(value) -> np.dtype:
    """The ``offset_dtype`` argument as a dtype; one NumPy does not know is refused by name
    (``np.dtype("bogus")`` raised its bare TypeError), int32/int64 is ``_offset_dtype_for``'s check."""
    try:
        return np.dtype(value)
    except TypeError:
        raise InvalidArgumentError(f"offset_dtype must be int32 or int64, got {value!r}") from None


def _weights_matrix(weights, num_edges: int) -> np.ndarray:
    """Per-edge weights ``(m, K)`` or ``(m,)`` -> objective-major ``(K, m)`` int32, checked."""
    w = weight_matrix(weights, "weights", num_edges, f"there are {num_edges} edges")
    return np.ascontiguousarray(w.T, dtype=np.int32)


def _ids(values, name: str, kind: str = "vertex id") -> np.ndarray:
    """A 1-D array of non-negative integers as int64; ``kind`` names an element in messages."""
    arr = as_array(values, name, f"a flat sequence of integers ({kind}s)")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1:
        raise InvalidArgumentError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if not integer_dtype(arr.dtype):
        raise InvalidArgumentError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8:
        huge = arr > np.iinfo(np.int64).max
        if huge.any():
            i = int(np.flatnonzero(huge)[0])
            limit = f"ids must be below {VERTEX_MAX}" if kind == "vertex id" else "at most 2^63 - 1"
            raise InvalidArgumentError(f"{name}[{i}] = {int(arr[i])} is too large for {article(kind)} {kind} ({limit})")
    arr = arr.astype(np.int64)
    neg = arr < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise InvalidArgumentError(f"{name}[{i}] = {int(arr[i])} is a negative {kind}")
    return arr


def _vertex_ids(values, name: str) -> np.ndarray:
    """``_ids`` that also keeps every id inside the int32 vertex type."""
    arr = _ids(values, name)
    big = arr >= VERTEX_MAX
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise InvalidArgumentError(
            f"{name}[{i}] = {int(arr[i])} does not fit the int32 vertex type (ids < {VERTEX_MAX})")
    return arr


def check_num_vertices(value, context: str = "") -> int:
    """A ``num_vertices`` argument as an int in [0, VERTEX_MAX] (the one check of it: ``Graph`` and
    the readers); ``context`` ends the message ("reading PATH")."""
    said = f" ({context})" if context else ""
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(
            f"num_vertices must be an integer, got {value!r} ({type(value).__name__}){said}") from None
    if n < 0:
        raise InvalidArgumentError(
            f"num_vertices = {n} is negative: it is the number of vertices (ids 0 .. num_vertices - 1){said}")
    if n > VERTEX_MAX:
        raise InvalidArgumentError(
            f"num_vertices = {n} does not fit int32 vertex ids (at most {VERTEX_MAX}){said}")
    return n


def _host_allocation(build):
    """A constructor whose failed host allocation raises ``OutOfMemoryError`` (algorithm.md D5)
    rather than NumPy's MemoryError; nothing is half-built either way."""

    @functools.wraps(build)
    def constructor(cls, *args, **kwargs):
        try:
            return build(cls, *args, **kwargs)
        except MemoryError as exc:
            if isinstance(exc, OutOfMemoryError):
                raise
            raise OutOfMemoryError(f"not enough host memory to build the graph ({exc})") from None

    return constructor


class Graph:
    """A directed multigraph in compact CSR form with K int32 weight columns.

    Build it with :meth:`from_csr` or :meth:`from_edges`. Rows may hold parallel edges and
    self-loops in append order; distances and parents never depend on row order.
    """

    def __init__(self, row_ptr: np.ndarray, col_ind: np.ndarray, weights_km: np.ndarray, *,
                 offset_dtype=None, _version: int = 0):
        # Internal constructor: arguments already validated by from_csr / from_edges.
        self._forced_offset = None if offset_dtype is None else _offset_dtype_argument(offset_dtype)
        self._owner = _Owner()
        self._version = _version
        self._device = None  # engines.graph.device_graph.DeviceGraph when device-resident
        self._pending = None  # the last device commit whose counters are not read yet
        self._spares = Spares()  # entry buffers of retired host states, for the next commit
        self._out = self._in = None
        weights_km = np.ascontiguousarray(weights_km, dtype=np.int32)
        self._k = int(weights_km.shape[0])
        self._publish_host((row_ptr, col_ind, weights_km), None, scalars_of(weights_km), next(_state_ids))

    # -- construction -------------------------------------------------------------------------

    @classmethod
    @_host_allocation
    def from_csr(cls, row_ptr, col_ind, weights, *, offset_dtype=None) -> "Graph":
        """A graph from CSR arrays; ``weights`` per edge, ``(m, K)`` or ``(m,)``."""
        ptr = _ids(row_ptr, "row_ptr", "offset")
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
    @_host_allocation
    def from_edges(cls, src, dst, weights, *, num_vertices=None, symmetrize=False, offset_dtype=None) -> "Graph":
        """A graph from an edge list, input order kept within each row.

        ``symmetrize`` adds (v, u) with the same weights for every (u, v); self-loops once.
        """
        symmetrize = flag(symmetrize, "symmetrize")
        s = _vertex_ids(src, "src")
        d = _vertex_ids(dst, "dst")
        if s.shape != d.shape:
            raise InvalidArgumentError(f"src and dst differ in length ({s.shape[0]} vs {d.shape[0]})")
        w = _weights_matrix(weights, s.shape[0])
        top = int(max(s.max(), d.max())) + 1 if s.shape[0] else 0
        if num_vertices is None:
            n = top  # at most VERTEX_MAX: every id is below it
        else:
            n = check_num_vertices(num_vertices)
            if n < top:
                raise InvalidArgumentError(f"num_vertices = {n} but an edge names vertex {top - 1}")
        if symmetrize:
            rev = s != d
            s, d = np.concatenate([s, d[rev]]), np.concatenate([d, s[rev]])
            w = np.concatenate([w, w[:, rev]], axis=1)
        order = np.argsort(s, kind="stable")
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(s, minlength=n), out=ptr[1:])
        return cls(ptr, d[order].astype(np.int32), np.ascontiguousarray(w[:, order]), offset_dtype=offset_dtype)

    # -- the current state --------------------------------------------------------------------

    def _publish_host(self, out, inn, scalars: WeightScalars, state_id: int) -> None:
        """Install a complete host state at once (the commit point of algorithm.md §3.3 step 6)."""
        self._retire_host()
        row_ptr, col_ind, weights_km = out
        m = int(col_ind.shape[0])
        off = _offset_dtype_for(m, self._forced_offset)
        self._n = int(row_ptr.shape[0] - 1)
        self._m = m
        self._out = (_readonly(np.ascontiguousarray(row_ptr, dtype=off)),
                     _readonly(np.ascontiguousarray(col_ind, dtype=np.int32)),
                     _readonly(np.ascontiguousarray(weights_km, dtype=np.int32)))
        self._in = None
        if inn is not None:
            self._in = (_readonly(np.ascontiguousarray(inn[0], dtype=off)),
                        _readonly(np.ascontiguousarray(inn[1], dtype=np.int32)),
                        _readonly(np.ascontiguousarray(inn[2], dtype=np.int32)))
        self._scalars = scalars
        self._state_id = state_id
        self._cache: dict = {}

    def _retire_host(self) -> None:
        """Drop the current host state, offering its entry buffers to the next commit where
        nothing else (a snapshot, a caller's view, a cached in-edge view) still holds them."""
        old = [t[i] for t in (self._out, self._in) if t is not None for i in (1, 2)]
        self._out = self._in = None
        self._cache = {}
        self._spares.retire(old)

    def _settle(self) -> None:
        """Read the counters of the last device commit (m, the scalars) if still pending."""
        pending = self._pending
        if pending is not None and self._m is None:
            values = pending.resolve()
            self._m = int(values["num_edges"])
            self._scalars = WeightScalars(values["max_weight"], values["weight_sum"])

    @property
    def num_vertices(self) -> int:
        return self._n

    @property
    def num_edges(self) -> int:
        self._settle()
        return self._m

    @property
    def num_weights(self) -> int:
        return self._k

    @property
    def version(self) -> int:
        return self._version

    @property
    def state_id(self) -> int:
        """Unique per content state over the process: a result is valid only for this id."""
        return self._state_id

    @property
    def vertex_dtype(self) -> np.dtype:
        return np.dtype(np.int32)

    @property
    def offset_dtype(self) -> np.dtype:
        return _offset_dtype_for(self.num_edges, self._forced_offset)

    @property
    def device(self) -> int | None:
        """The CUDA device holding the authoritative arrays, or None (host-resident)."""
        return None if self._device is None else self._device.device

    def _host_out(self) -> tuple:
        if self._out is None:  # device-resident: download this state once
            self._settle()
            ptr, col, w = self._device.current.download("out", self._m)
            off = _offset_dtype_for(self._m, self._forced_offset)
            self._out = (_readonly(ptr.astype(off, copy=False)), _readonly(col), _readonly(w))
        return self._out

    def _host_in(self) -> tuple:
        if self._in is None:
            if self._device is not None:
                self._settle()
                ptr, src, w = self._device.current.download("in", self._m)
            else:  # a new host graph: the canonical transpose, built once
                row_ptr, col_ind, weights = self._out
                ptr, src, w = canonical_in_csr(row_ptr, col_ind, weights, self._n)
            off = _offset_dtype_for(self._m, self._forced_offset)
            self._in = (_readonly(np.ascontiguousarray(ptr, dtype=off)), _readonly(np.ascontiguousarray(src, dtype=np.int32)),
                        _readonly(np.ascontiguousarray(w, dtype=np.int32)))
        return self._in

    @property
    def row_ptr(self) -> np.ndarray:
        return self._host_out()[0]

    @property
    def col_ind(self) -> np.ndarray:
        return self._host_out()[1]

    @property
    def weights(self) -> np.ndarray:
        """All weights, objective-major: column k of edge e is ``weights[k * m + e]``."""
        return self._cached("weights_flat", lambda: _readonly(self._host_out()[2].reshape(-1)))

    def _check_objective(self, k: int) -> int:
        if type(k) is int and 0 <= k < self._k:  # the common case: a plain int in range, as it is
            return k
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= int(k) < self._k:
            raise InvalidArgumentError(f"objective {k!r} is out of range [0, {self._k})")
        return int(k)

    def weight_column(self, k: int) -> np.ndarray:
        k = self._check_objective(k)
        return self._host_out()[2][k]

    def _cached(self, key, build):
        value = self._cache.get(key)
        if value is None:
            value = build()
            self._cache[key] = value
        return value

    def edge_sources(self) -> np.ndarray:
        """The tail of every edge in CSR order (int32), cached per state."""
        def build():
            lens = np.diff(self.row_ptr.astype(np.int64))
            return _readonly(np.repeat(np.arange(self.num_vertices, dtype=np.int32), lens))
        return self._cached("edge_sources", build)

    def in_edges(self, k: int) -> InEdges:
        """The in-CSR with column-k weights (cached per state; downloaded once on a device)."""
        k = self._check_objective(k)
        ptr, src, w = self._host_in()
        return InEdges(ptr, src, w[k])

    def max_weight(self, k: int) -> int:
        k = self._check_objective(k)
        self._settle()
        return int(self._scalars.max_weight[k])

    def weight_sum(self, k: int) -> int:
        k = self._check_objective(k)
        self._settle()
        return int(self._scalars.weight_sum[k])

    # -- residence ----------------------------------------------------------------------------

    def to_device(self, device: int | None = None) -> "Graph":
        """Move the authoritative arrays to CUDA ``device`` (CuPy's current one if None).

        Idempotent on the same device. ``NotSupportedError`` without CuPy or a GPU, or when the
        graph already lives on another device; ``OutOfMemoryError`` leaves it where it was.
        """
        if device is not None and self._device is not None and self._device.device == device:
            return self  # every CUDA update asks: already there (a device was seen to have it)
        from ..sssp.cuda import runtime  # local: CuPy stays out of the host-only import path
        from . import device_graph

        if not runtime.is_available():
            raise NotSupportedError("Graph.to_device() needs CuPy and a CUDA GPU; none is usable here")
        device = runtime.current_device() if device is None else int(device)
        if self._device is not None:
            if self._device.device != device:
                raise NotSupportedError(
                    f"this graph lives on device {self._device.device}; results on device {device} "
                    "need a copy of it (graph.copy().to_device(...))"
                )
            return self
        out, inn = self._host_out(), self._host_in()
        dg = device_graph.DeviceGraph(device)
        host = HostCsr(out[0], out[1], out[2], inn[0], inn[1], inn[2])
        with runtime.cuda_errors("moving the graph to the device"), runtime.cupy_module().cuda.Device(device):
            dg.load(host, runtime.stream(device))
        self._device = dg
        return self

    def to_host(self) -> "Graph":
        """Bring the arrays back to the host and release the device copy."""
        if self._device is not None:
            out, inn = self._host_out(), self._host_in()
            scalars, state = self._settled_scalars(), self._state_id
            self._device = None
            self._pending = None
            self._publish_host(out, inn, scalars, state)
        return self

    def _settled_scalars(self) -> WeightScalars:
        self._settle()
        return self._scalars

    def device_bytes(self) -> int:
        """Device memory this graph holds (its buffer sets and apply scratch); 0 on the host."""
        return 0 if self._device is None else int(self._device.nbytes())

    # -- changes ------------------------------------------------------------------------------

    def apply(self, batch: Batch) -> tuple[ApplySummary, ApplyDelta]:
        """Apply a batch (algorithm.md §3.3): validate, build the new CSRs completely, then commit.

        Results bound to this graph that are not passed through ``engines.sssp.update`` become
        stale. On a device-resident graph this waits for the device (to return the counters);
        ``update()`` commits without waiting.
        """
        events = self.events_for(batch)
        self.check_growth(events, 0, "the graph is as it was")
        commit = self.commit(events)
        return commit.summary(), commit.delta()

    def growth_bytes_per_vertex(self, events: BatchEvents) -> int:
        """Host bytes per vertex that a commit of ``events`` allocates at the new vertex count:
        the out- and in-CSR offsets (``apply_host``'s two ``new_ptr`` of n + 1 entries, int32 when
        every offset fits m plus the insertions, else int64: 8 or 16 bytes). A device-resident
        graph's offsets grow in device buffers (CuPy raises its own out-of-memory error): 0."""
        if self._device is not None:
            return 0
        return 2 * _offset_dtype_for(self._m + int(events.num_insertions), self._forced_offset).itemsize

    def check_growth(self, events: BatchEvents, extra_per_vertex: int = 0,
                     unchanged: str = "the graph is as it was") -> None:
        """Before a commit that grows the graph (``events.n_after > events.n_old``): refuse with
        ``OutOfMemoryError`` when the new-size host arrays (this graph's offsets and
        ``extra_per_vertex`` more bytes per vertex: the caller's, e.g. update()'s results) need more
        memory than the machine has available (engines.graph.growth, which owns the rule that
        only growth is checked)."""
        growth.check_host_growth(events.n_old, events.n_after,
                                 self.growth_bytes_per_vertex(events) + int(extra_per_vertex), unchanged)

    def events_for(self, batch: Batch) -> BatchEvents:
        """The validated event list of ``batch`` for the current state (nothing changes)."""
        return batch_events(batch, self._n, self._k)

    def reserve_commit(self, events: BatchEvents) -> None:
        """Before a commit: grow the device buffers it will write (``OutOfMemoryError`` changes
        nothing); nothing to do on the host."""
        if self._device is not None:
            from ..sssp.cuda import runtime
            from . import device_apply

            self._settle()
            self._device_offsets_for(events)
            device = self._device.device
            with runtime.cuda_errors("reserving the device apply"), runtime.cupy_module().cuda.Device(device):
                device_apply.reserve(self._device, events, runtime.stream(device))

    def commit(self, events: BatchEvents, launch: str | None = None) -> Commit:
        """Commit a validated event list (``events_for``); the commit point of algorithm.md §3.3
        step 6.

        ``launch`` says how a device-resident graph enqueues the apply (device_apply.LAUNCHES;
        None: its default); the host ignores it."""
        if self._device is None:
            try:
                return self._commit_host(events)
            except OutOfMemoryError:
                raise
            except MemoryError as exc:  # NumPy or Numba: nothing was published (algorithm.md §3.3 step 6)
                raise OutOfMemoryError(
                    f"not enough host memory to apply a batch of {events.size} changes to a graph of "
                    f"{self.num_edges} edges; the graph is unchanged") from exc
        from ..sssp.cuda import runtime
        from . import device_apply

        if self._pending is not None:
            self._pending.expire()  # its pinned record is about to be reused
        self._settle()
        self._device_offsets_for(events)
        scalars = self._scalars
        device = self._device.device
        with runtime.cuda_errors("applying the batch on the device"), runtime.cupy_module().cuda.Device(device):
            pending = device_apply.commit(self._device, events, scalars.max_weight, scalars.weight_sum,
                                          runtime.stream(device), launch=launch)
        # published on the device: now the host side of the new state
        self._pending = pending
        self._n = int(events.n_after)
        self._m = None
        self._scalars = None
        self._out = self._in = None
        self._cache = {}
        self._state_id = next(_state_ids)
        self._version += 1
        if not pending.resolved:
            return Commit(events, pending=pending)
        self._settle()
        # nothing ran on the device (an empty batch): everything is known, and the CUDA engines
        # still get their (empty) change lists from ``pending``
        return Commit(events, summary=pending.resolve()["summary"],
                      weight_increased=np.zeros((events.num_insertions, self._k), dtype=bool),
                      pending=pending)

    def _commit_host(self, events: BatchEvents) -> Commit:
        out, inn = self._host_out(), self._host_in()
        csr = HostCsr(out[0], out[1], out[2], inn[0], inn[1], inn[2])
        # the offsets come back in the dtype _publish_host keeps where they surely fit (no copy)
        keep = np.int64 if self._forced_offset is not None and np.dtype(self._forced_offset) == np.int64 else np.int32
        new, summary, increased, scalars = apply_host(csr, events, self._scalars, self._spares,
                                                      offset_dtype=keep)
        del out, inn, csr  # the old state's last local references: let _publish_host retire it
        self._publish_host((new.row_ptr, new.col_ind, new.weights), (new.in_ptr, new.in_src, new.in_weights),
                           scalars, next(_state_ids))
        self._version += 1
        increased.setflags(write=False)
        return Commit(events, summary=summary, weight_increased=increased)

    def _device_offsets_for(self, events: BatchEvents) -> None:
        """Offsets switch to int64 when the edges could outgrow int32 (D2, algorithm.md §1:
        re-chosen at every commit): the device copy is rebuilt with 64-bit offsets first (rare, not
        a steady state)."""
        cur = self._device.current
        upper = self._m + events.num_insertions
        wanted = _offset_dtype_for(upper, self._forced_offset)
        if cur.offset_dtype == wanted or wanted == _INT32:
            return
        from ..sssp.cuda import runtime
        from . import device_graph

        out, inn = self._host_out(), self._host_in()
        host = HostCsr(out[0].astype(wanted), out[1], out[2], inn[0].astype(wanted), inn[1], inn[2])
        dg = device_graph.DeviceGraph(self._device.device, self._device.layout)
        dg.load(host, runtime.stream(self._device.device))
        self._device = dg

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self) -> GraphSnapshot:
        """The current state, to ``restore`` later (a device copy for a device-resident graph)."""
        self._settle()
        buffers = None
        if self._device is not None:
            from ..sssp.cuda import runtime

            device = self._device.device
            with runtime.cupy_module().cuda.Device(device):
                buffers = self._device.snapshot(runtime.stream(device))
        return GraphSnapshot(self._version, self._state_id, self._n, self._m, self._k, self._scalars,
                             self._out, self._in, self.device, buffers, self._owner)

    def restore(self, snapshot: GraphSnapshot) -> None:
        """Return to a snapshot's state, version and state id (device: no copy at all)."""
        if not isinstance(snapshot, GraphSnapshot):
            raise InvalidArgumentError(f"expected a GraphSnapshot, got {type(snapshot).__name__}")
        # by object, not by content: another graph's arrays would silently replace this one's
        if snapshot.owner is not self._owner:
            raise InvalidArgumentError("this snapshot belongs to another graph (or a copy of this one); "
                                       "a graph restores only snapshots taken of itself")
        if snapshot.state_id == self._state_id:
            return
        if self._pending is not None:
            self._pending.expire()
            self._pending = None
        if self._device is None:
            out, inn = snapshot.host_out, snapshot.host_in
            if out is None:  # taken while the graph lived on a device
                out = snapshot.device_buffers.download("out", snapshot.num_edges)
                inn = snapshot.device_buffers.download("in", snapshot.num_edges)
            self._publish_host(out, inn, snapshot.scalars, snapshot.state_id)
        else:
            buffers = snapshot.buffers_on(self._device.device)
            if buffers is not None and buffers.slack != self._device.slack:
                # taken under the other layout (ENGINES_APPLY_LAYOUT): its upload in this one, made
                # at an earlier restore, or a new upload
                buffers = snapshot.uploaded.get(self._device.device)
                if buffers is not None and buffers.slack != self._device.slack:
                    buffers = None
            if buffers is None:  # a host snapshot (or another device's): upload it once
                buffers = self._upload_snapshot(snapshot)
            self._device.publish(buffers)
            self._n, self._m = snapshot.num_vertices, snapshot.num_edges
            self._out, self._in = snapshot.host_out, snapshot.host_in
            self._scalars = snapshot.scalars
            self._state_id = snapshot.state_id
            self._cache = {}
        self._version = snapshot.version

    def _upload_snapshot(self, snapshot: GraphSnapshot):
        """A device copy of a snapshot taken elsewhere, kept with the snapshot for later restores."""
        from ..sssp.cuda import runtime
        from . import device_graph

        out, inn = snapshot.host_out, snapshot.host_in
        if out is None:
            out = snapshot.device_buffers.download("out", snapshot.num_edges)
            inn = snapshot.device_buffers.download("in", snapshot.num_edges)
        if inn is None:  # a new graph's state: the canonical transpose
            inn = canonical_in_csr(out[0], out[1], out[2], snapshot.num_vertices)
        device = self._device.device
        holder = device_graph.DeviceGraph(device, self._device.layout)
        with runtime.cupy_module().cuda.Device(device):
            holder.load(HostCsr(out[0], out[1], out[2], inn[0], inn[1], inn[2]), runtime.stream(device))
        snapshot.uploaded[device] = holder.current
        return holder.current

    def copy(self) -> "Graph":
        """An independent graph with the same content, version and residence."""
        self._settle()
        g = Graph.__new__(Graph)
        g._forced_offset = self._forced_offset
        g._owner = _Owner()
        g._version = self._version
        g._k = self._k
        g._device = None
        g._pending = None
        g._spares = Spares()
        g._n, g._m = self._n, self._m
        g._out, g._in = self._out, self._in
        g._scalars = self._scalars
        g._state_id = self._state_id
        g._cache = {}
        if self._device is not None:
            from ..sssp.cuda import runtime
            from . import device_graph

            device = self._device.device
            with runtime.cupy_module().cuda.Device(device):
                buffers = self._device.snapshot(runtime.stream(device))
            dg = device_graph.DeviceGraph(device, self._device.layout)
            dg.owned.append(buffers)
            dg.publish(buffers)
            g._device = dg
        return g

    def __copy__(self) -> "Graph":
        """``copy.copy(graph)`` is ``graph.copy()``: a shallow copy would share the device graph,
        the snapshot owner and the spare buffers, so applying a batch to one would change the
        other's device state under its unchanged version, and each would restore the other's
        snapshots."""
        return self.copy()

    def __repr__(self) -> str:
        where = "host" if self._device is None else f"cuda:{self._device.device}"
        return (f"Graph(n={self.num_vertices}, m={self.num_edges}, K={self._k}, version={self._version}, "
                f"offsets={self.offset_dtype}, on {where})")


__all__ = ["Commit", "Graph", "GraphSnapshot", "InEdges"]
