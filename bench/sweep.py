"""``perf_ab.py sweep``: update or recompute? A batch-size sweep per graph, locality and engine (issue 33).

For each graph (the gates of ``--graphs``, or a ``--graph-file`` as ``perf_ab.py engines`` takes
it), batch sizes in a geometric series (``--sizes``, default 10, 100, 1k, 10k, 100k, 1M; a size
above the graph's edge count is dropped, and ``sweep.json`` and the output say which and why), two
localities (``uniform``: drawn like safe50k over the whole graph; ``local``: like local10k, within
the gate's radius of the same centre; both by :func:`bench.batches.draw_batch` with its seed 777,
only the size changes, safe filter on) and each engine of ``--engines``: a cell per (size,
locality, objective) whose side A is that engine's whole ``update()`` and side B ``compute()``
from scratch on the updated graph on the same engine (:mod:`bench.sweep_sides`).

Each (graph, engine) is one ordinary campaign of the protocol (:class:`protocol.runner.CampaignRunner`:
worker processes, interleaved counterbalanced rounds, guard, checks, clocks and contamination,
records, A/A control, ``--resume``) in ``--out/campaigns/<graph>/<engine>/``; ``--out/sweep.json``
(versioned) holds the sweep's parameters, the sizes kept and dropped per graph and where each
campaign is; ``--out/crossover.json`` the update/recompute ratio per size with its 95 % interval
and the crossover (:mod:`protocol.crossover`), rebuilt from the round records.

Checks before times count: the guard compares the update's tree byte for byte with compute() from
scratch on the same engine; ``--verify host`` (default for a CUDA engine on a graph up to
``--host-reference-cap`` vertices) adds the host reference as a third party.

Exit status as docs/protocol.md §8 (the worst of the campaigns').
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

try:  # the error classes moved to protocol.errors (the exit-code refactor); older trees have them here
    from protocol.errors import EnvironmentProblem, ProtocolError, UsageError
except ImportError:  # pragma: no cover - depends on the tree
    from protocol.exitcodes import EnvironmentProblem, ProtocolError, UsageError  # type: ignore
from protocol.exitcodes import ExitCode

from . import graph_file, options

SWEEP_SCHEMA = "ssspab-sweep"
SWEEP_VERSION = 1
#: bump on any change of how the sweep's batches are drawn (part of their cache key)
SWEEP_BATCH_VERSION = 1
DEFAULT_SIZES = (10, 100, 1_000, 10_000, 100_000, 1_000_000)
LOCALITIES = ("uniform", "local")
DEFAULT_ENGINES = "cuda:fused,cuda:operators"
#: a CUDA engine's sweep adds the host reference to every guard up to this many vertices
HOST_REFERENCE_CAP = 2_000_000
_SUFFIXES = ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k"))


# -- sizes ----------------------------------------------------------------------------------------
def size_label(size: int) -> str:
    """10 -> "10", 1000 -> "1k", 1000000 -> "1M" (exact multiples only; else the digits)."""
    for div, suffix in _SUFFIXES:
        if size >= div and size % div == 0:
            return f"{size // div}{suffix}"
    return str(size)


def parse_size(text: str) -> int:
    """"10", "1k", "1M", "1e6", "250000" -> the integer; UsageError otherwise."""
    t = text.strip()
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", t)
    if m:
        value = int(m.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}[m.group(2).lower()]
    else:
        try:
            f = float(t)
        except ValueError:
            raise UsageError(f"--sizes: {text!r} is not a batch size (e.g. 10, 1k, 1M)") from None
        if not f.is_integer():
            raise UsageError(f"--sizes: {text!r} is not a whole number of changes")
        value = int(f)
    if value < 1:
        raise UsageError(f"--sizes: {text!r}: a batch has at least one change")
    return value


def parse_sizes(values) -> list[int]:
    sizes = sorted({parse_size(v) for v in options.split_names(values) or []})
    if not sizes:
        raise UsageError("--sizes: no size given")
    return sizes


def size_series(num_edges: int, sizes=DEFAULT_SIZES) -> tuple[list[int], list[dict]]:
    """(sizes kept, [{"size", "reason"}] dropped): a batch may not hold more changes than the
    graph has edges (its deletions are drawn from them and half of a batch is deletions)."""
    kept, dropped = [], []
    for size in sorted(set(int(s) for s in sizes)):
        if size > num_edges:
            dropped.append({"size": size, "reason": f"more changes than the graph's {num_edges:,} edges"})
        else:
            kept.append(size)
    return kept, dropped


def batch_name(locality: str, size: int) -> str:
    return f"{locality}-{size_label(size)}"


def parse_batch_name(name: str) -> tuple[str, int]:
    locality, _, label = name.partition("-")
    return locality, parse_size(label)


# -- engines --------------------------------------------------------------------------------------
def parse_engines(text: str) -> list[str]:
    from protocol.sides import parse_side

    names = [p.strip() for p in (text or "").split(",") if p.strip()]
    if not names:
        raise UsageError("--engines: no engine given (e.g. host, or cuda:fused,cuda:operators)")
    labels = [parse_side(n).label for n in names]  # UsageError for an unknown one
    if len({label.lower() for label in labels}) != len(labels):
        raise UsageError(f"--engines {text!r}: an engine is named twice")
    return labels


def engine_folder(engine: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "-", engine)


# -- the sweep's inputs ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepInputs:
    """``loader(name)`` -> the GraphInput of a sweep graph: the prepared graph, its trees and the
    sweep's batches (drawn once by the campaign process and cached; a worker process reads them
    back). Picklable: it travels to the spawned workers."""

    data_dir: str | None = None
    cache_dir: str | None = None
    spec: object = None  # bench.graph_file.GraphFileSpec (identified), or None
    sizes: tuple = DEFAULT_SIZES
    localities: tuple = LOCALITIES
    progress: bool = False

    def prepared(self, name: str):
        if self.spec is not None and name == self.spec.name:
            from .graph_file import prepare_graph_file

            return prepare_graph_file(self.spec, cache_dir=self.cache_dir, progress=self.progress)
        from .prepare import prepare_gate

        return prepare_gate(name, data_dir=self.data_dir, cache_dir=self.cache_dir, progress=self.progress)

    def __call__(self, name: str):
        return sweep_input(self.prepared(name), self.sizes, self.localities, cache_dir=self.cache_dir)[0]


def _radius(prepared) -> int:
    local = prepared.batches.get("local10k")
    if local is None or "radius" not in local.facts:
        raise UsageError(f"{prepared.name}: no local radius in its prepared batches (local10k)")
    return int(local.facts["radius"])


def sweep_input(prepared, sizes, localities, *, cache_dir=None):
    """(GraphInput with the sweep's batches, dropped sizes): batches drawn by
    :func:`bench.batches.draw_batch` (seed 777, safe filter) at every kept size and locality,
    cached under ``<cache>/sweep/``."""
    from engines import Batch
    from engines.io import default_cache_dir
    from engines.io.cache import load_arrays, save_arrays
    from protocol.config import BatchInput, GraphInput

    from . import batches as batches_mod
    from .prepare import cache_key

    graph = prepared.graph
    kept, dropped = size_series(graph.num_edges, sizes)
    radius = _radius(prepared)
    key = cache_key({"graph": prepared.facts.get("sha256") or repr(sorted(prepared.origin.items())),
                     "n": graph.num_vertices, "m": graph.num_edges,
                     "batches": sorted(b.digest for b in prepared.batches.values()),
                     "sizes": kept, "localities": list(localities), "radius": radius, "source": prepared.source,
                     "seed": batches_mod.BATCH_SEED, "generator": batches_mod.BATCH_GENERATOR_VERSION,
                     "version": SWEEP_BATCH_VERSION})
    folder = default_cache_dir(cache_dir) / "sweep"
    arrays_path, facts_path = folder / f"{prepared.name}-{key}.npz", folder / f"{prepared.name}-{key}.json"
    drawn: dict = {}
    arrays = load_arrays(arrays_path)
    if arrays is not None and facts_path.is_file():
        try:
            record = json.loads(facts_path.read_text())
            for name, facts in record["batches"].items():
                drawn[name] = batches_mod.BatchArrays(
                    *(arrays[f"{name}__{part}"] for part in
                      ("insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst")), facts=facts)
            dropped = record["dropped"]
        except (OSError, ValueError, KeyError):
            drawn = {}
    if not drawn:
        from .graphfacts import adjacency
        import numpy as np

        matrix = adjacency(graph.num_vertices, np.asarray(graph.row_ptr), np.asarray(graph.col_ind))
        dropped = list(dropped)
        for locality in localities:
            for size in kept:
                name = batch_name(locality, size)
                spec = batches_mod.BatchSpec(name, size, safe=True, local=locality == "local")
                try:
                    drawn[name] = batches_mod.draw_batch(spec, graph, radius=radius, source=prepared.source,
                                                         matrix=matrix)
                except batches_mod.BatchDrawError as exc:
                    dropped.append({"size": size, "locality": locality, "reason": str(exc)})
        folder.mkdir(parents=True, exist_ok=True)
        save_arrays(arrays_path, **{f"{name}__{part}": arr for name, b in drawn.items()
                                    for part, arr in b.arrays().items()})
        facts_path.write_text(json.dumps({"batches": {n: b.facts for n, b in drawn.items()}, "dropped": dropped},
                                         indent=1, sort_keys=True))
    batches = {name: BatchInput(name, Batch(b.insert_src, b.insert_dst, b.insert_weights, b.delete_src,
                                            b.delete_dst), dict(b.facts), b.facts["digest"])
               for name, b in drawn.items()}
    gi = GraphInput(prepared.name, prepared.origin, graph, prepared.source, prepared.facts, prepared.trees,
                    batches)
    return gi, dropped


# -- records --------------------------------------------------------------------------------------
@dataclass
class SweepStore:
    """The sweep's folder: sweep.json, crossover.json and one campaign folder per (graph, engine)."""

    root: Path
    campaigns: dict = field(default_factory=dict)

    def __post_init__(self):
        self.root = Path(self.root)

    @property
    def sweep_path(self) -> Path:
        return self.root / "sweep.json"

    @property
    def crossover_path(self) -> Path:
        return self.root / "crossover.json"

    def campaign_dir(self, graph: str, engine: str) -> Path:
        return self.root / "campaigns" / graph / engine_folder(engine)

    def has_sweep(self) -> bool:
        return self.sweep_path.is_file()

    def read_sweep(self) -> dict:
        try:
            record = json.loads(self.sweep_path.read_text())
        except FileNotFoundError:
            raise UsageError(f"no sweep records in {self.root} (sweep.json is missing)") from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"{self.sweep_path}: damaged ({exc})") from None
        if not isinstance(record, dict) or record.get("schema") != SWEEP_SCHEMA:
            raise UsageError(f"{self.sweep_path}: not a sweep record")
        if record.get("schema_version") != SWEEP_VERSION:
            raise UsageError(f"{self.sweep_path}: schema version {record.get('schema_version')}, this tool reads "
                             f"{SWEEP_VERSION}")
        return record

    def write_sweep(self, record: dict) -> None:
        from protocol.records import write_json

        self.root.mkdir(parents=True, exist_ok=True)
        write_json(self.sweep_path, record)

    def write_crossover(self, record: dict) -> None:
        from protocol.records import write_json

        write_json(self.crossover_path, record)


