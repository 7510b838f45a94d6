"""Launcher of the device apply (algorithm.md §3.3, §3.6; kernels in ``device_apply.cu``).

``commit(device_graph, events, old_max, stream)`` enqueues one batch on the graph's device: one
host-to-device copy of the event list (pinned staging), a sort of 64-bit (row, event) keys per
side, the editor's kernels on both sides into the spare buffer set, the maxima rescan where an old
maximum may be gone, and one asynchronous device-to-host copy of the apply record (summary, new
edge count, weight sums, maxima, weight-increase counts) into pinned memory. Nothing waits: the
record is read once the stream has passed it (``PendingCommit.resolve``), which the engine's own
synchronization guarantees in ``update()``, so the apply adds no host synchronization.

Reserved and reused (grown geometrically): the staging buffers, the scratch that reads zero
between commits (``mark``, ``row_flag``, ``row_delta``), the sort keys and an arena that serves
CuPy's sort and scan temporaries (through ``cupy.cuda.using_allocator``), so a steady-state commit
allocates no device memory.
"""

from __future__ import annotations

import numpy as np

from ...batch import ApplySummary
from ...errors import InternalError
from . import runtime
from .runtime import cuda_errors, cupy_module

ENGINE = "apply"
SOURCE = "device_apply.cu"
KERNELS = ("apply_keys", "apply_decide", "apply_row_ptr", "apply_move", "apply_rebuild",
           "apply_rescan_max", "apply_changes")
GROWTH = 1.5
#: The smallest event capacity reserved: small batches of varying size (a few to a few hundred
#: changes, the common interactive case) then never grow the event buffers in a steady state.
MIN_EVENTS = 4096
#: The apply record (int64): fixed slots, then six groups of K per-column slots
#: (device_apply.cu RecordSlot and rec_*).
REC_DELETED, REC_MISSING, REC_INSERTED, REC_UPDATED, REC_EDGES = 0, 1, 2, 3, 4
REC_FIXED = 6
COL_SUM, COL_LOST, COL_WRITTEN, COL_RESCAN, COL_INCREASED, COL_OLD_MAX = range(6)
WARP = 32


def record_length(num_weights: int) -> int:
    return REC_FIXED + 6 * int(num_weights)


def load_module(device: int) -> runtime.CompiledModule:
    return runtime.get_module(ENGINE, int(device), SOURCE, KERNELS, cooperative=False)


def _grown(current: int, needed: int) -> int:
    return max(int(needed), int(current * GROWTH) + 1, 1)


class _Arena:
    """A bump allocator over one reserved device chunk, for CuPy's temporaries inside a commit.

    ``reset()`` at the start of each commit; what a commit asks for beyond the chunk comes from
    the allocator in force before (counted as a real allocation) and makes the next reset reserve
    a chunk large enough for it: after one such commit, commits of that size allocate nothing.
    """

    ALIGN = 512

    def __init__(self, device: int):
        self.device = device
        self.base = None
        self.size = 0
        self.used = 0
        self.overflow = 0
        self._fallback = None

    def reset(self) -> None:
        cupy = cupy_module()
        wanted = self.used + self.overflow
        if self.base is None or wanted > self.size:
            self.base = None
            self.size = _grown(self.size, max(wanted, 1 << 20))
            with cupy.cuda.Device(self.device):
                self.base = cupy.cuda.alloc(self.size)
        self.used = 0
        self.overflow = 0
        self._fallback = cupy.cuda.get_allocator()

    def malloc(self, size: int):
        size = (int(size) + self.ALIGN - 1) // self.ALIGN * self.ALIGN
        if self.used + size <= self.size:
            ptr = self.base + self.used
            self.used += size
            return ptr
        self.overflow += size
        return self._fallback(size)

    @property
    def nbytes(self) -> int:
        return int(self.size)


