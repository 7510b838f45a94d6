#!/usr/bin/env python3
"""Where the time of one small ``update()`` goes: host stages, GPU work, and the host's share.

A diagnostic for issue 27 (small updates), not a benchmark: it replays a stream of small batches
(bench/stream.py's generator) on one CUDA engine three times:

1. **plain**: the whole ``sssp.update()`` per batch (what bench/stream.py reports);
2. **stages**: the same with ``time.perf_counter_ns`` around each stage of the dispatch (batch
   validation, reservation, the device apply's enqueue, the engine's enqueue, the wait for the
   device), so the host's own work per stage is visible (the wrappers cost a few µs: read the
   plain median for the call's time);
3. **gpu**: the same with a spin kernel queued ahead of each update, so that the device starts
   the update's work only once the host has queued all of it up to the engine's wait: the CUDA
   events around the apply and the engine then time the GPU work alone, without host gaps.

Then a cProfile of the plain replay (top functions by own time). Prints a table per stage.

    python bench/update_anatomy.py --graph luxembourg_osm --batch-size 100 --batches 300
    python bench/update_anatomy.py --random-graph 4039,176000 --batch-size 1760
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path
from typing import NamedTuple

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "update_anatomy.py")

import numpy as np  # noqa: E402

from engines.exitcodes import ExitCode  # noqa: E402
from protocol.errors import EnvironmentProblem, UsageError  # noqa: E402
from engines.sssp.options import UPDATE_LAUNCHES, Options  # noqa: E402

SPIN_SOURCE = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


class Stages:
    """Host time per stage, accumulated over the timed updates (ns), and the marks of the call's
    critical path: when (after the call began) the first function of a marked name was entered."""

    def __init__(self):
        self.total = {}
        self.active = False
        self.marks = {}  # label -> (ns after the call began summed, updates that took the mark)
        self.call_start = None  # perf_counter_ns of the update in progress
        self._seen = set()  # the marks already taken in the update in progress

    def begin(self, start_ns: int) -> None:
        self.call_start = start_ns
        self._seen = set()

    def mark(self, owner, name: str, label: str, at_exit: bool = False):
        """Record, once per update, when ``owner.name`` is first entered (or left, ``at_exit``)."""
        original = getattr(owner, name)

        def take() -> None:
            if self.active and label not in self._seen:
                self._seen.add(label)
                total, count = self.marks.get(label, (0, 0))
                self.marks[label] = (total + time.perf_counter_ns() - self.call_start, count + 1)

        def marked(*args, **kwargs):
            if not at_exit:
                take()
            try:
                return original(*args, **kwargs)
            finally:
                if at_exit:
                    take()

        setattr(owner, name, marked)

    def wrap(self, owner, name: str, label: str):
        original = getattr(owner, name)

        def wrapped(*args, **kwargs):
            if not self.active:
                return original(*args, **kwargs)
            start = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                self.total[label] = self.total.get(label, 0) + time.perf_counter_ns() - start

        setattr(owner, name, wrapped)


MICRO_SOURCE = r"""
extern "C" __global__ void many(const int* a0, const int* a1, const int* a2, const int* a3, const int* a4,
    const int* a5, const int* a6, const int* a7, const int* a8, const int* a9, long long s0, int s1, int s2,
    int s3, int s4, int s5, int s6, int s7, int s8, int* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0 && s1 < 0) out[0] = a0[0] + a1[0];
}
extern "C" __global__ void few(int* out, int s) {
    if (threadIdx.x == 0 && blockIdx.x == 0 && s < 0) out[0] = 1;
}
"""


def micro() -> int:
    """Host cost of one RawKernel launch (few and many arguments, NumPy scalars), and whether
    CuPy's sort and cumsum wait for the device (a spin kernel queued ahead: a call that returns
    only after it waited)."""
    import cupy

    spin = cupy.RawKernel(SPIN_SOURCE, "spin")
    mod = cupy.RawModule(code=MICRO_SOURCE)
    many, few = mod.get_function("many"), mod.get_function("few")
    s = cupy.cuda.Stream(non_blocking=False)
    a = cupy.zeros(16, dtype=cupy.int32)
    i32, i64 = np.int32, np.int64
    args_many = (a, a, a, a, a, a, a, a, a, a, i64(5), i32(1), i32(2), i32(3), i32(4), i32(5), i32(6),
                 i32(7), i32(8), a)
    clock_khz = cupy.cuda.runtime.getDeviceProperties(0)["clockRate"]
    with s:
        for label, fn, fargs in (("few (2 args)", few, (a, i32(1))), ("many (20 args)", many, args_many)):
            for _ in range(200):
                fn((1,), (32,), fargs, stream=s)
            s.synchronize()
            t0 = time.perf_counter()
            for _ in range(2000):
                fn((1,), (32,), fargs, stream=s)
            t = (time.perf_counter() - t0) / 2000 * 1e6
            s.synchronize()
            print(f"RawKernel launch {label}: {t:.2f} µs host")
        for size in (256, 4096, 65536):
            keys = cupy.arange(size, dtype=cupy.uint64)[::-1].copy()
            out = cupy.empty(size, dtype=cupy.int64)
            vals = cupy.ones(size, dtype=cupy.int64)
            for label, call in (("sort", lambda: keys.sort()), ("cumsum", lambda: cupy.cumsum(vals, out=out))):
                call()
                s.synchronize()
                spin((1,), (1,), (np.int64(clock_khz * 5),), stream=s)  # ~5 ms
                t0 = time.perf_counter()
                call()
                t = (time.perf_counter() - t0) * 1e3
                s.synchronize()
                t1 = time.perf_counter()
                for _ in range(100):
                    call()
                s.synchronize()
                per = (time.perf_counter() - t1) / 100 * 1e6
                print(f"{label} of {size}: {t:.3f} ms host behind a 5 ms spin "
                      f"({'WAITS for the device' if t > 2 else 'no wait'}); {per:.1f} µs per call in a loop")
    captured_chain_costs(few, a)
    return ExitCode.OK


#: Node counts of the captured chains ``captured_chain_costs`` times (the captured device apply of
#: a small commit is 19 kernel nodes at 4ad55b5, 15 with the touched scan), and their grids.
CHAIN_NODES = (1, 5, 10, 20)
CHAIN_GRIDS = (1, 132, 1056)


def captured_chain_costs(kernel, out, replays: int = 500) -> None:
    """GPU time of a captured CUDA graph of N back-to-back launches of a kernel that does nothing,
    per replay and per node (CUDA events around ``replays`` replays): the floor that a chain of
    small dependent launches, such as the captured device apply, pays whatever its kernels do
    (issue 27: whether one cooperative launch with grid barriers would be cheaper)."""
    import cupy

    from engines.sssp.cuda import runtime

    device = cupy.cuda.runtime.getDevice()
    s = cupy.cuda.Stream(non_blocking=True)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for blocks in CHAIN_GRIDS:
        for nodes in CHAIN_NODES:
            def enqueue(stream, nodes=nodes, blocks=blocks):
                for _ in range(nodes):
                    kernel((blocks,), (256,), (out, np.int32(1)), stream=stream)

            graph = runtime.capture(device, enqueue)
            for _ in range(20):
                graph.launch(s)
            start.record(s)
            for _ in range(replays):
                graph.launch(s)
            stop.record(s)
            stop.synchronize()
            us = cupy.cuda.get_elapsed_time(start, stop) * 1e3 / replays
            print(f"captured chain of {nodes:2d} empty launches x {blocks:4d} blocks: {us:7.2f} µs GPU per replay, "
                  f"{us / nodes:5.2f} µs per node")


def launch_ab(batches, fresh, *, warmup: int, ab_env: AbEnv | None = None) -> int:
    """Both launches of ``Options.update_launch``, each on its own copy of the graph, timed batch
    by batch in alternating order (the same machine conditions for both); the trees must agree.
    With ``ab_env`` (``--ab-env``, as :func:`parse_ab_env` read it), one launch and the two values
    of its variable instead. The first ``warmup`` batches are not timed."""
    from engines import sssp

    import os

    # the variable as it was before the A/B, put back after it (what runs next in this process,
    # e.g. a caller's own measurement, must not inherit side B's value)
    before = os.environ.get(ab_env.name) if ab_env is not None else None
    try:
        if ab_env is not None:  # one launch ("graph"), two values of the variable
            a, b = ab_env.a, ab_env.b
            setting = {a: (ab_env.name, a), b: (ab_env.name, b)}
            sides = {}
            for side in (a, b):  # each side's graph made under its own value (a switch read when the
                os.environ[ab_env.name] = side  # graph goes to the device: ENGINES_APPLY_LAYOUT)
                sides[side] = fresh("graph")
        else:
            a, b = "python", "graph"
            setting = {}
            sides = {launch: fresh(launch) for launch in (a, b)}
        times = {side: [] for side in sides}
        for i, batch in enumerate(batches):
            for side in ((a, b) if i % 2 == 0 else (b, a)):
                if side in setting:
                    os.environ[setting[side][0]] = setting[side][1]
                graph, result = sides[side]
                start = time.perf_counter()
                sssp.update(graph, batch, result)
                if i >= warmup:
                    times[side].append((time.perf_counter() - start) * 1e3)
    finally:
        if ab_env is not None:
            if before is None:
                os.environ.pop(ab_env.name, None)
            else:
                os.environ[ab_env.name] = before
    trees = {side: [x.tobytes() for x in result.to_numpy()] for side, (_, result) in sides.items()}
    for side, values in times.items():
        print(f"{side:6s} whole update: median {np.median(values):.3f} ms  p99 {np.percentile(values, 99):.3f}")
    ratio = np.asarray(times[b]) / np.asarray(times[a])
    print(f"{b} / {a} per batch: median {np.median(ratio):.3f}; trees equal: {trees[a] == trees[b]}")
    return ExitCode.OK if trees[a] == trees[b] else ExitCode.CORRECTNESS


class AbEnv(NamedTuple):
    """``--ab-env NAME=A,B`` as read: the variable, its two values (sides A and B, in that order)
    and the text as given (``str()`` gives it back, as a command line or a record names it)."""

    name: str
    a: str
    b: str
    text: str

    def __str__(self) -> str:
        return self.text


def parse_ab_env(text: str) -> AbEnv:
    """argparse's type of ``--ab-env NAME=A,B``: two distinct values of one variable, read once
    here (launch_ab takes the result); a malformed text is a usage error naming the option."""
    name, _, values = text.partition("=")
    parts = values.split(",")
    if not name or len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=A,B with two different values "
                                         "(e.g. ENGINES_FUSED_GRID=work,device)")
    return AbEnv(name, parts[0], parts[1], text)


def check_arguments(args) -> None:
    """The refusals that need no GPU, before anything is loaded (UsageError, one line)."""
    from bench import stream as st
    from bench.gates import check_gate_names
    from engines.io.outputs import output_problem

    if not args.micro:
        if (args.graph is None) == (args.random_graph is None):
            raise UsageError("name one graph: --graph NAME or --random-graph N,M")
        if args.graph is not None:
            check_gate_names([args.graph])
        st.check_sizes(args.batches, args.batch_size, 0)  # the stream's own rules for --batches, --batch-size
        if args.profile_top < 1:
            raise UsageError(f"--profile-top {args.profile_top}: at least 1")
        problem = args.profile_out and output_problem(args.profile_out, folder=False)
        if problem:
            raise UsageError(f"--profile-out: {problem}")


def build_parser() -> argparse.ArgumentParser:
    from bench import options
    from bench.engine_table import parse_random_graph

    ap = argparse.ArgumentParser(prog="update_anatomy.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", default=None, help="a gate to stream batches on")
    ap.add_argument("--random-graph", default=None, metavar="N,M", type=parse_random_graph,
                    help="a symmetric random graph of N vertices and M arcs instead")
    ap.add_argument("--engine", default="fused", choices=("fused", "operators"))
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=100)
    options.add_warmup_option(ap, default=20, runs="batches")
    options.add_input_options(ap)
    ap.add_argument("--profile-top", type=int, default=35)
    ap.add_argument("--profile-out", default=None, metavar="FILE",
                    help="also write the cProfile statistics to FILE (pstats format)")
    ap.add_argument("--only-plain", action="store_true")
    ap.add_argument("--ab", action="store_true",
                    help="the two update launches interleaved batch by batch (each on its own graph)")
    ap.add_argument("--ab-env", default=None, metavar="NAME=A,B", type=parse_ab_env,
                    help="instead of the launches, A/B two values of an environment variable the engines read "
                         "at each update (e.g. ENGINES_FUSED_GRID=work,device), interleaved the same way")
    # the library's default (Options.update_launch), so that --ab-env A/Bs measure what users run
    ap.add_argument("--update-launch", default=Options.update_launch, choices=UPDATE_LAUNCHES,
                    help="how the device apply launches (default: the library's, %(default)s)")
    ap.add_argument("--micro", action="store_true", help="launch and library-call costs only")
    return ap


def main(argv=None) -> int:
    from protocol.errors import run_command

    return run_command(lambda: _main(argv), prefix="update_anatomy.py: ")


def _main(argv) -> int:
    from bench.has_gpu import gpu_problem

    args = build_parser().parse_args(argv)
    check_arguments(args)
    problem = gpu_problem()
    if problem:
        raise EnvironmentProblem(f"needs a CUDA GPU (it times the CUDA engines' update()): {problem}")
    if args.micro:
        return micro()

    import cupy

    from bench import stream as st
    from engines import Graph, sssp
    from engines.sssp import cuda as sssp_cuda
    from engines.sssp.cuda import runtime
    from protocol.region import RegionProbe

    if args.random_graph:
        from bench.engine_table import random_graph  # the one random-graph generator of the tables

        graph = random_graph(*args.random_graph)
        row_ptr, col_ind = np.asarray(graph.row_ptr), np.asarray(graph.col_ind)
        weights = np.asarray(graph.weights).reshape(graph.num_weights, -1).T.copy()
        source, tree = 0, None
        name = "random {},{}".format(*args.random_graph)
    else:
        data = st.load_input(graph=args.graph, data_dir=args.data_dir, cache_dir=args.cache_dir, progress=False)
        row_ptr, col_ind, weights, source, tree = data.row_ptr, data.col_ind, data.weights, data.source, data.tree
        name = data.name
    n = row_ptr.size - 1
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(row_ptr.astype(np.int64)))
    count = args.warmup + args.batches
    batches = [b.batch for b in st.stream_batches(n, src, col_ind, weights.shape[1], count=count,
                                                   size=args.batch_size, seed=27)]

    def fresh(launch=None):
        launch = launch or args.update_launch
        graph = Graph.from_csr(row_ptr, col_ind, weights)
        graph.to_device()
        if tree is None:
            result = sssp.compute(graph, source, backend="cuda", cuda_engine=args.engine,
                                  update_launch=launch)
        else:
            result = sssp.Result.from_arrays(graph, source, tree[0], tree[1], canonicalize=False,
                                             backend="cuda", cuda_engine=args.engine,
                                             update_launch=launch)
        cupy.cuda.Device().synchronize()
        return graph, result

    device = runtime.current_device()
    s = runtime.stream(device)
    if args.ab or args.ab_env is not None:
        return launch_ab(batches, fresh, warmup=args.warmup, ab_env=args.ab_env)
    print(f"# {name}: n={n} m={col_ind.size} engine={args.engine} batch={args.batch_size} "
          f"launch={args.update_launch} device={cupy.cuda.runtime.getDeviceProperties(device)['name'].decode()}")

    # 1. plain
    graph, result = fresh()
    plain, stats = [], []
    for i, b in enumerate(batches[:count]):
        t0 = time.perf_counter()
        st_ = sssp.update(graph, b, result)
        if i >= args.warmup:
            plain.append((time.perf_counter() - t0) * 1e3)
            stats.append((st_.iterations, st_.epochs, st_.grid_syncs or 0, st_.invalidated, st_.affected))
    print(f"plain whole update: median {np.median(plain):.3f} ms  p99 {np.percentile(plain, 99):.3f}  "
          f"min {np.min(plain):.3f}")
    med = np.median(np.asarray(stats, dtype=np.float64), axis=0)
    print("median stats: iterations %.0f epochs %.0f grid_syncs %.0f invalidated %.0f affected %.0f" % tuple(med))
    if args.only_plain:
        return ExitCode.OK

    # 2. stages (host time)
    stages = Stages()
    from engines.graph import graph as graph_mod
    from engines.sssp import api
    from engines.graph import device_apply
    from engines.sssp.cuda import fused, operators

    # (owner, function, label): each stage's host time, in the order the table prints them
    for owner, name, label in (
            (graph_mod.Graph, "events_for", "batch validation (events_for)"),
            (sssp_cuda, "prepare", "engine prepare"),
            (graph_mod.Graph, "reserve_commit", "reserve_commit"),
            (device_apply, "commit", "device apply enqueue (commit)"),
            (sssp_cuda, "update", "engine (enqueue + wait + epilogue)"),
            (runtime, "synchronize", "  of which: wait (synchronize)"),
            (runtime, "wait_readback", "  of which: wait (readback)"),
            (device_apply.DeviceChangeLists, "stage", "  of which: change lists staging"),
            (device_apply.DeviceChangeLists, "captured_staging", "  of which: change lists (captured)"),
            (runtime, "wait_record", "  of which: wait (captured run)"),
            (device_apply.PendingCommit, "resolve", "  of which: the commit's record (resolve)"),
            (fused, "_run_setup", "  fused: setup (switches, module, scalars)"),
            (fused, "_kernel", "  fused: view, function, grid, solo limit"),
            (fused, "_run_captured", "  fused: key, replay, wait"),
            (fused, "_capture_key", "    of which: capture key"),
            (fused, "_epilogue", "  fused: epilogue"),
            (device_apply.ApplyScratch, "stage", "  apply: events to the device"),
            (device_apply, "_replay", "  apply: replay"),
            (api, "grow_arrays", "grow_arrays"),
            (api, "_select_engine", "select engine"),
            (api, "_stats", "stats"),
    ):
        stages.wrap(owner, name, label)
    # the call's critical path: the GPU starts the apply when the commit's replay is enqueued and
    # the engine when its replay is; what comes after the wait is the host's alone
    stages.mark(device_apply.ApplyScratch, "stage", "apply enqueue begins")
    # the first wait of either engine: the fused engine's one (captured or not), the operators
    # engine's first readback of its device loop (or sync #1 of its host loop)
    for name in ("wait_record", "synchronize", "wait_readback"):
        stages.mark(runtime, name, "engine enqueued (the first wait begins)")
    stages.mark(runtime, "wait_record", "the fused engine's wait ends", at_exit=True)
    graph, result = fresh()
    whole = 0
    for i, b in enumerate(batches):
        stages.active = i >= args.warmup
        t0 = time.perf_counter_ns()
        stages.begin(t0)
        sssp.update(graph, b, result)
        if stages.active:
            whole += time.perf_counter_ns() - t0
    stages.active = False
    print(f"stages (host µs per update, mean over {args.batches}):")
    print(f"  {'whole update()':45s} {whole / args.batches / 1e3:9.1f}")
    for label, ns in stages.total.items():
        print(f"  {label:45s} {ns / args.batches / 1e3:9.1f}")
    print("critical path (µs after the call began, mean over the updates that took each mark):")
    for label, (ns, count) in stages.marks.items():
        print(f"  {label:45s} {ns / count / 1e3:9.1f}  ({count} updates)")

    # 3. gpu work alone (spin kernel ahead)
    spin = cupy.RawKernel(SPIN_SOURCE, "spin")
    clock_khz = cupy.cuda.runtime.getDeviceProperties(device)["clockRate"]
    cycles = np.int64(clock_khz * 3)  # ~3 ms at the nominal clock: longer than the host's enqueue
    ev = {k: cupy.cuda.Event() for k in ("a0", "a1")}
    original_commit = device_apply.commit

    def commit_timed(dgraph, events, old_max, weight_sum, stream_, launch=None):
        ev["a0"].record(stream_)
        out = original_commit(dgraph, events, old_max, weight_sum, stream_, launch=launch)
        ev["a1"].record(stream_)
        return out

    device_apply.commit = commit_timed
    graph, result = fresh()
    probe = RegionProbe()
    apply_ms, engine_ms, gap_ms = [], [], []
    for i, b in enumerate(batches):
        spin((1,), (1,), (cycles,), stream=s)
        sssp.update(graph, b, result, probe=probe)
        if i >= args.warmup:
            apply_ms.append(cupy.cuda.get_elapsed_time(ev["a0"], ev["a1"]))
            engine_ms.append(probe.device_ms())
            gap_ms.append(cupy.cuda.get_elapsed_time(ev["a1"], probe._events[0]))
    device_apply.commit = original_commit
    print("gpu work alone (median ms): apply %.3f  between %.3f  engine region %.3f" %
          (np.median(apply_ms), np.median(gap_ms), np.median(engine_ms)))

    # 4. cProfile of the plain replay
    graph, result = fresh()
    for b in batches[:args.warmup]:
        sssp.update(graph, b, result)
    prof = cProfile.Profile()
    prof.enable()
    for b in batches[args.warmup:count]:
        sssp.update(graph, b, result)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.profile_top)
    print(out.getvalue())
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.profile_top)
    print(out.getvalue())
    if args.profile_out:
        prof.dump_stats(args.profile_out)
    return ExitCode.OK


if __name__ == "__main__":
    interrupt.run(main)
