"""Launcher of the CUDA fused engine (algorithm.md §5, §5.11, §6, §10): one persistent cooperative
kernel per update and per ``compute()``, one host synchronization.

The host stages the change lists and a fresh control block, launches ``fused_update`` (or
``fused_compute``) cooperatively over occupancy x SM count blocks of 256 threads on the device's
stream, then reads the control block back once through ``runtime.synchronize``. The epilogue turns
``overflow`` into ``invalid_input`` and the pointer-jumping activity of the last round into
``parent_cycle`` (re-zeroing the workspace first), else hands the kernel's last generation back
to the workspace and reports the statistics. A steady-state update allocates no device memory:
the workspace, the change-list buffers, the control block and the device graph are reserved
beforehand (``prepare``) and reused.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ... import errors
from ..kept import Kept
from ..plan import EngineReport, pointer_jumping_rounds
from . import appends, chains, jumps, mapped, passes, push, runtime, switches, variants, workspace

ENGINE = "fused"
SOURCE = "fused.cu"
KERNELS = ("fused_update", "fused_compute")
#: The one-block kernel that reads a captured update's initial record from pinned host memory
#: (mapped.py); compiled in the same module, never launched cooperatively.
CONTROL_IN = "fused_control_in"
#: The control block says the kernel ran this many times per run: one synchronization
#: (algorithm.md §9).
SYNC_BUDGET = 1
#: Optional cap on the grid (blocks), for experiments with smaller grids (algorithm.md §12.2, §15);
#: results never depend on the grid size.
MAX_BLOCKS_ENV = "ENGINES_FUSED_MAX_BLOCKS"
#: How the grid is sized: "work" (from the vertex count, ``work_blocks``) or "device" (every
#: co-resident block, the rule before issue 27); results never depend on it.
GRID_ENV = "ENGINES_FUSED_GRID"
GRIDS = ("work", "device")
#: Vertices per block of the "work" grid: every phase of the persistent kernel ends in a
#: grid-wide barrier, and a small graph's O(n) passes do not need every co-resident block; a large
#: one's pushes do (roadNet-PA safe50k, engine table with ENGINES_FUSED_MAX_BLOCKS on the H200:
#: 1.44 ms at 528 blocks, 1.52 at 264, 1.74 at 132; the rule gives it 533). Interleaved against
#: the whole-device grid (bench/update_anatomy.py --ab-env ENGINES_FUSED_GRID=device,work, H200),
#: the whole update per batch: luxembourg_osm 100-change stream 0.974x, a 4,039-vertex graph with
#: 1,760-change batches 0.996x, roadNet-PA with 100 and 10,000 changes 1.000x and 0.995x: the
#: barrier's cost hardly depends on the grid here, so the rule saves little (and costs nothing).
#: Smaller grids than one block per SM save nothing either (H200, 55cf5ac, ``--ab-env
#: ENGINES_FUSED_MAX_BLOCKS=132,B``, whole update per batch interleaved): the 4,039-vertex graph's
#: 1,760-change batches 1.002x at 16 blocks and 1.037x at 4, luxembourg_osm's 100-change batches
#: 1.024x at 32, so the floor of one block per multiprocessor stays.
VERTICES_PER_BLOCK = 2048
#: The solo push (fused.cu solo_push, issue 34): block 0 alone runs the push iterations of a
#: near list whose expected edges (its length x the mean out-degree) are at most this many,
#: meeting with __syncthreads instead of a grid barrier, until the list is empty or longer. An
#: integer (edges), 0 / off for never, SOLO_DEFAULT when unset; results never depend on it
#: (algorithm.md §5.12).
SOLO_ENV = "ENGINES_FUSED_SOLO"
#: 64 edges: the short tails of a small batch's push go solo, a dense graph's lists hardly ever.
#: Measured on an H100 at 514f9c2 (bench/update_anatomy.py --ab-env ENGINES_FUSED_SOLO=0,64,
#: whole update per batch, interleaved): luxembourg_osm 2,000 batches of 100 changes 0.994x, p99
#: 1.033 -> 0.948 ms; roadNet-PA 0.999x, p99 1.036 -> 1.012; the 4,039-vertex graph's 1,000
#: batches of 1,760 changes 1.020x, p99 1.564 -> 1.331 (9d491f7: luxembourg_osm 0.979x, p99
#: 1.112 -> 1.000). Larger budgets lost: 1,024 edges 1.17x on roadNet-PA (H200, 1b2fb4c), 4,096
#: edges 1.11x on the 4k graph (H100, 9d491f7). The stream's tail (issue 27's p99) is what it buys.
#: On a large update the budget hardly matters up to a few hundred edges and then costs: roadNet-PA
#: safe50k's fused launch (bench/fused_phases.py --repeats 15, H100, 6b6e9bc) 1,048 us with the
#: solo push off, 1,043 at 64 edges, 1,048 at 256, 1,166 at 1,024 and 1,737 at 4,096, where one
#: block took 7.0 us per iteration over lists of 86 vertices (a grid iteration over lists of
#: 10-99: about 3.6 us) and 18.4 us over lists of 307.
SOLO_DEFAULT = 64
#: The captured launch (issue 27, step 2), the default (``ENGINES_FUSED_CAPTURE=0`` turns it off):
#: each update's change-list staging (device_apply's apply_changes_sized, which reads the batch's
#: sizes on the device), control-block upload, fused_update and control-block download run as one
#: CUDA graph, captured once per set of kernel arguments (``_capture_key``) and replayed, instead of
#: four calls from Python, the kernel's with about forty arguments to convert. The four scalars
#: that change from update to update (the first generation, the head count, the solo limit and
#: delta, which follow the edge count) travel in the control block's initial record (module variant
#: SSSP_FUSED_CAPTURED); W's (bits, no_parent, bound) change seldom and stay arguments. Off, the
#: same steps launch from Python. Results never depend on it. Measured on the H200 at 1b2fb4c
#: (bench/update_anatomy.py --graph luxembourg_osm --batch-size 100 --ab-env
#: ENGINES_FUSED_CAPTURE=0,1, 1,000 batches interleaved): captured / Python 0.965 per batch.
CAPTURE_ENV = "ENGINES_FUSED_CAPTURE"
#: Poll for the commit's record while the update runs (issue 27): off unless
#: ``ENGINES_FUSED_POLL_RECORD=1``. The record lands before the fused kernel starts (stream
#: order), but a small update's host often asks for it once, before it has landed, and then reads
#: it after the run's wait, where its conversion (about 10 µs, PendingCommit.resolve) lengthens the
#: update. On, the host asks again until it has read it (event and stream queries only,
#: runtime.poll_while_running; still one synchronization). Off by default: measured on an H100 at
#: 6b6e9bc (bench/update_anatomy.py --ab-env ENGINES_FUSED_POLL_RECORD=0,1, whole update per batch,
#: interleaved), on / off 0.998 on the 4k graph's 1,760-change batches, 1.002 on luxembourg_osm's
#: and 0.981 on roadNet-PA's 100-change batches: within 2 % either way, so the simpler one-look path
#: stays (the switches step of bench/gpu_session.sh measures it again). Results never depend on it.
POLL_RECORD_ENV = "ENGINES_FUSED_POLL_RECORD"
#: The pull by offers (kernels.cuh offer_to_candidates, issue 34): when an update's candidates are
#: more than this percent of the vertices, every vertex with a finite word offers along its
#: out-edges to the candidates instead of each candidate reading its in-neighbours' words. A large
#: invalidation makes the pull read the in-edges of most of the graph (roadNet-PA safe50k: 955 k of
#: 1.09 M vertices invalidated, the pull 70-77 us of its 1,045 us fused update, H100); the offers
#: read every word once and the out-edges of the vertices still reached. A percent from 1 to 100
#: (1: nearly every update with candidates, for tests; 100: never, as the candidates never exceed
#: n), 0 / off for never; OFFERS_DEFAULT when unset. The same candidates end with the same
#: key-minima (algorithm.md §5.8, §5.12): results never depend on it.
OFFERS_ENV = "ENGINES_PULL_OFFERS"
#: Half the vertices: the offers read the out-edges of the vertices still reached, the pull the
#: in-edges of the candidates, about as many edges each at half. Measured on an H200 at 4b79d21
#: (bench/fused_phases.py --graph roadNet-PA --batch safe50k --repeats 15, off and 50 alternated
#: twice): the pull phase 68.3 / 72.2 us -> 38.2 / 38.7 us, the launch 948.2 / 950.6 us -> 891.5 /
#: 893.5 us. An update whose candidates are fewer (every small batch) runs the pull as before.
OFFERS_DEFAULT = 50
#: Captured launches kept per device, the least recently used dropped first: a stream of updates
#: alternates between the graph's two buffer sets (two captures serve it); room for a few results
#: and restores more.
MAX_CAPTURED = 8
#: The launch memo of a captured update (issue 27, the small graph's host time): a steady stream
#: of updates replays the same few captured graphs, yet each update works their key out afresh
#: from the module, the grid, the device view, the workspace, the change lists' staging and about
#: forty kernel arguments (on the 4,039-vertex graph's 1,760-change batches, H100 at 3a2e75d,
#: 30-40 µs of host time between the device apply's enqueue and the engine's launch, where the
#: host, not the GPU, is the critical path). The memo keys the captured graph by a handful of
#: values that stand for all of that (``_memo_key``: the run choice, the plan's scalars, the
#: graph's buffer set, the results' addresses and the layouts of the workspace and of the apply's
#: scratch) and, on a hit, only stages the control block's initial record and replays. "on"
#: (unset, 1): replay on a hit; "off" (0): no memo; "check": never replay from the memo, but work
#: every key out as before and refuse (InternalError) a memo key that stands for two captures,
#: which is how the GPU tests prove the memo key sound (tests/gpu/test_fused_memo.py). Results never
#: depend on it. Measured on an H100 at 0c71f5a (bench/update_anatomy.py --ab-env
#: ENGINES_FUSED_MEMO=0,1, whole update per batch, interleaved): the 4,039-vertex graph's
#: 1,760-change batches 0.920x (0.259 -> 0.239 ms), luxembourg_osm's 100-change batches 0.884x
#: (0.456 -> 0.403 ms).
MEMO_ENV = "ENGINES_FUSED_MEMO"
MEMO_MODES = ("off", "on", "check")
_CAPTURED_DEFINES = ("SSSP_FUSED_CAPTURED",)
#: The solo push's module variant (fused.cu solo_push, SOLO_ENV).
_SOLO_DEFINES = ("SSSP_FUSED_SOLO",)
#: The phase clock (fused.cu phase_mark; phase_clock.py reads it): a module variant in which block
#: 0 stamps the clock at every grid barrier, for bench/fused_phases.py. An instrument, off unless
#: ``ENGINES_FUSED_PHASE_CLOCK=1``: it never times a result anybody reports, only splits a launch
#: into its phases. Results never depend on it.
PHASE_CLOCK_ENV = "ENGINES_FUSED_PHASE_CLOCK"
PHASE_CLOCK_DEFINES = ("SSSP_PHASE_CLOCK",)
#: Every module variant this engine compiles (runtime.VARIANT_DEFINES): the push expansions'
#: (push.module_defines) with and without the solo push, the plain push's also with the wide
#: passes (passes.with_wide, ENGINES_WIDE_PASSES), every plain-push one of those also with the
#: block appends (appends.with_appends, ENGINES_BLOCK_APPEND), every plain-push one of those also
#: with the chains (chains.with_chains, ENGINES_PUSH_CHAIN), every plain-push one of those also
#: with multi-hop pointer jumping (jumps.with_jumps, ENGINES_MULTI_HOP_JUMP), each also captured
#: (ENGINES_FUSED_CAPTURE); make cuda-check compiles each.
VARIANTS = tuple(runtime.variant_defines(variant + captured)
                 for variant in jumps.with_jumps(chains.with_chains(appends.with_appends(passes.with_wide(
                     tuple(runtime.variant_defines(expansion + solo) for expansion in push.VARIANTS
                           for solo in ((), _SOLO_DEFINES))))))
                 for captured in ((), _CAPTURED_DEFINES))
#: The phase clock's modules that make cuda-check compiles (no spills, as every module): the
#: default variants of an update (captured, with and without the block appends, and with both the
#: appends and multi-hop jumping: a large update's default) and of compute(),
#: each with the solo push (the default) and without it (ENGINES_FUSED_SOLO=0, which stamps every
#: push iteration at its own barrier for bench/fused_phases.py). Other combinations compile
#: on demand under NVRTC like any variant.
INSTRUMENT_VARIANTS = tuple(runtime.variant_defines(PHASE_CLOCK_DEFINES + extra + solo)
                            for extra in ((), _CAPTURED_DEFINES,
                                          _CAPTURED_DEFINES + appends.module_defines(True, "group"),
                                          _CAPTURED_DEFINES + appends.module_defines(True, "group")
                                          + jumps.module_defines(True, "group"))
                            for solo in ((), _SOLO_DEFINES))
#: What make cuda-check compiles from fused.cu (compile_check.variants_of): every variant, the
#: instruments' too.
CHECKED_VARIANTS = VARIANTS + INSTRUMENT_VARIANTS


def load_module(device: int, defines=()) -> runtime.CompiledModule:
    """Compile (or fetch) the fused module on ``device`` in the variant ``defines``
    (``module_defines``); CudaError on failure."""
    return runtime.get_module(ENGINE, device, SOURCE, KERNELS + (CONTROL_IN,), cooperative=True,
                              defines=defines)


def solo_edges() -> int:
    """``ENGINES_FUSED_SOLO``: the edges of the longest near list the solo push takes (0: off;
    SOLO_DEFAULT when unset); a bad value is an error naming it."""
    return switches.count(SOLO_ENV, "a number of edges", default=SOLO_DEFAULT)


def solo_limit(num_vertices: int, num_edges: int, edges: int) -> int:
    """The longest near list the solo push takes on a graph of ``num_vertices`` and ``num_edges``
    arcs for an ``edges`` budget: edges / (mean out-degree), at least 1, at most n; 0 when off."""
    n, m, edges = int(num_vertices), int(num_edges), int(edges)
    if edges <= 0 or n <= 0:
        return 0
    return min(n, max(1, edges * n // max(m, 1)))


def offers_percent() -> int:
    """``ENGINES_PULL_OFFERS``: the percent of the vertices an update's candidates must exceed for
    the pull by offers (0: never; OFFERS_DEFAULT when unset); a bad value is an error naming it."""
    return switches.count(OFFERS_ENV, "a percent of the vertices", minimum=1, maximum=100,
                          default=OFFERS_DEFAULT)


def offer_above(num_vertices: int, percent: int) -> int:
    """The kernel's ``offer_above``: the candidate count above which an update of ``num_vertices``
    pulls by offers, ``percent`` of them (0: never, which is n: the candidates never exceed it)."""
    n = int(num_vertices)
    return n if int(percent) <= 0 else n * int(percent) // 100


def capture_enabled() -> bool:
    """``ENGINES_FUSED_CAPTURE``: whether updates run as a captured launch (on unless 0 / off); a
    bad value is an error naming it."""
    return switches.flag(CAPTURE_ENV, default=True)


def poll_record_enabled() -> bool:
    """``ENGINES_FUSED_POLL_RECORD``: whether an update polls for the commit's record while it runs
    (off unless 1 / on); a bad value is an error naming it."""
    return switches.flag(POLL_RECORD_ENV, default=False)


def memo_mode() -> str:
    """``ENGINES_FUSED_MEMO``: "on" (unset, 1 / on), "off" (0 / off) or "check" (MEMO_ENV says
    what each does); a bad value is an error naming it."""
    text = switches.given(MEMO_ENV)
    if not text or text in switches.ON:
        return "on"
    if text in switches.OFF:
        return "off"
    if text in MEMO_MODES:
        return text
    raise errors.InvalidArgumentError(f"{MEMO_ENV}={text!r}: expected 1/on, 0/off or check")


def phase_clock_enabled() -> bool:
    """``ENGINES_FUSED_PHASE_CLOCK``: whether runs load the phase clock's variant (off unless 1 /
    on); a bad value is an error naming it."""
    return switches.flag(PHASE_CLOCK_ENV, default=False)


def module_defines(plan, edges: int, wide: bool = False, captured: bool = False,
                   block_append: bool = False, chain_hops: int = 0, multi_hop: bool = False) -> tuple[str, ...]:
    """The module variant of a run: both engines' (variants.defines: the push expansion's, the wide
    passes when ``wide``, the block appends when ``block_append``, the chains when ``chain_hops``,
    multi-hop pointer jumping when ``multi_hop``), then the solo push when ``edges`` and the
    captured update when ``captured``."""
    return (variants.defines(plan.push_expansion, wide, block_append, chain_hops, multi_hop)
            + _own_defines(edges, captured))


def _own_defines(edges: int, captured: bool, phase_clock: bool = False) -> tuple[str, ...]:
    """This engine's variants after both engines' (variants.defines): the solo push when ``edges``,
    the captured update when ``captured``, the phase clock when ``phase_clock``."""
    return ((_SOLO_DEFINES if edges > 0 else ()) + (_CAPTURED_DEFINES if captured else ())
            + (PHASE_CLOCK_DEFINES if phase_clock else ()))


def run_defines(plan, update: bool = True) -> tuple[str, ...]:
    """The module variant a run of ``plan`` loads now, an update's or compute()'s (only an update
    is captured): ``ENGINES_FUSED_SOLO``, ``ENGINES_WIDE_PASSES``, ``ENGINES_FUSED_CAPTURE``,
    ``ENGINES_BLOCK_APPEND`` (unset: by the plan's batch size), ``ENGINES_PUSH_CHAIN`` (unset:
    off on this engine) and ``ENGINES_MULTI_HOP_JUMP`` read."""
    return run_choice(plan, update).defines


def run_choice(plan, update: bool = True) -> variants.RunChoice:
    """The ``variants.RunChoice`` of a run of ``plan``, every switch read once: prepare() takes it
    and hands it to the run, so what it compiles is what the run loads (_run_setup)."""
    shared = variants.run_choice(plan, ENGINE)

    def make() -> variants.RunChoice:
        edges = solo_edges()
        captured = bool(update and capture_enabled())
        clock = phase_clock_enabled()
        # an update's three, read for every update (a bad value refused before the commit); the
        # mapped records serve a captured update only
        mapped_records = bool(update and mapped.enabled()) and captured
        poll = bool(update and poll_record_enabled())
        offers = offers_percent() if update else 0
        memo = memo_mode() if captured else "off"  # the memo serves a captured update only
        return dataclasses.replace(shared, defines=shared.defines + _own_defines(edges, captured, clock),
                                   solo_edges=edges, mapped_records=mapped_records, poll_record=poll,
                                   offers_percent=offers, launch_memo=memo)

    return _choices.get((shared, bool(update), switches.raw_values(_OWN_SWITCHES)), make)


#: The switches this engine's run choice reads on top of the shared ones: their raw values key
#: ``_choices`` (as variants.SWITCHES do the shared choices'), so a stream of updates parses each
#: once, not six parses an update.
_OWN_SWITCHES = (SOLO_ENV, CAPTURE_ENV, PHASE_CLOCK_ENV, mapped.MAPPED_RECORDS_ENV, POLL_RECORD_ENV, OFFERS_ENV,
                 MEMO_ENV)
#: This engine's choices by (the shared choice, update or not, the raw values of _OWN_SWITCHES):
#: ``run_choice``.
_choices = Kept()


_max_blocks: dict[int, int] = {}  # device -> max_blocks (asked before every update)


def max_blocks(device: int) -> int:
    """Co-resident blocks of the fused kernels on ``device`` (the smallest over every kernel and
    type pair); 0 means the persistent kernel does not fit on an SM (algorithm.md §10.1). Fixed
    for a device and the compiled module, hence computed once."""
    device = int(device)
    blocks = _max_blocks.get(device)
    if blocks is None:
        module = load_module(device)
        blocks = _max_blocks[device] = min(
            runtime.cooperative_grid(module, kernel, v, o)
            for kernel in KERNELS
            for v, o in runtime.TYPE_PAIRS
        )
    return blocks


def work_blocks(num_vertices: int, co_resident: int, multiprocessors: int) -> int:
    """The grid for ``num_vertices``: one block per ``VERTICES_PER_BLOCK`` vertices, at least one
    per multiprocessor and at most every co-resident block."""
    wanted = max(-(-int(num_vertices) // VERTICES_PER_BLOCK), int(multiprocessors))
    return min(wanted, int(co_resident))


#: The switches the grid depends on besides the module: their raw values key ``_grids`` and the
#: launch memo (``_memo_key``).
_GRID_SWITCHES = (GRID_ENV, MAX_BLOCKS_ENV)


def grid_rule() -> str:
    """``ENGINES_FUSED_GRID`` ("work" when unset); a bad value is an error naming the choices."""
    return switches.choice(GRID_ENV, GRIDS, "work")


#: Grids already worked out, by everything they depend on (``grid_blocks``): a stream of updates
#: asks the same question each time, and the occupancy lookup and two switch parses were a few µs
#: of each update's host time. Keyed by the module's id, the module kept beside its grid: a module
#: that reuses a freed one's id (only possible once the table started over) is worked out afresh.
#: Only valid grids are kept: a bad switch value raises every time.
_grids = Kept()


def grid_blocks(module: runtime.CompiledModule, kernel: str, vertex_dtype, offset_dtype,
                num_vertices: int) -> int:
    """The cooperative grid (algorithm.md §10.2): sized to the vertices (``work_blocks``) unless
    ``ENGINES_FUSED_GRID=device``, optionally capped by ``ENGINES_FUSED_MAX_BLOCKS``."""
    def make():
        return module, _grid_blocks(module, kernel, vertex_dtype, offset_dtype, num_vertices)

    key = (id(module), kernel, vertex_dtype, offset_dtype, int(num_vertices), switches.raw_values(_GRID_SWITCHES))
    kept, blocks = _grids.get(key, make)
    return blocks if kept is module else make()[1]


def _grid_blocks(module: runtime.CompiledModule, kernel: str, vertex_dtype, offset_dtype,
                 num_vertices: int) -> int:
    """grid_blocks worked out."""
    blocks = runtime.cooperative_grid(module, kernel, vertex_dtype, offset_dtype)
    if blocks >= 1 and grid_rule() == "work":
        blocks = work_blocks(num_vertices, blocks, runtime.device_info(module.device).multiprocessors)
    cap = switches.count(MAX_BLOCKS_ENV, "a number of blocks", minimum=1)
    if cap:
        blocks = min(blocks, cap)
    if blocks < 1:
        raise errors.NotSupportedError(
            f"the persistent kernel does not fit on an SM of device {module.device}; "
            'use cuda_engine="operators" or backend="host"'
        )
    return blocks


def _scalars(plan, vertex_dtype, chain_limits: tuple[int, int], far_queue: bool = False,
             precheck: bool = True):
    """The kernels' scalar arguments; the push argument carries the chains' ``(hops, max_degree)``
    when hops > 0, the far queue's bit and the pre-check's (chains.push_argument)."""
    vt = np.dtype(vertex_dtype).type
    packing = plan.packing
    return (
        vt(plan.num_vertices),
        vt(plan.source),
        np.uint32(packing.bits),
        np.uint64(packing.no_parent),
        np.uint64(packing.bound),
        np.uint64(plan.device_delta),
        np.uint32(chains.push_argument(plan.push_expansion, *chain_limits, far_queue, precheck)),
        vt,
    )


def _run_setup(plan, device: int, vertex_dtype, update: bool, choice: variants.RunChoice | None = None):
    """What compute() sets up before entering the stream: ``(stream, solo edges, module,
    workspace, sync counter, _scalars)``, from ``choice`` (prepare()'s reading of the switches;
    None: read them now, run_choice): the module variant and the chain limits in the push argument
    come from the same reading. (update() takes the same pieces itself, the module and the scalars
    only when its launch memo misses.)"""
    if choice is None:
        choice = run_choice(plan, update)
    return (runtime.stream(device), choice.solo_edges, load_module(device, choice.defines),
            workspace.get(device, vertex_dtype), runtime.SyncCounter(),
            _scalars(plan, vertex_dtype, choice.chain_limits, choice.far_queue, choice.precheck))


def _kernel(module, name: str, graph, plan, vertex_dtype, edges: int):
    """The kernel ``name`` of a run on the graph's device view (inside the run's device and
    stream): ``(view, function, grid blocks, solo limit)``."""
    dg = graph._device.view(plan.objective)
    n = int(plan.num_vertices)
    # the view's edge count: no read of a pending commit's exact one (a sync); the solo rule needs
    # only the mean degree
    solo = np.dtype(vertex_dtype).type(solo_limit(n, dg.num_edges, edges))
    # the module's table made once per type pair: function() builds a key of two dtypes per call
    return (dg, module.functions(vertex_dtype, dg.offset_dtype)[name],
            grid_blocks(module, name, vertex_dtype, dg.offset_dtype, n), solo)


def update(graph, distances, parents, plan, changes, device: int, loop: str | None = None,
           choice: variants.RunChoice | None = None) -> EngineReport:
    """One fused update of ``(distances, parents)`` (CuPy, already grown to n) in place
    (algorithm.md §5). ``loop`` (the operators engine's loop mode) is ignored: both engine
    modules take the same arguments.

    ``changes`` is a ``device_apply.DeviceChangeLists``: the lists are built on the device.
    """
    cupy = runtime.cupy_module()
    vertex_dtype = np.dtype(parents.dtype)
    n = int(plan.num_vertices)
    if choice is None:
        choice = run_choice(plan, True)
    s, ws, syncs = runtime.stream(device), workspace.get(device, vertex_dtype), runtime.SyncCounter()
    max_rounds = pointer_jumping_rounds(n)
    if choice.poll_record:  # until the record is read (POLL_RECORD_ENV)
        def while_running() -> None:
            runtime.poll_while_running(changes.resolve_ready, s)
    else:  # one look
        while_running = changes.resolve_ready
    # an empty batch stages nothing (no sizes on the device): its launch differs, and it is rare
    memo = choice.launch_memo if changes.upper else "off"

    with ws.lock:
        try:
            runtime.order_after_current_stream(s, device)
            with runtime.cuda_errors("running the fused engine"), cupy.cuda.Device(device), s:
                ws.reserve(n, max(changes.upper, changes.num_heads, 1), s)  # within capacity: nothing
                memo_key = (_memo_key(graph, distances, parents, plan, changes, choice, ws)
                            if memo != "off" else None)
                state = capture_state(device, vertex_dtype) if memo == "on" else None
                entry = state.memo.get(memo_key) if state is not None else None
                if entry is not None:
                    record = _replay_memo(entry, state, graph, plan, changes, choice, ws, s, vertex_dtype,
                                          syncs, while_running)
                else:
                    record = _launch(graph, distances, parents, plan, changes, choice, ws, s, device,
                                     vertex_dtype, syncs, while_running, memo_key)
        except Exception:
            _reset_quietly(ws, s)
            raise
        record = _values(record)
        report = _epilogue(ws, s, record, syncs, changes.num_changed(), max_rounds)
    report.grid_syncs = grid_syncs(record, update=True, packed=plan.packed)
    return report


def _launch(graph, distances, parents, plan, changes, choice, ws, s, device: int, vertex_dtype, syncs,
            while_running, memo_key):
    """An update's run without the memo (inside its device, stream and the workspace's lock, the
    workspace reserved): the module, the grid and the kernel's arguments worked out, then the
    captured run (``_run_captured``, which keeps its graph in the memo under ``memo_key`` unless
    None) or the launch from Python; the control block's record once it is back."""
    n = int(plan.num_vertices)
    num_heads = changes.num_heads
    module = load_module(device, choice.defines)
    captured = "SSSP_FUSED_CAPTURED" in module.defines
    vn, vsource, bits, no_parent, bound, delta, push_shift, vt = _scalars(
        plan, vertex_dtype, choice.chain_limits, choice.far_queue, choice.precheck)
    dg, fn, blocks, solo = _kernel(module, "fused_update", graph, plan, vertex_dtype, choice.solo_edges)
    base = ws.next_generation(s)
    control = ws.control("fused")
    if captured:  # the change lists are staged by the captured graph itself
        (changed_from, changed_to, heads, changed_count), staging = changes.captured_staging(ws)
    else:
        # the control block's upload before the change lists' kernel, not between it
        # and the engine's (_run_captured says why)
        control.upload_initial(s)
        changed_from, changed_to, heads, changed_count = changes.stage(ws, s)
    args = (
        vn, vsource,
        dg.out_ptr, dg.out_end, dg.out_index, dg.out_weight,
        dg.in_ptr, dg.in_end, dg.in_index, dg.in_weight,
        distances, parents,
        ws.word, ws.stamp, ws.in_far, ws.flag, ws.ancestor,
        ws.candidates, ws.frontier, ws.near_a, ws.near_b, ws.far_a, ws.far_b,
        ws.near_log,
        changed_from, changed_to, changed_count,
        # a captured kernel reads these four from the control block (zeros here keep
        # the arguments, hence the capture, the same from update to update; the solo
        # limit and the default delta follow the edge count, which most batches change)
        heads, vt(0 if captured else num_heads),
        bits, no_parent, bound, np.uint64(0) if captured else delta, push_shift,
        np.int32(0 if captured else base), np.int32(pointer_jumping_rounds(n)),
        vt(0) if captured else solo, vt(offer_above(n, choice.offers_percent)),
        control.device,
    )
    if not captured:
        fn((blocks,), (runtime.BLOCK_SIZE,), args)
        while_running()  # the commit's record, while the kernel runs
        return runtime.synchronize(control, s, syncs)
    control_in = (module.functions(vertex_dtype, dg.offset_dtype)[CONTROL_IN]
                  if choice.mapped_records else None)
    _stage_initial(control, base, num_heads, solo, delta, control_in is not None)
    return _run_captured(fn, blocks, args, control, s, device, vertex_dtype, syncs, staging,
                         while_running=while_running, control_in=control_in,
                         memo=None if memo_key is None else (memo_key, choice))


