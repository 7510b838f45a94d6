"""The CUDA operators engine: one kernel per phase and a host loop (algorithm.md §5 [ops], §6, §10).

The fallback where the fused persistent kernel cannot run (no cooperative launch), with the fused
engine's semantics phase by phase, so the two return the same bytes (ADR 0026 items 1-3). The
host waits for the device only where it needs a value, through runtime.synchronize, the one
synchronization helper (§10.3):

    update:  #1 after pack, roots, pointer jumping, invalidation, heads (input checks, candidates)
             #2 after the pull and the first split (near and far counts)
             one per push iteration, one per epoch (threshold raise and re-split)
             the last after the unpack (affected; the result is complete on return)
    compute: as above from #2 on (an initialization kernel replaces everything before the loop)

so host_syncs <= sync_budget = 3 + iterations + epochs (2 for an update without candidates) and
2 + iterations + epochs for compute(). Everything else is stream-ordered on the device's one
stream: no other synchronizing call, no device-to-host copy, and no device allocation once the
workspace and the device graph are reserved (compute() allocates only its result arrays).

That host loop is the ``"host"`` loop mode (``Options.operators_loop``), the ADR's literal
structure. In the ``"device"`` mode the loop state lives in the control block and one step (the
decision, a push, an epoch's minimum, threshold and re-split: ops_loop_* in operators.cu) is a
fixed sequence of launches; the host replays a captured CUDA graph of S steps (S = 8, doubling to
64 while work remains; steps after the end return at once) and reads the control block back once
per replay instead of once per push iteration and epoch. Same phases in the same order, so the
same bytes; host_syncs is then 2 + replays (+ 1 with candidates), still within the budget.
"""

from __future__ import annotations

import threading

import numpy as np

from ... import errors
from ..plan import EngineReport, Plan
from ..result import OPERATORS_LOOPS as LOOP_MODES  # "host": a readback per step; "device": replays
from . import runtime
from . import workspace as workspace_module

ENGINE = "operators"
SOURCE_FILE = "operators.cu"
#: Steps of the first replay of the device loop, and the most per replay (S doubles up to it).
FIRST_STEPS = 8
MAX_STEPS = 64
#: OperatorsControl::phase once the loop is over (kernels.cuh LoopPhase).
PHASE_DONE = 3
#: Captured step graphs kept (per buffers, scalars and S); the oldest is dropped beyond this.
MAX_CAPTURED = 32
#: Upper clamp of delta on the device (as the fused engine's): thresholds stay below
#: bound + 2^62 < 2^64, so the u64 threshold never wraps; a threshold above the bound behaves the
#: same whatever its value, so results do not change.
DELTA_CLAMP = 1 << 62
#: Every kernel of operators.cu (each instantiated at every (vertex, offset) pair of runtime.py).
KERNELS = (
    "ops_control_init",
    "ops_pack",
    "ops_roots",
    "ops_pointer_jump",
    "ops_invalidate",
    "ops_heads",
    "ops_pull",
    "ops_min",
    "ops_threshold",
    "ops_split_frontier",
    "ops_split_pile",
    "ops_push",
    "ops_unpack_update",
    "ops_unpack_all",
    "ops_recover_init",
    "ops_recover_parents",
    "ops_recover_count",
    "ops_compute_init",
    "ops_control_layout",
    "ops_loop_init",
    "ops_loop_step",
    "ops_loop_push",
    "ops_loop_min",
    "ops_loop_threshold",
    "ops_loop_split",
)


def load_module(device: int) -> runtime.CompiledModule:
    """The compiled operators module of ``device`` (compiled at first use, then cached)."""
    return runtime.get_module(ENGINE, int(device), SOURCE_FILE, KERNELS, cooperative=False)


def pointer_jumping_rounds(n: int) -> int:
    """max_rounds = R + 1 with R = ceil(log2 n), the smallest r with 2^r >= n (§5.5)."""
    return max(int(n) - 1, 0).bit_length() + 1


# ---------------------------------------------------------------------------------------------
# Launching