#: what side B's time is in a sweep's ratio: compute() alone (its engine region; the issue's
#: crossover), or its whole round, the batch applied and then compute() (what a user who
#: recomputes pays: the graph has to take the batch either way)
AGAINST = {"compute": "engine_host_ms", "apply_compute": "update_host_ms"}


def sweep_points(rounds, *, against: str = "compute", resamples: int = 2000, seed: int = 0) -> dict:
    """{(graph, locality, objective): [SizePoint]} from a campaign's round records (the A/A control
    left out): side A's whole update() time against side B's compute() (``against="compute"``,
    its engine region) or its whole round (``"apply_compute"``)."""
    from protocol.analysis import accepted, paired_groups
    from protocol.crossover import size_point

    out: dict = {}
    if rounds is None or len(rounds) == 0:
        return out
    rows = rounds[~rounds["cell"].str.endswith("/control")]
    rows = rows.assign(sweep_ms=rows["update_host_ms"].where(rows["role"] == "A", rows[AGAINST[against]]))
    for (graph, batch, objective), cell in rows.groupby(["graph", "batch", "objective"], sort=False):
        locality, size = parse_batch_name(batch)
        if accepted(cell).empty:
            continue
        update_ms, compute_ms, labels = paired_groups(cell, "sweep_ms")
        point = size_point(size, update_ms, compute_ms, labels, resamples=resamples, seed=seed)
        whole_b = accepted(cell)
        whole_b = whole_b.loc[whole_b["role"] == "B", "update_host_ms"].dropna()
        if len(whole_b):
            point = dataclasses.replace(point, apply_compute_ms=float(whole_b.median()))
        if against == "apply_compute":  # side B's compute() alone, as in the other ratio
            alone = accepted(cell)
            alone = alone.loc[alone["role"] == "B", "engine_host_ms"].dropna()
            point = dataclasses.replace(point, compute_ms=float(alone.median()) if len(alone) else None)
        out.setdefault((graph, locality, int(objective)), []).append(point)
    for points in out.values():
        points.sort(key=lambda p: p.size)
    return out


