"""The CUDA operators engine: one kernel per phase and a host loop
(docs/algorithm.md §6, §10 and §5 [ops]).

The fallback where the fused persistent kernel cannot run (no cooperative launch), with the fused
engine's semantics phase by phase, so the two return the same bytes (ADR 0026 items 1-3). The
host waits for the device only where it needs a value, through runtime.synchronize, the one
synchronization helper (algorithm.md §10.3):

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
structure and the measured baseline. In the ``"device"`` mode (the default) the loop state, the
run's constants and the result's arrays live in the control block, and one launch of ``ops_loop``
(always the same arguments: buffer addresses) runs one phase of what follows the heads (the pull,
the frontier's minimum and first threshold, its split, a push iteration, an epoch's minimum and
threshold raise, its re-split, then the unpack or a step of the distance-only recovery), whose
last block to finish decides the next phase. The input checks and the candidate count of sync #1
are taken on the device by ``ops_loop_init``, so an update has no sync #1: the host enqueues
everything up to the first replays without waiting. The host replays captured CUDA graphs of S
such launches (replay_steps; launches after the end return at once), keeps the next replay in
flight while it reads the previous one's control block (READ_AHEAD), stops at the first readback
that shows the loop done, leaving the replay still in flight queued (WAIT_READ_AHEAD_ENV=1
waits for it too). Same phases in the same order, so the same bytes; host_syncs is the number of
replays waited for (conformance/replay.operators_syncs), within the same budget. An update's launches up
to the invalidation (control block reset, pack, change lists, roots, the pointer-jumping rounds)
are one captured graph in both modes; with the captured start (CAPTURED_START_ENV) the
invalidation, the heads and, in the device mode, the loop's start join it, the values that change
from update to update (generations, head count, delta) uploaded in the control block's initial
record (algorithm.md §10.2).
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np

from ... import errors
from ..kept import Kept
from ..plan import EngineReport, Plan, pointer_jumping_rounds
from ..options import OPERATORS_LOOPS as LOOP_MODES  # "host": a readback per step; "device": replays
from . import programmatic, push, runtime, switches
from . import workspace as workspace_module
from . import appends, chains, jumps, passes, variants

ENGINE = "operators"
SOURCE_FILE = "operators.cu"
#: Launches per replay of the device loop (replay_steps): FIRST_STEPS for the first
#: STEPS_DOUBLE_EVERY replays, then doubling every STEPS_DOUBLE_EVERY replays up to MAX_STEPS. With
#: the read-ahead a small S costs no idle time (the host reads one replay while the next runs),
#: and the launches wasted after the end are at most about 1.5 S (measured on the H200: 1.1 us
#: per launch that returns at once); S grows for long runs to keep the readbacks few.
FIRST_STEPS = 16
STEPS_DOUBLE_EVERY = 8
MAX_STEPS = 128
#: OperatorsControl::phase (operators.cu LoopPhase): the end, the two starts and the finishing
#: phases after the near-far loop.
PHASE_DONE = 0
PHASE_PULL = 4
PHASE_FIRST_MIN = 5
PHASE_UNPACK_CHANGED = 7
PHASE_UNPACK_ALL = 8
PHASE_RECOVER_DISTANCES = 9
#: OperatorsControl::loop_input_error (operators.cu LoopInputError): the update's input checks.
INPUT_INVALID = 1
INPUT_CYCLE = 2
#: Blocks of every ops_loop launch, per SM: the list lengths are on the device, so the grid is
#: fixed; two per SM is the fused engine's usual co-resident grid (264 on an H200).
#: ``ENGINES_OPERATORS_LOOP_BLOCKS`` overrides the total, for experiments (results never depend on
#: the grid size).
LOOP_BLOCKS_PER_SM = 2
LOOP_BLOCKS_ENV = "ENGINES_OPERATORS_LOOP_BLOCKS"
#: Captured graphs kept (loop replays per buffers, types and S; an update's prologue per n, buffers
#: and scalars); the least recently used is dropped beyond this.
MAX_CAPTURED = 32
#: The device loop enqueues the next replay before waiting for the previous one's readback.
READ_AHEAD = True
#: The captured start (issue 27): an update's invalidation, heads and device-loop start join the
#: captured prologue, their per-update values (two generations, the head count, delta) uploaded
#: with the control block's initial record instead of passed from Python (algorithm.md §10.2). Off
#: unless ``ENGINES_OPERATORS_CAPTURED_START=1``: its GPU tests pass (20 of 20 on an H200 at
#: 37960e1, after two test defects were mended at 960e793), and it measured equal to the
#: launches from Python (bench/update_anatomy.py --engine operators --graph luxembourg_osm
#: --batch-size 100 --ab-env ENGINES_OPERATORS_CAPTURED_START=0,1, 1,000 batches interleaved, H100
#: at 9514757, the read-ahead wait then on: per-batch ratio 1.000). Without the wait (the default
#: since 960e793) the same A/B read 0.957 (H100 at 52264f0, 1,000 batches) and, repeated with
#: 2,000 batches on a fresh H100 at c5346b2, 0.998: no gain that holds, so the default stays.
CAPTURED_START_ENV = "ENGINES_OPERATORS_CAPTURED_START"
#: What a kernel of the captured start takes for a value it reads from the control block.
FROM_BLOCK = -1
#: Whether the device loop waits for the read-ahead replay still queued when a readback shows the
#: loop done (issue 27). Its launches return at once (about 1.1 µs each, FIRST_STEPS of them after
#: a short run: some 18 µs of a small update's critical path, H200), and the result is complete
#: without them (the readback that shows the end follows the unpack). ``0`` / ``off`` returns at
#: that readback instead, leaving them queued on the engine's stream ahead of its next work (one
#: readback fewer in host_syncs): the default since the H100 measured it at 9514757
#: (bench/update_anatomy.py --engine operators --graph luxembourg_osm --batch-size 100 --ab-env
#: ENGINES_OPERATORS_WAIT_READ_AHEAD=0,1, 1,000 batches interleaved: median whole update 0.432 ms
#: without the wait, 0.461 ms with it, per-batch ratio 1.063). ``1`` / ``on`` waits.
WAIT_READ_AHEAD_ENV = "ENGINES_OPERATORS_WAIT_READ_AHEAD"
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
    "ops_loop_rebase",
    "ops_loop",
)


#: Every module variant this engine compiles (runtime.VARIANT_DEFINES): the push expansions'
#: (push.module_defines), the plain push's also with the wide passes (passes.with_wide,
#: ENGINES_WIDE_PASSES), and each plain-push one of those also with the block appends
#: (appends.with_appends, ENGINES_BLOCK_APPEND), and each plain-push one of those also with the
#: chains (chains.with_chains, ENGINES_PUSH_CHAIN), and each plain-push one of those also with
#: multi-hop pointer jumping (jumps.with_jumps, ENGINES_MULTI_HOP_JUMP); make cuda-check compiles
#: each.
VARIANTS = jumps.with_jumps(chains.with_chains(appends.with_appends(passes.with_wide(push.VARIANTS))))


def wait_read_ahead_enabled() -> bool:
    """``ENGINES_OPERATORS_WAIT_READ_AHEAD``: whether the device loop waits for its read-ahead
    replay at the end (off unless 1 / on); a bad value is an error naming it."""
    return switches.flag(WAIT_READ_AHEAD_ENV, default=False)


def captured_start_enabled() -> bool:
    """``ENGINES_OPERATORS_CAPTURED_START``: whether an update's start is captured (off unless 1 /
    on); a bad value is an error naming it."""
    return switches.flag(CAPTURED_START_ENV, default=False)


def run_defines(plan, update: bool = True) -> tuple[str, ...]:
    """The module variant a run of ``plan`` loads (an update's and compute()'s alike, ``update``
    aside): its push expansion's, with the wide passes when ``ENGINES_WIDE_PASSES`` is on, the
    block appends when ``ENGINES_BLOCK_APPEND`` is on or, unset, for every update on this engine
    (``appends.OPERATORS_MIN_BATCH_CHANGES``; never compute()), and the chains when
    ``ENGINES_PUSH_CHAIN`` is set or, both switches unset, with the appends' default
    (``chains.OPERATORS_DEFAULT_HOPS``), and multi-hop pointer jumping when
    ``ENGINES_MULTI_HOP_JUMP`` is on (all read now; run_choice)."""
    return run_choice(plan, update).defines


def push_argument(plan, choice: variants.RunChoice) -> np.uint32:
    """The push argument this engine's kernels take for a run of ``plan`` under ``choice``: the
    expansion's group-shift cap, the chains' limits and the pre-check's bit (chains.push_argument);
    never the far queue's (ops_push has none)."""
    return np.uint32(chains.push_argument(plan.push_expansion, *choice.chain_limits, precheck=choice.precheck))


