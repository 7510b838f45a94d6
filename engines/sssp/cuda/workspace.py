"""The per-device CUDA workspace shared by the fused and operators engines (algorithm.md §5.1, §12.3).

One ``Workspace`` per (device, vertex dtype), reserved for a capacity of vertices and of
change-list entries, grown geometrically and then reused, so a steady-state update allocates no
device memory. It holds:

- the per-vertex scratch: ``word`` (u64), ``stamp``, ``in_far``, ``flag`` (int32), ``ancestor``
  (vertex type) and the six lists ``candidates``, ``frontier``, ``near_a``, ``near_b``, ``far_a``,
  ``far_b`` (vertex type, capacity n each);
- the generation counter (``next_generation()``, the 2^30 reset rule);
- the change-list buffers on the device (``changed_from``, ``changed_to``, ``heads`` and the
  changed count), which the device apply fills for each run (``device_apply``);
- the control blocks (fused and operators layouts of ``kernels.cuh``), each a small device buffer
  mirrored by a NumPy structured dtype over pinned host memory.

``flag``, ``in_far`` and ``stamp`` are zeroed only when reserved; every successful run leaves
``flag`` and ``in_far`` zero. A failed run calls ``reset_after_failure()``.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from ...errors import InternalError
from .runtime import cuda_errors, cupy_module

#: Entries of the near-list length log (``near_log``; kernels.cuh SSSP_NEAR_LOG_CAPACITY): push
#: iteration i of a run writes its near count at i while i is below it (push.py push_profile).
#: Far above the gates' 2,416 iterations at most.
NEAR_LOG_CAPACITY = 1 << 16

#: Generations above this reset every stamp (INT32_MAX / 2, algorithm.md §5.1).
GENERATION_LIMIT = (1 << 30) - 1
#: Geometric growth factor of every capacity.
GROWTH = 1.5
#: The empty value of a 64-bit minimum slot.
EMPTY_MIN = np.uint64(0xFFFFFFFFFFFFFFFF)


# ---------------------------------------------------------------------------------------------
# Control-block layouts: NumPy mirrors of sssp::FusedControl<V> and sssp::OperatorsControl<V>.
# align=True applies the C layout rules, so the offsets equal the compiler's (checked by
# tests/engines/test_cuda_sources.py against offsetof in kernels.cuh).


def fused_control_dtype(vertex_dtype=np.int32) -> np.dtype:
    v = np.dtype(vertex_dtype)
    return np.dtype(
        [
            ("candidates", v),
            ("frontier", v),
            ("near", v, (3,)),
            ("far", v, (3,)),
            ("active", np.int32, (3,)),
            ("overflow", np.int32),
            ("invalidated", v),
            ("rounds", np.int32),
            ("iterations", np.int32),
            ("epochs", np.int32),
            ("generation", np.int32),
            ("pushes", np.int64),
            ("minimum", np.uint64, (3,)),
            ("affected", np.uint64),
            ("solo_done", np.int32),
            ("solo_runs", np.int32),
            ("solo_iterations", np.int32),
            ("base_generation", np.int32),
            ("num_heads", v),
            ("solo_limit", v),
            ("delta", np.uint64),
            ("host_record", np.uint64),
            ("exited", np.uint32),
        ],
        align=True,
    )


def operators_control_dtype(vertex_dtype=np.int32) -> np.dtype:
    v = np.dtype(vertex_dtype)
    return np.dtype(
        [
            ("minimum", np.uint64),
            ("threshold", np.uint64),
            ("affected", np.uint64),
            ("candidates", v),
            ("frontier", v),
            ("near", v, (2,)),
            ("far", v, (2,)),
            ("invalidated", v),
            ("overflow", np.int32),
            ("active", np.int32, (65,)),
            ("phase", np.int32),
            ("near_slot", np.int32),
            ("far_slot", np.int32),
            ("generation", np.int32),
            ("iterations", np.int32),
            ("epochs", np.int32),
            ("step_count", v),
            ("pushes", np.int64),
            ("loop_done_blocks", np.int32),
            ("loop_fault", np.int32),
            ("loop_delta", np.uint64),
            ("loop_bound", np.uint64),
            ("loop_no_parent", np.uint64),
            ("loop_bits", np.uint32),
            ("loop_source", v),
            ("loop_n", v),
            ("loop_finish", np.int32),
            ("loop_count_affected", np.int32),
            ("loop_input_error", np.int32),
            ("loop_distances", np.uint64),  # device pointers
            ("loop_parents", np.uint64),
            ("loop_push_shift", np.uint32),
            # an update's per-batch values, uploaded with the initial record (operators.prologue)
            ("update_generation", np.int32),
            ("update_loop_generation", np.int32),
            ("update_heads", v),
            ("update_delta", np.uint64),
        ],
        align=True,
    )


CONTROL_LAYOUTS = {"fused": fused_control_dtype, "operators": operators_control_dtype}


def _pinned_array(nbytes: int, dtype, count: int) -> tuple[np.ndarray, int]:
    """A NumPy array over fresh pinned host memory, and the memory's address."""
    cupy = cupy_module()
    mem = cupy.cuda.alloc_pinned_memory(max(int(nbytes), 1))
    # As cupyx.empty_pinned does: the array's base keeps the pinned memory alive.
    arr = np.ndarray((int(count),), dtype=dtype, buffer=mem)
    return arr, int(mem.ptr)


