"""Launcher of the device apply (algorithm.md §3.3, §3.6; kernels in ``device_apply.cu``).

``commit(device_graph, events, old_max, stream)`` enqueues one batch on the graph's device: one
host-to-device copy of the event list (pinned staging), a sort of 64-bit (row, event) keys per
side (the library's, or key_sort.py's one-block sort: ``ENGINES_APPLY_KEY_SORT``), the editor's
kernels on both sides into the spare buffer set, the maxima rescan where an old maximum may be
gone, and one asynchronous device-to-host copy of the apply record (summary, new edge count,
weight sums, maxima, weight-increase counts) into pinned memory. Nothing waits: the
record is read once the stream has passed it (``PendingCommit.resolve``), which the engine's own
synchronization guarantees in ``update()``, so the apply adds no host synchronization.

Reserved and reused (grown geometrically): the staging buffers, the scratch that reads zero
between commits (``mark``, ``row_flag``, ``row_delta``), the sort keys and an arena that serves
CuPy's sort and scan temporaries (through ``cupy.cuda.using_allocator``), so a steady-state commit
allocates no device memory.

Two ways to launch the same kernels (``launch``): ``"python"`` launches them one by one, sized to
the batch (about 15 launches and library calls, each paying CuPy's argument conversion on the
host); ``"graph"`` replays a CUDA graph of the whole commit, captured once per launch plan (the
buffers' addresses, the vertex count, the reserved capacity): the kernels read the batch's sizes
from the device (device_apply.cu SizeSlot), sort every reserved key slot (padding keys order
last), and size their grids to the capacity, so one capture serves every batch that fits it. The
host then does one copy up, one graph launch and an event record per commit.
"""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np

from ..batch import ApplySummary, apply_summary
from ..errors import InternalError
from ..sssp.cuda import mapped, runtime, switches
from ..sssp.cuda.runtime import cuda_errors, cupy_module
from . import apply_sides, key_sort, slack_apply

ENGINE = "apply"
#: The apply's kernels, beside this file; compiled with the engines' shared header (runtime.read_source).
SOURCE = str(Path(__file__).resolve().with_name("device_apply.cu"))
KERNELS = ("apply_keys", "apply_decide", "apply_row_ptr", "apply_touched_scan", "apply_row_ptr_touched",
           "apply_move", "apply_rebuild", "apply_rescan_max", "apply_changes", "apply_changes_sized",
           "apply_record_out", "apply_sync_rows", "apply_rebuild_slack", "apply_slack_lengths", "apply_slack_layout",
           "apply_clear_from_tail", "apply_slack_finish")
#: A null device pointer as a kernel argument (a packed set's extent: the kernels take m from the sizes).
NULL = np.uint64(0)
#: How a commit's kernels are launched (module docstring; ``Options.update_launch``).
LAUNCHES = ("python", "graph")
#: The launch of a commit that names none (``Graph.apply``; ``update()`` passes the results'
#: ``Options.update_launch``).
DEFAULT_LAUNCH = "python"
#: Captured commits kept per graph: the two buffer parities of the steady state, and room for a
#: plan that changes back (e.g. after ``restore()``).
MAX_CAPTURED = 4
GROWTH = 1.5
#: Serial numbers of the scratch's and the arena's allocations (``ApplyScratch.layout``,
#: ``_Arena.serial``): what a captured commit's addresses depend on besides the buffer sets.
_serials = itertools.count(1)
#: The smallest event capacity reserved: small batches of varying size (a few to a thousand
#: changes, the common interactive case) then never grow the event buffers in a steady state. It is
#: also what a captured commit pays for whatever the batch: the commit sorts 2 x capacity keys, and
#: 2,048 keys still sort in one tile of the library's radix sort (one kernel instead of a pass per
#: key byte). Measured on an H100 at 600e69b (bench/update_anatomy.py --ab-env
#: ENGINES_APPLY_MIN_EVENTS=A,B, whole update() per batch interleaved, median ratio B/A):
#: 4,096 -> 1,024 gives luxembourg_osm's 100-change batches 0.898-0.899 on the fused engine and
#: 0.977 on the operators engine, roadNet-PA's 100- and 1,000-change batches 0.923 and 0.931 (fused);
#: 1,024 -> 512 gives 0.998 and 1,024 -> 2,048 1.095 (4,096 keys no longer fit the tile). Those
#: A/Bs were made with the library's sort; the one-block key sort (key_sort.py, the default since
#: 0732d2c) sorts a side of up to 2,048 keys in its smallest tile, and the floor was not measured
#: again under it.
MIN_EVENTS = 1024
#: ``ENGINES_APPLY_MIN_EVENTS=<events>`` reserves that smallest capacity instead (unset, 0 or off:
#: MIN_EVENTS), read when a graph's event buffers grow (its first commit, then a larger batch), for
#: the A/Bs above.
MIN_EVENTS_ENV = "ENGINES_APPLY_MIN_EVENTS"
#: Its largest value: every captured commit works on the whole reserved capacity (a typo of a few
#: digits more would slow every update and reserve its buffers), far below the int32 event lists.
MAX_MIN_EVENTS = 1 << 24
#: The new row offsets of a commit sized for at most this many events (the reserved capacity of a
#: captured commit, the batch's events launched one by one) come from the touched rows alone
#: (device_apply.cu apply_touched_scan, apply_row_ptr_touched: one block sums the row changes in
#: sorted-event order, each row offset binary-searches the sorted events), instead of the library's
#: prefix sum over every row (three launches and O(n) per side). It pays only at the capacity floor
#: (MIN_EVENTS): measured on an H100 at 4ad55b5 (bench/update_anatomy.py --ab-env
#: ENGINES_APPLY_TOUCHED_SCAN=0,16384, whole update() per batch interleaved, median ratio), roadNet-PA's
#: 100-change batches 0.983, luxembourg_osm's 0.995 (fused) and 1.001 (operators); but a 4,039-vertex
#: graph's 1,760-change batches 1.010 and roadNet-PA's 10,000-change batches 1.051 (one block's
#: several tiles and longer searches cost more than the launches they save). A commit of more
#: events keeps the library's prefix sum even on a graph of few rows: one block computing a
#: 4,039-row graph's offsets in one launch (each thread its own run of rows, in place of the scan's
#: three launches and apply_row_ptr) measured 0.998 per 1,760-change batch (H100,
#: update_anatomy.py --ab-env, 1,000 batches; ncu's 11 us a side for the three launches at its base
#: clocks overstates them), so it was not kept.
TOUCHED_SCAN_MAX = 1024
#: ``ENGINES_APPLY_TOUCHED_SCAN=<events>`` takes another limit (0 / off: always the prefix sum, the
#: rule before), read when a graph's event buffers grow, like ``ENGINES_APPLY_MIN_EVENTS``.
TOUCHED_SCAN_ENV = "ENGINES_APPLY_TOUCHED_SCAN"
#: The apply record (int64): fixed slots, then six groups of K per-column slots
#: (device_apply.cu RecordSlot and rec_*).
REC_DELETED, REC_MISSING, REC_INSERTED, REC_UPDATED, REC_EDGES, REC_TAIL, REC_LONGEST = 0, 1, 2, 3, 4, 5, 6
REC_FIXED = 8
COL_SUM, COL_LOST, COL_WRITTEN, COL_RESCAN, COL_INCREASED, COL_OLD_MAX = range(6)
#: The sizes block (int64, device_apply.cu SizeSlot).
SIZE_COUNT, SIZE_DELETIONS, SIZE_INSERTIONS, SIZE_N_OLD, SIZE_N_AFTER, SIZE_M_OLD = range(6)
SIZE_SLOTS = 6


