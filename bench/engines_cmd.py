"""``perf_ab.py engines``: run an A/B campaign between two engine configurations (protocol.md).

Prepares (or reads from the cache) the inputs of each graph (the gates of ``--graphs`` and the
``--graph-file`` of :mod:`bench.graph_file`) and hands them to :func:`protocol.campaign.run_campaign`,
which runs the cells, writes the records under ``--out``, renders the report and prints a summary
table: this module only parses and checks the arguments and names the inputs. Exit status as
protocol.md §8 says. Before any work: the arguments, the ``--graph-file``, whether ``--out`` and the
cache folder can be written, whether ``--out`` already holds a campaign (refused unless
``--resume`` continues it or ``--force`` replaces it), and with ``--resume`` whether the records
are whole (exit 2 naming what is wrong). An input or environment problem never shows a traceback; an internal error (a bug)
does, and says so.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from protocol.config import MIN_WARMUP, SETUP_TIMEOUT_S, SILENCE_MULTIPLE, WORKER_TIMEOUT_S
from protocol.errors import EnvironmentProblem, UsageError

from . import graph_file, options
from .gates import check_gate_names
from .prepare_failures import prepared

DEFAULT_SIDES = options.DEFAULT_SIDES
_split_list = options.split_names  # --batches and --objectives: "a b" and "a,b" both give ["a", "b"]

#: The namespace attribute that lists the preset-able options the command line gave itself.
_GIVEN = "_protocol_given"


def _note_given(namespace, dest: str) -> None:
    setattr(namespace, _GIVEN, {*getattr(namespace, _GIVEN, ()), dest})


class _GivenValue(argparse.Action):
    """Stores the option's value, as argparse's default action does, and notes that the command line
    gave it: the --protocol preset then leaves it alone, whichever of the two comes first."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        _note_given(namespace, self.dest)


class _GivenConst(argparse.Action):
    """A flag that stores ``const`` and notes that the command line gave it (as :class:`_GivenValue`):
    ``--adaptive`` (True), ``--no-adaptive`` (False into ``adaptive``), ``--no-control``. With
    ``resets``, the option it makes moot goes back to its own default unless the command line gave
    that one too: a preset's ``--adaptive-scope cell`` needs --adaptive and its ``--control
    every-gate`` a control, so ``--protocol precise --no-adaptive`` (or ``--no-control``, in either
    order) runs as the explicit option says, while an explicit scope still contradicts it."""

    def __init__(self, option_strings, dest, const=True, default=False, resets=None, help=None):
        super().__init__(option_strings, dest, nargs=0, const=const, default=default, help=help)
        self.resets = resets

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const)
        _note_given(namespace, self.dest)
        if self.resets is not None and self.resets not in getattr(namespace, _GIVEN, ()):
            setattr(namespace, self.resets, parser.get_default(self.resets))
            _note_given(namespace, self.resets)


class _ProtocolAction(argparse.Action):
    """``--protocol NAME``: every option of any preset that the command line does not give itself
    takes NAME's value, else its own default (so a later ``--protocol standard`` undoes an earlier
    preset). Resolved while parsing, so the parsed arguments already hold what runs: an option given
    before ``--protocol`` is noted and kept, one given after it overwrites the preset's value."""

    def __call__(self, parser, namespace, values, option_string=None):
        from protocol.config import PROTOCOLS

        setattr(namespace, self.dest, values)
        given = getattr(namespace, _GIVEN, ())
        for dest in sorted({d for preset in PROTOCOLS.values() for d in preset} - set(given)):
            setattr(namespace, dest, PROTOCOLS[values].get(dest, parser.get_default(dest)))


def _percent_or_off(text: str) -> float | None:
    """``--planted-check``: a percentage, or ``off`` (no checks: how a command line turns off a
    preset's checks)."""
    return None if text.strip().lower() == "off" else float(text)