def _stage_initial(control, base: int, num_heads: int, solo, delta, mapped_record: bool) -> None:
    """The captured kernel's per-update scalars into the control block's initial record; the host
    record's address only when the records are mapped (each field staged costs the host about
    0.4 us, and the initial record starts from zeros)."""
    control.stage_initial(base_generation=base, num_heads=num_heads, solo_limit=solo, delta=delta,
                          **({"host_record": control.host_read_ptr} if mapped_record else {}))


def _memo_key(graph, distances, parents, plan, changes, choice, ws) -> tuple:
    """What a captured update's graph depends on, read cheaply (MEMO_ENV): the run choice (the
    module variant, hence the kernel, and every switch it read; by identity, the memo entry holding
    it so that its id is not reused), the plan's scalars (vertex count, source, the packing's
    three, the push expansion), the objective, the graph's current buffer set (its serial: the
    device view's addresses and offset type), the results' addresses, the workspace's layout (its
    buffers, change views and control blocks), the apply scratch's layout (the staging's buffers
    and event capacity, hence its grid), how the commit stages its change lists and the grid's two
    switches. The device and the vertex type choose the CaptureState that holds the memo."""
    packing = plan.packing
    pending = changes.pending
    # the view's objective (plan's) and the staging's (the change lists'): one value through
    # api.update, both named so that no caller can split them
    return (id(choice), plan.num_vertices, plan.source, packing.bits, packing.no_parent, packing.bound,
            plan.push_expansion, plan.objective, changes.objective, graph._device.current.serial, distances.data.ptr,
            parents.data.ptr, ws.layout, pending.scratch.layout, pending.changes_grid,
            switches.raw_values(_GRID_SWITCHES))