class ControlBlock:
    """One control block: a device buffer with the struct's bytes and two pinned host mirrors.

    ``host_init`` is what the host uploads before a fused launch (``upload_initial``);
    ``host_read`` receives the block at the synchronization (``runtime.synchronize``). They are
    separate so the record a caller reads is never overwritten by the next upload.
    """

    def __init__(self, layout: str, vertex_dtype, device: int):
        cupy = cupy_module()
        self.layout = layout
        self.dtype = CONTROL_LAYOUTS[layout](vertex_dtype)
        self.nbytes = int(self.dtype.itemsize)
        with cupy.cuda.Device(device):
            self.device = cupy.zeros(self.nbytes, dtype=cupy.uint8)
        self.host_read, self.host_read_ptr = _pinned_array(self.nbytes, self.dtype, 1)
        self.host_init, self.host_init_ptr = _pinned_array(self.nbytes, self.dtype, 1)
        # what upload_initial starts from: zeros with every minimum slot empty, built once
        self._initial = np.zeros((), dtype=self.dtype)
        self._initial["minimum"] = EMPTY_MIN
        self._initial_bytes = np.frombuffer(self._initial.tobytes(), dtype=np.uint8)
        self._host_init_bytes = self.host_init.view(np.uint8)
        self._host_init_record = self.host_init[0:1].reshape(())
        # Readbacks issued ahead of the wait (runtime.readback_async): two pinned mirrors, each
        # with the event recorded after its copy, so one can land while the other is read.
        self.ahead = []
        with cupy.cuda.Device(device):
            for _ in range(2):
                mirror, ptr = _pinned_array(self.nbytes, self.dtype, 1)
                self.ahead.append((mirror, ptr, cupy.cuda.Event(block=False, disable_timing=True)))

    def upload_initial(self, stream, **fields) -> None:
        """Stage a zeroed block with every minimum slot empty (and ``fields`` set); copy it
        asynchronously to the device on ``stream``. No synchronization."""
        self.stage_initial(**fields)
        with cuda_errors("uploading the control block"):
            self.device.data.copy_from_host_async(self.host_init_ptr, self.nbytes, stream)

    def stage_initial(self, **fields) -> None:
        """Write the initial record (zeros, every minimum slot empty, ``fields`` set) into the
        pinned ``host_init`` without copying it: a captured run's graph copies it up itself
        (``enqueue_copies``), reading the pinned memory when it runs."""
        # one memmove of the prepared bytes (a structured assignment costs several µs), then the
        # fields through the 0-d record view made once
        self._host_init_bytes[:] = self._initial_bytes
        rec = self._host_init_record
        for name, value in fields.items():
            rec[name] = value

    def enqueue_copies(self, stream, between) -> None:
        """The copies of a captured run around ``between(stream)``: ``host_init`` up to the device
        before it, the block down into ``host_read`` after it (the runtime's copies: CuPy refuses
        a device-to-host copy on a capturing stream). Nothing waits."""
        rt = cupy_module().cuda.runtime
        self.enqueue_upload(stream)
        between(stream)
        rt.memcpyAsync(self.host_read_ptr, self.device.data.ptr, self.nbytes, rt.memcpyDeviceToHost, stream.ptr)

    def enqueue_upload(self, stream) -> None:
        """``host_init`` up to the device on ``stream`` by the runtime's copy, which a capturing
        stream records as a node that reads the pinned record when the graph runs (the operators
        engine's captured prologue; ``enqueue_copies``). Nothing waits."""
        rt = cupy_module().cuda.runtime
        rt.memcpyAsync(self.device.data.ptr, self.host_init_ptr, self.nbytes, rt.memcpyHostToDevice, stream.ptr)

    @property
    def pointer(self):
        """The device buffer (pass it as the kernel argument ``ctl``)."""
        return self.device