_percent_or_off.__name__ = "percentage"  # argparse names the type in its error: "invalid percentage value"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("what to measure")
    options.add_graphs_option(g, note=", or none with --graph-file")
    g.add_argument("--batches", nargs="+", metavar="NAME", help="batch names (default: every batch)")
    g.add_argument("--objectives", nargs="+", metavar="K", help="objectives (default: every objective)")
    options.add_sides_option(g)
    from protocol.config import PROTOCOLS

    p = parser.add_argument_group("protocol preset")
    p.add_argument("--protocol", choices=tuple(PROTOCOLS), default="standard", action=_ProtocolAction,
                   help="a named set of the options below, each applied unless the command line gives that "
                        "option itself (recorded with the campaign; --resume needs the same): standard, every "
                        "option's own default (default); precise (docs/protocol.md 2.5), --processes 6 "
                        "--alloc-order alternate --adaptive --adaptive-scope cell --precision 0.01 "
                        "--control every-gate --planted-check 1")
    r = parser.add_argument_group("rounds")
    r.add_argument("--rounds", type=int, default=21, help="accepted rounds per side and cell (min 5; default 21)")
    options.add_warmup_option(r, default=2, minimum=MIN_WARMUP, runs="warm-up rounds per side")
    r.add_argument("--processes", type=int, default=3, metavar="P", action=_GivenValue,
                   help="worker processes per cell, each a fresh process measuring ceil(rounds / P) pairs; the "
                        "interval resamples processes, then pairs (default 3; 1: measure in this process)")
    r.add_argument("--worker-timeout", type=float, default=WORKER_TIMEOUT_S, metavar="SECONDS",
                   help="a worker process silent this long inside a cell (or "
                        f"{SILENCE_MULTIPLE:g} times its longest silence so far, if longer) is taken as hung: killed, its cell worker_failed as for a crash, its "
                        f"finished rounds kept (default {WORKER_TIMEOUT_S:g}; loading a graph gets at least "
                        f"{SETUP_TIMEOUT_S:g})")
    r.add_argument("--adaptive", action=_GivenConst,
                   help="after --rounds, continue until the 95%% interval of the ratio is within --precision")
    r.add_argument("--no-adaptive", dest="adaptive", action=_GivenConst, const=False,
                   default=argparse.SUPPRESS, resets="adaptive_scope",
                   help="no adaptive continuation (what turns off --protocol precise's --adaptive)")
    r.add_argument("--precision", type=float, default=0.01, action=_GivenValue,
                   help="relative half-width target (default 0.01)")
    r.add_argument("--max-rounds", type=int, default=None,
                   help="adaptive limit (default 4 x --rounds): per cell with --adaptive-scope cell, split over the "
                        "workers with process")
    r.add_argument("--adaptive-scope", choices=("process", "cell"), default="process", action=_GivenValue,
                   help="what --adaptive judges: process, each worker's own pairs (default); cell, the cell's "
                        "interval over its processes and pairs, adding worker processes until it is within "
                        "--precision or the budget is spent (then the cell is flagged noisy)")
    r.add_argument("--max-processes", type=int, default=None, metavar="P",
                   help="with --adaptive-scope cell: worker processes per cell at most (default 4 x --processes)")
    r.add_argument("--min-processes", type=int, default=None, metavar="P",
                   help="with --adaptive-scope cell: worker processes a cell needs before its interval may be "
                        "judged precise (default 3, or --max-processes when lower: two processes can agree by chance)")
    r.add_argument("--max-rejects", type=int, default=None,
                   help="rejected pairs before a cell is too noisy (default: --rounds)")
    r.add_argument("--order", choices=("abba", "random"), default="abba", help="round order (default abba)")
    r.add_argument("--seed", type=int, default=0, help="seed of the random order and the bootstrap")
    n = parser.add_argument_group("noise sources (issue 32; off by default, recorded when used)")
    n.add_argument("--alloc-order", choices=("fixed", "alternate", "random"), default="fixed", action=_GivenValue,
                   help="the order each worker process allocates the two sides' results and workspaces in: "
                        "fixed, A then B (default); alternate, B first in odd workers; random, drawn per "
                        "worker from --seed. Recorded per worker and round, replayed on --resume")
    n.add_argument("--l2-flush", action="store_true",
                   help="before every round of a CUDA side, outside the timers, write a device buffer twice the "
                        "L2's size so that each round starts with the sides' data out of the L2 (a no-op, "
                        "recorded as such, on a host side)")
    n.add_argument("--discard-after-clock-change", type=int, default=0, metavar="N",
                   help="reject (and repeat) the first N rounds from each observed change of the SM clock "
                        "between rounds (NVML, observe mode); counted per worker and cell (default 0: none)")
    r.add_argument("--no-control", action=_GivenConst, resets="control_scope",
                   help="skip the A/A control cell (side A against itself on the first graph and batch)")
    r.add_argument("--control", choices=("first", "every-gate"), default="first", dest="control_scope",
                   action=_GivenValue,
                   help="where the A/A control cell runs: first, on the first graph's first batch and objective "
                        "(default); every-gate, on every graph's (one control row per gate in the report)")
    c = parser.add_argument_group("clocks and contamination")
    c.add_argument("--lock-clocks", metavar="base|max|MHZ[,MEM]", default=None,
                   help="lock the GPU clocks via NVML (needs admin rights; never on shared machines). "
                        "Default: observe only")
    c.add_argument("--min-clock-fraction", type=float, default=0.9,
                   help="reject rounds whose SM clock falls below this fraction of the max (default 0.9)")
    c.add_argument("--max-foreign-cpu", type=float, default=1.0,
                   help="reject rounds with more foreign CPU load than this many cores (default 1.0)")
    v = parser.add_argument_group("verification")
    v.add_argument("--verify", choices=("host",), default=None,
                   help="host: the host reference is the third party of every guard")
    v.add_argument("--verify-syncs", action="store_true",
                   help="count synchronizing CUDA calls with CUPTI and compare with the engines' count")
    v.add_argument("--floor", action="store_true",
                   help="before the campaign, measure the floor constants on this GPU (bench/floor.py: one "
                        "grid barrier + one dependent chain of loads, at the fused engine's whole-device "
                        "grid), record them with the GPU and show each fused side's floor and measured / "
                        "floor in the report's push section (issue 34; a resumed campaign keeps its own)")
    o = parser.add_argument_group("records")
    options.add_campaign_out_option(o)
    o.add_argument("--resume", action="store_true", help="continue the campaign recorded in --out")
    o.add_argument("--force", action="store_true",
                   help="replace the campaign recorded in --out (without it, or --resume, a folder that holds "
                        "a campaign is refused)")
    o.add_argument("--allow-dirty", action="store_true", help="allow a dirty working tree (printed in the report)")
    options.add_input_options(o)
    options.add_no_progress_option(o)
    t = parser.add_argument_group("testing the statistics")
    t.add_argument("--plant-delay", metavar="SIDE:PERCENT", default=None,
                   help="TEST HOOK: delay side SIDE (A, B or its label) by PERCENT %% of its warm-up median "
                        "engine region in every cell (a host busy wait at the end of the region, after the "
                        "engine's work); the records and the report say the campaign is planted")
    t.add_argument("--planted-check", metavar="PERCENT", type=_percent_or_off, default=None, action=_GivenValue,
                   help="the proof in the report: after every cell, measure side A against itself with PERCENT %% "
                        "planted on role B (as --plant-delay does) on the campaign's shortest and longest cell "
                        "(side A's median engine region; the choice is recorded and replayed on --resume), and "
                        "show whether each check detected it (its interval's lower bound above 1). The "
                        "campaign's own cells are measured as without it; a missed detection fails the proof "
                        "in the report, not the exit status. 0 plants nothing (must not detect); off, no checks "
                        "(what turns off --protocol precise's). Default: off")
    graph_file.add_arguments(parser)