def min_events() -> int:
    """The smallest event capacity a graph reserves: ``ENGINES_APPLY_MIN_EVENTS`` or, unset,
    ``MIN_EVENTS``; a bad value is an error naming it."""
    return switches.count(MIN_EVENTS_ENV, "an event capacity", minimum=1, maximum=MAX_MIN_EVENTS) or MIN_EVENTS


def touched_scan_limit() -> int:
    """The largest event count whose commit sums the touched rows only: ``ENGINES_APPLY_TOUCHED_SCAN``
    (0 or off: never) or, unset, ``TOUCHED_SCAN_MAX``; a bad value is an error naming it."""
    if not switches.given(TOUCHED_SCAN_ENV):
        return TOUCHED_SCAN_MAX
    return switches.count(TOUCHED_SCAN_ENV, "an event count", maximum=MAX_MIN_EVENTS)


#: The lanes that walk one touched row in apply_decide and apply_rebuild (device_apply.cu Group):
#: ``ENGINES_APPLY_GROUP=degree`` (unset: the smallest power of two of at least the graph's mean
#: degree, rounded up, from GROUP_MIN to 32 lanes: short rows keep several rows in flight per
#: warp), ``warp`` (the whole warp, the rule before) or a width of GROUP_WIDTHS. Read at every
#: commit (the width is part of a captured commit's plan). Measured on an H100 80GB HBM3 (ncu,
#: bench/phase_breakdown.py --graph roadNet-PA --batch safe50k --part apply, 48,227 events): the
#: two kernels 131.9 + 104.9 us of the commit's 571.7 us with whole warps, 38.1 + 68.1 of 439.6
#: with 4 lanes, 49.2 + 69.6 of 451.0 with 8; the whole update() (bench/update_anatomy.py
#: --graph roadNet-PA --batch-size 50000 --ab-env ENGINES_APPLY_GROUP=warp,degree, interleaved)
#: median 1.341 -> 1.266 ms a batch (0.937x; 0.942x when the rule gave 8 lanes), the 4,039-vertex
#: graph's 1,760-change batches 1.001x and luxembourg_osm's 100-change batches 1.002x (8 lanes
#: then; the dense graph keeps the warp).
GROUP_ENV = "ENGINES_APPLY_GROUP"
GROUP_WIDTHS = (1, 2, 4, 8, 16, 32)
GROUP_MIN = 4
_GROUP_RULES = ("warp", "degree")


def group_rule() -> int | str:
    """``ENGINES_APPLY_GROUP`` parsed: "degree" (unset), "warp" or a width; a bad value is an error
    naming it and what it accepts."""
    given = switches.given(GROUP_ENV) or "degree"
    if given in _GROUP_RULES:
        return given
    if given.isdigit() and int(given) in GROUP_WIDTHS:
        return int(given)
    from ..errors import InvalidArgumentError

    raise InvalidArgumentError(f"{GROUP_ENV}={switches.raw(GROUP_ENV)!r}: expected warp, degree or a width of "
                               f"{', '.join(map(str, GROUP_WIDTHS))} lanes")