def build_crossover(store: SweepStore, sweep: dict) -> dict:
    """crossover.json from the campaigns' round records: per graph, locality, engine and
    objective, the points (size, update / compute ratio, interval, medians) and the crossover;
    ``with_apply`` the same against side B's whole round (the batch applied, then compute())."""
    from protocol.crossover import find_crossover
    from protocol.records import RecordStore

    params = sweep["parameters"]
    entries = []
    for graph, info in sweep["graphs"].items():
        for engine in params["engines"]:
            folder = store.root / info["campaigns"][engine]
            records = RecordStore(folder)
            if not records.has_campaign():
                continue
            rounds = records.read_rounds()
            points = sweep_points(rounds, resamples=params["bootstrap_resamples"], seed=params["seed"])
            whole = sweep_points(rounds, against="apply_compute", resamples=params["bootstrap_resamples"],
                                 seed=params["seed"])
            for locality in params["localities"]:
                for objective in params["objectives"] or [0]:
                    pts = points.get((graph, locality, objective), [])
                    found = find_crossover(pts)
                    wpts = whole.get((graph, locality, objective), [])
                    wfound = find_crossover(wpts)
                    entries.append({"graph": graph, "locality": locality, "engine": engine, "objective": objective,
                                    "points": [p.as_dict() for p in pts], "crossover": found.as_dict(),
                                    "summary": found.describe(),
                                    "with_apply": {"points": [p.as_dict() for p in wpts],
                                                   "crossover": wfound.as_dict(),
                                                   "summary": wfound.describe("apply + compute()")}})
    return {"schema": SWEEP_SCHEMA + "-crossover", "schema_version": SWEEP_VERSION,
            "ratio": "update / compute: median of the per-pair ratios of side A's whole update() (update_host_ms) "
                     "to side B's compute() from scratch (engine_host_ms), 95 % hierarchical bootstrap interval; "
                     "with_apply: the same against side B's whole round (update_host_ms: the batch applied, then "
                     "compute())",
            "entries": entries}