def _written(args, out) -> tuple:
    from engines.io import default_cache_dir

    return default_cache_dir(args.cache_dir), out


def _inputs(names, args, out, spec=None):
    """The gates, then the graph file, each prepared (or read from the cache) when the campaign
    reaches it (one graph in memory); unreadable inputs are exit 2."""
    from bench.graph_file import prepare_graph_file
    from bench.prepare import prepare_gate
    from protocol.campaign import PendingInput

    written = _written(args, out)
    inputs = [PendingInput(name, lambda name=name: prepared(
        name, lambda: prepare_gate(name, data_dir=args.data_dir, cache_dir=args.cache_dir,
                                   progress=not args.no_progress), written)) for name in names]
    if spec is not None:
        inputs.append(PendingInput(spec.name, lambda: prepared(
            spec.name, lambda: prepare_graph_file(spec, cache_dir=args.cache_dir, progress=not args.no_progress),
            written)))
    return inputs


def _graph_file_spec(args):
    try:
        return graph_file.spec_from_args(args)
    except graph_file.GraphFileError as exc:
        raise UsageError(str(exc)) from None


def _gate_names(args, spec) -> list[str]:
    """The gates to measure: ``--graphs``, else the four gates (none beside a ``--graph-file``)."""
    from bench.gates import GATE_NAMES

    gates = _split_list(args.graphs)
    if gates is None:
        gates = [] if spec is not None else list(GATE_NAMES)
    check_gate_names(gates)
    if spec is not None and spec.name in gates:
        raise UsageError(f"the graph file's name {spec.name} is also in --graphs; give it another with --name")
    return gates