def group_shift(num_vertices: int, num_edges: int) -> int:
    """log2 of the lanes per touched row (``GROUP_ENV``) for a graph of ``num_vertices`` and
    ``num_edges`` arcs before the commit."""
    rule = group_rule()
    if rule == "warp":
        return 5
    if rule == "degree":
        wanted = -(-int(num_edges) // max(int(num_vertices), 1))  # the mean, rounded up
        width = GROUP_MIN
        while width < wanted and width < 32:
            width *= 2
        return width.bit_length() - 1
    return int(rule).bit_length() - 1


#: The change lists' staging over a grid (device_apply.cu write_changes):
#: ``ENGINES_CHANGES_GRID`` unset or ``1`` launches one block of 1024 threads per CHANGES_PER_BLOCK
#: events (the reserved capacity's for a captured run, the batch's otherwise), at most one per
#: multiprocessor; ``0``: one block of the same kernel (the rule before; the grid's pass at one
#: block is the old one-block pass, which is gone). The staging runs inside the engine's region
#: (both engines): on roadNet-PA safe50k (48,227 events) the fused engine's region was 0.872 ms
#: against its kernel's 810 us between the first and last stamps (H100, bench/engine_table.py and
#: bench/fused_phases.py at da3d1a1). Measured on an H100 at 0c71f5a:
#: the staging kernel 31.9 -> 12.9 us under ncu there (bench/phase_breakdown.py --graph roadNet-PA
#: --batch safe50k); the whole update of 50,000-change batches 0.997x per batch
#: (bench/update_anatomy.py --ab-env ENGINES_CHANGES_GRID=0,1, interleaved), within the noise.
CHANGES_GRID_ENV = "ENGINES_CHANGES_GRID"
CHANGES_PER_BLOCK = 4096
CHANGES_THREADS = 1024


def changes_grid() -> bool:
    """``ENGINES_CHANGES_GRID``: whether the change lists are staged over a grid (on unless 0 /
    off); a bad value is an error naming it."""
    return switches.flag(CHANGES_GRID_ENV, default=True)


def changes_blocks(events: int, device: int, grid: bool) -> int:
    """Blocks of the change lists' staging for ``events`` events on ``device``: one unless ``grid``
    (the commit's reading of ``changes_grid()``); then one per CHANGES_PER_BLOCK events, at least
    one, at most one per multiprocessor."""
    if not grid:
        return 1
    wanted = max(1, -(-int(events) // CHANGES_PER_BLOCK))
    return min(wanted, max(1, runtime.device_info(device).multiprocessors))


def _changes_kernel(scratch, sized: bool):
    """The staging kernel: ``apply_changes_sized`` (the batch's sizes read on the device) when
    ``sized``, else ``apply_changes``; the grid is ``changes_blocks``'."""
    return _kernel(scratch, "apply_changes_sized" if sized else "apply_changes")


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
        self.serial = 0  # changes with the chunk (its address)

    def reset(self) -> None:
        cupy = cupy_module()
        wanted = self.used + self.overflow
        if self.base is None or wanted > self.size:
            self.base = None
            self.size = _grown(self.size, max(wanted, 1 << 20))
            with cupy.cuda.Device(self.device):
                self.base = cupy.cuda.alloc(self.size)
            self.serial = next(_serials)
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


class _StageView:
    """What ``ApplyScratch.stage`` writes through, fixed for one pinned buffer: the header as one
    ``struct`` of int64 slots (the record, then the sizes block), the zero slots before and after
    the record's old maxima, and int32 views of the three event lists at the reserved capacity.
    Made once per buffer instead of a slice, a view and an assignment per slot in every commit."""

    __slots__ = ("pinned", "header", "before", "after", "src", "dst", "weights", "weights_at")

    def __init__(self, pinned: np.ndarray, cap: int, k: int, at: int):
        """``at``: where the events start in the buffer (``ApplyScratch._events_at``)."""
        rec = record_length(k)
        self.pinned = pinned
        # native int64 (the NumPy views the kernels' copy reads), no padding between q slots
        self.header = struct.Struct(f"={rec + SIZE_SLOTS}q")
        self.before = (0,) * (REC_FIXED + COL_OLD_MAX * k)
        self.after = (0,) * (rec - REC_FIXED - (COL_OLD_MAX + 1) * k)
        self.src = pinned[at: at + 4 * cap].view(np.int32)
        self.dst = pinned[at + 4 * cap: at + 8 * cap].view(np.int32)
        self.weights_at = at + 8 * cap
        self.weights = pinned[self.weights_at: self.weights_at + 4 * cap * k].view(np.int32)


class ApplyScratch:
    """The reserved device and pinned buffers of one graph's commits (one per ``DeviceGraph``).

    The staging buffer is one device allocation laid out as ``header | src | dst | weights``: the
    header holds the apply record (its start values) and the sizes block, the rest the event list
    at the reserved capacity. One host-to-device copy fills the header and the events of a batch.
    """

    #: ``stage``'s views of the pinned buffer (``_StageView``), made again for a new buffer
    _stage_view = None

    def __init__(self, device: int, num_weights: int):
        self.device = int(device)
        self.num_weights = int(num_weights)
        self.m_cap = self.n_cap = self.event_cap = 0
        self.mark = self.row_flag = self.row_delta = self.cum = None
        self.keys = self.stage_key = self.stage_ins = self.increased = self.touched_cum = None
        self.touched_limit = 0  # touched_scan_limit(), read with the event buffers' capacity
        self.key_sort = key_sort.DEFAULT_KEY_SORT  # key_sort.chosen(), read with it too
        self.parallel = False  # apply_sides.parallel_sides(), read with it too
        self.mapped_record = False  # mapped.enabled(), read with it too: the record stored by a kernel
        self.in_side = None  # the in side's scratch while parallel
        self.staging = None  # device bytes: header (record | sizes) | src | dst | insertion weights
        self.record = self.sizes = None  # views of the staging header
        self.ev_src = self.ev_dst = self.ev_weights = None  # views of the staged event list
        self.layout = 0  # changes whenever a buffer above is allocated again (its address)
        self._pinned = None
        self._pinned_ptr = 0
        self._upload_done = None  # event after the last staging copy (the pinned buffer is free)
        self.captured: dict = {}  # launch plan -> cupy.cuda.Graph (launch "graph")
        self.captures = 0  # how many commits were captured (tests: a steady state captures none)
        self.capture_problem = None  # why capture failed here once; "graph" then launches one by one
        cupy = cupy_module()
        with cupy.cuda.Device(self.device):
            mem = cupy.cuda.alloc_pinned_memory(8 * record_length(num_weights))
            self.record_host = np.ndarray((record_length(num_weights),), dtype=np.int64, buffer=mem)
            self.record_host_ptr = int(mem.ptr)
            self.record_ready = cupy.cuda.Event(block=False, disable_timing=True)
        self.arena = _Arena(self.device)

    @property
    def nbytes(self) -> int:
        arrays = (self.mark, self.row_flag, self.row_delta, self.cum, self.keys, self.stage_key,
                  self.stage_ins, self.increased, self.touched_cum, self.staging)
        side = self.in_side.nbytes if self.in_side is not None else 0
        return sum(int(a.nbytes) for a in arrays if a is not None) + side + self.arena.nbytes

    def reserve(self, n_rows: int, m_old: int, num_events: int, stream) -> None:
        """Room for a commit on a state of ``m_old`` entries growing to ``n_rows`` rows with
        ``num_events`` events; new zero-invariant buffers are zeroed (stream-ordered)."""
        grow_entries, grow_rows, grow_events = self._grows(n_rows, m_old, num_events)
        if self.layout and not (grow_entries or grow_rows or grow_events):
            # the steady state (every update reserves twice: Graph.reserve_commit, then the
            # commit): nothing grows, so the buffers and their layout stay, and no CUDA context
            # is entered
            return
        cupy = cupy_module()
        if grow_events:  # before anything changes: a bad value refuses the commit with the scratch as it was
            floor, touched, sort = min_events(), touched_scan_limit(), key_sort.chosen()
            parallel = apply_sides.parallel_sides()
            mapped_record = mapped.enabled()
        caps = (self.m_cap, self.n_cap, self.event_cap)
        layout, self.layout = self.layout, 0  # 0 until every buffer is in place: a failure
        # half-way leaves a layout no capture was made for
        with cuda_errors("reserving the device apply"), cupy.cuda.Device(self.device), stream:
            # Each group's capacity reads 0 from the moment its buffers are released until all of
            # them are in place: an allocation that fails half-way (OutOfMemoryError, which the
            # caller may survive) then makes the next reserve rebuild the whole group, never use
            # a part of it sized for another capacity (fits() relies on it).
            if grow_entries:
                cap = _grown(self.m_cap, m_old)
                self.m_cap = 0
                apply_sides.allocate(cupy, self, "entries", cap)  # mark
                self.m_cap = cap
            if grow_rows:
                cap = _grown(self.n_cap, n_rows + 1)
                self.n_cap = 0
                apply_sides.allocate(cupy, self, "rows", cap)  # row_flag, row_delta, cum
                self.n_cap = cap
            if grow_events:
                cap = max(_grown(self.event_cap, num_events), floor)
                k = self.num_weights
                self.event_cap = 0
                self.keys = self.increased = self.staging = None
                self.record = self.sizes = self.ev_src = self.ev_dst = self.ev_weights = None
                self._pinned, self._pinned_ptr, self._upload_done = None, 0, None
                self._stage_view = self._sized_head = None  # they hold the old buffers
                # both sides' sort keys in one array, sorted by one call (as unsigned: the side
                # bit is the top bit, device_apply.cu apply_keys)
                self.keys = cupy.empty(2 * cap, dtype=cupy.uint64)
                apply_sides.allocate(cupy, self, "events", cap)  # stage_key, stage_ins, touched_cum
                self.increased = cupy.zeros(cap * max(k, 1), dtype=cupy.uint8)
                at = self._events_at()  # header (record | sizes), then the events at capacity
                nbytes = at + (8 + 4 * k) * cap
                staging = self.staging = cupy.empty(nbytes, dtype=cupy.uint8)
                self.record = staging[: 8 * record_length(k)].view(cupy.int64)
                self.sizes = staging[8 * record_length(k): at].view(cupy.int64)
                self.ev_src = staging[at: at + 4 * cap].view(cupy.int32)
                self.ev_dst = staging[at + 4 * cap: at + 8 * cap].view(cupy.int32)
                self.ev_weights = staging[at + 8 * cap: nbytes].view(cupy.int32)
                mem = cupy.cuda.alloc_pinned_memory(nbytes)
                self._pinned = np.ndarray((nbytes,), dtype=np.uint8, buffer=mem)
                self._pinned_ptr = int(mem.ptr)
                self._upload_done = None
                self.event_cap = cap
                self.touched_limit = touched
                self.key_sort = sort
                self.parallel = parallel
                self.mapped_record = mapped_record
            # The in side's own scratch at the capacities above, made again when a group grew
            # (or after an allocation that failed half-way: layout 0 brought us here).
            if not self.parallel:
                self.in_side = None
            elif grow_entries or grow_rows or grow_events or self.in_side is None:
                self.in_side = None
                self.in_side = apply_sides.SideScratch(cupy, self.m_cap, self.n_cap, self.event_cap)
        if (self.m_cap, self.n_cap, self.event_cap) != caps or not layout:
            layout = next(_serials)
        self.layout = layout

    def fits(self, n_rows: int, m_old: int, num_events: int) -> bool:
        """Whether every buffer is in place (a completed reserve: ``layout`` is set; a group whose
        allocation failed half-way reads capacity 0) with room for ``m_old`` entries, ``n_rows``
        rows and ``num_events`` events: what ``reserve`` would then leave exactly as it is."""
        return bool(self.layout) and not any(self._grows(n_rows, m_old, num_events))

    def _grows(self, n_rows: int, m_old: int, num_events: int) -> tuple[bool, bool, bool]:
        """Which buffer groups ``reserve`` must (re)allocate: the per-entry ``mark``, the per-row
        scratch, the event buffers (missing, or too small)."""
        return (m_old > self.m_cap or self.mark is None, n_rows + 1 > self.n_cap or self.row_flag is None,
                num_events > self.event_cap or self.keys is None)

    def _events_at(self) -> int:
        """Where the event list starts in the staging buffer: past the record and the sizes."""
        return 8 * (record_length(self.num_weights) + SIZE_SLOTS)

    def reset_after_failure(self, stream) -> None:
        """Re-zero the zero-invariant scratch after a commit failed half-way."""
        owners = (self,) if self.in_side is None else (self, self.in_side)
        for arr in (getattr(owner, name) for owner in owners for name in apply_sides.ZERO_INVARIANT):
            if arr is not None:
                arr.data.memset_async(0, arr.nbytes, stream)

    def stage(self, events, old_max, m_old: int, stream) -> None:
        """Copy the record's start values, the sizes block and the event list to the device in
        one copy (the header and the events' prefix of the staging buffer)."""
        if self._upload_done is not None and not self._upload_done.done:
            self._upload_done.synchronize()  # the previous copy still reads the pinned buffer
        count, ins = events.size, events.num_insertions
        view = self._stage_view
        if view is None or view.pinned is not self._pinned:  # a new pinned buffer (reserve grew it)
            view = self._stage_view = _StageView(self._pinned, self.event_cap, self.num_weights, self._events_at())
        # the whole header in one write: the record's start values (zero but the old maxima) and
        # the sizes block, in slot order (device_apply.cu RecordSlot, SizeSlot)
        view.header.pack_into(view.pinned, 0, *view.before, *old_max, *view.after, count, events.num_deletions,
                              ins, events.n_old, events.n_after, m_old)
        view.src[:count] = events.src
        view.dst[:count] = events.dst
        w_end = ins * self.num_weights
        view.weights[:w_end] = events.weights.reshape(-1)
        w_at = view.weights_at
        with cuda_errors("copying the batch to the device"):
            # one copy up to the last insertion weight (the gaps between the lists are stale bytes
            # no kernel reads: every read is bounded by the sizes)
            self.staging.data.copy_from_host_async(self._pinned_ptr, w_at + 4 * w_end, stream)
            if self._upload_done is None:
                self._upload_done = cupy_module().cuda.Event(block=False, disable_timing=True)
            self._upload_done.record(stream)


class PendingCommit:
    """One device commit whose counters are still on their way to the host.

    ``resolve()`` reads the pinned record once the stream has passed it (a query; it waits only
    if nothing has synchronized since, e.g. a second ``Graph.apply`` straight after the first).
    The device-side change data (the events, ``increased``) stays valid until the graph's next
    commit, which resolves this one first.
    """

    def __init__(self, scratch: ApplyScratch, events, buffers, weight_sum_before, old_max,
                 record_pending: bool, changes_grid: bool = False):
        # changes_grid: commit() always passes its reading of the switch; the default (one block)
        # serves the tests that build a commit by hand
        self.scratch = scratch
        # ENGINES_CHANGES_GRID as the commit read it (before anything changed): how the engines
        # stage this commit's change lists
        self.changes_grid = changes_grid
        self.events = events
        self.buffers = buffers
        # map(int, ...): the same ints as a generator of int(x), without a generator frame per item
        self._weight_sum_before = tuple(map(int, weight_sum_before))
        self._old_max = tuple(map(int, old_max))
        self._pending = record_pending
        self._values = None
        self._expired = False
        if not record_pending:  # nothing ran: everything is known on the host
            self._values = self._from_values([0] * record_length(scratch.num_weights), empty=True)

    # -- the record ---------------------------------------------------------------------------

    def _from_values(self, rec: list, empty: bool = False) -> dict:
        """The counters of a record read as Python ints (``ndarray.tolist``: one conversion for the
        whole record instead of an ``int()`` of a NumPy scalar per slot)."""
        k = self.scratch.num_weights
        ev = self.events
        base = REC_FIXED
        lost = rec[base + COL_LOST * k: base + (COL_LOST + 1) * k]
        written = rec[base + COL_WRITTEN * k: base + (COL_WRITTEN + 1) * k]
        rescan = rec[base + COL_RESCAN * k: base + (COL_RESCAN + 1) * k]
        added = rec[base + COL_SUM * k: base + (COL_SUM + 1) * k]
        increased = rec[base + COL_INCREASED * k: base + (COL_INCREASED + 1) * k]
        old_max, sum_before = self._old_max, self._weight_sum_before
        maxima = tuple(rescan[c] if lost[c] else max(old_max[c], written[c]) for c in range(k))
        sums = tuple(sum_before[c] + added[c] for c in range(k))
        edges = self.buffers.num_edges if empty else rec[REC_EDGES]
        n_after = int(ev.n_after)
        summary = apply_summary(rec[REC_INSERTED], rec[REC_UPDATED], rec[REC_DELETED],
                           int(ev.out_of_range + rec[REC_MISSING]), int(n_after - ev.n_old), n_after)
        deletions = ev.num_deletions
        return {"summary": summary, "num_edges": edges, "max_weight": maxima, "weight_sum": sums,
                "changed": tuple(deletions + c for c in increased)}

    def resolve(self) -> dict:
        """The commit's counters: summary, num_edges, max_weight, weight_sum, changed (per k)."""
        if self._values is None:
            ready = self.scratch.record_ready
            if not ready.done:
                with cuda_errors("waiting for the device apply"):
                    ready.synchronize()
            # tolist copies the pinned record (the next commit reuses it) and converts it at once
            rec = self.scratch.record_host.tolist()
            self._values = self._from_values(rec)
            self.buffers.num_edges = self._values["num_edges"]
            if self.buffers.slack:  # the tail and longest row the commit left: the next one's room counts from them
                self.buffers.tail_ub = min(int(rec[REC_TAIL]), self.buffers.tail_ub)
                self.buffers.longest_ub = min(int(rec[REC_LONGEST]), self.buffers.longest_ub)
        return self._values

    def resolve_ready(self) -> bool:
        """Resolve now if the record has arrived, else leave it (an event query, never a wait);
        whether it is resolved. The engines call it while their run is on the device, after
        enqueuing it and before waiting for it: the record's conversion (about 10 µs of a small
        update's host time, H200) then overlaps the engine's GPU work instead of following its
        synchronization (the engine's epilogue and the stats read it), and the update
        synchronizes no more often than before."""
        if self._values is None:
            if not self.scratch.record_ready.done:
                return False
            self.resolve()
        return True

    @property
    def resolved(self) -> bool:
        return self._values is not None

    def require_current(self) -> None:
        """InternalError if the graph committed again since (this commit's device data, the
        events and ``increased`` that the engines' change lists are staged from, is reused)."""
        if self._expired:
            raise InternalError("the device data of this commit was reused by a later commit")

    def expire(self) -> None:
        """The graph commits again: resolve now (the pinned record is about to be reused)."""
        self.resolve()
        self._expired = True

    # -- device data for the engines ----------------------------------------------------------

    def weight_increased(self) -> np.ndarray:
        """``(I, K)`` bool on the host (a download and a wait)."""
        self.require_current()
        ins, k = self.events.num_insertions, self.scratch.num_weights
        if ins == 0:
            return np.zeros((0, k), dtype=bool)
        with cuda_errors("downloading the weight increases"):
            flat = self.scratch.increased[: ins * k].get()
        return flat.reshape(ins, k).astype(bool)

    def stage_changes(self, objective: int, changed_from, changed_to, heads, changed_count, stream) -> None:
        """The change lists of one objective (algorithm.md §3.4) into the engine's workspace
        buffers."""
        self.require_current()
        ev, sc = self.events, self.scratch
        blocks = changes_blocks(ev.size, sc.device, self.changes_grid)
        fn = _changes_kernel(sc, False)
        # the scratch's event views: they change only when the next commit reserves, which
        # expires this one first
        fn((blocks,), (CHANGES_THREADS,), (np.int32(ev.num_deletions), np.int32(ev.num_insertions), sc.ev_src,
                                           sc.ev_dst, sc.increased, np.int32(sc.num_weights), np.int32(objective),
                                           changed_from, changed_to, heads, changed_count), stream=stream)

    def sized_staging(self, objective: int, changed_from, changed_to, heads, changed_count):
        """``stage_changes`` as a launch for the caller to enqueue (a captured engine run, fused.py
        ENGINES_FUSED_CAPTURE): ``(function, arguments, (grid, block))`` of ``apply_changes_sized``
        over ``changes_blocks`` of the reserved event capacity (the launch's dimensions as CuPy takes
        them: ``function(*dims, args)``),
        which reads the batch's sizes from the device, so its arguments and grid stay the same from
        batch to batch of one scratch layout. None for a commit that staged nothing (an empty
        batch: no sizes on the device). Valid until the graph's next commit, like the rest of this
        commit's device data."""
        self.require_current()
        if not self._pending:
            return None
        sc = self.scratch
        blocks = changes_blocks(sc.event_cap, sc.device, self.changes_grid)
        fn = _changes_kernel(sc, True)
        # the scratch's part of the arguments is the same from commit to commit until a reserve
        # moves its buffers; kept on the scratch, whose reserve (the only place they move) drops it
        head = getattr(sc, "_sized_head", None)
        if head is None:
            head = sc._sized_head = (sc.sizes, sc.ev_src, sc.ev_dst, sc.increased, np.int32(sc.num_weights))
        return fn, head + (np.int32(objective), changed_from, changed_to, heads, changed_count), \
            ((blocks,), (CHANGES_THREADS,))

    def num_changed(self, objective: int) -> int:
        return int(self.resolve()["changed"][int(objective)])


class DeviceChangeLists:
    """The change lists of one objective (algorithm.md §3.4) for a CUDA engine, built on the device.

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

    def captured_staging(self, ws):
        """``stage`` for a captured run: ``(views, launch)``, the workspace's change views and the
        sized launch that fills them (``PendingCommit.sized_staging``), for the caller to put in
        its graph; for an empty batch the count is zeroed here on the current stream, as ``stage``
        does, and ``launch`` is None."""
        views = ws.change_views()
        launch = self.pending.sized_staging(self.objective, *views) if self.upper else None
        if launch is None:
            views[3].fill(0)
        return views, launch

    def num_changed(self) -> int:
        return self.pending.num_changed(self.objective)

    def resolve_ready(self) -> bool:
        """The commit's record read now if it has arrived (PendingCommit.resolve_ready)."""
        return self.pending.resolve_ready()


def commit(dgraph, events, old_max, weight_sum, stream, launch: str | None = None) -> PendingCommit:
    """Enqueue ``events`` (``BatchEvents``) on ``dgraph``'s device and publish the new state.

    ``launch`` is one of ``LAUNCHES`` (module docstring; None: ``DEFAULT_LAUNCH``); both give the
    same bytes. Raises before the publication (and leaves the current state as it was) on any
    failure.
    """
    launch = DEFAULT_LAUNCH if launch is None else launch
    if launch not in LAUNCHES:
        raise InternalError(f"unknown device apply launch {launch!r}")
    # the switches read here, first: a bad value is refused before the commit changes anything
    # (the engines stage the lists after it, when a refusal would poison their results), and the
    # plan and its key take the width from one reading
    grid = changes_grid()
    cur = dgraph.current
    shift = group_shift(cur.num_vertices, cur.num_edges)
    cupy = cupy_module()
    k = cur.num_weights
    m_old = cur.num_edges
    n_after, count = int(events.n_after), int(events.size)
    if count == 0:
        # An empty batch changes no array: the new state shares the current set (it differs only
        # in its identity, which Graph keeps).
        return PendingCommit(_scratch(dgraph), events, cur, weight_sum, old_max, False, grid)
    scratch = _scratch(dgraph)
    scratch.reserve(n_after, cur.extent, count, stream)
    captured = launch == "graph" and scratch.capture_problem is None
    choice = None
    if dgraph.slack:
        choice = slack_apply.choose(dgraph, events, scratch.event_cap if captured else count)
        captured = captured and choice.capturable
        if not captured:
            choice.slots = count  # launched one by one: the plan sorts the batch's keys alone
        target = choice.target
    else:
        target = dgraph.target(n_after, m_old + events.num_insertions, k, cur.offset_dtype)
    try:
        with cuda_errors("applying the batch on the device"), cupy.cuda.Device(dgraph.device), stream:
            scratch.stage(events, old_max, m_old, stream)
            scratch.arena.reset()
            if choice is not None:
                slack_apply.failed(choice)  # until the commit is enqueued: its target holds nothing known
            if captured:
                _replay(dgraph, scratch, cur, target, n_after, stream, shift, choice)
            else:
                sized = (count, int(cur.extent), int(m_old) + events.num_insertions)
                _enqueue(_plan(dgraph, scratch, cur, target, n_after, shift, sized, choice), scratch, stream)
            scratch.record_ready.record(stream)
    except BaseException:
        try:
            scratch.reset_after_failure(stream)
        except Exception:
            dgraph.scratch = None  # could not even re-zero: start over at the next commit
        raise
    if choice is not None:
        slack_apply.published(choice, cur)
    target.num_vertices = n_after
    target.num_edges = m_old + events.num_insertions  # an upper bound until resolved
    dgraph.publish(target)
    return PendingCommit(scratch, events, target, weight_sum, old_max, True, grid)


def _plan(dgraph, scratch, cur, target, n_after: int, shift: int, sized=None, slack=None) -> list:
    """The commit's steps in order: ``("kernel", function, grid, args, shared bytes)``,
    ``("sort", keys)`` (the library's), ``("block_sort", function, keys, BlockSort)`` (key_sort.py),
    ``("cumsum", source, out)`` and ``("download", record)``; with the sides in parallel
    (``scratch.in_side``), the in side's steps between the markers apply_sides.BRANCH and MAIN, and
    apply_sides.JOIN before the download.

    ``shift``: log2 of the lanes per touched row (``group_shift``, read once by the commit).
    ``sized`` = (events, old entries, new entries upper bound) sizes the grids and the sort to the
    batch (launch "python"); None sizes them to the reserved capacity (launch "graph": the
    kernels read the batch's sizes on the device, and every key slot is sorted).
    ``slack``: a slack commit's ``slack_apply.SlackChoice`` (None: the packed layout's commit);
    its steps also include ``("copy", dst, src, bytes)`` and ``("memset", dst, byte, bytes)``
    (device pointers).
    """
    k = cur.num_weights
    device = dgraph.device
    module = load_module(device)
    offset = cur.offset_dtype
    fn = module.functions(np.int32, offset)
    blocks = runtime.operators_blocks
    if sized is None:
        count = scratch.event_cap
        m_old, m_new = cur.m_cap, target.m_cap
    else:
        count, m_old, m_new = sized
        if slack is not None:
            m_new = max(m_new, slack.need)
    i32, i64 = np.int32, np.int64
    sizes, record = scratch.sizes, scratch.record
    ev_src, ev_dst, ins_w = scratch.ev_src, scratch.ev_dst, scratch.ev_weights
    row_blocks = blocks(count << shift, device)  # one group of 2^shift lanes per sorted event
    # apply_decide's per-block counters: the fixed record slots, plus the per-column groups when
    # they fit the shared memory every CUDA device offers a block (48 KiB)
    shared_cols = 8 * (REC_FIXED + 5 * k) <= 48 * 1024
    decide_shared = 8 * (REC_FIXED + 5 * k) if shared_cols else 8 * REC_FIXED
    # the row offsets from the touched rows alone (TOUCHED_SCAN_MAX) when the plan's events are few
    touched = 0 < scratch.touched_limit and count <= scratch.touched_limit
    keys = scratch.keys[: 2 * count]
    keys_out, keys_in = keys[:count], keys[count:]
    block_sort = key_sort.plan(count, n_after) if scratch.key_sort == "block" else None
    steps = [("kernel", fn["apply_keys"], blocks(count, device), (sizes, i64(count), ev_src, ev_dst, keys_out,
                                                                  keys_in), 0),
             # one launch sorts both sides: at batch sizes its fixed cost dominates
             ("block_sort", key_sort.function(device, block_sort), keys, block_sort) if block_sort else
             ("sort", keys)]
    by_side = {}
    # (side, sorted keys, entry key of an event, stats on this side, the scratch it writes)
    for side, sorted_keys, ev_key, stats, sc in (("out", keys_out, ev_dst, 1, scratch),
                                                 ("in", keys_in, ev_src, 0,
                                                  scratch if scratch.in_side is None else scratch.in_side)):
        old_w, new_w = cur.weight[side], target.weight[side]
        chain = by_side[side] = []
        if slack is not None and slack.kind != "compact":
            chain += slack_sync_steps(fn, blocks, device, slack, cur, target, side, shift)
        chain += [
            ("kernel", fn["apply_decide"], row_blocks, (
                sizes, sorted_keys, ev_key, ins_w, i32(k), cur.ptr[side], cur.end[side], cur.key[side], old_w,
                i64(cur.m_cap), sc.mark, sc.row_flag, sc.row_delta, sc.stage_key, sc.stage_ins,
                i32(stats), record, scratch.increased, i32(shared_cols), i32(shift)), decide_shared),
        ]
        if slack is not None:
            chain += slack_side_steps(fn, blocks, device, slack, cur, target, side, sc, sizes, sorted_keys, ins_w,
                                      n_after, m_old, row_blocks, shift)
            continue
        if touched:
            chain += [
                ("kernel", fn["apply_touched_scan"], 1, (sizes, sorted_keys, sc.row_delta, sc.touched_cum), 0),
                ("kernel", fn["apply_row_ptr_touched"], blocks(n_after + 1, device), (
                    sizes, cur.ptr[side], sorted_keys, sc.touched_cum, target.ptr[side], i32(stats), record), 0),
            ]
        else:
            chain += [
                ("cumsum", sc.row_delta[:n_after], sc.cum[:n_after]),
                ("kernel", fn["apply_row_ptr"], blocks(n_after + 1, device), (
                    sizes, cur.ptr[side], sc.cum, target.ptr[side], i32(stats), record), 0),
            ]
        chain += [
            ("kernel", fn["apply_move"], blocks(m_old, device), (
                sizes, i32(k), cur.ptr[side], target.ptr[side], sc.row_flag, cur.key[side], cur.row_of[side],
                old_w, i64(cur.m_cap), target.key[side], target.row_of[side], new_w, i64(target.m_cap), NULL), 0),
            ("kernel", fn["apply_rebuild"], row_blocks, (
                sizes, sorted_keys, ins_w, i32(k), cur.ptr[side], cur.end[side], cur.key[side], old_w, i64(cur.m_cap),
                sc.mark, target.ptr[side], target.key[side], target.row_of[side], new_w, i64(target.m_cap),
                sc.row_flag, sc.row_delta, sc.stage_key, sc.stage_ins, i32(shift)), 0),
        ]
    # the maxima rescan reads the out side alone: in parallel it follows the out side's chain
    extent = NULL if slack is None else target.side_meta("out")
    rescan = ("kernel", fn["apply_rescan_max"], blocks(m_new, device), (
        sizes, target.ptr["out"], i32(k), target.weight["out"], i64(target.m_cap), record, extent), 0)
    if scratch.in_side is not None:
        steps += [apply_sides.BRANCH, *by_side["in"], apply_sides.MAIN, *by_side["out"], rescan, apply_sides.JOIN]
    else:
        steps += [*by_side["out"], *by_side["in"], rescan]
    if slack is not None:
        # the record's edge count and tail; then this commit's sorted keys into the target (the
        # rows the next commit copies), after every side read the list it replaces
        steps += [("kernel", fn["apply_slack_finish"], 1, (sizes, target.meta, record), 0),
                  ("copy", _at(target.touched), _at(keys), 2 * count * 8)]
    if scratch.mapped_record:  # one block stores the record into its pinned mirror (mapped.py)
        return steps + [("kernel", fn["apply_record_out"], 1, (
            record, np.uint64(scratch.record_host_ptr), i32(record.size)), 0)]
    return steps + [("download", record)]


def _side_index(side: str) -> int:
    return 0 if side == "out" else 1


def _at(arr, first: int = 0) -> int:
    """The device address of ``arr[first]``."""
    return int(arr.data.ptr) + int(first) * arr.itemsize


def slack_sync_steps(fn, blocks, device, slack, cur, target, side: str, shift: int) -> list:
    """A slack commit's first steps on one side: ``target`` made equal to ``cur`` (``slack.kind``,
    device_graph.SYNC_KINDS): nothing, the rows of one commit's sorted keys (apply_sync_rows), or
    every row and entry by copies, the target's other rows and entries cleared."""
    i32, i64 = np.int32, np.int64
    k = cur.num_weights
    si = _side_index(side)
    if slack.kind == "same":
        return []
    if slack.kind != "full":
        keys, slots, _ = slack.listed
        side_keys = keys[si * slots: (si + 1) * slots]
        return [("kernel", fn["apply_sync_rows"], blocks(slots << shift, device), (
            side_keys, i64(slots), i32(k), i32(cur.n_cap + 1), cur.ptr[side], cur.end[side], cur.limit[side],
            cur.key[side], cur.row_of[side], cur.weight[side], i64(cur.m_cap), cur.meta, i32(target.n_cap + 1),
            target.ptr[side], target.end[side], target.limit[side], target.key[side], target.row_of[side],
            target.weight[side], i64(target.m_cap), target.meta, i32(si), i32(shift)), 0)]
    steps = []
    rows = min(cur.n_cap, target.n_cap) + 1
    for name in ("ptr", "end", "limit"):
        dst, src = getattr(target, name)[side], getattr(cur, name)[side]
        steps += [("copy", _at(dst), _at(src), rows * dst.itemsize),
                  ("memset", _at(dst, rows), 0, (target.n_cap + 1 - rows) * dst.itemsize)]
    extent = min(cur.extent, target.m_cap)
    dirty = max(min(slack.dirty, target.m_cap), extent)
    columns = [(target.key[side], cur.key[side], 0xFF), (target.row_of[side], cur.row_of[side], 0xFF)]
    columns += [(target.weight[side][c], cur.weight[side][c], 0) for c in range(k)]
    for dst, src, room in columns:
        steps += [("copy", _at(dst), _at(src), 4 * extent), ("memset", _at(dst, extent), room, 4 * (dirty - extent))]
    return steps + [("copy", _at(target.meta, slot), _at(cur.meta, slot), 8) for slot in (si, 2 + si)]


def slack_side_steps(fn, blocks, device, slack, cur, target, side: str, sc, sizes, sorted_keys, ins_w,
                     n_after: int, m_old: int, row_blocks: int, shift: int) -> list:
    """A slack commit's steps on one side after apply_decide: the touched rows rebuilt in place
    (apply_rebuild_slack); for a compaction first the new tight layout (lengths, the library's
    prefix sum, rooms) and the move of the untouched rows into it, then the room past the new tail
    cleared."""
    i32, i64 = np.int32, np.int64
    k = cur.num_weights
    si = _side_index(side)
    compact = slack.kind == "compact"
    steps = []
    if compact:
        # the longest row's bound carries over (the rebuild raises it where rows grow)
        steps = [("copy", _at(target.meta, 2 + si), _at(cur.meta, 2 + si), 8)] if cur.slack else []
        steps += [("kernel", fn["apply_slack_lengths"], blocks(n_after, device), (
            sizes, cur.ptr[side], cur.end[side], sc.row_delta, target.end[side]), 0)]
        if n_after > 0:
            steps.append(("cumsum", target.end[side][:n_after], target.limit[side][:n_after], target.offset_dtype))
        steps += [
            ("kernel", fn["apply_slack_layout"], blocks(target.n_cap + 1, device), (
                sizes, i32(target.n_cap + 1), target.ptr[side], target.end[side], target.limit[side],
                target.meta, i32(si)), 0),
            ("kernel", fn["apply_move"], blocks(m_old, device), (
                sizes, i32(k), cur.ptr[side], target.ptr[side], sc.row_flag, cur.key[side],
                cur.row_of[side], cur.weight[side], i64(cur.m_cap), target.key[side], target.row_of[side],
                target.weight[side], i64(target.m_cap), cur.side_meta(side) if cur.slack else NULL), 0),
        ]
    steps.append(("kernel", fn["apply_rebuild_slack"], row_blocks, (
        sizes, sorted_keys, ins_w, i32(k), cur.ptr[side], cur.end[side], cur.key[side], cur.weight[side],
        i64(cur.m_cap), sc.mark, target.ptr[side], target.end[side], target.limit[side], target.key[side],
        target.row_of[side], target.weight[side], i64(target.m_cap), sc.row_flag, sc.row_delta, sc.stage_key,
        sc.stage_ins, target.meta, i32(si), i32(compact), i32(shift)), 0))
    if compact:
        dirty = min(slack.dirty, target.m_cap)
        steps.append(("kernel", fn["apply_clear_from_tail"], blocks(dirty, device), (
            i64(0), i64(dirty), target.meta, i32(si), i32(k), target.key[side], target.row_of[side],
            target.weight[side], i64(target.m_cap)), 0))
    return steps


def _enqueue(steps, scratch, stream) -> None:
    """Run the steps of ``_plan`` on ``stream`` (CuPy's temporaries from the scratch's arena).

    ``stream`` is made current too: CuPy's sort and scan run on the current stream (inside a
    capture, the capturing one). The steps between apply_sides.BRANCH and MAIN run on the in
    side's stream (``scratch.in_side``), which waits at BRANCH for what ``stream`` has before it;
    at JOIN ``stream`` waits for the side stream (inside a capture, both are edges of the graph;
    the side stream is joined before the capture ends)."""
    cupy = cupy_module()
    on = stream  # the stream the next step runs on
    with cupy.cuda.using_allocator(scratch.arena.malloc), stream:
        for step in steps:
            kind = step[0]
            if kind == "branch":
                side = scratch.in_side
                side.forked.record(stream)
                side.stream.wait_event(side.forked)
                on = side.stream
            elif kind == "main":
                on = stream
            elif kind == "join":
                side = scratch.in_side
                side.joined.record(side.stream)
                stream.wait_event(side.joined)
            elif kind == "kernel":
                _, fn, grid, args, shared = step
                fn((grid,), (runtime.BLOCK_SIZE,), args, stream=on, shared_mem=shared)
            elif kind == "sort":
                with on:
                    step[1].sort()
            elif kind == "block_sort":
                key_sort.launch(step[1], step[2], step[3], on)
            elif kind == "cumsum":
                with on:  # the library's scan runs on the current stream
                    if len(step) > 3:  # a slack compaction's offsets: summed in their own type
                        cupy.cumsum(step[1], dtype=step[3], out=step[2])
                    else:
                        cupy.cumsum(step[1], out=step[2])
            elif kind == "copy":
                if step[3]:
                    cupy.cuda.runtime.memcpyAsync(step[1], step[2], step[3], cupy.cuda.runtime.memcpyDeviceToDevice,
                                                  on.ptr)
            elif kind == "memset":
                if step[3]:
                    cupy.cuda.runtime.memsetAsync(step[1], step[2], step[3], on.ptr)
            else:  # "download": the record into its pinned mirror
                # the runtime's copy, not CuPy's copy_to_host_async, which refuses any
                # device-to-host copy on a capturing stream (here it is a node of the graph)
                cupy.cuda.runtime.memcpyAsync(scratch.record_host_ptr, step[1].data.ptr, step[1].nbytes,
                                              cupy.cuda.runtime.memcpyDeviceToHost, on.ptr)


def _plan_key(cur, target, n_after: int, scratch, shift: int, slack=None) -> tuple:
    """What a captured commit depends on, cheaply: the two buffer sets and the scratch layout
    (their serials stand for every address a launch fixes), the arena CuPy's temporaries come
    from, and the row count (the scan's length and a grid). Everything else in the plan is a
    function of these (the capacities and K belong to the sets and the layout), but for the lanes
    per touched row (``shift``), a kernel argument."""
    key = (cur.serial, target.serial, scratch.layout, scratch.arena.serial, int(n_after), int(shift))
    if slack is None:
        return key
    # a slack commit: what it copies first (the list's buffer and slots) and where its keys go
    listed = slack.listed
    return key + (slack.kind, target.touched_serial) + ((0, 0) if listed is None else (listed[2], listed[1]))


def _replay(dgraph, scratch, cur, target, n_after: int, stream, shift: int, slack=None) -> None:
    """Launch the captured commit of this plan, capturing it first when the plan is new.

    A capture that fails (a CUDA or library call not allowed in a stream capture) or that needed
    temporaries beyond the arena (their addresses would not outlive the capture) is not kept:
    the commit launches one by one instead, and a failed capture is not tried again on this graph.
    """
    key = _plan_key(cur, target, n_after, scratch, shift, slack)
    graph = scratch.captured.get(key)
    if graph is None:
        steps = _plan(dgraph, scratch, cur, target, n_after, shift, None, slack)
        try:
            graph = runtime.capture(dgraph.device, lambda s: _enqueue(steps, scratch, s))
        except Exception as exc:  # noqa: BLE001 - any capture failure falls back to launches
            scratch.capture_problem = f"{type(exc).__name__}: {exc}"
            graph = None
        if graph is None or scratch.arena.overflow:
            scratch.arena.reset()  # after an overflow it grows: the next commit captures again
            _enqueue(steps, scratch, stream)
            return
        while len(scratch.captured) >= MAX_CAPTURED:
            scratch.captured.pop(next(iter(scratch.captured)))
        scratch.captured[key] = graph
        scratch.captures += 1
    graph.launch(stream)


def _kernel(scratch, name: str):
    """A change-list kernel of the scratch's device at (int32, int32): the offset type is no
    argument of apply_changes(_sized), so one instantiation serves every graph. From the module's
    own table (CompiledModule.functions, made once per type pair), whose key is two type objects,
    not the two dtypes a ``function`` lookup builds each time."""
    return load_module(scratch.device).functions(np.int32, np.int32)[name]


def _scratch(dgraph) -> ApplyScratch:
    if dgraph.scratch is None:
        dgraph.scratch = ApplyScratch(dgraph.device, dgraph.current.num_weights)
    return dgraph.scratch


def reserve(dgraph, events, stream) -> None:
    """Before the commit (algorithm.md §8.2 step 6): grow what the commit of ``events`` will need,
    so that the commit itself allocates nothing (``OutOfMemoryError`` here changes nothing)."""
    cur = dgraph.current
    if events.size == 0:
        return
    scratch = _scratch(dgraph)
    scratch.reserve(int(events.n_after), cur.extent, events.size, stream)
    if dgraph.slack:
        slack_apply.choose(dgraph, events, max(scratch.event_cap, events.size))
    else:
        dgraph.target(int(events.n_after), cur.num_edges + events.num_insertions, cur.num_weights, cur.offset_dtype)
    load_module(dgraph.device)
    if scratch.key_sort == "block":
        key_sort.load_module(dgraph.device)


__all__ = ["ApplyScratch", "CHANGES_GRID_ENV", "CHANGES_PER_BLOCK", "CHANGES_THREADS", "DeviceChangeLists",
           "GROUP_ENV", "GROUP_MIN", "GROUP_WIDTHS", "MAX_MIN_EVENTS", "MIN_EVENTS", "MIN_EVENTS_ENV", "PendingCommit",
           "TOUCHED_SCAN_ENV", "TOUCHED_SCAN_MAX", "changes_blocks", "changes_grid", "commit", "group_rule",
           "group_shift", "load_module", "min_events", "record_length", "reserve", "touched_scan_limit"]
