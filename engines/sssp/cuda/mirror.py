"""The device mirror of a graph state (algorithm.md §10.3, §11, §12.3).

Per graph and device, kept in ``graph.device_cache``: the out-CSR (``row_ptr``, ``col_ind``), the
in-CSR (``ptr``, ``src``) and, per objective in use, the out-edge and in-edge weight columns. A
mirror is keyed on ``graph.state_id``: a new state (a commit, a ``restore()``) re-copies the
structure and drops the columns; a column is copied once per state at first use.

Only host-to-device copies, into reused buffers grown geometrically, on the device's one stream:
no device-to-host copy and no synchronization, so uploads stay outside the engines' sync budget.
Pageable sources are fine: ``cudaMemcpyAsync`` stages pageable host memory before it returns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .runtime import cuda_errors, cupy_module

GROWTH = 1.5
_CACHE_KEY = "engines.sssp.cuda.mirror"


@dataclass(frozen=True)
class DeviceGraph:
    """What a kernel launch needs of the graph: device views, exact lengths."""

    num_vertices: int
    num_edges: int
    vertex_dtype: np.dtype
    offset_dtype: np.dtype
    out_ptr: object  # (n + 1,) offset dtype
    out_index: object  # (m,) vertex dtype: heads of the out-edges
    out_weight: object  # (m,) int32: the objective's column, CSR order
    in_ptr: object  # (n + 1,) offset dtype
    in_index: object  # (m,) vertex dtype: tails of the in-edges
    in_weight: object  # (m,) int32: the objective's column, in-edge order


class _Buffer:
    """A device buffer of one dtype that grows geometrically and is otherwise reused."""

    __slots__ = ("array",)

    def __init__(self) -> None:
        self.array = None

    def ensure(self, count: int, dtype) -> None:
        cupy = cupy_module()
        dtype = np.dtype(dtype)
        count = max(int(count), 1)
        arr = self.array
        if arr is not None and arr.dtype == dtype and arr.shape[0] >= count:
            return
        grown = count if arr is None or arr.dtype != dtype else max(count, int(arr.shape[0] * GROWTH) + 1)
        self.array = None  # release first so that the pool can reuse the memory
        self.array = cupy.empty(grown, dtype=dtype)

    def upload(self, host: np.ndarray, stream) -> None:
        host = np.ascontiguousarray(host)
        self.ensure(host.shape[0], host.dtype)
        if host.nbytes:
            self.array.data.copy_from_host_async(host.ctypes.data, host.nbytes, stream)

    def view(self, count: int):
        return self.array[: int(count)]


class _Column:
    """The two weight columns of one objective (out-edge order and in-edge order)."""

    def __init__(self) -> None:
        self.out_weight = _Buffer()
        self.in_weight = _Buffer()
        self.in_index = _Buffer()  # used only if this objective's in-CSR order differs
        self.own_in_index = False


class GraphMirror:
    """Device buffers of one graph on one device."""

    def __init__(self, device: int):
        self.device = int(device)
        self.state_id = None
        self.num_vertices = 0
        self.num_edges = 0
        self.vertex_dtype = np.dtype(np.int32)
        self.offset_dtype = np.dtype(np.int32)
        self.out_ptr = _Buffer()
        self.out_index = _Buffer()
        self.in_ptr = _Buffer()
        self.in_index = _Buffer()
        self._in_index_source = None  # the host array the shared in_index was copied from
        self._columns: dict[int, _Column] = {}
        self._loaded: set[int] = set()

    def reserve(self, num_vertices: int, num_edges: int, vertex_dtype, offset_dtype, objectives) -> None:
        """Grow every buffer to the given sizes now (before a commit), so uploads allocate nothing."""
        self.out_ptr.ensure(num_vertices + 1, offset_dtype)
        self.in_ptr.ensure(num_vertices + 1, offset_dtype)
        self.out_index.ensure(num_edges, vertex_dtype)
        self.in_index.ensure(num_edges, vertex_dtype)
        for k in objectives:
            col = self._columns.setdefault(int(k), _Column())
            col.out_weight.ensure(num_edges, np.int32)
            col.in_weight.ensure(num_edges, np.int32)

    def upload(self, graph, objective: int, stream) -> None:
        k = int(objective)
        if self.state_id != graph.state_id:
            self._load_structure(graph, stream)
        if k not in self._loaded:
            self._load_column(graph, k, stream)

    def _load_structure(self, graph, stream) -> None:
        self.state_id = None  # stays None if a copy fails half-way
        self._loaded.clear()
        self.out_ptr.upload(graph.row_ptr, stream)
        self.out_index.upload(graph.col_ind, stream)
        self.num_vertices = int(graph.num_vertices)
        self.num_edges = int(graph.num_edges)
        self.vertex_dtype = np.dtype(graph.vertex_dtype)
        self.offset_dtype = np.dtype(graph.offset_dtype)
        self._in_index_source = None
        self.state_id = graph.state_id

    def _load_column(self, graph, k: int, stream) -> None:
        in_edges = graph.in_edges(k)
        col = self._columns.setdefault(k, _Column())
        if self._in_index_source is None:
            # The in-CSR structure is the same for every objective; copy it with the first one.
            self.in_ptr.upload(in_edges.ptr, stream)
            self.in_index.upload(in_edges.src, stream)
            self._in_index_source = in_edges.src
            col.own_in_index = False
        elif in_edges.src is self._in_index_source or np.array_equal(in_edges.src, self._in_index_source):
            col.own_in_index = False
        else:  # another in-edge order for this objective: keep its own tails
            col.in_index.upload(in_edges.src, stream)
            col.own_in_index = True
        col.out_weight.upload(graph.weight_column(k), stream)
        col.in_weight.upload(in_edges.weight, stream)
        self._loaded.add(k)

    def view(self, objective: int) -> DeviceGraph:
        k = int(objective)
        if k not in self._loaded:
            raise KeyError(f"objective {k} of graph state {self.state_id} is not on device {self.device}")
        col = self._columns[k]
        n, m = self.num_vertices, self.num_edges
        in_index = col.in_index if col.own_in_index else self.in_index
        return DeviceGraph(
            num_vertices=n,
            num_edges=m,
            vertex_dtype=self.vertex_dtype,
            offset_dtype=self.offset_dtype,
            out_ptr=self.out_ptr.view(n + 1),
            out_index=self.out_index.view(m),
            out_weight=col.out_weight.view(m),
            in_ptr=self.in_ptr.view(n + 1),
            in_index=in_index.view(m),
            in_weight=col.in_weight.view(m),
        )


def get(graph, device: int) -> GraphMirror:
    """The mirror of ``graph`` on ``device`` (created empty on first use)."""
    key = (_CACHE_KEY, int(device))
    mirror = graph.device_cache.get(key)
    if mirror is None:
        mirror = graph.device_cache[key] = GraphMirror(device)
    return mirror


def reserve(graph, device: int, num_vertices: int, num_edges: int, objective: int, stream) -> None:
    """Grow the mirror of ``graph`` on ``device`` for a state of the given size (before a commit)."""
    cupy = cupy_module()
    mirror = get(graph, device)
    with cuda_errors("reserving the device graph mirror"), cupy.cuda.Device(int(device)), stream:
        mirror.reserve(num_vertices, num_edges, graph.vertex_dtype, graph.offset_dtype, (objective,))


def upload(graph, device: int, objective: int, stream) -> DeviceGraph:
    """Refresh the mirror for ``graph``'s current state and objective; return the device view."""
    cupy = cupy_module()
    mirror = get(graph, device)
    with cuda_errors("uploading the graph to the device"), cupy.cuda.Device(int(device)), stream:
        mirror.upload(graph, objective, stream)
    return mirror.view(objective)


def view(graph, device: int, objective: int) -> DeviceGraph:
    """The device view of ``graph``'s current state; uploads it first if needed (H2D only)."""
    mirror = get(graph, device)
    if mirror.state_id != graph.state_id or int(objective) not in mirror._loaded:
        from .runtime import stream as device_stream

        return upload(graph, device, objective, device_stream(device))
    return mirror.view(objective)


__all__ = ["DeviceGraph", "GraphMirror", "get", "reserve", "upload", "view"]