class MemoEntry:
    """A captured update's graph as the memo keeps it: the graph, its full capture key (what
    "check" compares), whether its records are mapped (the initial record then carries the host
    record's address) and the run choice its memo key names by identity (held so that the id stays
    its own)."""

    __slots__ = ("graph", "key", "mapped_record", "choice")

    def __init__(self, graph, key: tuple, mapped_record: bool, choice) -> None:
        self.graph, self.key, self.mapped_record, self.choice = graph, key, mapped_record, choice


def _replay_memo(entry: MemoEntry, state: CaptureState, graph, plan, changes, choice, ws, s, vertex_dtype,
                 syncs, while_running):
    """A memo hit (inside the update's device, stream and lock; ``state`` holds the memo): the
    per-update scalars staged as ``_launch`` stages them, then the entry's graph replayed, the host
    work that overlaps it and the run's one synchronization; the control block's record."""
    n = int(plan.num_vertices)
    changes.pending.require_current()  # as the staging's launch checks it on a miss
    control = ws.control("fused")
    base = ws.next_generation(s)
    # the device view's edge count, as _kernel's solo limit reads it
    solo = vertex_dtype.type(solo_limit(n, graph._device.current.num_edges, choice.solo_edges))
    _stage_initial(control, base, changes.num_heads, solo, np.uint64(plan.device_delta), entry.mapped_record)
    entry.graph.launch(s)
    state.hits += 1
    while_running()
    return runtime.wait_record(control, s, syncs)


