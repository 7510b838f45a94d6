#!/usr/bin/env python3
"""Where an update's time goes, phase by phase: one update of a prepared gate on the operators
engine's host loop (a kernel per phase, algorithm.md §5 [ops]; the phases are the fused
engine's, and the phase bodies are the same kernels.cuh functions) under Nsight Compute, which
reports each kernel's GPU time (``gpu__time_duration.sum``). Printed per kernel: launches, total
and mean µs, share. The change lists' staging (``apply_changes``, which writes the engine's
change lists from the commit's events) is in the engine's region too, and in the table.

Profiling serializes and replays kernels, so these are not the engine's timings (measure those
with make bench or bench/engine_table.py): they say which phases hold the time, and how many
launches a phase costs. Only the one update between cudaProfilerStart and Stop is profiled (a
warm-up update runs first, outside it); ``--launch-count`` caps the launches profiled.

``--part apply`` profiles the batch's device apply instead (issue 27: on roadNet-PA safe50k
half of what a whole update costs beyond its engine): one commit of the batch
(``Graph.commit``, algorithm.md §3.3), its kernels and the library's sort and scan, launched as
``--apply-launch`` says (``graph``: the captured commit that update() replays by default, whose
kernels ncu profiles node by node; ``python``: each launch sized to the batch).

    python bench/phase_breakdown.py --graph roadNet-PA --batch safe50k
    python bench/phase_breakdown.py --graph road_usa --batch local10k --launch-count 600
    python bench/phase_breakdown.py --graph roadNet-PA --batch safe50k --part apply
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "phase_breakdown.py")

from engines.exitcodes import ExitCode  # noqa: E402  (standard library only)
from engines.sssp.options import UPDATE_LAUNCHES, Options  # noqa: E402  (NumPy only)
from engines.sssp.plan import PUSH_EXPANSIONS  # noqa: E402  (NumPy and the packing rule only)

METRIC = "gpu__time_duration.sum"
CHILD_ENV = "SSSPAB_PHASE_BREAKDOWN_CHILD"


#: What a run profiles: the operators engine's phases of one update, or the batch's device apply.
PARTS = ("engine", "apply")
#: The engine part's kernels (ncu --kernel-name): the operators engine's phases and the change
#: lists' staging (device_apply.cu apply_changes: it writes the engine's change lists from the
#: commit's events, inside the engine's region in both engines), the one apply kernel an engine
#: run launches.
ENGINE_KERNELS = "regex:^(ops_|apply_changes)"


def run_update(args) -> None:
    """The profiled process: a warm-up update (or commit), then one inside the profiler range."""
    import cupy

    from bench.prepare import prepare_gate
    from engines import sssp

    gate = prepare_gate(args.graph, data_dir=args.data_dir, cache_dir=args.cache_dir,
                        progress=False)
    graph, batch = gate.graph, gate.batches[args.batch].batch
    d0, p0 = gate.trees[args.objective]
    graph.to_device()
    snapshot = graph.snapshot()
    if args.part == "apply":
        run_apply(graph, snapshot, batch, args.apply_launch)
        return
    expansion = {} if args.push_expansion is None else {"push_expansion": args.push_expansion}
    for profiled in (False, True):
        graph.restore(snapshot)
        result = sssp.Result.from_arrays(graph, gate.source, d0, p0, backend="cuda",
                                         objective=args.objective, cuda_engine="operators",
                                         operators_loop="host", validate=False,
                                         canonicalize=False, **expansion)
        cupy.cuda.Device().synchronize()
        if profiled:
            cupy.cuda.profiler.start()
        stats = sssp.update(graph, batch, result)
        if profiled:
            cupy.cuda.profiler.stop()
    print(f"update: iterations {stats.iterations}, epochs {stats.epochs}, pushes {stats.pushes}, "
          f"invalidated {stats.invalidated}, host syncs {stats.host_syncs}", file=sys.stderr)


def run_apply(graph, snapshot, batch, launch: str) -> None:
    """``--part apply``: the batch committed twice from the same state, the second inside the
    profiler range (the first compiles, reserves and, for ``graph``, captures); each waits for its
    record, so the range holds the commit's work alone."""
    import cupy

    for profiled in (False, True):
        graph.restore(snapshot)
        events = graph.events_for(batch)
        graph.reserve_commit(events)
        cupy.cuda.Device().synchronize()
        if profiled:
            cupy.cuda.profiler.start()
        summary = graph.commit(events, launch=launch).summary()
        cupy.cuda.Device().synchronize()
        if profiled:
            cupy.cuda.profiler.stop()
    print(f"apply ({launch}): {int(events.size)} events, inserted {summary.inserted_edges}, "
          f"updated {summary.updated_edges}, deleted {summary.deleted_edges}", file=sys.stderr)