def _objectives(args) -> list[int] | None:
    """``--objectives`` as integers (None: every objective)."""
    return options.parse_objectives(args.objectives)


def _check_selection(args, spec) -> None:
    """``--batches`` and ``--objectives`` against what every graph of a campaign has, before
    campaign.json exists: refused later, they would leave an unfinished campaign behind that only
    ``--force`` gets past (issue 28). Every graph gets the same three batches; the gates and a
    graph file with drawn weights have K = 3 objectives (a file's own weights are counted once it
    is identified: _check_file_objectives)."""
    from bench.batches import check_batch_names
    from bench.weights import NUM_OBJECTIVES

    check_batch_names(_split_list(args.batches))
    if spec is None or spec.weights != "file":
        options.check_objectives_fit(_objectives(args) or [], NUM_OBJECTIVES, "every graph")


def _check_file_objectives(args, spec, out) -> None:
    """``--objectives`` against a graph file's own weight columns (``--weights file``), before
    campaign.json exists (issue 28): the count is known only once the file is read."""
    wanted = _objectives(args) or []
    if spec.weights != "file" or not wanted:
        return
    count = prepared(spec.name, lambda: graph_file.weight_columns(spec, cache_dir=args.cache_dir),
                     _written(args, out))
    options.check_objectives_fit(wanted, count, str(spec.path))


def _check_outputs(args, out: str) -> None:
    """Exit 2 before any work when the records or the cache cannot be written, when ``--out``
    holds a campaign (or round files) and neither ``--resume`` nor ``--force`` says what to do
    with it (protocol.md §9: no record is ever replaced silently), or (``--resume``) when the
    records to continue are damaged."""
    from protocol.campaign import check_out_records, check_out_writable

    check_out_writable(out)
    options.check_cache_dir(args.cache_dir)
    check_out_records(out, resume=args.resume, force=args.force)


def _reproduce_command(argv) -> str:
    return "python bench/perf_ab.py engines " + " ".join(shlex.quote(a) for a in argv)


def build_config(args, spec=None):
    """The campaign's parameters; a ``--graph-file`` (``spec``, hashed by
    :func:`bench.graph_file.identified`) is recorded by its identity, so that ``--resume`` refuses
    another file or other options."""
    from protocol.campaign import campaign_config

    return campaign_config(
        sides=args.sides,
        graphs=_gate_names(args, spec) + ([spec.name] if spec is not None else []),
        graph_file=None if spec is None else spec.identity(),
        batches=_split_list(args.batches),
        objectives=_objectives(args),
        rounds=args.rounds,
        warmup=args.warmup,
        processes=args.processes,
        adaptive=args.adaptive,
        precision=args.precision,
        max_rounds=args.max_rounds,
        adaptive_scope=args.adaptive_scope,
        max_processes=args.max_processes,
        min_processes=getattr(args, "min_processes", None),
        max_rejects=args.max_rejects,
        order=args.order,
        seed=args.seed,
        min_clock_fraction=args.min_clock_fraction,
        max_foreign_cpu=args.max_foreign_cpu,
        lock_clocks=args.lock_clocks,
        verify_host=args.verify == "host",
        verify_syncs=args.verify_syncs,
        control=not args.no_control,
        control_scope=getattr(args, "control_scope", "first"),
        allow_dirty=args.allow_dirty,
        plant_delay=args.plant_delay,
        planted_check=getattr(args, "planted_check", None),
        alloc_order=args.alloc_order,
        l2_flush=args.l2_flush,
        discard_after_clock_change=args.discard_after_clock_change,
        protocol=getattr(args, "protocol", "standard"),
        worker_timeout=getattr(args, "worker_timeout", WORKER_TIMEOUT_S),
    )