def _values(record) -> dict:
    """The control block's fields by name, read off the pinned record at once: the epilogue and
    the barrier count read a dozen, and each field of a NumPy structured scalar costs about 0.4 µs
    to take (the whole record's ``item()``, 1 µs)."""
    return dict(zip(record.dtype.names, record.item()))


class CaptureState:
    """The captured launches of one device (``ENGINES_FUSED_CAPTURE``): the graphs by
    ``_capture_key``, how many were made, and why a capture failed here once (the runs then launch
    from Python, the same kernel and copies; no capture is tried again in this process); the
    launch memo (MEMO_ENV) of the graphs kept, and how many updates it served."""

    def __init__(self) -> None:
        self.graphs: dict = {}
        self.made = 0
        self.problem: str | None = None
        self.memo: dict = {}  # _memo_key -> MemoEntry (MEMO_ENV)
        self.hits = 0  # updates replayed from the memo


#: (device, vertex dtype) -> its CaptureState: one per workspace, used under the workspace's lock
_capture_states: dict[tuple[int, np.dtype], CaptureState] = {}


def capture_state(device: int, vertex_dtype=np.int32) -> CaptureState:
    """The captured launches of ``device`` for results of ``vertex_dtype`` (tests and diagnostics
    read ``made`` and ``problem``)."""
    key = (int(device), np.dtype(vertex_dtype))
    state = _capture_states.get(key)
    if state is None:
        state = _capture_states[key] = CaptureState()
    return state


