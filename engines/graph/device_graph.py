"""The device-resident graph (algorithm.md §3.6): the authoritative CSRs of a graph on one GPU.

A graph that a CUDA result was computed on (or that ``Graph.to_device()`` moved) keeps its
out-CSR (``row_ptr``, ``col_ind``, K weight columns) and its in-CSR (``in_ptr``, ``in_src``, K
weight columns in in-edge order) here, plus a row id per entry of each side (what lets an apply
move untouched rows in one coalesced pass). ``engines.Graph`` owns one ``DeviceGraph`` and asks it
for commits (``device_apply``), snapshots, restores and host downloads; the engines ask it for a
``DeviceGraphView``.

Buffers are reserved with a capacity and reused. The graph owns two buffer sets and a commit
always writes the set that is not current, then flips: the new arrays are complete before they
are published, a failed commit leaves the current set untouched, and the engines only ever see
two address sets of the graph (plus those of snapshots it was restored to), which captured work
can rely on. A snapshot is its own buffer set, filled by device-to-device copies; ``restore``
makes the snapshot's set current without copying (commits never write a snapshot's set).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from ..sssp.cuda.runtime import cuda_errors, cupy_module

#: Geometric growth of every capacity.
GROWTH = 1.5
#: Serial numbers of buffer sets: a set's arrays never move, so its serial stands for their
#: addresses (what a captured commit depends on; an ``id()`` could be reused after a set is freed).
_serials = itertools.count(1)


def _grown(current: int, needed: int) -> int:
    return max(int(needed), int(current * GROWTH) + 1, 1)


@dataclass(frozen=True)
class DeviceGraphView:
    """What a kernel launch needs of the graph: device views of one objective."""

    num_vertices: int
    num_edges: int
    vertex_dtype: np.dtype
    offset_dtype: np.dtype
    # The edge arrays are the buffer set's whole columns, capacity long: the first num_edges
    # entries are the graph's (kernels take pointers and the sizes apart; slicing them to m on
    # every update cost a steady stream tens of µs of host time, since m moves with most batches).
    # Row v of a side is [ptr[v], end[v]) (kernels.cuh CsrView): for these packed sets end is ptr
    # from its second entry (a view of the same array), each row ending where the next begins.
    out_ptr: object  # (n + 1,) offset dtype
    out_end: object  # (n,) offset dtype: out_ptr[1:]
    out_index: object  # (m_cap,) int32: heads of the out-edges
    out_weight: object  # (m_cap,) int32: the objective's column, CSR order
    in_ptr: object  # (n + 1,) offset dtype
    in_end: object  # (n,) offset dtype: in_ptr[1:]
    in_index: object  # (m_cap,) int32: tails of the in-edges
    in_weight: object  # (m_cap,) int32: the objective's column, in-edge order


class CsrBuffers:
    """One buffer set: both sides of one graph state, with capacities ``n_cap`` and ``m_cap``."""

    SIDES = ("out", "in")

    def __init__(self, device: int, n_cap: int, m_cap: int, num_weights: int, offset_dtype):
        cupy = cupy_module()
        self.device = int(device)
        self.n_cap = max(int(n_cap), 1)
        self.m_cap = max(int(m_cap), 1)
        self.num_weights = int(num_weights)
        self.offset_dtype = np.dtype(offset_dtype)
        self.num_vertices = 0
        self.num_edges = 0
        self.serial = next(_serials)
        with cupy.cuda.Device(self.device):
            # per side: offsets, keys (the other end), row id of every entry, K weight columns
            self.ptr = {s: cupy.empty(self.n_cap + 1, dtype=self.offset_dtype) for s in self.SIDES}
            self.key = {s: cupy.empty(self.m_cap, dtype=cupy.int32) for s in self.SIDES}
            self.row_of = {s: cupy.empty(self.m_cap, dtype=cupy.int32) for s in self.SIDES}
            self.weight = {s: cupy.empty((self.num_weights, self.m_cap), dtype=cupy.int32) for s in self.SIDES}

    def fits(self, n: int, m: int, num_weights: int, offset_dtype) -> bool:
        return (n <= self.n_cap and m <= self.m_cap and num_weights == self.num_weights
                and np.dtype(offset_dtype) == self.offset_dtype)

    @property
    def nbytes(self) -> int:
        total = 0
        for side in self.SIDES:
            for arr in (self.ptr[side], self.key[side], self.row_of[side], self.weight[side]):
                total += int(arr.nbytes)
        return total

    def copy_from(self, other: "CsrBuffers", stream) -> None:
        """Device-to-device copies of ``other``'s state (same offset dtype, K; capacity fits)."""
        n, m = other.num_vertices, other.num_edges
        for side in self.SIDES:
            _copy(self.ptr[side], other.ptr[side], n + 1, stream)
            _copy(self.key[side], other.key[side], m, stream)
            _copy(self.row_of[side], other.row_of[side], m, stream)
            for k in range(self.num_weights):
                _copy(self.weight[side][k], other.weight[side][k], m, stream)
        self.num_vertices, self.num_edges = n, m

    def upload(self, host, row_of_out: np.ndarray, row_of_in: np.ndarray, stream) -> None:
        """Host-to-device copies of a ``HostCsr`` (both sides) and the per-entry row ids."""
        n = int(host.row_ptr.shape[0] - 1)
        m = int(host.col_ind.shape[0])
        arrays = {
            "out": (host.row_ptr, host.col_ind, row_of_out, host.weights),
            "in": (host.in_ptr, host.in_src, row_of_in, host.in_weights),
        }
        for side, (ptr, key, row_of, weight) in arrays.items():
            _upload(self.ptr[side], np.ascontiguousarray(ptr, dtype=self.offset_dtype), stream)
            _upload(self.key[side], np.ascontiguousarray(key, dtype=np.int32), stream)
            _upload(self.row_of[side], np.ascontiguousarray(row_of, dtype=np.int32), stream)
            for k in range(self.num_weights):
                _upload(self.weight[side][k], np.ascontiguousarray(weight[k], dtype=np.int32), stream)
        self.num_vertices, self.num_edges = n, m

    def download(self, side: str, m: int):
        """(ptr, key, weights (K, m)) of one side as NumPy arrays (waits for the stream)."""
        n = self.num_vertices
        ptr = self.ptr[side][: n + 1].get()
        key = self.key[side][:m].get()
        weights = np.empty((self.num_weights, m), dtype=np.int32)
        for k in range(self.num_weights):
            weights[k] = self.weight[side][k][:m].get()
        return ptr, key, weights