def data_dir_used(args) -> str | None:
    """The folder of real graph files this command searched first: ``--data-dir``, else the
    environment's (``$SSSPAB_DATA_DIR``, bench.gates); None: the built-in default."""
    from bench.gates import data_dir_from_environment

    if args.data_dir is not None:
        return args.data_dir
    return data_dir_from_environment()


def _rebuild_argv(args, spec=None, *, gates=None, out=None) -> list[str]:
    """The command line that reproduces this campaign: every option that decides what is measured
    and where its inputs and records are (the gates as measured, ``--out``, ``--data-dir``, the
    sides, rounds, limits, a planted delay). Left out: ``--resume`` / ``--force`` (what to do with
    records already in ``--out``), ``--allow-dirty``, ``--cache-dir`` and ``--no-progress`` (none
    changes what is measured). Paths are named relative to the repository root when inside it,
    else as typed (:func:`protocol.reproduce.line_path`), so the line runs from the root anywhere."""
    from protocol.reproduce import line_path

    argv = ["--sides", args.sides, "--rounds", str(args.rounds), "--warmup", str(args.warmup),
            "--order", args.order, "--seed", str(args.seed)]
    # a preset by its name (recorded: --resume needs it) and below, as every option, by the values
    # it resolved to: explicit options win over the preset, so the line reproduces this campaign
    # even once the preset's table has been tuned
    if getattr(args, "protocol", "standard") != "standard":
        argv += ["--protocol", args.protocol]
    gates = _split_list(args.graphs) if gates is None else gates
    for flag, value in (("--graphs", gates), ("--batches", _split_list(args.batches)),
                        ("--objectives", _split_list(args.objectives))):
        if value:
            argv += [flag, *value]
    # the worker processes of a campaign (--processes), where this version of the command has them
    for flag, value in (("--processes", getattr(args, "processes", None)), ("--max-rounds", args.max_rounds),
                        ("--max-rejects", args.max_rejects), ("--lock-clocks", args.lock_clocks)):
        if value is not None:
            argv += [flag, str(value)]
    if args.adaptive:
        argv += ["--adaptive", "--precision", str(args.precision)]
        if getattr(args, "adaptive_scope", "process") != "process":
            argv += ["--adaptive-scope", args.adaptive_scope]
    if getattr(args, "max_processes", None) is not None:
        argv += ["--max-processes", str(args.max_processes)]
    if getattr(args, "min_processes", None) is not None:
        argv += ["--min-processes", str(args.min_processes)]
    if getattr(args, "alloc_order", "fixed") != "fixed":
        argv += ["--alloc-order", args.alloc_order]
    if getattr(args, "l2_flush", False):
        argv += ["--l2-flush"]
    if getattr(args, "discard_after_clock_change", 0):
        argv += ["--discard-after-clock-change", str(args.discard_after_clock_change)]
    if args.min_clock_fraction != 0.9:
        argv += ["--min-clock-fraction", str(args.min_clock_fraction)]
    if args.max_foreign_cpu != 1.0:
        argv += ["--max-foreign-cpu", str(args.max_foreign_cpu)]
    if args.verify:
        argv += ["--verify", args.verify]
    if args.verify_syncs:
        argv += ["--verify-syncs"]
    if getattr(args, "floor", False):
        argv += ["--floor"]
    if args.no_control:
        argv += ["--no-control"]
    if getattr(args, "control_scope", "first") != "first":
        argv += ["--control", args.control_scope]
    if args.plant_delay:
        from protocol import planted_delay
        from protocol.sides import parse_sides

        argv += planted_delay.parse(args.plant_delay, parse_sides(args.sides)).argv()
    if getattr(args, "planted_check", None) is not None:
        argv += ["--planted-check", f"{args.planted_check:g}"]
    argv += _preset_overrides(args, argv)
    if out is not None:
        argv += ["--out", line_path(out)]
    data_dir = data_dir_used(args)
    if data_dir is not None:
        argv += ["--data-dir", line_path(data_dir)]
    return argv + graph_file.argv_of(spec)