def _capture_key(fn, blocks: int, args) -> tuple:
    """What a captured launch fixes: the kernel, the grid and every argument, a device array by
    its address and a scalar by its value (runtime.capture_key, at the kernel's site). (Kernel
    functions live as long as their module, which is never dropped, so their ids are not
    reused.)"""
    return (id(fn), int(blocks)) + runtime.capture_key(id(fn), args)


def _run_captured(fn, blocks: int, args, control, s, device: int, vertex_dtype, syncs, staging=None,
                  while_running=None, control_in=None, memo=None):
    """A captured run: replay (capturing first when new) the graph of the control block's upload
    from its pinned initial record (staged by the caller), the change lists' staging
    (``staging``: ``(function, arguments, dims)`` of device_apply's sized kernel, None when the caller
    staged them), ``fn`` over ``blocks`` with ``args`` and the block's download into ``host_read``;
    then ``while_running()`` (host work that overlaps the run: the commit's record) and the run's
    one synchronization. Where capture failed, the same steps are enqueued from Python. Called
    under the workspace's lock. With ``control_in`` (mapped.py: the kernel that reads the initial
    record from pinned memory; the caller staged it with the host record's address) the graph has
    no copies: that kernel first, and the last block of ``fn`` stores the block into
    ``host_read``. With ``memo``, ``(memo key, run choice)`` (MEMO_ENV), the graph is kept in the
    launch memo under that key; one already there under another capture key is an InternalError
    (the memo key would be unsound)."""
    state = capture_state(device, vertex_dtype)

    def kernels(stream) -> None:
        if staging is not None:  # the change lists (device_apply apply_changes(_grid)_sized)
            staging[0](*staging[2], staging[1], stream=stream)
        fn((blocks,), (runtime.BLOCK_SIZE,), args, stream=stream)

    def launch(stream) -> None:
        # The control block's upload first, then both kernels, then its download. A copy between
        # two kernels costs the GPU a switch to the copy engine and back: on an H100 a graph of a
        # one-block kernel, a 256-byte upload from pinned memory, a cooperative kernel of 132
        # blocks and the download took 21.6 us a replay, against 13.95 us with the upload first
        # (the same as without the one-block kernel; CUDA events around 2,800 replays of each).
        if control_in is None:
            control.enqueue_copies(stream, kernels)
        else:
            control_in((1,), (runtime.BLOCK_SIZE,), (np.uint64(control.host_init_ptr), control.device),
                       stream=stream)
            kernels(stream)

    graph = None
    if state.problem is None:
        # the graph's copies fix the control block's pinned mirrors too (not kernel arguments): a
        # workspace made again after a discard may get its device buffers back at the same
        # addresses but other pinned memory
        key = (_capture_key(fn, blocks, args) + (control.host_init_ptr, control.host_read_ptr)
               + (("staging",) + _capture_key(staging[0], staging[2][0][0], staging[1])
                  if staging is not None else ())
               + (("mapped", id(control_in)) if control_in is not None else ()))
        graph = state.graphs.pop(key, None)
        if graph is not None:
            state.graphs[key] = graph  # used now: the last to be dropped (least recently used first)
        else:
            try:
                graph = runtime.capture(device, launch)
            except Exception as exc:  # noqa: BLE001 - a capture that fails falls back to launches
                state.problem = f"{type(exc).__name__}: {exc}"
                graph = None
            if graph is not None:
                while len(state.graphs) >= MAX_CAPTURED:
                    state.graphs.pop(next(iter(state.graphs)))
                    state.memo.clear()  # it may name the graph dropped
                state.graphs[key] = graph
                state.made += 1
        if graph is not None and memo is not None:
            _keep_in_memo(state, memo, key, graph, control_in is not None)
    if graph is not None:
        graph.launch(s)
    else:
        launch(s)
    if while_running is not None:  # host work that overlaps the run (before its one wait)
        while_running()
    return runtime.wait_record(control, s, syncs)


