"""The device-resident graph (algorithm.md §3.6): the authoritative CSRs of a graph on one GPU.

A graph that a CUDA result was computed on (or that ``Graph.to_device()`` moved) keeps its
out-CSR (``row_ptr``, ``col_ind``, K weight columns) and its in-CSR (``in_ptr``, ``in_src``, K
weight columns in in-edge order) here, plus a row id per entry of each side (what lets an apply
move untouched rows in one coalesced pass). ``engines.Graph`` owns one ``DeviceGraph`` and asks it
for commits (``device_apply``), snapshots, restores and host downloads; the engines ask it for a
``DeviceGraphView``.

Two layouts (``LAYOUT_ENV``, chosen when a graph goes to the device): **packed**, rows back to
back (row v ends where row v + 1 begins), every commit laying the arrays out again; and **slack**,
where each row has its own end and room (``end``, ``limit``), so that a commit edits the touched
rows where they are (device_apply.py): entries in no row's range and every entry from a side's
tail on carry row_of -1 and weight 0. A slack set also knows its place among the others
(``state``, ``parent``, ``lineage``, ``touched``): what a commit must copy into its target first.

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

from ..sssp.cuda import switches
from ..sssp.cuda.runtime import cuda_errors, cupy_module

#: Geometric growth of every capacity.
GROWTH = 1.5
#: ``ENGINES_APPLY_LAYOUT=packed|slack``: the layout of a graph's device sets (module docstring),
#: read when the graph goes to the device (``DeviceGraph``); its snapshots and copies keep it.
LAYOUT_ENV = "ENGINES_APPLY_LAYOUT"
LAYOUTS = ("packed", "slack")
DEFAULT_LAYOUT = "packed"
#: State ids of slack sets (``CsrBuffers.state``) and their lineages: two sets of one lineage place
#: every row alike but the rows of the commits between their states.
_states = itertools.count(1)
_lineages = itertools.count(1)
#: Serial numbers of buffer sets: a set's arrays never move, so its serial stands for their
#: addresses (what a captured commit depends on; an ``id()`` could be reused after a set is freed).
_serials = itertools.count(1)


def _grown(current: int, needed: int) -> int:
    return max(int(needed), int(current * GROWTH) + 1, 1)


def chosen_layout() -> str:
    """``ENGINES_APPLY_LAYOUT`` or, unset, ``DEFAULT_LAYOUT``; a bad value is an error naming it."""
    return switches.choice(LAYOUT_ENV, LAYOUTS, DEFAULT_LAYOUT)


def next_state() -> int:
    return next(_states)


def next_lineage() -> int:
    return next(_lineages)


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
    # Row v of a side is [ptr[v], end[v]) (kernels.cuh CsrView): for packed sets end is ptr from
    # its second entry (a view of the same array), each row ending where the next begins; a slack
    # set has its own row ends.
    out_ptr: object  # (n + 1,) offset dtype
    out_end: object  # (n,) offset dtype: out_ptr[1:] (packed)
    out_index: object  # (m_cap,) int32: heads of the out-edges
    out_weight: object  # (m_cap,) int32: the objective's column, CSR order
    in_ptr: object  # (n + 1,) offset dtype
    in_end: object  # (n,) offset dtype: in_ptr[1:] (packed)
    in_index: object  # (m_cap,) int32: tails of the in-edges
    in_weight: object  # (m_cap,) int32: the objective's column, in-edge order


class CsrBuffers:
    """One buffer set: both sides of one graph state, with capacities ``n_cap`` and ``m_cap``."""

    SIDES = ("out", "in")

    def __init__(self, device: int, n_cap: int, m_cap: int, num_weights: int, offset_dtype, slack: bool = False):
        cupy = cupy_module()
        self.device = int(device)
        self.n_cap = max(int(n_cap), 1)
        self.m_cap = max(int(m_cap), 1)
        self.num_weights = int(num_weights)
        self.offset_dtype = np.dtype(offset_dtype)
        self.slack = bool(slack)
        self.num_vertices = 0
        self.num_edges = 0
        self.serial = next(_serials)
        # slack sets: the state held (None: none yet, or a commit into it failed), the state its
        # commit started from, its lineage, the sorted keys of that commit (both sides' slots) and
        # how many slots a side has there (0: none kept)
        self.state = self.parent = self.lineage = None
        self.touched = None
        self.touched_slots = 0
        self.touched_serial = 0
        # slack sets: every entry from here on is room (row_of -1, weight 0); a new set's are not
        self.tail_ub = self.m_cap
        # slack sets: no row is longer (either side): what bounds the room a commit's moving rows take
        self.longest_ub = 0
        with cupy.cuda.Device(self.device):
            # per side: offsets, keys (the other end), row id of every entry, K weight columns
            self.ptr = {s: cupy.empty(self.n_cap + 1, dtype=self.offset_dtype) for s in self.SIDES}
            if self.slack:  # row ends and rooms of their own, and each side's tail
                self.end = {s: cupy.empty(self.n_cap + 1, dtype=self.offset_dtype) for s in self.SIDES}
                self.limit = {s: cupy.empty(self.n_cap + 1, dtype=self.offset_dtype) for s in self.SIDES}
                # device_apply.cu MetaSlot: each side's tail, then each side's longest row (a bound)
                self.meta = cupy.zeros(4, dtype=cupy.int64)
            else:  # a row ends (and its room) where the next begins
                self.end = {s: self.ptr[s][1:] for s in self.SIDES}
                self.limit = self.end
                self.meta = None
            self.key = {s: cupy.empty(self.m_cap, dtype=cupy.int32) for s in self.SIDES}
            self.row_of = {s: cupy.empty(self.m_cap, dtype=cupy.int32) for s in self.SIDES}
            self.weight = {s: cupy.empty((self.num_weights, self.m_cap), dtype=cupy.int32) for s in self.SIDES}

    def side_meta(self, side: str):
        """A view of one side's tail slot (slack sets), what the kernels take as that side's extent."""
        return self.meta[self.SIDES.index(side):]

    def keep_touched(self, slots: int) -> None:
        """Room for ``slots`` sorted keys a side (both sides: 2 x slots) in ``touched``."""
        if self.touched is None or self.touched.size < 2 * slots:
            cupy = cupy_module()
            self.touched, self.touched_slots = None, 0  # the keys it held are gone
            with cupy.cuda.Device(self.device):
                self.touched = cupy.empty(2 * max(int(slots), 1), dtype=cupy.uint64)
            self.touched_serial = next(_serials)

    def fits(self, n: int, m: int, num_weights: int, offset_dtype, slack: bool = False) -> bool:
        return (n <= self.n_cap and m <= self.m_cap and num_weights == self.num_weights
                and np.dtype(offset_dtype) == self.offset_dtype and bool(slack) == self.slack)

    @property
    def extent(self) -> int:
        """Entries that hold the graph: a packed set's first m, a slack set's up to its tail."""
        return min(self.tail_ub, self.m_cap) if self.slack else self.num_edges

    @property
    def nbytes(self) -> int:
        total = 0
        for side in self.SIDES:
            for arr in (self.ptr[side], self.key[side], self.row_of[side], self.weight[side]):
                total += int(arr.nbytes)
            if self.slack:
                total += int(self.end[side].nbytes) + int(self.limit[side].nbytes)
        if self.slack:
            total += int(self.meta.nbytes) + (int(self.touched.nbytes) if self.touched is not None else 0)
        return total

    def copy_from(self, other: "CsrBuffers", stream) -> None:
        """Device-to-device copies of ``other``'s state (same offset dtype, K and layout; capacity
        fits): a slack set's rows, rooms and tails at the same places, so that the copy stays of
        ``other``'s lineage (a snapshot: commits may start from it cheaply)."""
        n, m = other.num_vertices, other.num_edges
        extent = other.extent
        for side in self.SIDES:
            _copy(self.ptr[side], other.ptr[side], n + 1, stream)
            if self.slack:
                _copy(self.end[side], other.end[side], n + 1, stream)
                _copy(self.limit[side], other.limit[side], n + 1, stream)
                for arr in (self.ptr[side], self.end[side], self.limit[side]):
                    rest = arr[n + 1:]  # rows past the vertices have none (n_cap is at least 1)
                    if rest.size:
                        rest.data.memset_async(0, rest.nbytes, stream)
            _copy(self.key[side], other.key[side], extent, stream)
            _copy(self.row_of[side], other.row_of[side], extent, stream)
            for k in range(self.num_weights):
                _copy(self.weight[side][k], other.weight[side][k], extent, stream)
        if self.slack:
            _copy(self.meta, other.meta, 4, stream)
            self._clear_entries(extent, self.m_cap, stream)
            self.tail_ub = extent
            self.longest_ub = other.longest_ub
            # the same state at the same places; no parent: its rows since are not kept here
            self.state, self.lineage, self.parent = other.state, other.lineage, None
        self.num_vertices, self.num_edges = n, m

    def _clear_entries(self, lo: int, hi: int, stream) -> None:
        """Entries [lo, hi) of both sides become room (row_of -1, weight 0, key -1)."""
        lo, hi = int(lo), min(int(hi), self.m_cap)
        if hi <= lo:
            return
        for side in self.SIDES:
            for arr, byte in ((self.key[side], 0xFF), (self.row_of[side], 0xFF)):
                arr[lo:].data.memset_async(byte, 4 * (hi - lo), stream)
            for k in range(self.num_weights):
                self.weight[side][k][lo:].data.memset_async(0, 4 * (hi - lo), stream)

    def upload(self, host, row_of_out: np.ndarray, row_of_in: np.ndarray, stream) -> None:
        """Host-to-device copies of a ``HostCsr`` (both sides) and the per-entry row ids."""
        n = int(host.row_ptr.shape[0] - 1)
        m = int(host.col_ind.shape[0])
        arrays = {
            "out": (host.row_ptr, host.col_ind, row_of_out, host.weights),
            "in": (host.in_ptr, host.in_src, row_of_in, host.in_weights),
        }
        for side, (ptr, key, row_of, weight) in arrays.items():
            host_ptr = np.ascontiguousarray(ptr, dtype=self.offset_dtype)
            _upload(self.ptr[side], host_ptr, stream)
            if self.slack:  # packed to begin with: each row's room is its length
                _upload(self.end[side], host_ptr[1:], stream)
                _upload(self.limit[side], host_ptr[1:], stream)
                for arr in (self.ptr[side], self.end[side], self.limit[side]):
                    # rows past n have none (the slack kernels read start, end and room 0 there)
                    rest = arr[n:]
                    if rest.size:
                        rest.data.memset_async(0, rest.nbytes, stream)
            _upload(self.key[side], np.ascontiguousarray(key, dtype=np.int32), stream)
            _upload(self.row_of[side], np.ascontiguousarray(row_of, dtype=np.int32), stream)
            for k in range(self.num_weights):
                _upload(self.weight[side][k], np.ascontiguousarray(weight[k], dtype=np.int32), stream)
        if self.slack:
            longest = [int(np.diff(np.asarray(ptr, dtype=np.int64)).max(initial=0)) for ptr, *_ in arrays.values()]
            self._upload_meta(m, longest, stream)
            self._clear_entries(m, self.m_cap, stream)
            self.tail_ub = m
            self.longest_ub = max(longest)
            self.state, self.parent, self.lineage = next_state(), None, next_lineage()
            self.touched_slots = 0
        self.num_vertices, self.num_edges = n, m

    def _upload_meta(self, tail: int, longest: list, stream) -> None:
        # kept on the set: the copy reads it after this call returns
        self._meta_host = np.array([tail, tail, *longest], dtype=np.int64)
        _upload(self.meta, self._meta_host, stream)

    def download(self, side: str, m: int):
        """(ptr, key, weights (K, m)) of one side as NumPy arrays, packed (waits for the stream)."""
        n = self.num_vertices
        if self.slack:
            return self._download_slack(side, n, int(m))
        ptr = self.ptr[side][: n + 1].get()
        key = self.key[side][:m].get()
        weights = np.empty((self.num_weights, m), dtype=np.int32)
        for k in range(self.num_weights):
            weights[k] = self.weight[side][k][:m].get()
        return ptr, key, weights

    def packed_order(self, side: str, m: int):
        """A slack side's rows back to back: (ptr as NumPy, the device positions of its m entries in
        that order). Waits for the stream (the entry count is checked against ``m``)."""
        cupy = cupy_module()
        n = self.num_vertices
        with cupy.cuda.Device(self.device):
            start = self.ptr[side][:n].astype(cupy.int64)
            lengths = self.end[side][:n].astype(cupy.int64) - start
            packed = cupy.zeros(n + 1, dtype=cupy.int64)
            if n:
                cupy.cumsum(lengths, out=packed[1:])
            ptr = packed.get()
            if int(ptr[-1]) != m:
                from ..errors import InternalError

                raise InternalError(f"the device graph's {side} side holds {int(ptr[-1])} entries, not {m}")
            at = cupy.arange(m, dtype=cupy.int64)
            rows = cupy.searchsorted(packed[1:], at, side="right")
            return ptr, start[rows] + (at - packed[rows])

    def _download_slack(self, side: str, n: int, m: int):
        """A slack side packed on the device, then downloaded: each row's entries in order, the rows
        back to back (what a packed set of the same state holds)."""
        ptr, source = self.packed_order(side, m)
        key = self.key[side][source].get()
        weights = np.empty((self.num_weights, m), dtype=np.int32)
        for k in range(self.num_weights):
            weights[k] = self.weight[side][k][source].get()
        return ptr.astype(self.offset_dtype), key, weights


