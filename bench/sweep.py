"""Update or recompute? A batch-size sweep per graph, locality and engine (issue 33): what
``perf_ab.py sweep`` (its command: bench/sweep_cmd.py) measures and records.

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

Exit status as docs/protocol.md §8 (the worst of the campaigns'; bench/sweep_cmd.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from protocol.errors import UsageError

from . import options
from .sweep_checks import sweep_problem

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
    from protocol.records import write_text

    from . import batches as batches_mod
    from .prepare import cache_key

    graph = prepared.graph
    kept, dropped = size_series(graph.num_edges, sizes)
    radius = _radius(prepared)
    key = cache_key({"graph": prepared.facts.get("sha256") or repr(sorted(prepared.origin.items())),
                     "n": graph.num_vertices, "m": graph.num_edges,
                     "batches": sorted(b.digest for b in prepared.batches.values()),
                     "sizes": kept, "localities": list(localities), "radius": radius, "source": prepared.source,
                     # the sizes dropped for the edge count: the cached record's "dropped" lists them
                     # (two runs keeping the same sizes but asking for others read each other's)
                     "too_large": [d["size"] for d in dropped],
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
        write_text(facts_path, json.dumps({"batches": {n: b.facts for n, b in drawn.items()}, "dropped": dropped},
                                          indent=1, sort_keys=True))
    # in the order they are drawn (locality, then size), whether drawn now or read back from the
    # cache (whose facts file sorts its keys): a resumed sweep plans and records its cells in the
    # order of its first session (the runner compares the inputs by name, whatever the order)
    order = [batch_name(locality, size) for locality in localities for size in kept]
    rank = {name: i for i, name in enumerate(order)}
    batches = {name: BatchInput(name, Batch(b.insert_src, b.insert_dst, b.insert_weights, b.delete_src,
                                            b.delete_dst), dict(b.facts), b.facts["digest"])
               for name, b in sorted(drawn.items(), key=lambda item: rank[item[0]])}
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
        except NotADirectoryError:  # the folder, or one above it, is a file: nothing is damaged
            raise UsageError(f"no sweep records in {self.root}: it is not a folder") from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"{self.sweep_path}: damaged ({exc})") from None
        if not isinstance(record, dict) or record.get("schema") != SWEEP_SCHEMA:
            raise UsageError(f"{self.sweep_path}: not a sweep record")
        version = record.get("schema_version")
        if isinstance(version, bool) or version != SWEEP_VERSION:  # true == 1 in Python: no version
            raise UsageError(f"{self.sweep_path}: schema version {json.dumps(version)}, this tool reads "
                             f"{SWEEP_VERSION}")
        problem = sweep_problem(record)
        if problem:
            raise UsageError(f"{self.sweep_path}: damaged record: {problem}; restore the file, or start a new "
                             "sweep in another --out folder")
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


__all__ = ["DEFAULT_SIZES", "LOCALITIES", "SweepInputs", "SweepStore", "build_crossover", "parse_size",
           "parse_sizes", "size_label", "size_series", "sweep_input", "sweep_points"]