class _Launcher:
    """Launches the kernels of one run on the device's stream with §10.2's grid sizes."""

    def __init__(self, device: int, vertex_dtype, offset_dtype, stream):
        self.module = load_module(device)
        self.loop_blocks = max(runtime.operators_grid_cap(int(device)) // 2, 1)
        self.device = int(device)
        self.vertex = np.dtype(vertex_dtype)
        self.offset = np.dtype(offset_dtype)
        self.stream = stream
        self.grid_cap = runtime.operators_grid_cap(self.device)
        self._functions = {
            name: self.module.function(name, self.vertex, self.offset) for name in KERNELS
        }

    def over(self, kernel: str, work: int, *args) -> None:
        """A grid-stride launch sized for ``work`` items: min(ceil(work / 256), grid_cap) blocks."""
        blocks = min((max(int(work), 1) + runtime.BLOCK_SIZE - 1) // runtime.BLOCK_SIZE, self.grid_cap)
        self._functions[kernel]((blocks,), (runtime.BLOCK_SIZE,), args, stream=self.stream)

    def single(self, kernel: str, *args, stream=None) -> None:
        """A one-thread kernel (control init, threshold): one block of one thread."""
        self._functions[kernel]((1,), (1,), args, stream=stream or self.stream)

    def fixed(self, kernel: str, stream, *args) -> None:
        """A launch of the device loop: half the grid cap (the list length is on the device)."""
        self._functions[kernel]((self.loop_blocks,), (runtime.BLOCK_SIZE,), args, stream=stream)

    def v(self, value: int):
        """A scalar of the vertex type (counts, ids), as the kernel's C type requires (§12.3)."""
        return self.vertex.type(int(value))


class _Run:
    """The state of one engine run: workspace, device graph, control block, sync count."""

    def __init__(self, graph, plan: Plan, device: int, ws, dgraph, stream, loop: str = "host"):
        if loop not in LOOP_MODES:
            raise errors.InternalError(f"unknown operators loop mode {loop!r}")
        self.loop = loop
        self.device = int(device)
        self.plan = plan
        self.ws = ws
        self.g = dgraph
        self.stream = stream
        self.n = int(plan.num_vertices)
        self.source = int(plan.source)
        self.launch = _Launcher(device, graph.vertex_dtype, graph.offset_dtype, stream)
        self.control = ws.control("operators")
        self.ctl = self.control.device
        self.syncs = runtime.SyncCounter()
        packing = plan.packing
        self.bound = np.uint64(packing.bound)
        self.bits = np.uint32(packing.bits)
        self.no_parent = np.uint64(packing.no_parent)
        self.delta = np.uint64(min(int(plan.delta), DELTA_CLAMP))
        self.iterations = 0
        self.epochs = 0
        self.pushes = 0

    # -- helpers ---------------------------------------------------------------------------------
    def sync(self):
        """THE synchronization (runtime.synchronize): the control block, read back once."""
        return runtime.synchronize(self.control, self.stream, self.syncs)

    def generation(self) -> np.int32:
        return np.int32(self.ws.next_generation(self.stream))

    def _check_length(self, what: str, value: int) -> int:
        value = int(value)
        if value < 0 or value > self.n:
            raise errors.InternalError(
                f"the operators engine's {what} holds {value} entries, outside [0, n = {self.n}]"
            )
        return value

    # -- near-far propagation (§5.9), shared by update() and compute() ---------------------------
    def near_far(self, frontier_bound: int) -> None:
        """First minimum, threshold and split from the frontier, then the push / epoch loop."""
        ws, launch, ctl = self.ws, self.launch, self.ctl
        launch.over("ops_min", frontier_bound, launch.v(0), np.int32(1), ws.frontier, ws.word,
                    self.bits, ctl)
        launch.single("ops_threshold", np.int32(0), self.delta, ctl)
        launch.over("ops_split_frontier", frontier_bound, ws.frontier, ws.word, self.bits,
                    self.no_parent, ws.stamp, self.generation(), ws.in_far, ws.near_a, ws.far_a, ctl)
        if self.loop == "device":
            self.device_loop()
            return
        record = self.sync()  # #2: whether to push, and how many
        near_lists = (ws.near_a, ws.near_b)
        far_lists = (ws.far_a, ws.far_b)
        near_slot = far_slot = 0
        near_count = self._check_length("near list", record["near"][0])
        far_count = self._check_length("far pile", record["far"][0])
        while True:
            if near_count > 0:  # one push iteration
                self.iterations += 1
                self.pushes += near_count
                launch.over("ops_push", near_count, launch.v(near_count), near_lists[near_slot],
                            self.g.out_ptr, self.g.out_index, self.g.out_weight, ws.word,
                            launch.v(self.source), self.bound, self.bits, self.no_parent, ws.stamp,
                            self.generation(), ws.in_far, near_lists[1 - near_slot],
                            far_lists[far_slot], np.int32(near_slot), np.int32(far_slot), ctl)
                record = self.sync()
                near_slot = 1 - near_slot
                near_count = self._check_length("near list", record["near"][near_slot])
                far_count = self._check_length("far pile", record["far"][far_slot])
                continue
            if far_count == 0:
                return
            # An epoch: raise the threshold past the pile's minimum and re-split the pile.
            self.epochs += 1
            launch.over("ops_min", far_count, launch.v(far_count), np.int32(0),
                        far_lists[far_slot], ws.word, self.bits, ctl)
            launch.single("ops_threshold", np.int32(1), self.delta, ctl)
            launch.over("ops_split_pile", far_count, launch.v(far_count), far_lists[far_slot],
                        ws.word, self.bits, self.no_parent, ws.stamp, self.generation(), ws.in_far,
                        near_lists[near_slot], far_lists[1 - far_slot], np.int32(near_slot),
                        np.int32(far_slot), ctl)
            record = self.sync()
            far_slot = 1 - far_slot
            near_count = self._check_length("near list", record["near"][near_slot])
            far_count = self._check_length("far pile", record["far"][far_slot])

    # -- the device-driven loop ----------------------------------------------------------------
    def device_loop(self) -> None:
        """Replays of S captured steps, each followed by one readback, until the device is done."""
        ws, ctl = self.ws, self.ctl
        self.launch.single("ops_loop_init", np.int32(ws.next_generation(self.stream)), ctl)
        steps = FIRST_STEPS
        while True:
            self._captured(steps).launch(self.stream)
            record = self.sync()
            self._check_length("device loop's list", record["step_count"])
            if int(record["phase"]) == PHASE_DONE:
                break
            steps = min(2 * steps, MAX_STEPS)
        self.iterations = int(record["iterations"])
        self.epochs = int(record["epochs"])
        self.pushes = int(record["pushes"])
        ws.advance_generation(int(record["generation"]))

    def _step_args(self):
        """Every argument of the step kernels: buffers and scalars, fixed for the run."""
        ws, g = self.ws, self.g
        lists = (ws.near_a, ws.near_b, ws.far_a, ws.far_b)
        push = lists + (g.out_ptr, g.out_index, g.out_weight, ws.word, self.launch.v(self.source),
                        self.bound, self.bits, self.no_parent, ws.stamp, ws.in_far, self.ctl)
        minimum = (ws.far_a, ws.far_b, ws.word, self.bits, self.ctl)
        split = lists + (ws.word, self.bits, self.no_parent, ws.stamp, ws.in_far, self.ctl)
        return push, minimum, (self.delta, self.ctl), split

    def _captured(self, steps: int):
        """The CUDA graph of ``steps`` steps on this run's buffers and scalars (cached)."""
        push, minimum, threshold, split = self._step_args()
        key = (self.device, self.launch.vertex, self.launch.offset, steps, self.launch.loop_blocks,
               tuple(_identity(a) for a in push + minimum + threshold + split))
        with _captured_lock:
            graph = _CAPTURED.pop(key, None)
        if graph is None:
            launch, ctl = self.launch, self.ctl

            def enqueue(stream):
                for _ in range(steps):
                    launch.single("ops_loop_step", ctl, stream=stream)
                    launch.fixed("ops_loop_push", stream, *push)
                    launch.fixed("ops_loop_min", stream, *minimum)
                    launch.single("ops_loop_threshold", *threshold, stream=stream)
                    launch.fixed("ops_loop_split", stream, *split)

            graph = runtime.capture(self.device, enqueue)
        with _captured_lock:
            while len(_CAPTURED) >= MAX_CAPTURED:
                _CAPTURED.pop(next(iter(_CAPTURED)))
            _CAPTURED[key] = graph  # most recently used last
        return graph

    def recover_parents(self, distances, parents, count_affected: bool) -> None:
        """Distance-only mode (§4.4): distances from the words, then lowest-id tight parents."""
        ws, launch, n = self.ws, self.launch, self.n
        launch.over("ops_recover_init", n, launch.v(n), ws.word, launch.v(self.source), distances,
                    parents, np.int32(1 if count_affected else 0), ws.ancestor, ws.candidates)
        launch.over("ops_recover_parents", n, launch.v(n), self.g.out_ptr, self.g.out_index,
                    self.g.out_weight, launch.v(self.source), distances, parents)
        if count_affected:
            launch.over("ops_recover_count", n, launch.v(n), parents, ws.ancestor, ws.candidates,
                        self.ctl)

    def report(self, invalidated: int, affected: int, budget_base: int) -> EngineReport:
        return EngineReport(
            engine_used=ENGINE,
            invalidated=int(invalidated),
            affected=int(affected),
            iterations=self.iterations,
            epochs=self.epochs,
            pushes=self.pushes,
            host_syncs=self.syncs.count,
            sync_budget=budget_base + self.iterations + self.epochs,
        )


#: Captured step graphs by (device, types, S, grid, every argument): insertion order is use order.
_CAPTURED: dict = {}
_captured_lock = threading.Lock()


def _identity(arg):
    """What a captured launch fixed of an argument: a device address, or a scalar's value."""
    data = getattr(arg, "data", None)
    if data is not None and hasattr(data, "ptr"):
        return ("ptr", int(data.ptr))
    return (type(arg).__name__, arg.item() if hasattr(arg, "item") else arg)


def _begin(graph, plan: Plan, device: int, num_changes: int):
    """The workspace (capacity checked), the device graph view and the stream of a run."""
    device = int(device)
    stream = runtime.stream(device)
    runtime.order_after_current_stream(stream, device)
    ws = workspace_module.get(device, graph.vertex_dtype)
    ws.require(int(plan.num_vertices), int(num_changes))
    dgraph = graph._device.view(plan.objective)
    if dgraph.num_vertices != plan.num_vertices:
        raise errors.InternalError(
            f"the device graph has {dgraph.num_vertices} vertices, the plan {plan.num_vertices}"
        )
    return ws, dgraph, stream


# ---------------------------------------------------------------------------------------------
# update()


def update(graph, distances, parents, plan: Plan, changes, device: int, loop: str = "host") -> EngineReport:
    """Update the tree in (distances, parents) (CuPy, already grown) to ``graph``'s state.

    Post-commit input errors (§8.3) re-zero the workspace and raise ``invalid_input_error()`` or
    ``parent_cycle_error()``; nothing is launched after the synchronization that finds them.
    """
    cupy = runtime.cupy_module()
    ws, dgraph, stream = _begin(graph, plan, device, max(changes.upper, changes.num_heads))
    # The stream is also made current, so that nothing CuPy might enqueue lands elsewhere.
    with ws.lock, cupy.cuda.Device(int(device)), stream, \
            runtime.cuda_errors("running the operators engine"):
        try:
            return _update(_Run(graph, plan, device, ws, dgraph, stream, loop), distances, parents,
                           changes)
        except BaseException:
            # Whatever failed (a post-commit input error, CUDA, an interrupt), the scratch may hold
            # flags, far marks or stamps of this run: re-zero it for the next one (§5.1, §8.3).
            ws.reset_after_failure(stream)
            raise


def _update(run: _Run, distances, parents, changes) -> EngineReport:
    """``changes`` is a ``device_apply.DeviceChangeLists``: built on the device, its count read
    there by the kernels; the host knows an upper bound (``upper``) before sync #1."""
    ws, launch, ctl, n = run.ws, run.launch, run.ctl, run.n
    upper = changes.upper
    num_heads = changes.num_heads

    launch.single("ops_control_init", ctl)
    launch.over("ops_pack", n, launch.v(n), distances, parents, ws.word, ws.ancestor, run.bound,
                run.bits, run.no_parent, ctl)
    changed_from, changed_to, heads, changed_count = changes.stage(ws, run.stream)
    max_rounds = 0
    if upper > 0:
        launch.over("ops_roots", upper, changed_count, changed_from, changed_to, parents, ws.flag)
        # Every round is enqueued without waiting; the device ends them early (§5.5 [ops]), and
        # at once when the changed list turned out empty.
        max_rounds = pointer_jumping_rounds(n)
        for r in range(max_rounds):
            launch.over("ops_pointer_jump", n, launch.v(n), np.int32(r), changed_count, ws.ancestor,
                        ws.flag, ctl)
    g_inv = run.generation()
    launch.over("ops_invalidate", n, launch.v(n), ws.flag, ws.word, ws.stamp, g_inv,
                ws.candidates, ctl)
    if num_heads > 0:
        launch.over("ops_heads", num_heads, launch.v(num_heads), heads, launch.v(run.source),
                    ws.stamp, g_inv, ws.candidates, ctl)

    record = run.sync()  # #1: the input checks, invalidated and the candidate count
    if int(record["overflow"]) != 0:
        raise errors.invalid_input_error()
    if max_rounds > 0 and changes.num_changed() > 0 and int(record["active"][max_rounds - 1]) != 0:
        raise errors.parent_cycle_error()
    invalidated = int(record["invalidated"])
    candidates = run._check_length("candidates list", record["candidates"])

    if candidates > 0:
        launch.over("ops_pull", candidates, launch.v(candidates), ws.candidates, run.g.in_ptr,
                    run.g.in_index, run.g.in_weight, ws.word, run.bound, run.bits, run.no_parent,
                    ws.stamp, run.generation(), ws.frontier, ctl)
        run.near_far(frontier_bound=candidates)

    if run.plan.packed:
        launch.over("ops_unpack_update", n, launch.v(n), ws.word, run.bits, run.no_parent,
                    distances, parents, ctl)
    else:
        run.recover_parents(distances, parents, count_affected=True)
    record = run.sync()  # the last: affected, and the result complete on return
    return run.report(invalidated, int(record["affected"]), budget_base=3)


# ---------------------------------------------------------------------------------------------
# compute()


def compute(graph, plan: Plan, device: int, loop: str = "host"):
    """The canonical tree from ``plan.source`` on ``graph``: (distances, parents, report) (§6)."""
    cupy = runtime.cupy_module()
    ws, dgraph, stream = _begin(graph, plan, device, 0)
    n = int(plan.num_vertices)
    with ws.lock, cupy.cuda.Device(int(device)), stream, \
            runtime.cuda_errors("running the operators engine"):
        distances = cupy.empty(n, dtype=cupy.int64)
        parents = cupy.empty(n, dtype=graph.vertex_dtype)
        run = _Run(graph, plan, device, ws, dgraph, stream, loop)
        try:
            launch = run.launch
            launch.over("ops_compute_init", n, launch.v(n), launch.v(run.source), ws.word, run.bits,
                        run.no_parent, ws.frontier, run.ctl)
            run.near_far(frontier_bound=1)
            if plan.packed:
                launch.over("ops_unpack_all", n, launch.v(n), ws.word, run.bits, run.no_parent,
                            distances, parents)
            else:
                run.recover_parents(distances, parents, count_affected=False)
            run.sync()  # the result is complete on return
        except BaseException:
            ws.reset_after_failure(stream)
            raise
    return distances, parents, run.report(0, 0, budget_base=2)


__all__ = ["ENGINE", "KERNELS", "LOOP_MODES", "SOURCE_FILE", "compute", "load_module", "pointer_jumping_rounds",
           "update"]