def run_choice(plan, update: bool = True) -> variants.RunChoice:
    """The ``variants.RunChoice`` of a run of ``plan`` (the switches read now, once): prepare()
    takes it and hands it to the run. ``update`` decides only the captured start (an update's;
    the plan's batch size decides the appends)."""
    shared = variants.run_choice(plan, ENGINE)

    def make() -> variants.RunChoice:  # the two switches parsed only for values not seen yet
        captured_start = bool(update and captured_start_enabled())
        wait_read_ahead = wait_read_ahead_enabled()
        if not captured_start and not wait_read_ahead:
            return shared
        return dataclasses.replace(shared, captured_start=captured_start, wait_read_ahead=wait_read_ahead)

    key = (shared, bool(update), switches.raw(CAPTURED_START_ENV), switches.raw(WAIT_READ_AHEAD_ENV))
    return _choices.get(key, make)


#: This engine's choices, by (the shared choice, update or not, the raw values of the captured
#: start's and the read-ahead wait's switches): ``run_choice``, where a stream of updates asks the
#: same question each time (the shared choice is kept the same way, variants._choices). Only
#: valid choices are kept: a bad value raises every time.
_choices = Kept()


def load_module(device: int, defines=()) -> runtime.CompiledModule:
    """The compiled operators module of ``device`` in the variant ``defines`` (compiled at first
    use, then cached)."""
    return runtime.get_module(ENGINE, int(device), SOURCE_FILE, KERNELS, cooperative=False,
                              defines=defines)


