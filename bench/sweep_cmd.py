"""``perf_ab.py sweep``, the command (issue 33): its options, the campaigns it runs per graph and
engine, the crossover table it prints. What a sweep is (its sizes, localities, inputs, records and
crossover) is bench/sweep.py; its report bench/sweep_report.py.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
import sys
from pathlib import Path

from protocol.config import MIN_WARMUP
from protocol.errors import EnvironmentProblem, ProtocolError, UsageError
from protocol.exitcodes import ExitCode

from . import graph_file, options
from .sweep import (DEFAULT_ENGINES, DEFAULT_SIZES, HOST_REFERENCE_CAP, LOCALITIES, SWEEP_SCHEMA,
                    SWEEP_VERSION, SweepInputs, SweepStore, build_crossover, parse_batch_name,
                    parse_engines, parse_sizes, size_label, sweep_input)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("what to sweep")
    options.add_graphs_option(g, note=", or none with --graph-file")
    g.add_argument("--engines", default=DEFAULT_ENGINES, metavar="E[,E...]",
                   help=f"engines, each measured as its update() against its compute() (default {DEFAULT_ENGINES}; "
                        "host on a machine without a GPU)")
    g.add_argument("--sizes", nargs="+", default=None, metavar="N",
                   help="batch sizes in changes, e.g. 10 100 1k 10k 100k 1M (the default); a size above the "
                        "graph's edge count is dropped and reported")
    g.add_argument("--localities", nargs="+", default=None, metavar="L",
                   help="uniform (drawn like safe50k) and/or local (like local10k); default both")
    g.add_argument("--objectives", nargs="+", default=None, metavar="K", help="objectives (default 0)")
    r = parser.add_argument_group("rounds")
    r.add_argument("--rounds", type=int, default=21, help="accepted rounds per side and cell (min 5; default 21)")
    options.add_warmup_option(r, default=2, minimum=MIN_WARMUP, runs="warm-up rounds per side")
    r.add_argument("--processes", type=int, default=3, metavar="P",
                   help="worker processes per cell (default 3; 1: measure in this process)")
    r.add_argument("--adaptive", action="store_true",
                   help="after --rounds, continue until the 95%% interval is within --precision")
    r.add_argument("--precision", type=float, default=0.05, help="relative half-width target (default 0.05)")
    r.add_argument("--max-rounds", type=int, default=None, help="adaptive limit (default 4 x --rounds)")
    r.add_argument("--max-rejects", type=int, default=None,
                   help="rejected pairs before a cell is too noisy (default: --rounds)")
    r.add_argument("--order", choices=("abba", "random"), default="abba", help="round order (default abba)")
    r.add_argument("--seed", type=int, default=0, help="seed of the random order and the bootstrap")
    r.add_argument("--no-control", action="store_true", help="skip the A/A control cell of each campaign")
    c = parser.add_argument_group("clocks, contamination and checks")
    c.add_argument("--min-clock-fraction", type=float, default=0.9,
                   help="reject rounds whose SM clock falls below this fraction of the max (default 0.9)")
    c.add_argument("--max-foreign-cpu", type=float, default=1.0,
                   help="reject rounds with more foreign CPU load than this many cores (default 1.0)")
    c.add_argument("--verify", choices=("host", "compute"), default=None,
                   help="host: the host reference is a third party of every guard; compute: only the "
                        "update-against-compute() check (default: host for a CUDA engine on a graph of up to "
                        f"--host-reference-cap vertices, else compute)")
    c.add_argument("--host-reference-cap", type=int, default=HOST_REFERENCE_CAP, metavar="N",
                   help=f"largest graph (vertices) checked against the host reference by default "
                        f"(default {HOST_REFERENCE_CAP:,})")
    o = parser.add_argument_group("records")
    o.add_argument("--out", default=None, metavar="DIR", help="the sweep's records folder (default results/sweep)")
    o.add_argument("--resume", action="store_true", help="continue the sweep recorded in --out")
    o.add_argument("--force", action="store_true", help="replace the sweep recorded in --out")
    o.add_argument("--allow-dirty", action="store_true", help="allow a dirty working tree (recorded)")
    o.add_argument("--report-only", action="store_true",
                   help="measure nothing: rebuild crossover.json and render sweep.md from the records in --out")
    options.add_input_options(o)
    options.add_no_progress_option(o)
    graph_file.add_arguments(parser)


def _localities(args) -> list[str]:
    names = options.split_names(args.localities) or list(LOCALITIES)
    unknown = [n for n in names if n not in LOCALITIES]
    if unknown:
        raise UsageError(f"--localities: unknown {', '.join(unknown)} (known: {', '.join(LOCALITIES)})")
    return [n for n in LOCALITIES if n in names]


def _objectives(args) -> list[int]:
    return sorted(set(options.parse_objectives(args.objectives) or [0]))


def _parameters(args, engines, sizes, localities, objectives, gates, spec) -> dict:
    return {"engines": engines, "sizes": sizes, "localities": localities, "objectives": objectives,
            "graphs": gates + ([spec.name] if spec is not None else []),
            "graph_file": None if spec is None else spec.identity(),
            "rounds": args.rounds, "warmup": args.warmup, "processes": args.processes, "adaptive": args.adaptive,
            "precision": args.precision, "max_rounds": args.max_rounds, "max_rejects": args.max_rejects,
            "order": args.order, "seed": args.seed, "control": not args.no_control,
            "min_clock_fraction": args.min_clock_fraction, "max_foreign_cpu": args.max_foreign_cpu,
            "verify": args.verify, "host_reference_cap": args.host_reference_cap, "bootstrap_resamples": 2000}


def _config(args, engine: str, graph: str, spec, verify_host: bool, objectives):
    from protocol.runner import CampaignConfig

    from .sweep_sides import sweep_sides

    return CampaignConfig(
        sides=sweep_sides(engine), graphs=[graph],
        graph_file=None if spec is None or graph != spec.name else spec.identity(),
        batches=None, objectives=objectives, rounds=args.rounds, warmup=args.warmup, processes=args.processes,
        adaptive=args.adaptive, precision=args.precision, max_rounds=args.max_rounds,
        max_rejects=args.max_rejects, order=args.order, seed=args.seed,
        min_clock_fraction=args.min_clock_fraction, max_foreign_cpu=args.max_foreign_cpu,
        verify_host=verify_host, control=not args.no_control, allow_dirty=args.allow_dirty)


def _verify_host(args, engine: str, num_vertices: int) -> bool:
    if args.verify is not None:
        return args.verify == "host" and engine.lower() != "host"
    return engine.lower() != "host" and num_vertices <= args.host_reference_cap


def _reproduce(argv_args, out) -> str:
    return "python bench/perf_ab.py sweep " + " ".join(shlex.quote(a) for a in argv_args)


def _rebuild_argv(args, engines, sizes, localities, objectives, gates, spec, out) -> list[str]:
    from protocol.reproduce import line_path

    argv = ["--engines", ",".join(engines), "--sizes", *[size_label(s) for s in sizes],
            "--localities", *localities, "--objectives", *[str(k) for k in objectives],
            "--rounds", str(args.rounds), "--warmup", str(args.warmup), "--processes", str(args.processes),
            "--order", args.order, "--seed", str(args.seed)]
    if gates:
        argv += ["--graphs", *gates]
    for flag, value in (("--max-rounds", args.max_rounds), ("--max-rejects", args.max_rejects),
                        ("--verify", args.verify)):
        if value is not None:
            argv += [flag, str(value)]
    if args.adaptive:
        argv += ["--adaptive", "--precision", str(args.precision)]
    if args.no_control:
        argv += ["--no-control"]
    if args.min_clock_fraction != 0.9:
        argv += ["--min-clock-fraction", str(args.min_clock_fraction)]
    if args.max_foreign_cpu != 1.0:
        argv += ["--max-foreign-cpu", str(args.max_foreign_cpu)]
    if args.host_reference_cap != HOST_REFERENCE_CAP:
        argv += ["--host-reference-cap", str(args.host_reference_cap)]
    argv += ["--out", line_path(out)]
    if args.data_dir is not None:
        argv += ["--data-dir", line_path(args.data_dir)]
    return argv + graph_file.argv_of(spec)


def _check_cuda(engines) -> int | None:
    from protocol.campaign import check_cuda
    from protocol.sides import parse_side

    return check_cuda([parse_side(e) for e in engines], kind="engine", missing="",
                      hint="sweep the host reference with --engines host")


def _campaign_finished(folder: Path) -> bool:
    from protocol.records import RecordStore
    from protocol.runner import TERMINAL_STATUSES

    store = RecordStore(folder)
    if not store.has_campaign():
        return False
    campaign = store.read_campaign()
    cells = campaign["cells"].values()
    return bool(campaign.get("finished_utc")) and bool(cells) and all(c.get("status") in TERMINAL_STATUSES
                                                                       for c in cells)


def _g(value) -> str:
    return "–" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.3g}"


def print_crossover_table(record: dict, file=sys.stdout) -> None:
    print(f"{'graph':<16} {'locality':<8} {'engine':<16} {'K':>1}  {'sizes: update/compute [95 % interval]':<60}  "
          "crossover", file=file)
    for e in record["entries"]:
        points = "  ".join(f"{size_label(p['size'])}: {_g(p['ratio'])} [{_g(p['lo'])}, {_g(p['hi'])}]"
                           for p in e["points"])
        print(f"{e['graph']:<16} {e['locality']:<8} {e['engine']:<16} {e['objective']:>1}  {points:<60}  "
              f"{e['summary']}", file=file)


def run_sweep(args) -> int:
    from engines.io.outputs import output_problem
    from protocol.console import CampaignProgress
    from protocol.environment import REPO_ROOT, cuda_device_info, host_info
    from protocol.exitcodes import ExitCode as Codes
    from protocol.instruments import Instruments
    from protocol.outlock import OutLock
    from protocol.records import RecordStore
    from protocol.runner import CampaignRunner

    from . import prepare_failures
    from .engines_cmd import _graph_file_spec, _written
    from .gates import check_gate_names

    out = args.out or str(REPO_ROOT / "results" / "sweep")
    if getattr(args, "report_only", False):
        # --report-only renders the recorded sweep and measures nothing: what a measuring option
        # asks (replace it, continue it) would be silently ignored
        asked = [flag for flag, on in (("--force", args.force), ("--resume", args.resume)) if on]
        if asked:
            raise UsageError(f"--report-only renders the sweep in --out and measures nothing: drop "
                             f"{' and '.join(asked)}")
        from .sweep_report import render_sweep

        report = render_sweep(out)
        print_crossover_table(json.loads(SweepStore(out).crossover_path.read_text()))
        print(f"report: {report}", file=sys.stderr)
        return ExitCode.OK
    engines = parse_engines(args.engines)
    sizes = parse_sizes(args.sizes) if args.sizes else list(DEFAULT_SIZES)
    localities = _localities(args)
    objectives = _objectives(args)
    spec = _graph_file_spec(args)
    gates = options.split_names(args.graphs)
    if gates is None:
        from .gates import GATE_NAMES

        gates = [] if spec is not None else list(GATE_NAMES)
    check_gate_names(gates)
    if args.host_reference_cap < 0:
        raise UsageError(f"--host-reference-cap {args.host_reference_cap}: expected a vertex count >= 0 "
                         "(0: never the host reference)")
    if args.resume and args.force:
        raise UsageError("--resume continues the sweep in --out, --force replaces it: pass one of them")
    device = _check_cuda(engines)  # exit 3 before any record is written
    problem = output_problem(out, folder=True)
    if problem:
        raise UsageError(f"--out: the records folder cannot be written: {problem}")
    options.check_cache_dir(args.cache_dir)
    lock = OutLock(out).acquire()
    try:
        store = SweepStore(out)
        if spec is not None:
            spec = prepare_failures.prepared(spec.name, lambda: graph_file.identified(spec), _written(args, out))
        if spec is None or spec.weights != "file":  # the gates and drawn weights have K columns: refuse
            from .weights import NUM_OBJECTIVES      # before sweep.json exists (as engines does, issue 28)

            options.check_objectives_fit(objectives, NUM_OBJECTIVES, "every graph")
        params = _parameters(args, engines, sizes, localities, objectives, gates, spec)
        params = json.loads(json.dumps(params))
        if store.has_sweep() and args.resume:
            sweep = store.read_sweep()
            if sweep["parameters"] != params:
                changed = sorted(k for k in set(params) | set(sweep["parameters"])
                                 if params.get(k) != sweep["parameters"].get(k))
                raise UsageError(f"--resume: the parameters differ from the recorded sweep in {', '.join(changed)}")
        elif (store.has_sweep() or (store.root / "campaigns").exists()) and not args.force and not args.resume:
            raise UsageError(f"--out {out} holds a sweep; continue it with --resume, replace it with --force, or "
                             "choose another --out folder")
        else:
            if args.force and (store.root / "campaigns").exists():
                shutil.rmtree(store.root / "campaigns")
            if args.force and store.has_sweep():  # replaced: not left beside its deleted campaigns
                store.sweep_path.unlink()
            from protocol.runner import utc_now

            sweep = {"schema": SWEEP_SCHEMA, "schema_version": SWEEP_VERSION, "started_utc": utc_now(),
                     "parameters": params, "graphs": {},
                     "reproduce": _reproduce(_rebuild_argv(args, engines, sizes, localities, objectives, gates,
                                                           spec, out), out)}
            # written with the first graph that passes its checks (below): a graph refused for its
            # sizes or objectives leaves no sweep.json that the corrected run is refused over
        loader = SweepInputs(args.data_dir, args.cache_dir, spec, tuple(sizes), tuple(localities))
        codes = []
        pci = cuda_device_info(device)["pci_bus_id"] if device is not None else None
        with Instruments.open(gpu=device is not None, pci_bus_id=pci, own_context=device is not None) as instruments:
            environment = {"host": host_info()}
            if device is not None:
                environment["gpu"] = {**cuda_device_info(device), "nvml": instruments.device}
            for graph in params["graphs"]:
                shown = SweepInputs(args.data_dir, args.cache_dir, spec, tuple(sizes), tuple(localities),
                                    progress=not args.no_progress)
                prepared = prepare_failures.prepared(graph, lambda: shown.prepared(graph), _written(args, out))
                gi, dropped = prepare_failures.prepared(
                    graph, lambda: sweep_input(prepared, sizes, localities, cache_dir=args.cache_dir),
                    _written(args, out))
                del prepared
                n, m = gi.graph.num_vertices, gi.graph.num_edges
                if not gi.batches:  # every size dropped: nothing to measure on this graph
                    reasons = "; ".join(f"{size_label(d['size'])}: {d['reason']}" for d in dropped)
                    raise UsageError(f"--sizes: no batch can be drawn on {graph} ({m:,} edges) at any size asked "
                                     f"for ({reasons}); choose sizes up to {m:,}")
                options.check_objectives_fit(objectives, gi.graph.num_weights, graph)
                kept = sorted({parse_batch_name(b)[1] for b in gi.batches})
                sweep["graphs"][graph] = {
                    "n": n, "m": m, "sizes": kept, "dropped": dropped,
                    "campaigns": {e: str(store.campaign_dir(graph, e).relative_to(store.root)) for e in engines},
                    "verify": {e: "host" if _verify_host(args, e, n) else "compute" for e in engines}}
                store.write_sweep(sweep)
                for d in dropped:
                    print(f"perf_ab.py sweep: {graph}: size {size_label(d['size'])}"
                          f"{' (' + d['locality'] + ')' if d.get('locality') else ''} dropped: {d['reason']}",
                          file=sys.stderr)
                for engine in engines:
                    folder = store.campaign_dir(graph, engine)
                    if args.resume and _campaign_finished(folder):
                        continue
                    folder.mkdir(parents=True, exist_ok=True)
                    config = _config(args, engine, graph, spec, _verify_host(args, engine, n), objectives)
                    with CampaignProgress(enabled=not args.no_progress) as progress:
                        runner = CampaignRunner(config, RecordStore(folder), instruments, resume=args.resume,
                                                progress=progress, reproduce_command=sweep["reproduce"],
                                                records_root=store.root,
                                                environment=environment, input_loader=loader)
                        codes.append(runner.run([gi]))
                del gi
        from protocol.runner import utc_now

        sweep["finished_utc"] = utc_now()
        store.write_sweep(sweep)
        crossover = build_crossover(store, sweep)
        store.write_crossover(crossover)
        print_crossover_table(crossover)
        from .sweep_report import render_sweep

        report = render_sweep(out, crossover=crossover)
        print(f"sweep: {store.crossover_path}; report: {report}", file=sys.stderr)
        return int(_worst(codes, Codes))
    finally:
        lock.release()


def _worst(codes, Codes) -> int:
    """The sweep's status from its campaigns': correctness, then environment, then noise."""
    values = {int(c) for c in codes}
    for code in (Codes.CORRECTNESS, Codes.ENVIRONMENT, Codes.TOO_NOISY):
        if int(code) in values:
            return int(code)
    return int(Codes.OK)


def main(args) -> int:
    from engines.errors import os_error_text, print_internal_error

    # --report-only measures nothing: the way on is to render again, not to resume
    again = "run it again with --report-only" if getattr(args, "report_only", False) else "continue with --resume"
    try:
        return run_sweep(args)
    except ProtocolError as exc:
        print(f"perf_ab.py sweep: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        done = "nothing was measured" if getattr(args, "report_only", False) else "the finished rounds are recorded"
        print(f"perf_ab.py sweep: interrupted; {done}, {again}", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"perf_ab.py sweep: error: cannot write the records: {os_error_text(exc)}; {again}",
              file=sys.stderr)
        return int(EnvironmentProblem.exit_code)
    except Exception as exc:  # a bug: show the traceback
        print_internal_error("perf_ab.py sweep: ", exc, then=f". Once fixed, {again}")
        return int(ExitCode.CORRECTNESS)


__all__ = ["add_arguments", "cli", "main", "print_crossover_table", "run_sweep"]


def cli(argv=None) -> int:
    """``python -m bench.sweep_cmd ...``: the same as ``perf_ab.py sweep ...``."""
    parser = argparse.ArgumentParser(prog="perf_ab.py sweep", description=__doc__.splitlines()[0])
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return main(args)


if __name__ == "__main__":
    sys.exit(cli())