def _copy(dst, src, count: int, stream) -> None:
    nbytes = int(count) * src.itemsize
    if nbytes:
        dst.data.copy_from_device_async(src.data, nbytes, stream)


def _upload(dst, host: np.ndarray, stream) -> None:
    if host.nbytes:
        dst.data.copy_from_host_async(host.ctypes.data, host.nbytes, stream)


#: What a slack commit copies into its target first, cheapest first: nothing (the target holds the
#: source's state), the rows of the source's commit (the target holds the state that commit
#: started from), the rows of the target's own commit (it started from the source's state: e.g.
#: after ``restore()``), everything.
SYNC_KINDS = ("same", "rows_of_source", "rows_of_target", "full")


def sync_kind(target: CsrBuffers, source: CsrBuffers) -> str:
    """How a slack commit from ``source`` brings ``target`` to the source's state (SYNC_KINDS)."""
    if (target.state is None or source.state is None or target.lineage is None
            or target.lineage != source.lineage or not source.slack or not target.slack):
        return "full"
    if target.state == source.state:
        return "same"
    if source.parent is not None and target.state == source.parent and source.touched_slots:
        return "rows_of_source"
    if target.parent is not None and target.parent == source.state and target.touched_slots:
        return "rows_of_target"
    return "full"


class DeviceGraph:
    """The device copy of one graph: its current buffer set, a spare one, and the apply scratch."""

    def __init__(self, device: int, layout: str | None = None):
        """``layout``: one of LAYOUTS (None: ``chosen_layout()``, read here)."""
        self.device = int(device)
        self.slack = (chosen_layout() if layout is None else layout) == "slack"
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
        target.state = None  # whatever it held is being replaced
        row_of_out = np.repeat(np.arange(n, dtype=np.int32), np.diff(host.row_ptr.astype(np.int64)))
        row_of_in = np.repeat(np.arange(n, dtype=np.int32), np.diff(host.in_ptr.astype(np.int64)))
        with cuda_errors("uploading the graph to the device"):
            target.upload(host, row_of_out, row_of_in, stream)
        self.current = target

    @property
    def layout(self) -> str:
        return "slack" if self.slack else "packed"

    def target(self, n: int, m: int, num_weights: int, offset_dtype, source: CsrBuffers | None = None,
               room: int = 0) -> CsrBuffers:
        """The owned set a commit of a state of this size writes: never the current one, grown
        (geometrically) if too small. May raise ``OutOfMemoryError``; changes nothing then.
        ``source`` (slack): the set the commit starts from; of the spares that fit, the one that
        differs from it least (``sync_kind``) is taken. ``room``: the entries a new set gets at least
        (headroom past ``m``: a slack set's tail moves commit after commit)."""
        spares = [b for b in self.owned if b is not self.current]
        fitting = [b for b in spares if b.fits(n, m, num_weights, offset_dtype, self.slack)]
        if fitting:
            if source is not None and len(fitting) > 1:
                return min(fitting, key=lambda b: SYNC_KINDS.index(sync_kind(b, source)))
            return fitting[0]
        base = spares[0] if spares else self.current
        n_cap = _grown(base.n_cap, n) if base is not None else n
        m_cap = _grown(base.m_cap, max(m, room)) if base is not None else max(m, room)
        if len(self.owned) >= 2:
            self.owned.remove(spares[0])  # release first so that the pool can reuse the memory
            # with the views of it (they hold its arrays)
            self._views = {k: v for k, v in self._views.items() if k[0] != spares[0].serial}
        with cuda_errors("reserving the device graph"):
            fresh = CsrBuffers(self.device, n_cap, m_cap, num_weights, offset_dtype, self.slack)
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
            snap = CsrBuffers(self.device, cur.num_vertices, max(cur.num_edges, cur.extent), cur.num_weights,
                              cur.offset_dtype, cur.slack)
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
            out_end=cur.end["out"][:n],
            out_index=cur.key["out"],
            out_weight=cur.weight["out"][k],
            in_ptr=cur.ptr["in"][: n + 1],
            in_end=cur.end["in"][:n],
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


__all__ = ["CsrBuffers", "DEFAULT_LAYOUT", "DeviceGraph", "DeviceGraphView", "GROWTH", "LAYOUTS", "LAYOUT_ENV",
           "SYNC_KINDS", "chosen_layout", "sync_kind"]