# ---------------------------------------------------------------------------------------------
# Launching


def replay_steps(replay: int) -> int:
    """Launches in replay number ``replay`` (0-based) of the device loop."""
    return min(FIRST_STEPS << (int(replay) // STEPS_DOUBLE_EVERY), MAX_STEPS)


def loop_blocks(device: int) -> int:
    """The grid of the device loop's launches: LOOP_BLOCKS_PER_SM x SMs, capped at the grid cap."""
    override = switches.raw(LOOP_BLOCKS_ENV).strip()
    if override:
        try:
            blocks = int(override)
        except ValueError:
            raise errors.InvalidArgumentError(
                f"{LOOP_BLOCKS_ENV} must be a positive integer, got {override!r}") from None
        if blocks < 1:
            raise errors.InvalidArgumentError(f"{LOOP_BLOCKS_ENV} must be a positive integer, got {blocks}")
    else:
        blocks = LOOP_BLOCKS_PER_SM * max(runtime.device_info(device).multiprocessors, 1)
    return min(blocks, runtime.operators_grid_cap(device))


class _Launcher:
    """Launches the kernels of one run on the device's stream with algorithm.md §10.2's grid
    sizes."""

    def __init__(self, device: int, vertex_dtype, offset_dtype, stream, defines=()):
        self.module = load_module(device, defines)
        self.loop_blocks = loop_blocks(int(device))
        self.device = int(device)
        self.vertex = np.dtype(vertex_dtype)
        self.offset = np.dtype(offset_dtype)
        self.stream = stream
        self.grid_cap = runtime.operators_grid_cap(self.device)
        # the device loop's launches chained programmatically (programmatic.py), where enabled
        self.programmatic = programmatic.usable(runtime.device_info(self.device).compute_major)
        self._functions = self.module.functions(self.vertex, self.offset)

    def blocks_for(self, work: int) -> int:
        """min(ceil(work / 256), grid_cap): the grid of a launch over ``work`` items."""
        return min((max(int(work), 1) + runtime.BLOCK_SIZE - 1) // runtime.BLOCK_SIZE, self.grid_cap)

    def over(self, kernel: str, work: int, *args, stream=None) -> None:
        """A grid-stride launch sized for ``work`` items (blocks_for)."""
        self._functions[kernel]((self.blocks_for(work),), (runtime.BLOCK_SIZE,), args,
                                stream=stream or self.stream)

    def single(self, kernel: str, *args, stream=None) -> None:
        """A one-thread kernel (control init, threshold): one block of one thread."""
        self._functions[kernel]((1,), (1,), args, stream=stream or self.stream)

    def fixed(self, kernel: str, stream, *args) -> None:
        """A launch of the device loop on ``stream``: loop_blocks() blocks of 256 threads (every
        argument a buffer), programmatic where enabled."""
        if self.programmatic:
            programmatic.launch(self._functions[kernel], self.loop_blocks, runtime.BLOCK_SIZE,
                                args, stream)
        else:
            self._functions[kernel]((self.loop_blocks,), (runtime.BLOCK_SIZE,), args, stream=stream)

    def v(self, value: int):
        """A scalar of the vertex type (counts, ids), as the kernel's C type requires
        (algorithm.md §12.3)."""
        return self.vertex.type(int(value))


class _Run:
    """The state of one engine run: workspace, device graph, control block, sync count."""

    def __init__(self, graph, plan: Plan, device: int, ws, dgraph, stream, loop: str,
                 choice: variants.RunChoice | None = None):
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
        # The offset type of the device buffers, as the fused engine takes it: Graph.offset_dtype
        # would read the commit's edge count, a hidden wait for the device apply before sync #1
        # (and the host rule can differ from the buffers' type, which the commit chose). The
        # module and the chains' limits in the push argument come from one reading of the switches,
        # prepare()'s when it handed it over.
        choice = run_choice(plan) if choice is None else choice
        defines, chain_limits = choice.defines, choice.chain_limits
        self.launch = _Launcher(device, graph.vertex_dtype, dgraph.offset_dtype, stream, defines)
        self.control = ws.control("operators")
        self.ctl = self.control.device
        self.syncs = runtime.SyncCounter()
        packing = plan.packing
        self.bound = np.uint64(packing.bound)
        self.bits = np.uint32(packing.bits)
        self.no_parent = np.uint64(packing.no_parent)
        self.delta = np.uint64(plan.device_delta)
        # the widest group's shift (the host loop sizes its push launch with it) and the push
        # argument the kernels take, which also carries the chains' limits (chains.py)
        self.push_shift = np.uint32(push.max_shift(plan.push_expansion))
        self.push_argument = push_argument(plan, choice)
        # an update's invalidation, heads and loop start in the captured prologue; the device
        # loop's wait for its read-ahead replay at the end
        self.captured_start = choice.captured_start
        self.wait_read_ahead = choice.wait_read_ahead
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

    # -- near-far propagation (algorithm.md §5.9), shared by update() and compute() -------------
    def propagate(self, candidates: int | None) -> None:
        """The host loop after sync #1 up to the unpack: an update's pull over ``candidates``
        (None: compute(), whose frontier is the source), then near-far propagation, with a
        readback per step."""
        if candidates is not None:
            ws, launch = self.ws, self.launch
            # a candidate's in-edges spread over a group of lanes (kernels.cuh pull_candidates,
            # the push's width rule at the widest group): a launch with room for the groups
            threads = push.launch_threads(candidates, launch.grid_cap * runtime.BLOCK_SIZE, push.MAX_GROUP_SHIFT)
            launch.over("ops_pull", threads, launch.v(candidates), ws.candidates, self.g.in_ptr,
                        self.g.in_end, self.g.in_index, self.g.in_weight, ws.word, self.bound, self.bits,
                        self.no_parent, ws.stamp, self.generation(), ws.frontier, self.ctl)
        self.near_far(frontier_bound=1 if candidates is None else candidates)

    def near_far(self, frontier_bound: int) -> None:
        """First minimum, threshold and split from the frontier, then the push / epoch loop."""
        ws, launch, ctl = self.ws, self.launch, self.ctl
        launch.over("ops_min", frontier_bound, launch.v(0), np.int32(1), ws.frontier, ws.word,
                    self.bits, ctl)
        launch.single("ops_threshold", np.int32(0), self.delta, ctl)
        launch.over("ops_split_frontier", frontier_bound, ws.frontier, ws.word, self.bits,
                    self.no_parent, ws.stamp, self.generation(), ws.in_far, ws.near_a, ws.far_a, ctl)
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
                # each vertex's lanes (push.py): the kernel finds the same width in its grid
                threads = push.launch_threads(near_count, launch.grid_cap * runtime.BLOCK_SIZE,
                                              int(self.push_shift))
                launch.over("ops_push", threads, launch.v(near_count), near_lists[near_slot],
                            self.g.out_ptr, self.g.out_end, self.g.out_index, self.g.out_weight, ws.word,
                            launch.v(self.source), self.bound, self.bits, self.no_parent, ws.stamp,
                            self.generation(), ws.in_far, near_lists[1 - near_slot],
                            far_lists[far_slot], np.int32(near_slot), np.int32(far_slot),
                            self.push_argument, ws.near_log, np.int32(self.iterations - 1), ctl)
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
    def loop_finish(self, is_update: bool) -> int:
        """The device loop's first phase after the near-far loop: the unpack (an update's changed
        vertices, compute()'s all) or, distance-only, the parent recovery."""
        if not self.plan.packed:
            return PHASE_RECOVER_DISTANCES
        return PHASE_UNPACK_CHANGED if is_update else PHASE_UNPACK_ALL

    def loop_init_args(self, start: int, generation: int, distances, parents, jump_rounds: int = 0,
                       changed_count=None) -> tuple:
        """The arguments of ops_loop_init, the device loop's start: compute()'s at PHASE_FIRST_MIN,
        an update's at PHASE_PULL (``generation`` FROM_BLOCK in the captured start, where the
        kernel takes delta from the block too: the default follows the edge count and the weight
        sum, so most batches change it, and the argument is a constant 0 that keeps the capture)."""
        launch, is_update = self.launch, start == PHASE_PULL
        delta = np.uint64(0) if generation == FROM_BLOCK else self.delta
        return (np.int32(start), np.int32(self.loop_finish(is_update)), np.int32(1 if is_update else 0),
                np.int32(generation), delta, self.bound, self.bits, self.no_parent,
                launch.v(self.source), launch.v(self.n), self.push_argument, np.int32(jump_rounds),
                # compute() has no changed list: any buffer, never read (jump_rounds 0)
                changed_count if changed_count is not None else self.ws.flag, distances, parents,
                self.ctl)

    def start_loop(self, start: int, distances, parents, **lists) -> int:
        """Launch ops_loop_init from Python with the next generation (compute(), and an update
        without the captured start); returns that generation."""
        generation = self.ws.next_generation(self.stream)
        self.launch.single("ops_loop_init", *self.loop_init_args(start, generation, distances, parents,
                                                                 **lists))
        return generation

    def device_loop(self, generation: int, while_running=None):
        """The device loop from the start that its init kernel (enqueued before, with first
        generation ``generation``) chose, to its end, the unpack (or the distance-only recovery)
        included: replays of captured ops_loop launches, a readback after each; returns the
        record of the end (an update's input check in ``loop_input_error``, then ``invalidated``,
        ``affected``).

        With READ_AHEAD, the next replay and its readback are enqueued before the host waits for
        the previous readback, so the device is never idle while the host reads; the replay
        still queued when the loop is over finds it done (each of its launches returns at once)
        and stays queued, ahead of the stream's next work (WAIT_READ_AHEAD_ENV on: it is waited
        for too, and the stream is idle on return). Replay sizes: replay_steps().
        ``while_running()`` (host work that overlaps the replays: an update's commit record) runs
        before each wait until it returns True.
        """
        ws, launch = self.ws, self.launch
        self._generations_used = int(generation) + 1  # the start may take one (the pull's)
        self._next_slot = 0
        # The launches' arguments are fixed for the run: the graph key is built once.
        self._loop_args = self._loop_arguments()
        self._loop_base_key = ("loop", self.device, launch.module.defines, launch.vertex,
                               launch.offset, launch.loop_blocks,
                               launch.programmatic, tuple([a.data.ptr for a in self._loop_args]))
        in_flight = 2 if READ_AHEAD else 1
        queued: list[int] = []  # readback slots in flight, oldest first
        replays = 0
        while True:
            while len(queued) < in_flight:
                queued.append(self._replay(replay_steps(replays)))
                replays += 1
            if while_running is not None and while_running():
                while_running = None  # done: not asked again
            record = runtime.wait_readback(self.control, queued.pop(0), self.syncs)
            if int(record["loop_fault"]) != 0:
                raise errors.InternalError(
                    "the operators engine's device loop read a list count outside [0, n = "
                    f"{self.n}] (near {record['near'].tolist()}, far {record['far'].tolist()})"
                )
            if int(record["phase"]) == PHASE_DONE:
                break
        if self.wait_read_ahead:  # the read-ahead replay: launches that return at once
            for slot in queued:
                runtime.wait_readback(self.control, slot, self.syncs)
        self.iterations = int(record["iterations"])
        self.epochs = int(record["epochs"])
        self.pushes = int(record["pushes"])
        ws.advance_generation(int(record["generation"]))
        return record

    def _replay(self, steps: int) -> int:
        """Enqueue one replay of ``steps`` launches and a readback after it; its readback slot."""
        if self._generations_used + steps > workspace_module.GENERATION_LIMIT:
            self._rebase_generations()
        _cached_graph(self._loop_base_key + (steps,), lambda stream: self._enqueue_loop(stream, steps),
                      self.device).launch(self.stream)
        self._generations_used += steps
        slot = self._next_slot
        self._next_slot = 1 - slot
        runtime.readback_async(self.control, self.stream, slot)
        return slot

    def _rebase_generations(self) -> None:
        """Zero the stamps and restart the device's generations at 1 (a run passing the limit;
        stream-ordered after the replays already queued; ops_loop_rebase says why 1)."""
        self.ws.reset_stamps(self.stream, last_used=1)
        self.launch.single("ops_loop_rebase", self.ctl)
        self._generations_used = 1

    def _loop_arguments(self):
        """The arguments of ops_loop: buffer addresses only (the scalars are in the block)."""
        ws, g = self.ws, self.g
        return (ws.near_a, ws.near_b, ws.far_a, ws.far_b, g.out_ptr, g.out_end, g.out_index, g.out_weight,
                ws.candidates, g.in_ptr, g.in_end, g.in_index, g.in_weight, ws.frontier, ws.word, ws.stamp,
                ws.in_far, ws.ancestor, ws.near_log, self.ctl)

    def _enqueue_loop(self, stream, steps: int) -> None:
        for _ in range(steps):
            self.launch.fixed("ops_loop", stream, *self._loop_args)

    # -- an update's prologue: reset, pack, change lists, roots, jumps (and the captured start) -
    def prologue(self, distances, parents, changes, generations: tuple[int, int] | None = None):
        """The update's launches up to the invalidation, whose arguments do not change from batch
        to batch of one buffer layout, as one captured graph (issue 27: each launch from Python
        costs several µs of a small update's host time): the control block's reset, the pack, the
        change lists (device_apply's sized staging, which reads the batch's sizes on the device; an
        empty batch's count is zeroed here instead), the roots (a grid for the change capacity:
        the kernel reads the count on the device) and every pointer-jumping round.

        With ``generations`` (the captured start: the invalidation's and the device loop's first),
        the block is uploaded from its pinned initial record instead, which carries them, the
        head count and delta, and the invalidation, the heads (a grid for the change capacity) and,
        in the device loop mode, the loop's start follow in the same graph, reading those values
        from the block (FROM_BLOCK). Returns the change views and the rounds (0 without changes)."""
        ws, launch, n, control = self.ws, self.launch, self.n, self.control
        views, staging = changes.captured_staging(ws)
        changed_from, changed_to, heads, changed_count = views
        rounds = pointer_jumping_rounds(n) if changes.upper > 0 else 0
        pack_args = (launch.v(n), distances, parents, ws.word, ws.ancestor, self.bound, self.bits,
                     self.no_parent, self.ctl)
        roots_args = (changed_count, changed_from, changed_to, parents, ws.flag)
        jump_args = (changed_count, ws.ancestor, ws.flag, self.ctl)
        change_work = ws.change_capacity
        captured_start = generations is not None
        invalidate_args = self.invalidate_args(FROM_BLOCK) if captured_start else ()
        heads_args = self.heads_args(FROM_BLOCK, heads, FROM_BLOCK) if captured_start else ()
        loop_args = (self.loop_init_args(PHASE_PULL, FROM_BLOCK, distances, parents, jump_rounds=rounds,
                                         changed_count=changed_count)
                     if captured_start and self.loop == "device" else ())

        def enqueue(stream):
            if captured_start:
                control.enqueue_upload(stream)
            else:
                launch.single("ops_control_init", self.ctl, stream=stream)
            launch.over("ops_pack", n, *pack_args, stream=stream)
            if staging is not None:  # over PendingCommit.sized_staging's grid
                staging[0](*staging[2], staging[1], stream=stream)
            if rounds:
                launch.over("ops_roots", change_work, *roots_args, stream=stream)
                for r in range(rounds):
                    launch.over("ops_pointer_jump", n, launch.v(n), np.int32(r), *jump_args, stream=stream)
            if captured_start:
                launch.over("ops_invalidate", n, *invalidate_args, stream=stream)
                launch.over("ops_heads", change_work, *heads_args, stream=stream)
                if loop_args:
                    launch.single("ops_loop_init", *loop_args, stream=stream)

        if captured_start:
            # the copy reads the pinned record when the graph runs: the previous update's copy
            # ran before any of its readbacks that the host waited for, so nothing reads it now
            control.stage_initial(update_generation=generations[0],
                                  update_loop_generation=generations[1], update_heads=changes.num_heads,
                                  update_delta=self.delta)
        # tests/gpu/test_host_path.py reads the rounds (entry 8) and the two capture keys (last)
        key = ("prologue", self.device, self.loop, captured_start, launch.module.defines,
               launch.vertex, launch.offset, n, rounds, launch.blocks_for(n), launch.blocks_for(change_work),
               control.host_init_ptr,
               runtime.capture_key("operators prologue",  # each kind of prologue has its own length
                                   pack_args + roots_args + jump_args + invalidate_args + heads_args
                                   + loop_args),
               None if staging is None else (id(staging[0]), staging[2],
                                             runtime.capture_key(id(staging[0]), staging[1])))
        _cached_graph(key, enqueue, self.device).launch(self.stream)
        return changed_from, changed_to, heads, changed_count, rounds

    def invalidate_args(self, generation: int) -> tuple:
        """The arguments of ops_invalidate (``generation`` FROM_BLOCK in the captured start)."""
        ws = self.ws
        return (self.launch.v(self.n), ws.flag, ws.word, ws.stamp, np.int32(generation), ws.candidates,
                self.ctl)

    def heads_args(self, num_heads: int, heads, generation: int) -> tuple:
        """The arguments of ops_heads (``num_heads`` and ``generation`` FROM_BLOCK in the captured
        start)."""
        ws, launch = self.ws, self.launch
        return (launch.v(num_heads), heads, launch.v(self.source), ws.stamp, np.int32(generation),
                ws.candidates, self.ctl)

    def recover_parents(self, distances, parents, count_affected: bool) -> None:
        """Distance-only mode (algorithm.md §4.4): distances from the words, then lowest-id tight
        parents."""
        ws, launch, n = self.ws, self.launch, self.n
        launch.over("ops_recover_init", n, launch.v(n), ws.word, launch.v(self.source), distances,
                    parents, np.int32(1 if count_affected else 0), ws.ancestor, ws.candidates)
        launch.over("ops_recover_parents", n, launch.v(n), self.g.out_ptr, self.g.out_end, self.g.out_index,
                    self.g.out_weight, launch.v(self.source), ws.word, parents)
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


#: Captured graphs by what they fixed (device, types, sizes, grid, every buffer address):
#: insertion order is use order.
_CAPTURED: dict = {}
_captured_lock = threading.Lock()


def _cached_graph(key, enqueue, device: int):
    """The CUDA graph of ``enqueue(stream)`` for ``key``: captured once (runtime.capture), then
    reused while the buffers keep their addresses; the least recently used beyond MAX_CAPTURED
    is dropped."""
    with _captured_lock:
        graph = _CAPTURED.pop(key, None)
    if graph is None:
        graph = runtime.capture(device, enqueue)
    with _captured_lock:
        while len(_CAPTURED) >= MAX_CAPTURED:
            _CAPTURED.pop(next(iter(_CAPTURED)))
        _CAPTURED[key] = graph  # most recently used last
    return graph


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


def update(graph, distances, parents, plan: Plan, changes, device: int, loop: str,
           choice: variants.RunChoice | None = None) -> EngineReport:
    """Update the tree in (distances, parents) (CuPy, already grown) to ``graph``'s state.

    Post-commit input errors (algorithm.md §8.3) re-zero the workspace and raise
    ``invalid_input_error()`` or ``parent_cycle_error()``; nothing is launched after the
    synchronization that finds them.
    """
    cupy = runtime.cupy_module()
    ws, dgraph, stream = _begin(graph, plan, device, max(changes.upper, changes.num_heads))
    # The stream is also made current, so that nothing CuPy might enqueue lands elsewhere.
    with ws.lock, cupy.cuda.Device(int(device)), stream, \
            runtime.cuda_errors("running the operators engine"):
        try:
            return _update(_Run(graph, plan, device, ws, dgraph, stream, loop, choice), distances, parents,
                           changes)
        except BaseException:
            # Whatever failed (a post-commit input error, CUDA, an interrupt), the scratch may hold
            # flags, far marks or stamps of this run: re-zero it for the next one
            # (algorithm.md §5.1, §8.3).
            ws.reset_after_failure(stream)
            raise


def _update(run: _Run, distances, parents, changes) -> EngineReport:
    """``changes`` is a ``device_apply.DeviceChangeLists``: built on the device, its count read
    there by the kernels; the host knows an upper bound (``upper``) before sync #1."""
    ws, launch, ctl, n = run.ws, run.launch, run.ctl, run.n
    num_heads = changes.num_heads
    if run.captured_start:
        first = ws.next_generations(run.stream, 2)  # the invalidation's, the device loop's first
        generations = (first, first + 1)
        changed_from, changed_to, heads, changed_count, max_rounds = run.prologue(
            distances, parents, changes, generations)
        loop_generation = generations[1]
    else:
        changed_from, changed_to, heads, changed_count, max_rounds = run.prologue(distances, parents, changes)
        g_inv = run.generation()
        launch.over("ops_invalidate", n, *run.invalidate_args(g_inv))
        if num_heads > 0:
            launch.over("ops_heads", num_heads, *run.heads_args(num_heads, heads, g_inv))
        if run.loop == "device":
            loop_generation = run.start_loop(PHASE_PULL, distances, parents, jump_rounds=max_rounds,
                                             changed_count=changed_count)

    if run.loop == "device":
        # No sync #1: the loop takes the input checks and reads the candidate count on the
        # device, and ends with the unpack; its last readback says what sync #1 would have.
        record = run.device_loop(loop_generation, while_running=changes.resolve_ready)
        error = int(record["loop_input_error"])
        if error == INPUT_INVALID:
            raise errors.invalid_input_error()
        if error == INPUT_CYCLE:
            raise errors.parent_cycle_error()
        return run.report(int(record["invalidated"]), int(record["affected"]), budget_base=3)

    changes.resolve_ready()  # the commit's record, while the launches run
    record = run.sync()  # #1: the input checks, invalidated and the candidate count
    if int(record["overflow"]) != 0:
        raise errors.invalid_input_error()
    if max_rounds > 0 and changes.num_changed() > 0 and int(record["active"][max_rounds - 1]) != 0:
        raise errors.parent_cycle_error()
    invalidated = int(record["invalidated"])
    candidates = run._check_length("candidates list", record["candidates"])

    if candidates > 0:
        run.propagate(candidates)

    if run.plan.packed:
        launch.over("ops_unpack_update", n, launch.v(n), ws.word, run.bits, run.no_parent,
                    distances, parents, ctl)
    else:
        run.recover_parents(distances, parents, count_affected=True)
    record = run.sync()  # the last: affected, and the result complete on return
    return run.report(invalidated, int(record["affected"]), budget_base=3)


# ---------------------------------------------------------------------------------------------
# compute()


def compute(graph, plan: Plan, device: int, loop: str, choice: variants.RunChoice | None = None):
    """The canonical tree from ``plan.source`` on ``graph``: (distances, parents, report)
    (algorithm.md §6)."""
    cupy = runtime.cupy_module()
    ws, dgraph, stream = _begin(graph, plan, device, 0)
    n = int(plan.num_vertices)
    with ws.lock, cupy.cuda.Device(int(device)), stream, \
            runtime.cuda_errors("running the operators engine"):
        distances = cupy.empty(n, dtype=cupy.int64)
        parents = cupy.empty(n, dtype=graph.vertex_dtype)
        run = _Run(graph, plan, device, ws, dgraph, stream, loop, choice)
        try:
            launch = run.launch
            launch.over("ops_compute_init", n, launch.v(n), launch.v(run.source), ws.word, run.bits,
                        run.no_parent, ws.frontier, run.ctl)
            if loop == "device":
                run.device_loop(run.start_loop(PHASE_FIRST_MIN, distances, parents))
                return distances, parents, run.report(0, 0, budget_base=2)
            run.propagate(None)
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


__all__ = ["ENGINE", "KERNELS", "LOOP_MODES", "SOURCE_FILE", "VARIANTS", "compute", "load_module",
           "push_argument", "run_choice", "run_defines", "update"]