def _keep_in_memo(state: CaptureState, memo: tuple, key: tuple, graph, mapped_record: bool) -> None:
    """The graph of capture key ``key`` into ``state``'s memo under ``memo``'s key (``(memo key,
    run choice)``: the key names the choice by its id, and the entry holds the choice), unless an
    entry there names another capture key: a memo key that stands for two captures is refused,
    whatever the mode. (With "on" a key found is replayed and never gets here, so the refusal
    guards "check", the mode the GPU tests run every update stream in.)

    A hit does not move its graph to the recent end of ``state.graphs`` (that would hash the full
    key, the cost the memo saves): with more than MAX_CAPTURED captures in rotation, where the
    least recently used order drops a graph at nearly every update anyway, the memo's graphs go
    first and the memo is emptied; with fewer nothing is dropped."""
    memo_key, choice = memo
    entry = state.memo.get(memo_key)
    if entry is not None and entry.key != key:
        raise errors.InternalError(
            f"{MEMO_ENV}: one memo key stands for two captured launches (the memo key misses "
            f"something the launch depends on); run with {MEMO_ENV}=0 and report it")
    if entry is None and len(state.memo) >= MAX_CAPTURED:
        state.memo.clear()
    state.memo[memo_key] = MemoEntry(graph, key, mapped_record, choice)