class ApplyScratch:
    """The reserved device and pinned buffers of one graph's commits (one per ``DeviceGraph``)."""

    def __init__(self, device: int, num_weights: int):
        self.device = int(device)
        self.num_weights = int(num_weights)
        self.m_cap = self.n_cap = self.event_cap = 0
        self.mark = self.row_flag = self.row_delta = self.cum = None
        self.keys = self.stage_key = self.stage_ins = self.increased = None
        self.staging = None  # device bytes: src | dst | insertion weights | record init
        self._pinned = None
        self._pinned_ptr = 0
        self._upload_done = None  # event after the last staging copy (the pinned buffer is free)
        cupy = cupy_module()
        with cupy.cuda.Device(self.device):
            self.record = cupy.zeros(record_length(num_weights), dtype=cupy.int64)
            mem = cupy.cuda.alloc_pinned_memory(self.record.nbytes)
            self.record_host = np.ndarray(self.record.shape, dtype=np.int64, buffer=mem)
            self.record_host_ptr = int(mem.ptr)
            self.record_ready = cupy.cuda.Event(block=False, disable_timing=True)
        self.arena = _Arena(self.device)

    @property
    def nbytes(self) -> int:
        arrays = (self.mark, self.row_flag, self.row_delta, self.cum, self.keys, self.stage_key,
                  self.stage_ins, self.increased, self.staging, self.record)
        return sum(int(a.nbytes) for a in arrays if a is not None) + self.arena.nbytes

    def reserve(self, n_rows: int, m_old: int, num_events: int, stream) -> None:
        """Room for a commit on a state of ``m_old`` entries growing to ``n_rows`` rows with
        ``num_events`` events; new zero-invariant buffers are zeroed (stream-ordered)."""
        cupy = cupy_module()
        with cuda_errors("reserving the device apply"), cupy.cuda.Device(self.device), stream:
            if m_old > self.m_cap or self.mark is None:
                cap = _grown(self.m_cap, m_old)
                self.mark = None
                self.mark = cupy.zeros(cap, dtype=cupy.int32)
                self.m_cap = cap
            if n_rows + 1 > self.n_cap or self.row_flag is None:
                cap = _grown(self.n_cap, n_rows + 1)
                self.row_flag = self.row_delta = self.cum = None
                self.row_flag = cupy.zeros(cap, dtype=cupy.int32)
                self.row_delta = cupy.zeros(cap, dtype=cupy.int64)
                self.cum = cupy.empty(cap, dtype=cupy.int64)
                self.n_cap = cap
            if num_events > self.event_cap or self.keys is None:
                cap = max(_grown(self.event_cap, num_events), MIN_EVENTS)
                k = self.num_weights
                self.keys = self.stage_key = self.stage_ins = self.increased = self.staging = None
                # both sides' sort keys in one array, sorted by one call (as unsigned: the side
                # bit is the top bit, device_apply.cu apply_keys)
                self.keys = cupy.empty(2 * cap, dtype=cupy.uint64)
                self.stage_key = cupy.empty(cap, dtype=cupy.int32)
                self.stage_ins = cupy.empty(cap, dtype=cupy.int32)
                self.increased = cupy.zeros(cap * max(k, 1), dtype=cupy.uint8)
                nbytes = self._staging_bytes(cap)
                self.staging = cupy.empty(nbytes, dtype=cupy.uint8)
                mem = cupy.cuda.alloc_pinned_memory(nbytes)
                self._pinned = np.ndarray((nbytes,), dtype=np.uint8, buffer=mem)
                self._pinned_ptr = int(mem.ptr)
                self._upload_done = None
                self.event_cap = cap

    def _record_at(self, cap: int) -> int:
        return (8 * cap + 4 * cap * self.num_weights + 7) // 8 * 8  # 8-byte aligned

    def _staging_bytes(self, cap: int) -> int:
        return self._record_at(cap) + 8 * record_length(self.num_weights)

    def reset_after_failure(self, stream) -> None:
        """Re-zero the zero-invariant scratch after a commit failed half-way."""
        for arr in (self.mark, self.row_flag, self.row_delta):
            if arr is not None:
                arr.data.memset_async(0, arr.nbytes, stream)

    def stage(self, events, old_max, stream):
        """Copy the event list and the record's start values to the device in one copy;
        returns device views (src, dst, insertion weights)."""
        if self._upload_done is not None and not self._upload_done.done:
            self._upload_done.synchronize()  # the previous copy still reads the pinned buffer
        cap, k = self.event_cap, self.num_weights
        count, ins = events.size, events.num_insertions
        host = self._pinned
        host[: 4 * count].view(np.int32)[:] = events.src
        host[4 * cap: 4 * cap + 4 * count].view(np.int32)[:] = events.dst
        w_at = 8 * cap
        host[w_at: w_at + 4 * ins * k].view(np.int32)[:] = events.weights.reshape(-1)
        rec_at = self._record_at(cap)
        init = host[rec_at: rec_at + 8 * record_length(k)].view(np.int64)
        init[:] = 0
        init[REC_FIXED + COL_OLD_MAX * k: REC_FIXED + (COL_OLD_MAX + 1) * k] = old_max
        cupy = cupy_module()
        with cuda_errors("copying the batch to the device"):
            dev = self.staging.data
            for offset, nbytes in ((0, 4 * count), (4 * cap, 4 * count), (w_at, 4 * ins * k)):
                if nbytes:
                    (dev + offset).copy_from_host_async(self._pinned_ptr + offset, nbytes, stream)
            self.record.data.copy_from_host_async(self._pinned_ptr + rec_at, self.record.nbytes, stream)
            if self._upload_done is None:
                self._upload_done = cupy.cuda.Event(block=False, disable_timing=True)
            self._upload_done.record(stream)
        staged = self.staging
        src = staged[: 4 * cap].view(cupy.int32)
        dst = staged[4 * cap: 8 * cap].view(cupy.int32)
        weights = staged[w_at: w_at + 4 * cap * k].view(cupy.int32)
        return src, dst, weights


