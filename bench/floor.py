#!/usr/bin/env python3
"""The fused engine's latency floor (issue 34): grid syncs x (one grid-wide barrier + one dependent
chain of global-memory loads), both constants measured on this GPU by bench/floor.cu.

A fused run is a sequence of phases, each ended by a grid-wide barrier; ``Stats.grid_syncs``
counts them from the run's own control block (engines/sssp/cuda/fused.py ``grid_syncs``: the fixed
phases, one per push iteration, two per epoch). A phase cannot end before its barrier, nor before
one dependent chain of loads has run after the previous barrier (thread 0 reads a count of the
control block, the block meets, a thread reads a list entry, a row offset, a word and ends in an
atomic minimum): no schedule of the same phases takes less than

    floor = grid_syncs x (barrier_us + chain_us)

Phases with much work (millions of pushes) take more; measured / floor says how far a run is from
the floor, and only fewer phases lower it.

The constants come from one cooperative kernel (bench/floor.cu) loaded through the engines' own
runtime (engines/sssp/cuda/runtime.py: header inlined, cooperative launch, the engines' stream),
launched over a given grid (``engine_grid``: the one the fused engine uses for a graph) with
``PHASES_LOW`` and then ``PHASES_HIGH`` phases, ``REPEATS`` times each, interleaved, timed with
CUDA events; the difference of the medians over the difference of the phase counts is the cost of
one phase, the launch dropping out. Three kinds of phase: barrier alone, chain alone
(``CHAIN_DEPTH`` dependent L2 loads and an atomic minimum), both (``phase_us``: a check that the
two add up; the floor uses the sum of the two). The measurement refuses to run with a profiler
attached (``profiler_attached``): a profiler's hooks slow launches, barriers and loads.

    python bench/floor.py                 # the constants at the whole-device fused grid
    python bench/floor.py --blocks 132    # at another grid
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "floor.py")

import numpy as np  # noqa: E402

# the model (pure arithmetic) is the protocol's, so that the campaign report applies the same one;
# this module measures its constants
from protocol.floor import (CHAIN_DEPTH, FloorConstants, floor_ms, over_floor,  # noqa: E402,F401
                            stats_floor_ms)

#: The micro-benchmark's source, beside this file (make cuda-check compiles it too).
SOURCE = Path(__file__).resolve().with_name("floor.cu")
KERNEL = "floor_phases"
MODULE = "floor"  # its name in the engines' module cache (runtime.get_module)
#: Entries of the chain's permutation (int32: 4 MiB, inside an H200's L2, as the engine's hot
#: control block, lists and words of the phases that only wait on latency are).
CHASE_ENTRIES = 1 << 20
CHASE_SEED = 34
#: The two phase counts whose difference gives the cost of one phase, and the runs of each.
PHASES_LOW, PHASES_HIGH = 128, 1152
REPEATS = 7
#: Environment variables that the NVIDIA tools (Nsight Systems, Nsight Compute, the compute
#: sanitizer) set in the processes they attach to; and LD_PRELOAD entries of theirs.
PROFILER_ENV = ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "NSYS_PROFILING_SESSION_ID")
PROFILER_PRELOADS = ("ToolsInjection", "sanitizer", "nsys", "cupti")


class FloorError(RuntimeError):
    """The constants cannot be measured here (a profiler is attached, or nonsense came out)."""


def per_phase_us(low_ms: float, high_ms: float, phases_low: int = PHASES_LOW,
                 phases_high: int = PHASES_HIGH) -> float:
    """The cost of one phase from two timings of the same kernel with different phase counts:
    the launch, the same in both, drops out of the difference."""
    if phases_high <= phases_low:
        raise ValueError("phases_high must exceed phases_low")
    return (high_ms - low_ms) * 1e3 / (phases_high - phases_low)


def chase_permutation(entries: int = CHASE_ENTRIES, seed: int = CHASE_SEED) -> np.ndarray:
    """``next`` of one random cycle through every entry (next[i] is i's successor): a chain
    started anywhere visits ``entries`` distinct entries before it repeats."""
    order = np.random.default_rng(seed).permutation(entries)
    nxt = np.empty(entries, dtype=np.int32)
    nxt[order] = np.roll(order, -1)
    return nxt


def profiler_attached(environ=None) -> str | None:
    """Why a profiler looks attached to this process (its environment), or None. CUPTI used from
    Python in this process (the campaign's --verify-syncs) is not seen here: measure elsewhere."""
    environ = os.environ if environ is None else environ
    for name in PROFILER_ENV:
        if environ.get(name):
            return f"{name} is set (a profiler or sanitizer is attached)"
    preload = environ.get("LD_PRELOAD", "")
    for part in PROFILER_PRELOADS:
        if part.lower() in preload.lower():
            return f"LD_PRELOAD names {part!r} ({preload})"
    return None


# -- the measurement (a CUDA GPU) -------------------------------------------------------------------
def load_module(device: int):
    """The micro-benchmark's module on ``device``, compiled as the engines' are."""
    from engines.sssp.cuda import runtime

    return runtime.get_module(MODULE, device, str(SOURCE), (KERNEL,), cooperative=True)


def co_resident_blocks(device: int) -> int:
    """The largest cooperative grid of the micro-benchmark's kernel on ``device``."""
    from engines.sssp.cuda import runtime

    vertex, offset = runtime.TYPE_PAIRS[0]
    return runtime.cooperative_grid(load_module(device), KERNEL, vertex, offset)


def engine_grid(graph, device: int | None = None, kernel: str = "fused_update") -> int:
    """The grid the fused engine launches ``kernel`` with on ``graph`` (fused.grid_blocks: sized
    to the vertices, the environment's overrides included)."""
    from engines.sssp.cuda import fused, runtime

    device = runtime.current_device() if device is None else int(device)
    return fused.grid_blocks(fused.load_module(device), kernel, graph.vertex_dtype,
                             graph.offset_dtype, graph.num_vertices)


def measure(device: int | None = None, blocks: int | None = None, *, repeats: int = REPEATS,
            chain_depth: int = CHAIN_DEPTH) -> FloorConstants:
    """The constants on ``device`` over ``blocks`` blocks (None: the fused engine's whole-device
    grid, fused.max_blocks). FloorError with a profiler attached, or when a cost comes out <= 0."""
    reason = profiler_attached()
    if reason:
        raise FloorError(f"the floor constants are not measured with a profiler attached: {reason}")
    from engines.sssp.cuda import fused, runtime

    cupy = runtime.cupy_module()
    device = runtime.current_device() if device is None else int(device)
    if blocks is None:
        blocks = fused.max_blocks(device)
    limit = co_resident_blocks(device)
    if not 1 <= blocks <= limit:
        raise FloorError(f"{blocks} blocks: the micro-benchmark's cooperative grid holds 1 to {limit}")
    vertex, offset = runtime.TYPE_PAIRS[0]
    fn = load_module(device).function(KERNEL, vertex, offset)
    s = runtime.stream(device)
    with runtime.cuda_errors("measuring the floor constants"), cupy.cuda.Device(device), s:
        nxt = cupy.asarray(chase_permutation())
        words = cupy.full(CHASE_ENTRIES, (1 << 63) - 1, dtype=cupy.uint64)
        sink = cupy.zeros(blocks, dtype=cupy.int32)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()

        def run(phases: int, sync: bool, depth: int) -> float:
            start.record(s)
            fn((blocks,), (runtime.BLOCK_SIZE,),
               (np.int32(phases), np.int32(1 if sync else 0), np.int32(depth), nxt, np.int32(0),
                words, sink))
            stop.record(s)
            stop.synchronize()
            return cupy.cuda.get_elapsed_time(start, stop)

        def cost(sync: bool, depth: int) -> float:
            run(PHASES_LOW, sync, depth)  # warm: module load, L2
            low, high = [], []
            for _ in range(repeats):
                low.append(run(PHASES_LOW, sync, depth))
                high.append(run(PHASES_HIGH, sync, depth))
            return per_phase_us(statistics.median(low), statistics.median(high))

        barrier = cost(True, 0)
        chain = cost(False, chain_depth)
        both = cost(True, chain_depth)
    if barrier <= 0 or chain <= 0:
        raise FloorError(f"nonsense constants: barrier {barrier:.3f} µs, chain {chain:.3f} µs")
    return FloorConstants(barrier_us=barrier, chain_us=chain, blocks=int(blocks),
                          device_name=runtime.device_info(device).name, phase_us=both,
                          chain_depth=chain_depth)


def main(argv=None) -> int:
    from engines.exitcodes import ExitCode
    from engines.sssp.cuda import runtime

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=None,
                        help="the cooperative grid (default: the fused engine's whole-device grid)")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--json", action="store_true", help="print the constants as JSON")
    args = parser.parse_args(argv)
    if not runtime.is_available():
        print("floor.py needs CuPy and a CUDA GPU", file=sys.stderr)
        return ExitCode.ENVIRONMENT
    try:
        constants = measure(blocks=args.blocks, repeats=args.repeats)
    except FloorError as exc:
        print(f"floor.py: {exc}", file=sys.stderr)
        return ExitCode.ENVIRONMENT
    print(json.dumps(constants.to_dict()) if args.json else constants.describe())
    return ExitCode.OK


if __name__ == "__main__":
    interrupt.run(main)