def _copy(dst, src, count: int, stream) -> None:
    nbytes = int(count) * src.itemsize
    if nbytes:
        dst.data.copy_from_device_async(src.data, nbytes, stream)


def _upload(dst, host: np.ndarray, stream) -> None:
    if host.nbytes:
        dst.data.copy_from_host_async(host.ctypes.data, host.nbytes, stream)


class DeviceGraph:
    """The device copy of one graph: its current buffer set, a spare one, and the apply scratch."""

    def __init__(self, device: int):
        self.device = int(device)
        self.owned: list[CsrBuffers] = []  # at most two sets, written by commits
        self.current: CsrBuffers | None = None
        self.scratch = None  # device_apply.ApplyScratch, created at the first commit
        self._views: dict = {}  # (set serial, n, objective) -> DeviceGraphView

    # -- placement ----------------------------------------------------------------------------

    def load(self, host, stream) -> None:
        """Upload a host state (both sides of a ``HostCsr``) into an owned buffer set."""
        n = int(host.row_ptr.shape[0] - 1)
        m = int(host.col_ind.shape[0])
        k = int(host.weights.shape[0])
        offset = np.dtype(host.row_ptr.dtype)
        target = self.target(n, m, k, offset)
        row_of_out = np.repeat(np.arange(n, dtype=np.int32), np.diff(host.row_ptr.astype(np.int64)))
        row_of_in = np.repeat(np.arange(n, dtype=np.int32), np.diff(host.in_ptr.astype(np.int64)))
        with cuda_errors("uploading the graph to the device"):
            target.upload(host, row_of_out, row_of_in, stream)
        self.current = target

    def target(self, n: int, m: int, num_weights: int, offset_dtype) -> CsrBuffers:
        """The owned set a commit of a state of this size writes: never the current one, grown
        (geometrically) if too small. May raise ``OutOfMemoryError``; changes nothing then."""
        spares = [b for b in self.owned if b is not self.current]
        for spare in spares:
            if spare.fits(n, m, num_weights, offset_dtype):
                return spare
        base = spares[0] if spares else self.current
        n_cap = _grown(base.n_cap, n) if base is not None else n
        m_cap = _grown(base.m_cap, m) if base is not None else m
        if len(self.owned) >= 2:
            self.owned.remove(spares[0])  # release first so that the pool can reuse the memory
            # with the views of it (they hold its arrays)
            self._views = {k: v for k, v in self._views.items() if k[0] != spares[0].serial}
        with cuda_errors("reserving the device graph"):
            fresh = CsrBuffers(self.device, n_cap, m_cap, num_weights, offset_dtype)
        self.owned.append(fresh)
        return fresh

    def publish(self, buffers: CsrBuffers) -> None:
        """The commit point: ``buffers`` (complete) becomes the current state."""
        self.current = buffers

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self, stream) -> CsrBuffers:
        """A new buffer set holding a device copy of the current state."""
        cur = self.current
        with cuda_errors("taking a device snapshot of the graph"):
            snap = CsrBuffers(self.device, cur.num_vertices, cur.num_edges, cur.num_weights, cur.offset_dtype)
            snap.copy_from(cur, stream)
        return snap

    def view(self, objective: int) -> DeviceGraphView:
        """The engines' views of the current state, kept while the state's set, vertex count and
        objective stay (slicing six CuPy arrays costs tens of µs of every update's host time); a
        new edge count only takes a new record around the same arrays."""
        cur = self.current
        k = int(objective)
        n, m = cur.num_vertices, cur.num_edges
        key = (cur.serial, n, k)
        cached = self._views.get(key)
        if cached is None:
            cached = self._views[key] = self._make_view(cur, k, n, m)
            while len(self._views) > 4:  # the two parities of a steady state, a few objectives
                self._views.pop(next(iter(self._views)))
        elif cached.num_edges != m:
            cached = self._views[key] = replace(cached, num_edges=m)
        return cached

    @staticmethod
    def _make_view(cur: CsrBuffers, k: int, n: int, m: int) -> DeviceGraphView:
        return DeviceGraphView(
            num_vertices=n,
            num_edges=m,
            vertex_dtype=np.dtype(np.int32),
            offset_dtype=cur.offset_dtype,
            out_ptr=cur.ptr["out"][: n + 1],
            out_end=cur.ptr["out"][1: n + 1],
            out_index=cur.key["out"],
            out_weight=cur.weight["out"][k],
            in_ptr=cur.ptr["in"][: n + 1],
            in_end=cur.ptr["in"][1: n + 1],
            in_index=cur.key["in"],
            in_weight=cur.weight["in"][k],
        )

    def nbytes(self) -> int:
        """Device bytes this graph holds: its buffer sets and the apply scratch (not snapshots)."""
        total = sum(b.nbytes for b in self.owned)
        if self.current is not None and all(self.current is not b for b in self.owned):
            total += self.current.nbytes  # restored to a snapshot's set: it is in use too
        if self.scratch is not None:
            total += self.scratch.nbytes
        return total


__all__ = ["CsrBuffers", "DeviceGraph", "DeviceGraphView", "GROWTH"]