# -- the command ----------------------------------------------------------------------------------
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
    r.add_argument("--warmup", type=int, default=2, help="untimed warm-up rounds per side (min 2; default 2)")
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
    try:
        values = [int(k) for k in options.split_names(args.objectives) or ["0"]]
    except ValueError as exc:
        raise UsageError(f"--objectives: {exc}") from None
    if any(k < 0 for k in values):
        raise UsageError("--objectives: objectives are numbered from 0")
    return sorted(set(values))


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

    from .engines_cmd import _check_graph_names, _graph_file_spec, _prepared, _written

    out = args.out or str(REPO_ROOT / "results" / "sweep")
    if getattr(args, "report_only", False):
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
    _check_graph_names(gates)
    if args.resume and args.force:
        raise UsageError("--resume continues the sweep in --out, --force replaces it: pass one of them")
    device = _check_cuda(engines)  # exit 3 before any record is written
    problem = output_problem(out, folder=True)
    if problem:
        raise UsageError(f"--out: the records folder cannot be written: {problem}")
    lock = OutLock(out).acquire()
    try:
        store = SweepStore(out)
        if spec is not None:
            spec = _prepared(spec.name, lambda: graph_file.identified(spec), _written(args, out))
        if spec is None or spec.weights != "file":  # the gates and drawn weights have K columns: refuse
            from .weights import NUM_OBJECTIVES      # before sweep.json exists (as engines does, issue 28)

            outside = [k for k in objectives if k >= NUM_OBJECTIVES]
            if outside:
                raise UsageError(f"--objectives: objective {outside[0]} is outside [0, {NUM_OBJECTIVES}): the graphs "
                                 f"have {NUM_OBJECTIVES} weight columns, numbered from 0")
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
            from protocol.runner import utc_now

            sweep = {"schema": SWEEP_SCHEMA, "schema_version": SWEEP_VERSION, "started_utc": utc_now(),
                     "parameters": params, "graphs": {},
                     "reproduce": _reproduce(_rebuild_argv(args, engines, sizes, localities, objectives, gates,
                                                           spec, out), out)}
            store.write_sweep(sweep)
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
                prepared = _prepared(graph, lambda: shown.prepared(graph), _written(args, out))
                gi, dropped = _prepared(graph, lambda: sweep_input(prepared, sizes, localities,
                                                                   cache_dir=args.cache_dir), _written(args, out))
                del prepared
                n, m = gi.graph.num_vertices, gi.graph.num_edges
                for k in objectives:
                    if not 0 <= k < gi.graph.num_weights:
                        raise UsageError(f"--objectives: objective {k} outside [0, {gi.graph.num_weights}) for {graph}")
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

    try:
        return run_sweep(args)
    except ProtocolError as exc:
        print(f"perf_ab.py sweep: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("perf_ab.py sweep: interrupted; the finished rounds are recorded, continue with --resume",
              file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"perf_ab.py sweep: error: cannot write the records: {os_error_text(exc)}; continue with --resume",
              file=sys.stderr)
        return int(EnvironmentProblem.exit_code)
    except Exception as exc:  # a bug: show the traceback
        print_internal_error("perf_ab.py sweep: ", exc, then=". Once fixed, continue with --resume")
        return int(ExitCode.CORRECTNESS)


__all__ = ["add_arguments", "main", "size_series", "size_label", "parse_size", "SweepInputs", "sweep_input",
           "sweep_points", "build_crossover", "SweepStore", "DEFAULT_SIZES"]


def cli(argv=None) -> int:
    """``python -m bench.sweep ...``: the same as ``perf_ab.py sweep ...``."""
    parser = argparse.ArgumentParser(prog="perf_ab.py sweep", description=__doc__.splitlines()[0])
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return main(args)


if __name__ == "__main__":
    sys.exit(cli())