def _epilogue(ws, s, record, syncs, num_changed: int, max_rounds: int) -> EngineReport:
    """algorithm.md §5.11: overflow -> invalid_input; else parent cycle -> parent_cycle; else
    stats."""
    if int(record["overflow"]) != 0:
        _reset_quietly(ws, s)
        raise errors.invalid_input_error()
    if num_changed > 0:
        rounds = int(record["rounds"])
        if rounds == max_rounds and rounds > 0 and int(record["active"][(rounds - 1) % 3]) != 0:
            _reset_quietly(ws, s)
            raise errors.parent_cycle_error()
    ws.advance_generation(int(record["generation"]))
    return EngineReport(
        engine_used=ENGINE,
        invalidated=int(record["invalidated"]),
        affected=int(record["affected"]),
        iterations=int(record["iterations"]),
        epochs=int(record["epochs"]),
        pushes=int(record["pushes"]),
        host_syncs=syncs.count,
        sync_budget=SYNC_BUDGET,
    )


def compute(graph, plan, device: int, loop: str | None = None, choice: variants.RunChoice | None = None):
    """A tree from scratch (algorithm.md §6): returns (distances cupy int64, parents cupy,
    EngineReport). ``loop`` is ignored, as in ``update``."""
    cupy = runtime.cupy_module()
    vertex_dtype = np.dtype(graph.vertex_dtype)
    n = int(plan.num_vertices)
    s, edges, module, ws, syncs, scalars = _run_setup(plan, device, vertex_dtype, False, choice)
    vn, vsource, bits, no_parent, bound, delta, push_shift, vt = scalars

    with ws.lock:
        try:
            runtime.order_after_current_stream(s, device)
            with runtime.cuda_errors("running the fused engine"), cupy.cuda.Device(device), s:
                dg, fn, blocks, solo = _kernel(module, "fused_compute", graph, plan, vertex_dtype, edges)
                ws.reserve(n, 1, s)
                distances = cupy.empty(n, dtype=cupy.int64)
                parents = cupy.empty(n, dtype=vertex_dtype)
                base = ws.next_generation(s)
                control = ws.control("fused")
                control.upload_initial(s, near=np.array([1, 0, 0], dtype=vertex_dtype))
                fn(
                    (blocks,),
                    (runtime.BLOCK_SIZE,),
                    (
                        vn, vsource,
                        dg.out_ptr, dg.out_end, dg.out_index, dg.out_weight,
                        distances, parents,
                        ws.word, ws.stamp, ws.in_far,
                        ws.near_a, ws.near_b, ws.far_a, ws.far_b, ws.near_log,
                        bits, no_parent, bound, delta, push_shift,
                        np.int32(base), solo, control.device,
                    ),
                )
                record = runtime.synchronize(control, s, syncs)
        except Exception:
            _reset_quietly(ws, s)
            raise
        report = _epilogue(ws, s, record, syncs, 0, 0)
    report.invalidated = 0
    report.affected = 0
    report.grid_syncs = grid_syncs(record, update=False, packed=plan.packed)
    return distances, parents, report