class PendingCommit:
    """One device commit whose counters are still on their way to the host.

    ``resolve()`` reads the pinned record once the stream has passed it (a query; it waits only
    if nothing has synchronized since, e.g. a second ``Graph.apply`` straight after the first).
    The device-side change data (the events, ``increased``) stays valid until the graph's next
    commit, which resolves this one first.
    """

    def __init__(self, scratch: ApplyScratch, events, buffers, ev_src, ev_dst, weight_sum_before,
                 old_max, record_pending: bool):
        self.scratch = scratch
        self.events = events
        self.buffers = buffers
        self.ev_src, self.ev_dst = ev_src, ev_dst
        self._weight_sum_before = tuple(int(x) for x in weight_sum_before)
        self._old_max = tuple(int(x) for x in old_max)
        self._pending = record_pending
        self._values = None
        self._expired = False
        if not record_pending:  # nothing ran: everything is known on the host
            self._values = self._from_record(np.zeros(record_length(scratch.num_weights), dtype=np.int64),
                                             empty=True)

    # -- the record ---------------------------------------------------------------------------

    def _from_record(self, rec: np.ndarray, empty: bool = False) -> dict:
        k = self.scratch.num_weights
        ev = self.events

        def col(group):
            return rec[REC_FIXED + group * k: REC_FIXED + (group + 1) * k]

        lost, written, rescan = col(COL_LOST), col(COL_WRITTEN), col(COL_RESCAN)
        maxima = tuple(int(rescan[c]) if lost[c] else max(self._old_max[c], int(written[c])) for c in range(k))
        sums = tuple(self._weight_sum_before[c] + int(col(COL_SUM)[c]) for c in range(k))
        edges = self.buffers.num_edges if empty else int(rec[REC_EDGES])
        summary = ApplySummary(
            inserted_edges=int(rec[REC_INSERTED]),
            updated_edges=int(rec[REC_UPDATED]),
            deleted_edges=int(rec[REC_DELETED]),
            ignored_deletions=int(ev.out_of_range + rec[REC_MISSING]),
            inserted_vertices=int(ev.n_after - ev.n_old),
            num_vertices_after=int(ev.n_after),
        )
        increased = tuple(int(x) for x in col(COL_INCREASED))
        return {"summary": summary, "num_edges": edges, "max_weight": maxima, "weight_sum": sums,
                "changed": tuple(ev.num_deletions + c for c in increased)}

    def resolve(self) -> dict:
        """The commit's counters: summary, num_edges, max_weight, weight_sum, changed (per k)."""
        if self._values is None:
            ready = self.scratch.record_ready
            if not ready.done:
                with cuda_errors("waiting for the device apply"):
                    ready.synchronize()
            self._values = self._from_record(self.scratch.record_host.copy())
            self.buffers.num_edges = self._values["num_edges"]
        return self._values

    @property
    def resolved(self) -> bool:
        return self._values is not None

    def expire(self) -> None:
        """The graph commits again: resolve now (the pinned record is about to be reused)."""
        self.resolve()
        self._expired = True

    # -- device data for the engines ----------------------------------------------------------

    def weight_increased(self) -> np.ndarray:
        """``(I, K)`` bool on the host (a download and a wait)."""
        if self._expired:
            raise InternalError("the device data of this commit was reused by a later commit")
        ins, k = self.events.num_insertions, self.scratch.num_weights
        if ins == 0:
            return np.zeros((0, k), dtype=bool)
        with cuda_errors("downloading the weight increases"):
            flat = self.scratch.increased[: ins * k].get()
        return flat.reshape(ins, k).astype(bool)

    def stage_changes(self, objective: int, changed_from, changed_to, heads, changed_count, stream) -> None:
        """The change lists of one objective (§3.4) into the engine's workspace buffers."""
        if self._expired:
            raise InternalError("the device data of this commit was reused by a later commit")
        ev = self.events
        module = load_module(self.scratch.device)
        fn = module.function("apply_changes", np.int32, np.int32)
        fn((1,), (1024,), (np.int32(ev.num_deletions), np.int32(ev.num_insertions), self.ev_src,
                           self.ev_dst, self.scratch.increased, np.int32(self.scratch.num_weights),
                           np.int32(objective), changed_from, changed_to, heads, changed_count),
           stream=stream)

    def num_changed(self, objective: int) -> int:
        return int(self.resolve()["changed"][int(objective)])


