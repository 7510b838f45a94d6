#!/usr/bin/env python3
"""Where the fused engine's launch spends its time, phase by phase: the same update (or
compute()) run ``--repeats`` times from the restored pre-batch state, as bench/engine_table.py
runs it, with the fused kernel's phase clock on (``ENGINES_FUSED_PHASE_CLOCK=1``: block 0 stamps
the SM's cycle counter at every grid barrier; engines/sssp/cuda/phase_clock.py). Printed per phase
kind: how many per launch, the median of each launch's total for the kind, its mean per
occurrence and its share of the launch, then the launch (first stamp to last) beside the number
of grid barriers.

The phase clock is an instrument: its module is not the one users run (one more branch and three
stores per barrier in block 0), so these times split a launch but are not the engine's times
(measure those with bench/engine_table.py or make bench).

    python bench/fused_phases.py --random-graph 4039,176000
    python bench/fused_phases.py --graph roadNet-PA --batch safe50k --compute
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "fused_phases.py")

from engines.exitcodes import ExitCode  # noqa: E402  (standard library only)
from engines.sssp.plan import PUSH_EXPANSIONS  # noqa: E402  (NumPy and the packing rule only)
from protocol.errors import EnvironmentProblem, UsageError  # noqa: E402  (standard library only)

DEFAULT_REPEATS = 30
DEFAULT_BATCH = "safe50k"
DEFAULT_WARMUP = 3


def build_parser() -> argparse.ArgumentParser:
    from bench import engine_table, options

    ap = argparse.ArgumentParser(prog="fused_phases.py", description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--graph", help="a gate (prepared like make bench's inputs)")
    where.add_argument("--random-graph", metavar="N,M", type=engine_table.parse_random_graph,
                       help="bench/engine_table.py's random graph of N vertices and about M arcs, with its 1 %% batch")
    ap.add_argument("--batch", default=None, help=f"the gate's batch (default {DEFAULT_BATCH})")
    ap.add_argument("--batch-size", type=int, default=None, metavar="B",
                    help="instead of --batch, the first batch of bench/stream.py's stream of B changes "
                         "(a multiple of 4) on the gate")
    ap.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="launches summarized (default %(default)s)")
    options.add_warmup_option(ap, default=DEFAULT_WARMUP, runs="launches")
    ap.add_argument("--compute", action="store_true", help="also split compute() from scratch")
    ap.add_argument("--objective", type=int, default=0)
    ap.add_argument("--push-expansion", default=None, choices=PUSH_EXPANSIONS,
                    help="the push expansion (default: the library's)")
    options.add_input_options(ap)
    return ap


def summarize(launches, rate: float) -> list[dict]:
    """Per phase kind (in phase_clock.KINDS order, kinds that ran): ``count`` (median per launch),
    ``total_us`` (median of each launch's total), ``each_us`` (all launches' time over all their
    occurrences) and ``share`` (of the launches' summed time)."""
    from engines.sssp.cuda import phase_clock

    whole = sum(t.launch_cycles for t in launches)
    rows = []
    for kind in phase_clock.KINDS:
        per = [t.cycles_of(kind) for t in launches]
        occurrences = sum(len(p) for p in per)
        if occurrences == 0:
            continue
        cycles = sum(sum(p) for p in per)
        rows.append({"kind": kind, "count": statistics.median(len(p) for p in per),
                     "total_us": statistics.median(sum(p) for p in per) / rate * 1e6,
                     "each_us": cycles / occurrences / rate * 1e6,
                     "share": cycles / whole if whole else 0.0})
    return rows


def table(title: str, launches, stats) -> str:
    """The markdown table of ``launches`` (PhaseTimes) with ``stats`` (the last run's Stats)."""
    from engines.sssp.cuda import phase_clock

    rate = phase_clock.pooled_rate(launches)
    if rate is None:
        return f"{title}: the global timer saw no time pass; no rate to convert cycles"
    lines = [f"### {title}", "",
             f"{len(launches)} launches; SM clock {rate / 1e6:.0f} MHz (cycles over the global timer, pooled); "
             f"last run: {stats.iterations} iterations, {stats.epochs} epochs, {stats.grid_syncs} grid syncs",
             "", "| phase | per launch | µs per launch (median) | µs each | share |", "|---|---:|---:|---:|---:|"]
    for r in summarize(launches, rate):
        lines.append(f"| {r['kind']} | {r['count']:g} | {r['total_us']:.1f} | {r['each_us']:.2f} | {100 * r['share']:.1f} % |")
    launch_us = statistics.median(t.launch_cycles for t in launches) / rate * 1e6
    barriers = statistics.median(len(t.cycles) - 1 for t in launches)
    lines.append(f"| launch (first stamp to last) | {barriers:g} barriers | {launch_us:.1f} | "
                 f"{launch_us / max(barriers, 1):.2f} per barrier | |")
    dropped = max(t.dropped for t in launches)
    if dropped:
        lines.append(f"\n{dropped} stamps past the {phase_clock.SLOTS} slots were not kept: the table misses their phases")
    return "\n".join(lines)


#: Near-list lengths the push iterations are grouped by (``by_length``): [lower, next lower).
LENGTH_BOUNDS = (1, 10, 100, 1_000, 10_000, 100_000)


def split_solo(lengths: list[int], kinds) -> tuple[list[int], list[int]]:
    """The logged near-list lengths of one launch (in launch order) split into the grid's push
    iterations and those block 0 ran alone, each list in launch order; ``kinds`` are the launch's
    phase kinds (PhaseTimes.kinds). The kernel pushes a list alone exactly when its length is at
    most the run's solo limit (fused.cu near_far_loop, solo_push), so the solo iterations are the
    shortest lists, as many as the log holds beyond the stamped grid iterations, and a limit must
    separate them from the rest. The stamps do not say how many iterations each stretch ran, but
    their order must be the log's: a grid iteration where the log has a longer list, a stretch
    where it has a run of shorter ones (stretches apart only by an epoch's phases may meet in one
    run). ValueError where the log and the stamps cannot be split so."""
    steps = [kind for kind in kinds if kind in ("push iteration", "solo stretch")]
    grid_iterations = steps.count("push iteration")
    stretches = len(steps) - grid_iterations
    solo_count = len(lengths) - grid_iterations
    if stretches == 0 and solo_count == 0:
        return list(lengths), []
    if stretches == 0 or solo_count < stretches:
        raise ValueError(f"{grid_iterations} push iterations and {stretches} solo stretches stamped, "
                         f"{len(lengths)} logged")
    ordered = sorted(lengths)
    limit = ordered[solo_count - 1]
    if solo_count < len(ordered) and ordered[solo_count] <= limit:
        raise ValueError(f"no solo limit splits the {len(lengths)} logged lengths into {solo_count} pushed alone "
                         f"and {grid_iterations} by the grid")

    def runs(marks):  # consecutive solo marks made one
        return [m for i, m in enumerate(marks) if m == "G" or i == 0 or marks[i - 1] != "S"]

    if runs(["S" if k == "solo stretch" else "G" for k in steps]) != runs(["S" if n <= limit else "G" for n in lengths]):
        raise ValueError(f"the logged lengths split at {limit:,} do not follow the stamps' order of grid "
                         "iterations and solo stretches")
    return [n for n in lengths if n > limit], [n for n in lengths if n <= limit]


def by_length(times, near_lengths, rate: float) -> list[dict]:
    """The push iterations of one launch (``times``: PhaseTimes) grouped by their near list's
    length (``near_lengths``, the push log: one per iteration, in order): per group ``lengths``
    (its bounds' text), ``iterations``, ``mean_us`` and ``mean_length``. Whether an iteration's
    time follows its list's length (work) or stays flat (latency: the barrier and the dependent
    chain) is what decides which change can shorten it. Iterations block 0 ran alone (the solo
    push, ``split_solo``) make one last row, ``solo``: the solo stretches' time (each with its one
    grid barrier) over their iterations."""
    pushes = times.cycles_of("push iteration")
    stretches = times.cycles_of("solo stretch")
    grid, solo = split_solo([int(n) for n in near_lengths], times.kinds)
    rows = []
    for i, low in enumerate(LENGTH_BOUNDS):
        high = LENGTH_BOUNDS[i + 1] if i + 1 < len(LENGTH_BOUNDS) else None
        chosen = [(c, n) for c, n in zip(pushes, grid) if n >= low and (high is None or n < high)]
        if chosen:
            rows.append({"lengths": f"{low:,}-{high - 1:,}" if high else f">= {low:,}",
                         "iterations": len(chosen),
                         "mean_us": sum(c for c, _ in chosen) / len(chosen) / rate * 1e6,
                         "mean_length": sum(n for _, n in chosen) / len(chosen)})
    if solo:
        rows.append({"lengths": f"solo ({len(stretches)} stretches, 1-{max(solo):,})", "iterations": len(solo),
                     "mean_us": sum(stretches) / len(solo) / rate * 1e6,
                     "mean_length": sum(solo) / len(solo)})
    return rows


def length_table(rows: list[dict]) -> str:
    """``by_length``'s rows as markdown."""
    lines = ["| near-list length | iterations | mean length | µs each |", "|---|---:|---:|---:|"]
    lines += [f"| {r['lengths']} | {r['iterations']} | {r['mean_length']:,.0f} | {r['mean_us']:.2f} |" for r in rows]
    return "\n".join(lines)


def load(args):
    """``(name, graph, source, tree, batch_name, batch)`` for the arguments."""
    from bench import engine_table
    from bench.prepare import prepare_gate

    if args.random_graph:
        if not 0 <= args.objective < engine_table.NUM_WEIGHTS:
            raise UsageError(f"--objective {args.objective}: the random graph has {engine_table.NUM_WEIGHTS} "
                             "weight columns")
        n, m = args.random_graph
        graph, tree, batch = engine_table.random_input(n, m, args.objective)
        return (engine_table.random_graph_name(n, m), graph, engine_table.SOURCE, tree,
                engine_table.RANDOM_BATCH_NAME, batch)
    if args.batch_size is not None:
        from bench import stream
        from engines import Graph

        data = stream.load_input(graph=args.graph, objective=args.objective, data_dir=args.data_dir,
                                 cache_dir=args.cache_dir)
        first = stream.stream_batches(data.num_vertices, data.arc_sources(), data.col_ind, data.weights.shape[1],
                                      count=1, size=args.batch_size, seed=stream.DEFAULT_SEED)[0]
        return (data.name, Graph.from_csr(data.row_ptr, data.col_ind, data.weights), data.source, data.tree,
                f"stream batch of {args.batch_size}", first.batch)
    from bench.prepare_failures import prepared_in_cache

    gate = prepared_in_cache(args.graph, lambda: prepare_gate(args.graph, data_dir=args.data_dir,
                                                              cache_dir=args.cache_dir, progress=True),
                             args.cache_dir)
    batch = args.batch or DEFAULT_BATCH
    if batch not in gate.batches:
        raise UsageError(f"--batch {batch}: {args.graph} has {', '.join(sorted(gate.batches))}")
    if not 0 <= args.objective < len(gate.trees):
        raise UsageError(f"--objective {args.objective}: the graph has {len(gate.trees)} weight columns")
    return args.graph, gate.graph, gate.source, gate.trees[args.objective], batch, gate.batches[batch].batch


def _print_lengths(result, launches) -> None:
    """The last launch's push iterations by near-list length (the push log holds the last run's)."""
    from engines.sssp.cuda import phase_clock, push

    profile = push.push_profile(result)
    rate = phase_clock.pooled_rate(launches)
    last = launches[-1]
    if not profile.complete or rate is None or last.dropped:
        print("\n(no push iterations by length: the push log or the stamps are incomplete)")
        return
    try:
        rows = by_length(last, profile.near_lengths, rate)
    except ValueError as exc:  # the log and the stamps disagree: say so, keep the phase table
        print(f"\n(no push iterations by length: {exc})")
        return
    print("\nThe last launch's push iterations by near-list length (solo: pushed by block 0 alone):\n")
    print(length_table(rows))


def run(args) -> int:
    """The tables of ``args`` (parsed), the phase clock switched on for the command only (a caller
    in the same process gets its environment back)."""
    from unittest import mock

    from engines.sssp.cuda import fused

    with mock.patch.dict(os.environ, {fused.PHASE_CLOCK_ENV: "1"}):
        return _run(args, load(args))


def _launches(device: int, runs: int, warmup: int, one_run, what: str):
    """``(stamps, last)``: the phase-clock stamps (PhaseTimes) of ``runs`` calls of ``one_run()``
    after ``warmup`` more, each read right after its call, and what the last call returned."""
    from engines.sssp.cuda import phase_clock

    launches, last = [], None
    for i in range(warmup + runs):
        phase_clock.reset(device)
        last = one_run()
        times = phase_clock.read(device)
        if times is None:
            raise RuntimeError(f"{what} ran no phase-clock module")  # a bug: keeps its traceback
        if i >= warmup:
            launches.append(times)
    return launches, last


def _run(args, loaded) -> int:
    from bench.engine_table import cuda_config
    from engines import sssp
    from engines.sssp.cuda import runtime

    name, graph, source, tree, batch_name, batch = loaded
    device = runtime.current_device()
    config = cuda_config("fused", args.push_expansion)
    graph.to_device()
    graph_snapshot = graph.snapshot()
    result = config.from_arrays(graph, source, tree[0], tree[1], objective=args.objective,
                                validate=False, canonicalize=False)
    snapshot = result.clone()

    def update_once():  # from the restored pre-batch state, as bench/engine_table.py times it
        graph.restore(graph_snapshot)
        result.copy_from(snapshot)
        return sssp.update(graph, batch, result)

    launches, stats = _launches(device, args.repeats, args.warmup, update_once, "the update")
    what = f"fused{'+' + args.push_expansion if args.push_expansion else ''}"
    print(table(f"{name} {batch_name}: {what} update()", launches, stats))
    _print_lengths(result, launches)
    if args.compute:
        graph.restore(graph_snapshot)
        launches, computed = _launches(device, args.repeats, args.warmup,
                                       lambda: config.compute(graph, source, objective=args.objective), "compute()")
        print()
        print(table(f"{name}: {what} compute()", launches, computed.stats))
        _print_lengths(computed, launches)
    return ExitCode.OK


def main(argv=None) -> int:
    from protocol.errors import run_command

    return run_command(lambda: _main(argv), prefix="fused_phases.py: ")


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    if args.repeats < 1:
        raise UsageError("--repeats must be at least 1")
    if args.batch_size is not None and (args.random_graph or args.batch or args.batch_size < 4 or args.batch_size % 4):
        raise UsageError("--batch-size takes a gate (--graph) without --batch, and a positive multiple of 4")
    if args.graph is not None:
        from bench.gates import check_gate_names

        check_gate_names([args.graph])
    from bench.has_gpu import gpu_problem

    problem = gpu_problem()
    if problem:
        raise EnvironmentProblem(f"needs a CUDA GPU, the fused kernel is what it splits: {problem}")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