def grid_syncs(record, *, update: bool, packed: bool) -> int:
    """The grid.sync() calls of the fused run whose control block is ``record`` (fused.cu): an
    update's pack and roots, its pointer-jumping rounds, invalidation, heads, pull, first minimum
    and split (6 + rounds), compute()'s seeding (1); then one per push iteration and two per epoch
    (minimum, re-split), except that the push iterations of a solo stretch (block 0 alone) share
    one; distance-only words add the parent recovery's barriers (2 for an update, 1 for
    compute()). The phases of a run: what the floor model (bench/floor.py) counts."""
    grid_iterations = int(record["iterations"]) - int(record["solo_iterations"])
    loop = grid_iterations + int(record["solo_runs"]) + 2 * int(record["epochs"])
    if update:
        return 6 + int(record["rounds"]) + loop + (0 if packed else 2)
    return 1 + loop + (0 if packed else 1)


def _reset_quietly(ws, s) -> None:
    """Re-zero the workspace after a failed run; discard it if even that fails
    (algorithm.md §5.1)."""
    try:
        ws.reset_after_failure(s)
    except Exception:
        workspace.discard(ws.device, ws.vertex_dtype)


__all__ = ["CAPTURE_ENV", "CHECKED_VARIANTS", "ENGINE", "INSTRUMENT_VARIANTS", "KERNELS", "MEMO_ENV", "MEMO_MODES",
           "MemoEntry", "OFFERS_DEFAULT", "OFFERS_ENV", "PHASE_CLOCK_DEFINES", "PHASE_CLOCK_ENV",
           "POLL_RECORD_ENV",
           "SOLO_DEFAULT", "SOLO_ENV", "VARIANTS", "capture_enabled", "capture_state",
           "compute", "grid_blocks", "grid_rule", "grid_syncs", "load_module", "max_blocks", "memo_mode", "module_defines",
           "offer_above", "offers_percent", "poll_record_enabled", "run_choice", "run_defines", "solo_edges", "solo_limit", "update", "work_blocks"]