class DeviceChangeLists:
    """The change lists of one objective (§3.4) for a CUDA engine, built on the device.

    ``upper`` (every event: deletions and insertions) bounds the changed count and sizes the
    launches; the exact count is on the device (``stage`` writes it where the kernels read it) and
    on the host once the commit's record arrived (``num_changed``, after the engine's first
    synchronization).
    """

    def __init__(self, pending: PendingCommit, objective: int):
        self.pending = pending
        self.objective = int(objective)
        self.upper = int(pending.events.size)
        self.num_heads = int(pending.events.num_insertions)

    def stage(self, ws, stream):
        changed_from, changed_to, heads, count = ws.change_views()
        if self.upper == 0:
            count.fill(0)
        else:
            self.pending.stage_changes(self.objective, changed_from, changed_to, heads, count, stream)
        return changed_from, changed_to, heads, count

    def num_changed(self) -> int:
        return self.pending.num_changed(self.objective)


def commit(dgraph, events, old_max, weight_sum, stream) -> PendingCommit:
    """Enqueue ``events`` (``BatchEvents``) on ``dgraph``'s device and publish the new state.

    Raises before the publication (and leaves the current state as it was) on any failure.
    """
    cupy = cupy_module()
    cur = dgraph.current
    k = cur.num_weights
    n_old, m_old = cur.num_vertices, cur.num_edges
    n_after, count = int(events.n_after), int(events.size)
    if count == 0:
        # An empty batch changes no array: the new state shares the current set (it differs only
        # in its identity, which Graph keeps).
        return PendingCommit(_scratch(dgraph), events, cur, None, None, weight_sum, old_max, False)
    scratch = _scratch(dgraph)
    target = dgraph.target(n_after, m_old + events.num_insertions, k, cur.offset_dtype)
    scratch.reserve(n_after, m_old, count, stream)
    module = load_module(dgraph.device)
    offset = cur.offset_dtype
    fn = {name: module.function(name, np.int32, offset) for name in KERNELS}
    device = dgraph.device
    blocks = runtime.operators_blocks
    warp_blocks = lambda items: blocks(int(items) * WARP, device)  # noqa: E731 - one warp per item
    i32, i64 = np.int32, np.int64
    # apply_decide's per-block counters: the fixed record slots, plus the per-column groups when
    # they fit the shared memory every CUDA device offers a block (48 KiB)
    shared_cols = 8 * (REC_FIXED + 5 * k) <= 48 * 1024
    decide_shared = 8 * (REC_FIXED + 5 * k) if shared_cols else 8 * REC_FIXED
    try:
        with cuda_errors("applying the batch on the device"), cupy.cuda.Device(device), stream:
            ev_src, ev_dst, ins_w = scratch.stage(events, old_max, stream)
            keys = scratch.keys[: 2 * count]
            keys_out, keys_in = keys[:count], keys[count:]
            fn["apply_keys"]((blocks(count, device),), (runtime.BLOCK_SIZE,),
                             (i64(count), ev_src, ev_dst, keys_out, keys_in), stream=stream)
            scratch.arena.reset()
            with cupy.cuda.using_allocator(scratch.arena.malloc):
                keys.sort()  # one sort for both sides: its fixed cost dominates at batch sizes
            # (side, sorted keys, entry key of an event, stats on this side)
            for side, keys, ev_key, stats in (("out", keys_out, ev_dst, 1), ("in", keys_in, ev_src, 0)):
                old_w, new_w = cur.weight[side], target.weight[side]
                fn["apply_decide"]((warp_blocks(count),), (runtime.BLOCK_SIZE,), (
                    i64(count), keys, ev_key, i32(events.num_deletions), ins_w, i32(k), i32(n_old),
                    cur.ptr[side], cur.key[side], old_w, i64(cur.m_cap), scratch.mark, scratch.row_flag,
                    scratch.row_delta, scratch.stage_key, scratch.stage_ins, i32(stats), scratch.record,
                    scratch.increased, i32(shared_cols)), stream=stream, shared_mem=decide_shared)
                with cupy.cuda.using_allocator(scratch.arena.malloc):
                    cupy.cumsum(scratch.row_delta[:n_after], out=scratch.cum[:n_after])
                fn["apply_row_ptr"]((blocks(n_after + 1, device),), (runtime.BLOCK_SIZE,), (
                    i32(n_after), i32(n_old), cur.ptr[side], scratch.cum, target.ptr[side], i32(stats),
                    scratch.record), stream=stream)
                fn["apply_move"]((blocks(m_old, device),), (runtime.BLOCK_SIZE,), (
                    i64(m_old), i32(k), cur.ptr[side], target.ptr[side], scratch.row_flag, cur.key[side],
                    cur.row_of[side], old_w, i64(cur.m_cap), target.key[side], target.row_of[side], new_w,
                    i64(target.m_cap)), stream=stream)
                fn["apply_rebuild"]((warp_blocks(count),), (runtime.BLOCK_SIZE,), (
                    i64(count), keys, ins_w, i32(k), i32(n_old), cur.ptr[side], cur.key[side], old_w,
                    i64(cur.m_cap), scratch.mark, target.ptr[side], target.key[side], target.row_of[side],
                    new_w, i64(target.m_cap), scratch.row_flag, scratch.row_delta, scratch.stage_key,
                    scratch.stage_ins), stream=stream)
            fn["apply_rescan_max"]((blocks(m_old + events.num_insertions, device),), (runtime.BLOCK_SIZE,), (
                target.ptr["out"], i32(n_after), i32(k), target.weight["out"], i64(target.m_cap),
                scratch.record), stream=stream)
            scratch.record.data.copy_to_host_async(scratch.record_host_ptr, scratch.record.nbytes, stream)
            scratch.record_ready.record(stream)
    except BaseException:
        try:
            scratch.reset_after_failure(stream)
        except Exception:
            dgraph.scratch = None  # could not even re-zero: start over at the next commit
        raise
    target.num_vertices = n_after
    target.num_edges = m_old + events.num_insertions  # an upper bound until resolved
    dgraph.publish(target)
    return PendingCommit(scratch, events, target, ev_src, ev_dst, weight_sum, old_max, True)


def _scratch(dgraph) -> ApplyScratch:
    if dgraph.scratch is None:
        dgraph.scratch = ApplyScratch(dgraph.device, dgraph.current.num_weights)
    return dgraph.scratch


def reserve(dgraph, events, stream) -> None:
    """Before the commit (§8.2 step 6): grow what the commit of ``events`` will need, so that the
    commit itself allocates nothing (``OutOfMemoryError`` here changes nothing)."""
    cur = dgraph.current
    if events.size == 0:
        return
    scratch = _scratch(dgraph)
    dgraph.target(int(events.n_after), cur.num_edges + events.num_insertions, cur.num_weights, cur.offset_dtype)
    scratch.reserve(int(events.n_after), cur.num_edges, events.size, stream)
    load_module(dgraph.device)


__all__ = ["ApplyScratch", "DeviceChangeLists", "PendingCommit", "commit", "load_module", "reserve", "record_length"]