# ---------------------------------------------------------------------------------------------


def _grown(current: int, needed: int) -> int:
    return max(int(needed), int(current * GROWTH) + 1, 1)


#: Layout serials of workspaces (``Workspace.layout``), one counter for all of them: a workspace
#: made again after a discard never repeats an earlier one's number.
_layouts = itertools.count(1)


class Workspace:
    """Scratch of one device and vertex dtype, shared by both CUDA engines (algorithm.md §5.1)."""

    VERTEX_LISTS = ("candidates", "frontier", "near_a", "near_b", "far_a", "far_b")

    def __init__(self, device: int, vertex_dtype=np.int32):
        self.device = int(device)
        self.vertex_dtype = np.dtype(vertex_dtype)
        self.lock = threading.RLock()  # runs sharing a workspace never overlap
        self.generation = 0
        self.vertex_capacity = 0
        self.change_capacity = 0
        self.word = self.stamp = self.in_far = self.flag = self.ancestor = None
        self.candidates = self.frontier = None
        self.near_a = self.near_b = self.far_a = self.far_b = None
        self.changes_device = None
        self.change_count = None
        self._change_views = None  # change_views(), cut once per changes_device
        self.near_log = None  # push.NEAR_LOG_CAPACITY near-list lengths of the last run
        self._controls: dict[str, ControlBlock] = {}
        # A serial that stands for every buffer above and their addresses (a captured launch
        # fixes them: fused.py's launch memo keys on it): new whenever a reserve (re)allocates
        # anything, 0 until the first reserve is complete or while one is under way (a reserve
        # that fails half-way leaves 0, which fits nothing, so the next reserve completes it).
        self.layout = 0

    # -- reservation --------------------------------------------------------------------------

    def reserve(self, num_vertices: int, num_changes: int, stream) -> None:
        """Make room for ``num_vertices`` vertices and ``num_changes`` changes (algorithm.md §8.2
        step 6).

        Growth reallocates and zeroes ``flag``, ``in_far`` and ``stamp`` (stream-ordered) and resets
        the generation; within capacity nothing is allocated. Raises ``OutOfMemoryError``.
        """
        if self.fits(num_vertices, num_changes):
            return  # the steady state (twice per update): no device or stream context to enter
        grow_vertices = num_vertices > self.vertex_capacity
        grow_changes = num_changes > self.change_capacity or self.changes_device is None
        cupy = cupy_module()
        self.layout = 0  # until every buffer is in place
        with cuda_errors("reserving the CUDA workspace"), cupy.cuda.Device(self.device), stream:
            if grow_vertices:
                self._reserve_vertices(_grown(self.vertex_capacity, num_vertices), stream)
            # changed_from, changed_to and heads live in one buffer: 3 x the change capacity.
            if grow_changes:
                cap = _grown(self.change_capacity, num_changes)
                self.changes_device = self._change_views = None
                self.changes_device = cupy.empty(3 * cap, dtype=self.vertex_dtype)
                self.change_capacity = cap
            if self.change_count is None:
                self.change_count = cupy.zeros(1, dtype=self.vertex_dtype)
            if self._change_views is None:
                # made once per buffer: three CuPy slices cost about 20 µs an update when cut anew
                cap, dev = self.change_capacity, self.changes_device
                self._change_views = (dev[0:cap], dev[cap:2 * cap], dev[2 * cap:3 * cap], self.change_count)
            if self.near_log is None:
                self.near_log = cupy.zeros(NEAR_LOG_CAPACITY, dtype=self.vertex_dtype)
            for layout in CONTROL_LAYOUTS:
                if layout not in self._controls:
                    self._controls[layout] = ControlBlock(layout, self.vertex_dtype, self.device)
        self.layout = next(_layouts)

    def fits(self, num_vertices: int, num_changes: int) -> bool:
        """Whether ``reserve(num_vertices, num_changes)`` would leave everything as it is: a
        completed reserve (``layout`` set: every buffer, the change views, ``near_log`` and each
        control block in place) with room for both."""
        return bool(self.layout) and num_vertices <= self.vertex_capacity and num_changes <= self.change_capacity

    def _reserve_vertices(self, cap: int, stream) -> None:
        cupy = cupy_module()
        # Release the old buffers first so that the pool can reuse their memory.
        self.word = self.stamp = self.in_far = self.flag = self.ancestor = None
        for name in self.VERTEX_LISTS:
            setattr(self, name, None)
        self.vertex_capacity = 0
        self.word = cupy.empty(cap, dtype=cupy.uint64)
        self.stamp = cupy.empty(cap, dtype=cupy.int32)
        self.in_far = cupy.empty(cap, dtype=cupy.int32)
        self.flag = cupy.empty(cap, dtype=cupy.int32)
        self.ancestor = cupy.empty(cap, dtype=self.vertex_dtype)
        for name in self.VERTEX_LISTS:
            setattr(self, name, cupy.empty(cap, dtype=self.vertex_dtype))
        self.vertex_capacity = cap
        self._zero_scratch(stream)
        self.generation = 0

    def _zero_scratch(self, stream) -> None:
        for arr in (self.stamp, self.in_far, self.flag):
            arr.data.memset_async(0, arr.nbytes, stream)

    def control(self, layout: str) -> ControlBlock:
        """The control block of ``layout`` ("fused" or "operators"); reserved by ``reserve``."""
        try:
            return self._controls[layout]
        except KeyError:
            raise InternalError(f"the {layout} control block was not reserved") from None

    def require(self, num_vertices: int, num_changes: int) -> None:
        """Engines call this: the capacity must already be there (no allocation after the commit
        unless unavoidable; then ``reserve`` is called by the engine instead)."""
        if num_vertices > self.vertex_capacity or num_changes > self.change_capacity:
            raise InternalError(
                f"workspace of device {self.device} holds {self.vertex_capacity} vertices and "
                f"{self.change_capacity} changes; {num_vertices} and {num_changes} needed"
            )

    # -- generations --------------------------------------------------------------------------

    def next_generation(self, stream) -> int:
        """A generation greater than every one used since the last stamp reset
        (algorithm.md §5.1)."""
        return self.next_generations(stream, 1)

    def next_generations(self, stream, count: int) -> int:
        """The first of ``count`` consecutive generations greater than every one used since the
        last stamp reset (algorithm.md §5.1), for a run that hands them to the device together
        (the operators engine's captured start: the invalidation's and the device loop's first).
        The stamps restart before the first when the last would pass GENERATION_LIMIT + 1 (the
        zeroing is stream-ordered before whatever uses them), so no stamp of one predates it."""
        if self.generation + count - 1 > GENERATION_LIMIT:
            self.reset_stamps(stream, last_used=0)
        first = self.generation + 1
        self.generation += count
        return first

    def reset_stamps(self, stream, *, last_used: int) -> None:
        """Zero every stamp (stream-ordered) and continue the generations after ``last_used``:
        the 2^30 rule (algorithm.md §5.1), also between the operators device loop's replays."""
        with cuda_errors("resetting the stamps"):
            self.stamp.data.memset_async(0, self.stamp.nbytes, stream)
        self.generation = int(last_used)

    def advance_generation(self, last_used: int) -> None:
        """After a fused run: continue above the kernel's last generation (algorithm.md §5.11)."""
        self.generation = max(self.generation, int(last_used))

    def reset_after_failure(self, stream) -> None:
        """Re-zero ``flag``, ``in_far`` and ``stamp`` and reset the counter (algorithm.md §5.1,
        §8.3)."""
        if self.vertex_capacity:
            with cuda_errors("re-zeroing the CUDA workspace"):
                self._zero_scratch(stream)
        self.generation = 0

    # -- change lists -------------------------------------------------------------------------

    def change_views(self):
        """Device views ``(changed_from, changed_to, heads, changed_count)`` at fixed offsets of
        the reserved buffer, which the device apply fills for a run (no allocation)."""
        if self._change_views is None:
            raise InternalError(f"the change lists of device {self.device}'s workspace were not reserved")
        return self._change_views


_registry_lock = threading.Lock()
_workspaces: dict[tuple[int, np.dtype], Workspace] = {}


def get(device: int, vertex_dtype=np.int32) -> Workspace:
    """The workspace of ``device`` (created empty on first use; ``reserve`` sizes it)."""
    key = (int(device), np.dtype(vertex_dtype))
    with _registry_lock:
        ws = _workspaces.get(key)
        if ws is None:
            ws = _workspaces[key] = Workspace(device, vertex_dtype)
        return ws


def discard(device: int, vertex_dtype=np.int32) -> None:
    """Drop a workspace (after a failure that re-zeroing could not repair)."""
    with _registry_lock:
        _workspaces.pop((int(device), np.dtype(vertex_dtype)), None)


__all__ = [
    "GENERATION_LIMIT",
    "ControlBlock",
    "Workspace",
    "CONTROL_LAYOUTS",
    "discard",
    "fused_control_dtype",
    "get",
    "operators_control_dtype",
]