def _preset_overrides(args, argv) -> list[str]:
    """The options a preset would set otherwise that the line above leaves out as at their default
    (``--alloc-order fixed``, ``--planted-check off``, ...): spelled out, since the line read again
    with ``--protocol`` would otherwise take the preset's value for them."""
    from protocol.config import PROTOCOLS

    preset = PROTOCOLS[getattr(args, "protocol", "standard")]
    extra = []
    for flag, dest in (("--processes", "processes"), ("--precision", "precision"),
                       ("--alloc-order", "alloc_order"), ("--adaptive-scope", "adaptive_scope"),
                       ("--control", "control_scope"), ("--planted-check", "planted_check")):
        value = getattr(args, dest)
        if dest in preset and flag not in argv and value != preset[dest]:
            extra += [flag, "off" if value is None else f"{value:g}" if isinstance(value, float) else str(value)]
    if preset.get("adaptive") and not args.adaptive:
        extra.append("--no-adaptive")
    return extra


def measure_floor(sides):
    """``--floor``: the floor constants of this GPU (bench/floor.py), printed; a UsageError when no
    side runs on CUDA, an EnvironmentProblem when they cannot be measured here."""
    if not any(side.needs_cuda for side in sides):
        raise UsageError("--floor measures the fused engine's floor on a GPU: neither side runs on CUDA")
    from engines.sssp.cuda import runtime

    from . import floor

    if not runtime.is_available():
        raise EnvironmentProblem("--floor needs CuPy and a CUDA GPU")
    try:
        constants = floor.measure()
    except floor.FloorError as exc:
        raise EnvironmentProblem(f"--floor: {exc}") from exc
    print(f"perf_ab.py engines: {constants.describe()}", file=sys.stderr, flush=True)
    return constants


def main(args) -> int:
    """Parse, check, prepare the inputs lazily and run the campaign (:func:`protocol.campaign.run_campaign`)."""
    from protocol.campaign import failure_exit_code, lock_out, run_campaign
    from protocol.clocks import LockRequest
    from protocol.environment import REPO_ROOT

    from .worker_inputs import CachedInputs

    out = args.out or str(REPO_ROOT / "results")
    lock = None
    try:
        spec = _graph_file_spec(args)
        if args.lock_clocks:
            LockRequest.parse(args.lock_clocks)  # a usage error before the folder is touched
        _check_selection(args, spec)
        lock = lock_out(out)
        _check_outputs(args, out)
        if spec is not None:  # its SHA-256, for the parameters and the preparation (hashed once)
            spec = prepared(spec.name, lambda: graph_file.identified(spec), _written(args, out))
            _check_file_objectives(args, spec, out)
        config = build_config(args, spec)
        gates = [g for g in config.graphs if spec is None or g != spec.name]
        # before the campaign opens its instruments (CUPTI with --verify-syncs); a resume keeps the
        # constants its campaign recorded
        floor = measure_floor(config.sides) if args.floor and not args.resume else None
        return int(run_campaign(
            config, _inputs(gates, args, out, spec), out, resume=args.resume, force=args.force,
            progress=not args.no_progress, out_lock=lock,
            reproduce_command=_reproduce_command(_rebuild_argv(args, spec, gates=gates, out=out)),
            input_loader=CachedInputs(args.data_dir, args.cache_dir, spec), floor=floor,
        ))
    except (Exception, KeyboardInterrupt) as exc:
        return int(failure_exit_code(exc, out))
    finally:
        if lock is not None:
            lock.release()


__all__ = ["add_arguments", "main", "build_config", "measure_floor", "DEFAULT_SIDES"]