def summarize(text: str) -> list[tuple[str, int, float]]:
    """(kernel, launches, total µs) per kernel name from ncu's --csv output, largest first."""
    start = text.find('"ID"')
    if start < 0:
        raise ValueError("no ncu CSV table in the output")
    totals, launches = defaultdict(float), defaultdict(int)
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != METRIC:
            continue
        name = row["Kernel Name"].split("<")[0].split("(")[0].strip()
        name = name[len("void "):] if name.startswith("void ") else name
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}
        totals[name] += value * scale.get(row.get("Metric Unit", "nsecond"), 1e-3)
        launches[name] += 1
    return sorted(((k, launches[k], totals[k]) for k in totals), key=lambda r: -r[2])


def table(rows) -> str:
    total = sum(r[2] for r in rows) or 1.0
    lines = ["| kernel | launches | total µs | mean µs | share |", "|---|---:|---:|---:|---:|"]
    for name, count, us in rows:
        lines.append(f"| {name} | {count} | {us:.1f} | {us / count:.2f} | {100 * us / total:.1f} % |")
    lines.append(f"| all | {sum(r[1] for r in rows)} | {total:.1f} | | 100 % |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    from bench import options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True)
    parser.add_argument("--batch", required=True)
    parser.add_argument("--objective", type=int, default=0)
    parser.add_argument("--launch-count", type=int, default=0, help="profile at most this many launches")
    parser.add_argument("--push-expansion", choices=PUSH_EXPANSIONS, default=None,
                        help="the push expansion (Options.push_expansion; default: the library's)")
    parser.add_argument("--part", choices=PARTS, default="engine",
                        help="what to profile: the operators engine's phases of one update (default) "
                             "or the batch's device apply")
    parser.add_argument("--apply-launch", choices=UPDATE_LAUNCHES, default=Options.update_launch,
                        help="with --part apply: how the commit is launched (Options.update_launch; "
                             "default: update()'s)")
    options.add_input_options(parser)
    parser.add_argument("--table-file", "--out", dest="out", default=None, metavar="FILE",
                        help="also write the table to this file (--out: its former name)")
    return parser


def main(argv=None) -> int:
    from protocol.errors import run_command

    return run_command(lambda: _main(argv), prefix="phase_breakdown.py: ")


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    if os.environ.get(CHILD_ENV):
        run_update(args)
        return ExitCode.OK
    if args.out:
        from protocol.records import writable_folder

        # before the profile: a file that cannot be written costs nothing
        writable_folder(Path(args.out).parent, f"--table-file {args.out}")
    ncu = shutil.which("ncu")
    if ncu is None:
        print("phase_breakdown.py needs Nsight Compute (ncu) on PATH", file=sys.stderr)
        return ExitCode.ENVIRONMENT
    command = [ncu, "--profile-from-start", "off", "--metrics", METRIC, "--csv"]
    if args.part == "engine":  # the apply's kernels and the library's are not the engine's
        command += ["--kernel-name", ENGINE_KERNELS]
    if args.launch_count > 0:
        command += ["--launch-count", str(args.launch_count)]
    command += [sys.executable, str(Path(__file__).resolve()), *(argv if argv is not None else sys.argv[1:])]
    done = subprocess.run(command, capture_output=True, text=True,
                          env={**os.environ, CHILD_ENV: "1"})
    sys.stderr.write(done.stderr[-4000:])
    if done.returncode != 0:
        print(f"ncu exited with status {done.returncode}", file=sys.stderr)
        return done.returncode
    try:
        rows = summarize(done.stdout)
    except ValueError as exc:
        print(f"phase_breakdown.py: {exc}\n{done.stdout[-2000:]}", file=sys.stderr)
        return ExitCode.FAILURE
    what = ("operators host loop" if args.part == "engine" else
            f"device apply (launch {args.apply_launch})")
    text = f"{args.graph} {args.batch} objective {args.objective}, {what}:\n\n" + table(rows)
    print(text)
    if args.out:
        from protocol.records import write_or_say

        # the table is printed above: a failed write is one line and its status
        failed = write_or_say("phase_breakdown.py", [(args.out, text)])
        if failed is not None:
            return failed
    return ExitCode.OK


if __name__ == "__main__":
    interrupt.run(main)
