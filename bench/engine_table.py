#!/usr/bin/env python3
"""A first measurement of the three engines per gate and batch (not the A/B protocol).

For each prepared gate and batch: the engine-region time of ``update()`` for the CUDA fused and
operators engines (CUDA events on the engine stream and host time, median of ``--repeats`` runs
after ``--warmup``), the **whole update, user path** per CUDA engine (the wall time of the complete
``sssp.update(graph, batch, result)`` call, batch validation and upload, device apply, dispatch and
engine, as a user pays it; the call returns after the engine's final synchronization), the host
reference's update time (wall clock, ``--host-repeats`` runs after one untimed, skipped above
``--host-max-vertices``), ``compute()`` per engine, with iterations, epochs and host syncs, and the
derived cost of one host round trip (each engine's host time beyond its engine region, operators'
minus fused's, over the operators engine's extra syncs: round_trip_us), and the
fused engine's grid syncs per run beside the latency floor they imply (bench/floor.py: grid syncs x
(one barrier + one dependent chain of loads), both measured on this GPU at the fused engine's grid
for the graph before its cells, and printed), so a row says how far each engine is from that floor.

Every run starts from the same state: the graph (device-resident, as a CUDA result makes it,
algorithm.md §3.6) restored from its device snapshot and the result re-copied, outside every timer
(the device is synchronized after the restore so that its copies are not timed). No memo: each run
applies the batch anew. The trees of the engines are checked byte for byte against each other (and
the host where it ran; the host reference runs on a host-only copy of the graph, so its numbers hold
no device apply or download).

``--random-graph N,M`` adds a symmetrized random graph of N vertices and about M arcs (seed
RANDOM_SEED, K = 3 weights in [1, 100] drawn per arc) with a 1 % batch (half deletions of existing
arcs; half insertions, of which half re-weight existing arcs and half add random pairs), measured
by the same code. ``--table`` prints the user-path table (graph, batch, engine, engine ms (device),
whole ms, whole - engine, whole / engine, iterations, host syncs) and writes it with ``--out``.

Nothing measured is lost: each row is written to ``--out`` as soon as it is measured, with a line
naming the inputs not yet measured until the last (a command killed later keeps its rows, and its
table says it is incomplete), and Ctrl-C prints and writes the tables of the rows so far, names the
inputs not measured and exits 130 (1 when a measured row's trees differ). ``--graphs`` with no
names measures only ``--random-graph``.

    python bench/engine_table.py --graphs roadNet-PA roadNet-CA --out results/engine_table
    python bench/engine_table.py --graphs roadNet-PA road_usa --batches safe50k local10k \\
        --random-graph 4039,176000 --table
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "engine_table.py")

import numpy as np

from bench import floor, generators, host_bench, options
from bench.batches import check_batch_names
from bench.gates import GATE_NAMES, check_gate_names
from bench.prepare import prepare_gate
from engines import Batch, Graph, sssp
from engines.config import EngineConfig
from engines.exitcodes import ExitCode
from engines.sssp.plan import DEFAULT_PUSH_EXPANSION, PUSH_EXPANSIONS
from protocol import records
from protocol.errors import UsageError, run_command
from protocol.region import RegionProbe, timed_update, timed_updates

#: The CUDA engines of the table (the rows' keys), each an EngineConfig with the table's push
#: expansion (cuda_config).
CUDA_ENGINES = ("fused", "operators")
HOST = EngineConfig.parse("host")
RANDOM_SEED = 4039
RANDOM_BATCH_FRACTION = 0.01
RANDOM_BATCH_NAME = "random1pct"
NUM_WEIGHTS = 3
WEIGHT_LOW, WEIGHT_HIGH = 1, 100
SOURCE = 0
#: Where a graph's measurement hands each row (Table.add).
Emit = Callable[[dict], None]


def push_columns(result, device_ms: float | None) -> dict:
    """The push of the CUDA ``result``'s last run: the median near-list length of its push
    iterations (engines.sssp.cuda.push_profile: a short list waits on latency, a long one on
    throughput) and the engine region's time per iteration."""
    from engines.sssp import cuda

    profile = cuda.push_profile(result)
    per_iteration = (device_ms * 1e3 / profile.iterations
                     if device_ms is not None and profile.iterations else None)
    return {"near_median": profile.median, "us_per_iteration": per_iteration}


# -- inputs -------------------------------------------------------------------------------------
def parse_random_graph(text: str) -> tuple[int, int]:
    """``"N,M"`` -> (vertices, arcs)."""
    try:
        n_text, m_text = text.split(",")
        n, m = int(n_text), int(m_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected N,M (e.g. 4039,176000)") from None
    if n < 2 or m < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: need at least 2 vertices and 2 arcs")
    if m // 2 > n * (n - 1) // 2:
        raise argparse.ArgumentTypeError(f"{text!r}: {m} arcs do not fit a simple graph of {n} vertices")
    return n, m


def random_graph(n: int, m: int, *, seed: int = RANDOM_SEED) -> Graph:
    """A symmetrized simple random graph: ``m // 2`` distinct undirected pairs (no self-loops),
    uniform over the pairs of ``n`` vertices, stored in both directions (``2 * (m // 2)`` arcs);
    every arc draws its own K = 3 weights in [1, 100] (the gates' convention, inputs.md)."""
    rng = np.random.default_rng([seed, n, m])
    src, dst = generators.both_directions(*generators.distinct_pairs(rng, n, m // 2))
    weights = rng.integers(WEIGHT_LOW, WEIGHT_HIGH + 1, size=(src.size, NUM_WEIGHTS))
    return Graph.from_edges(src, dst, weights, num_vertices=n)


def random_batch(graph: Graph, *, fraction: float = RANDOM_BATCH_FRACTION, seed: int = RANDOM_SEED) -> Batch:
    """``round(fraction * m)`` changes: half deletions of distinct existing arcs; the other half
    insertions, half of them upserts (new weights) of existing arcs, half random new pairs."""
    rng = np.random.default_rng([seed, 1, graph.num_edges])
    m, n = graph.num_edges, graph.num_vertices
    count = max(2, int(round(fraction * m)))
    n_del = count // 2
    n_ins = count - n_del
    n_up = n_ins // 2
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(graph.row_ptr, dtype=np.int64)))
    dst = np.asarray(graph.col_ind, dtype=np.int64)
    picked = rng.choice(m, size=n_del + n_up, replace=False)
    dels, ups = picked[:n_del], picked[n_del:]
    new_src = rng.integers(0, n, size=n_ins - n_up)
    new_dst = (new_src + rng.integers(1, n, size=new_src.size)) % n  # never a self-loop
    return Batch(np.concatenate([src[ups], new_src]), np.concatenate([dst[ups], new_dst]),
                 rng.integers(WEIGHT_LOW, WEIGHT_HIGH + 1, size=(n_ins, NUM_WEIGHTS)),
                 src[dels], dst[dels])


def host_copy(graph: Graph) -> Graph:
    """A host-only graph with the same CSR (the host reference's own graph: on a device-resident
    graph its update would time a device apply and a download, not the host reference)."""
    weights = np.asarray(graph.weights).reshape(graph.num_weights, -1).T
    return Graph.from_csr(np.asarray(graph.row_ptr), np.asarray(graph.col_ind), weights)


# -- timing ---------------------------------------------------------------------------------------
def _device_sync() -> None:
    """Waits for every queued device operation (the restore's copies), outside every timer."""
    import cupy

    cupy.cuda.Device().synchronize()


def _restore(graph, graph_snapshot, result, snapshot, on_device: bool) -> None:
    graph.restore(graph_snapshot)
    result.copy_from(snapshot)
    if on_device:
        _device_sync()


def _time_updates(graph, batch, result, snapshot, graph_snapshot, repeats: int, warmup: int, *,
                  on_device: bool, whole: bool):
    """Timed updates after ``warmup``, each from the restored pre-batch state: a dict of lists
    ``device`` (engine region, CUDA events), ``host`` (engine region, host clock) and, with
    ``whole``, ``whole`` (the complete update() call without a probe, as a user calls it; each
    repeat runs one probed and one plain update, interleaved so that drifts hit both), plus the
    last probed Stats and the plain runs' (invalidated, affected)."""
    probe = RegionProbe()
    times = {"device": [], "host": [], "whole": []}
    stats, whole_counters = None, set()

    def restore():
        _restore(graph, graph_snapshot, result, snapshot, on_device)

    def update(region_probe):
        return sssp.update(graph, batch, result, probe=region_probe)  # returns after the engine's final sync

    for i, timed in enumerate(timed_updates(update, restore, warmup + repeats, probe)):
        stats = timed.stats
        dev = probe.device_ms()
        if i >= warmup:
            times["host"].append(probe.host_ms())
            if dev is not None:
                times["device"].append(dev)
        if whole:
            restore()
            plain = timed_update(update)  # no probe: the call as a user makes it
            whole_counters.add((plain.stats.invalidated, plain.stats.affected))
            if i >= warmup:
                times["whole"].append(plain.update_host_ms)
    return times, stats, whole_counters


def _median(values):
    return statistics.median(values) if values else None


def cuda_config(engine: str, push_expansion: str | None) -> EngineConfig:
    """The configuration of CUDA ``engine`` with the table's push expansion (None: the default)."""
    return EngineConfig("cuda", engine, push_expansion=push_expansion)


def cuda_options(engine: str, push_expansion: str | None) -> dict:
    """The options that select ``engine`` with the table's push expansion (None: the default)."""
    return cuda_config(engine, push_expansion).options


def _compute_ms(graph, source, objective, config: EngineConfig, repeats: int):
    """compute()'s median wall time and its last Stats."""
    times, stats = [], None  # compute() returns after its final synchronization: no extra sync
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = config.compute(graph, source, objective=objective)
        times.append((time.perf_counter() - t0) * 1e3)
        stats = r.stats
    return _median(times), stats


def host_warmup(args) -> int:
    """Untimed runs of the host reference (and of SciPy's recompute beside it) before their timed
    ones: one, or none where ``--warmup 0`` asks for none. A process's first host compute() and
    update() compile or load their Numba kernels: on a fresh H100 machine roadNet-PA's compute()
    took 3,853 ms and its safe50k update 1,659 ms timed cold, against 192 and 384 ms once warm
    (two engine tables of the same code, 2026-12-07)."""
    return min(int(args.warmup), 1)


def host_update_row(host_graph, host_snapshot, batch, source, objective, tree, repeats: int, warmup: int):
    """The host reference's update of ``batch`` from ``tree`` on its host-only graph: ``repeats``
    timed runs after ``warmup`` untimed, each from the restored state. Its row (host time,
    runs, counters) and the tree it computed."""
    d0, p0 = tree
    host_graph.restore(host_snapshot)
    base = HOST.from_arrays(host_graph, source, d0, p0, objective=objective, validate=False, canonicalize=False)
    snapshot = base.clone()
    times, st, _ = _time_updates(host_graph, batch, base, snapshot, host_snapshot, repeats, warmup,
                                 on_device=False, whole=False)
    row = {"host_ms": _median(times["host"]), "runs": len(times["host"]), "iterations": st.iterations,
           "invalidated": st.invalidated, "affected": st.affected}
    return row, base.to_numpy()


def whole_columns(device_ms, whole_ms) -> dict:
    """``whole_ms`` beside the engine region (device events): their difference and ratio."""
    out = {"whole_ms": whole_ms, "whole_minus_engine_ms": None, "whole_over_engine": None}
    if whole_ms is not None and device_ms is not None:
        out["whole_minus_engine_ms"] = whole_ms - device_ms
        out["whole_over_engine"] = whole_ms / device_ms if device_ms > 0 else None
    return out


# -- one graph ------------------------------------------------------------------------------------
def random_graph_name(n: int, m: int) -> str:
    return f"random-{n}-{m}"


def measure_gate(name: str, args, emit: Emit) -> None:
    gate = prepare_gate(name, data_dir=args.data_dir, cache_dir=args.cache_dir, progress=True)
    batches = {b: p.batch for b, p in gate.batches.items() if not args.batches or b in args.batches}
    measure_graph(name, gate.origin.get("kind"), gate.graph, gate.source,
                  gate.trees[args.objective], batches, args, emit)


def random_input(n: int, m: int, objective: int):
    """``(graph, tree, batch)`` of the random graph: ``random_graph``, its tree from SOURCE by the
    host reference (the graph is small) and its 1 % batch."""
    graph = random_graph(n, m)
    return graph, sssp.compute(graph, SOURCE, objective=objective).to_numpy(), random_batch(graph)


def measure_random_graph(n: int, m: int, args, emit: Emit) -> None:
    graph, tree, batch = random_input(n, m, args.objective)
    measure_graph(random_graph_name(n, m), "random", graph, SOURCE, tree, {RANDOM_BATCH_NAME: batch}, args, emit)


def measure_graph(name: str, origin_kind, graph, source: int, tree, batches: dict, args, emit: Emit) -> None:
    """The table rows of one graph: per batch the CUDA engines (engine region and whole update)
    and, below the size limit, the host reference on a host-only copy of the graph. Each row goes
    to ``emit`` as soon as it is measured (``Table.add``), so that an interrupted command keeps it."""
    k = args.objective
    host_ok = args.host_repeats > 0 and graph.num_vertices <= args.host_max_vertices
    host_graph = host_copy(graph) if host_ok else None
    graph.to_device()  # as a CUDA result makes it (algorithm.md §3.6): a device snapshot below
    graph_snapshot = graph.snapshot()
    constants = floor_constants(graph, args)
    host_snapshot = host_graph.snapshot() if host_ok else None
    d0, p0 = tree
    compute_rows = {}
    for engine in CUDA_ENGINES:
        config = cuda_config(engine, args.push_expansion)
        _compute_ms(graph, source, k, config, 1)  # compile, reserve
        compute_rows[engine] = _compute_ms(graph, source, k, config, args.repeats)
    host_warm = host_warmup(args)
    if host_ok:
        host_compute_ms = host_bench.host_compute_ms(host_graph, source, k, 1, host_warm)
        # what a host user's alternative costs: SciPy's Dijkstra from scratch (issue 35)
        scipy_ms = host_bench.scipy_recompute_ms(host_graph, source, k, 1, host_warm)
    for batch_name, batch in batches.items():
        row = {"graph": name, "origin": origin_kind, "n": graph.num_vertices,
               "m": graph.num_edges, "batch": batch_name, "batch_size": len(batch), "objective": k,
               "push_expansion": args.push_expansion or DEFAULT_PUSH_EXPANSION}
        trees = {}
        whole_ok = True
        for engine in CUDA_ENGINES:
            graph.restore(graph_snapshot)
            base = cuda_config(engine, args.push_expansion).from_arrays(graph, source, d0, p0, objective=k,
                                                                         validate=False, canonicalize=False)
            snapshot = base.clone()
            times, st, whole_counters = _time_updates(graph, batch, base, snapshot, graph_snapshot,
                                                      args.repeats, args.warmup, on_device=True, whole=True)
            trees[engine] = base.to_numpy()
            whole_ok &= whole_counters == {(st.invalidated, st.affected)}
            device_ms = _median(times["device"])
            row[engine] = {"device_ms": device_ms, "host_ms": _median(times["host"]), "runs": len(times["host"]),
                           **whole_columns(device_ms, _median(times["whole"])),
                           "whole_runs": len(times["whole"]),
                           "iterations": st.iterations, "epochs": st.epochs, "host_syncs": st.host_syncs,
                           "sync_budget": st.sync_budget, "invalidated": st.invalidated,
                           "affected": st.affected, "engine_used": st.engine_used,
                           "compute_ms": compute_rows[engine][0],
                           "compute_iterations": compute_rows[engine][1].iterations,
                           "compute_epochs": compute_rows[engine][1].epochs,
                           "grid_syncs": st.grid_syncs, "compute_grid_syncs": compute_rows[engine][1].grid_syncs,
                           # the last run is this engine's plain update of the batch
                           **push_columns(base, device_ms)}
        if host_ok:
            row["host"], trees["host"] = host_update_row(host_graph, host_snapshot, batch, source, k, tree,
                                                         args.host_repeats, host_warm)
            row["host"].update(compute_ms=host_compute_ms, scipy_ms=scipy_ms)
        names = list(trees)
        ref = trees[names[0]]
        row["identical"] = all(np.array_equal(ref[0], trees[e][0]) and np.array_equal(ref[1], trees[e][1])
                               for e in names[1:])
        row["identical_counters"] = whole_ok and len(
            {(row[e]["invalidated"], row[e]["affected"]) for e in names}) == 1
        f, o = row["fused"], row["operators"]
        row.update(floor_columns(f, o, constants))
        row["floor_constants"] = None if constants is None else constants.to_dict()
        cost = round_trip_us(f, o)
        if cost is not None:
            row["round_trip_us"] = cost
        emit(row)
    graph.restore(graph_snapshot)


_floor_cache: dict[int, floor.FloorConstants | None] = {}  # grid (blocks) -> constants


def floor_constants(graph, args) -> floor.FloorConstants | None:
    """The floor model's constants at the fused engine's grid for ``graph``, measured once per
    grid size in this process and printed; None with ``--no-floor`` or where they cannot
    be measured (a profiler attached: said on stderr)."""
    if getattr(args, "no_floor", False):
        return None
    blocks = floor.engine_grid(graph)
    if blocks not in _floor_cache:
        try:
            _floor_cache[blocks] = floor.measure(blocks=blocks)
            print(_floor_cache[blocks].describe(), flush=True)
        except floor.FloorError as exc:
            _floor_cache[blocks] = None
            print(f"engine_table.py: no floor column: {exc}", file=sys.stderr, flush=True)
    return _floor_cache[blocks]


def round_trip_us(fused_row: dict, operators_row: dict) -> float | None:
    """What one more host synchronization costs the operators engine beyond the GPU's own work, in
    µs: each engine's host time outside its engine region (host_ms - device_ms: launches, readbacks
    and waits the GPU's work does not cover), the operators engine's minus the fused engine's, over
    the operators engine's extra synchronizations. None without extra synchronizations or without
    both device times. Near zero, or below, where the readbacks overlap the engine's GPU work.

    The host times alone (the column before) charged the syncs with the two engines' different GPU
    work too: on an H100, roadNet-PA safe50k read 166 µs where the host time beyond the device
    region differs by about 2 µs a sync, and road_usa safe50k -217 µs, the operators engine's
    region being the shorter there."""
    extra = operators_row["host_syncs"] - fused_row["host_syncs"]
    if extra <= 0 or fused_row.get("device_ms") is None or operators_row.get("device_ms") is None:
        return None
    beyond_fused = fused_row["host_ms"] - fused_row["device_ms"]
    beyond_operators = operators_row["host_ms"] - operators_row["device_ms"]
    return (beyond_operators - beyond_fused) / extra * 1e3


def floor_columns(fused_row: dict, operators_row: dict, constants: floor.FloorConstants | None) -> dict:
    """The latency floor of the cell (bench/floor.py: the fused engine's grid syncs x the measured
    cost of a barrier and a chain; the operators engine runs the same phases, one kernel each) and
    each engine's engine region over it; compute() likewise."""
    cell_floor = floor.floor_ms(fused_row.get("grid_syncs"), constants)
    compute_floor = floor.floor_ms(fused_row.get("compute_grid_syncs"), constants)
    return {"floor_ms": cell_floor, "compute_floor_ms": compute_floor,
            "fused_over_floor": floor.over_floor(fused_row.get("device_ms"), cell_floor),
            "operators_over_floor": floor.over_floor(operators_row.get("device_ms"), cell_floor),
            "compute_over_floor": floor.over_floor(fused_row.get("compute_ms"), compute_floor)}


# -- output ---------------------------------------------------------------------------------------
def _fmt(v, digits=2):
    return "–" if v is None else f"{v:.{digits}f}"


def markdown(rows: list[dict]) -> str:
    lines = [
        "| graph | batch | fused ms (dev / host) | floor ms | fused / floor | operators ms (dev / host) | "
        "ops / fused | whole update ms (fused / ops) | host ref ms | "
        "compute ms (fused / ops / host / SciPy) | fused it+ep | ops it+ep | near median | µs / push it (fused / ops) | "
        "ops syncs / budget | round trip µs | "
        "fused grid syncs | ops / floor | compute floor ms (fused / floor) | identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f, o, h = r["fused"], r["operators"], r.get("host")
        ratio = (o["device_ms"] / f["device_ms"]) if f["device_ms"] and o["device_ms"] else None
        lines.append(
            f"| {r['graph']} | {r['batch']} | {_fmt(f['device_ms'])} / {_fmt(f['host_ms'])} | "
            f"{_fmt(r.get('floor_ms'), 3)} | {_fmt(r.get('fused_over_floor'), 1)} | "
            f"{_fmt(o['device_ms'])} / {_fmt(o['host_ms'])} | {_fmt(ratio)} | "
            f"{_fmt(f.get('whole_ms'))} / {_fmt(o.get('whole_ms'))} | "
            f"{_fmt(h['host_ms'], 0) if h else 'not run'} | "
            f"{_fmt(f['compute_ms'])} / {_fmt(o['compute_ms'])} / {_fmt(h['compute_ms'], 0) if h else '–'} / "
            f"{_fmt(h.get('scipy_ms'), 0) if h else '–'} | "
            f"{f['iterations']}+{f['epochs']} | {o['iterations']}+{o['epochs']} | "
            f"{_fmt(f.get('near_median'), 0)} | {_fmt(f.get('us_per_iteration'), 1)} / "
            f"{_fmt(o.get('us_per_iteration'), 1)} | "
            f"{o['host_syncs']} / {o['sync_budget']} | {_fmt(r.get('round_trip_us'), 1)} | "
            f"{f.get('grid_syncs', '–')} | {_fmt(r.get('operators_over_floor'), 1)} | "
            f"{_fmt(r.get('compute_floor_ms'), 3)} ({_fmt(r.get('compute_over_floor'), 1)}) | "
            f"{'yes' if r['identical'] and r['identical_counters'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def user_path_table(rows: list[dict]) -> str:
    """One line per (graph, batch, CUDA engine): the engine region (device events) beside the
    fused engine's floor (bench/floor.py; on the fused line) and the whole update() call as a
    user pays it."""
    lines = [
        "| graph | batch | engine | engine ms (device) | floor ms | engine / floor | whole ms | "
        "whole - engine (ms) | whole / engine | iterations | host syncs |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        for engine in CUDA_ENGINES:
            e = r[engine]
            fused = engine == "fused"
            lines.append(
                f"| {r['graph']} | {r['batch']} | {engine} | {_fmt(e['device_ms'], 3)} | "
                f"{_fmt(r.get('floor_ms') if fused else None, 3)} | "
                f"{_fmt(r.get('fused_over_floor') if fused else None, 1)} | {_fmt(e.get('whole_ms'), 3)} | "
                f"{_fmt(e.get('whole_minus_engine_ms'), 3)} | {_fmt(e.get('whole_over_engine'), 2)} | "
                f"{e['iterations']} | {e['host_syncs']} |"
            )
    return "\n".join(lines) + "\n"


def floor_lines(rows: list[dict]) -> str:
    """The floor constants the rows used, one line each (grid sizes differ by graph)."""
    seen = []
    for r in rows:
        c = r.get("floor_constants")
        if c is not None and c not in seen:
            seen.append(c)
    return "".join(floor.FloorConstants.from_dict(c).describe() + "\n" for c in seen)


# -- the rows measured, kept on disk as they come -------------------------------------------------
class Table:
    """The rows measured so far and their files under ``out`` (engine_table.json, engine_table.md,
    with ``whole`` whole_update.md), each written whole through a temporary file (never left half
    written). ``add`` prints a row as JSON and rewrites the files at once, with a closing line that
    names the inputs not yet measured: a command killed later (a timeout's SIGTERM, an error on a
    later graph) keeps every row it measured, and its table says it is incomplete."""

    def __init__(self, out, whole: bool):
        self.rows: list[dict] = []
        self.out = Path(out) if out else None
        self.whole = whole
        self.pending: list[str] = []  # the inputs not measured in full (measure_inputs keeps it)

    def add(self, row: dict) -> None:
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        self.write(self.note("In progress"))

    def note(self, state: str) -> str:
        """The closing line of an unfinished table ("" once nothing is pending)."""
        if not self.pending:
            return ""
        return f"{state}: {self.measured()}; not measured (in full): {', '.join(self.pending)}."

    def measured(self) -> str:
        return f"{len(self.rows)} row{'' if len(self.rows) == 1 else 's'} measured"

    def texts(self, note: str = "") -> list[str]:
        """The engine table (its floor constants and ``note`` below it) and, with ``whole``, the
        user-path table."""
        constants = floor_lines(self.rows)
        table = markdown(self.rows) + ("\n" + constants if constants else "") + (f"\n{note}\n" if note else "")
        return [table] + ([user_path_table(self.rows)] if self.whole else [])

    def write(self, note: str = "") -> None:
        if self.out is None:
            return
        texts = self.texts(note)
        records.write_text(self.out / "engine_table.json", json.dumps(self.rows, indent=1))
        records.write_text(self.out / "engine_table.md", texts[0])
        if self.whole:
            records.write_text(self.out / "whole_update.md", texts[1])

    def show(self, note: str = "") -> None:
        for text in self.texts(note):
            print(text)

    def identical(self) -> bool:
        return all(r["identical"] and r["identical_counters"] for r in self.rows)


def inputs_of(args) -> list[tuple[str, Callable[[Emit], None]]]:
    """What the command measures, in order: (name, measure) for each gate, then each random graph."""
    return ([(name, functools.partial(measure_gate, name, args)) for name in args.graphs]
            + [(random_graph_name(n, m), functools.partial(measure_random_graph, n, m, args))
               for n, m in args.random_graph])


def measure_inputs(inputs, table: Table) -> int:
    """Measure each (name, measure) input in order, every row into ``table``; print the tables.

    The files are written before the first input (an unwritable --out fails before any GPU time,
    and files of an earlier run in the same folder do not pass for this one's). Ctrl-C keeps what
    was measured: the tables of the rows so far are written and printed with a line naming the
    inputs not measured (a second Ctrl-C meanwhile is ignored, so the save completes) and the
    status is 130, or 1 if a measured row's trees differ (a wrong answer outranks the
    interruption)."""
    table.pending = [name for name, _ in inputs]
    try:
        table.write(table.note("In progress"))
        for _, measure in inputs:
            measure(table.add)
            table.pending.pop(0)
        table.write()
        table.show()
    except KeyboardInterrupt:
        with interrupt.ignored():
            note = table.note("Interrupted") or f"Interrupted: {table.measured()}; every input was measured."
            table.write(note)
            table.show(note)
            where = f", written to {table.out}" if table.out is not None else ""
            missing = ", ".join(table.pending) or "none"
            print(f"engine_table.py: interrupted; {table.measured()}{where}; not measured (in full): {missing}",
                  file=sys.stderr, flush=True)
        return ExitCode.INTERRUPTED if table.identical() else ExitCode.CORRECTNESS
    return ExitCode.OK if table.identical() else ExitCode.CORRECTNESS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_graphs_option(parser, default=GATE_NAMES, allow_empty=True,
                              note="; --graphs and no names: only --random-graph")
    parser.add_argument("--batches", nargs="*", default=None)
    parser.add_argument("--random-graph", type=parse_random_graph, action="append", default=[], metavar="N,M",
                        help="also measure a symmetrized random graph of N vertices and about M arcs with a 1 %% "
                             "batch (e.g. 4039,176000); repeatable")
    parser.add_argument("--objective", type=int, default=0)
    parser.add_argument("--push-expansion", choices=PUSH_EXPANSIONS, default=None,
                        help="the CUDA engines' push expansion (Options.push_expansion; default: "
                             f"the library's, {DEFAULT_PUSH_EXPANSION})")
    parser.add_argument("--repeats", type=int, default=11)
    options.add_warmup_option(parser, default=2, runs="updates per engine and batch")
    parser.add_argument("--host-repeats", type=int, default=1,
                        help="timed host-reference updates per batch (0: no host column)")
    parser.add_argument("--host-max-vertices", type=int, default=3_000_000)
    options.add_input_options(parser)
    parser.add_argument("--no-floor", action="store_true",
                        help="do not measure the floor constants (bench/floor.py); the floor columns read –")
    parser.add_argument("--table", action="store_true",
                        help="print the user-path table (engine region beside the whole update() call) and "
                             "write it as whole_update.md with --out")
    options.add_table_out_option(parser, "engine_table.json and engine_table.md")
    return parser


def main(argv=None) -> int:
    return run_command(lambda: _main(argv), prefix="engine_table.py: ")


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    if args.repeats < 11:
        raise UsageError("--repeats must be at least 11")
    if args.host_repeats < 0:
        raise UsageError("--host-repeats must be at least 0")
    if not args.graphs and not args.random_graph:
        raise UsageError("nothing to measure: name --graphs or give --random-graph")
    if not 0 <= args.objective < NUM_WEIGHTS:
        raise UsageError(f"--objective must be in [0, {NUM_WEIGHTS})")
    if args.host_max_vertices < 0:  # acted as 0 (no host column) without a word
        raise UsageError("--host-max-vertices must be at least 0 (0: no host column)")
    check_gate_names(args.graphs)  # names the table cannot measure: refused before any GPU time
    # a misspelt batch measured nothing on its gate, silently (--batches alone: every batch)
    check_batch_names(args.batches or None)
    if args.out:  # before any GPU time: one line, not the first write's traceback
        records.writable_folder(args.out, f"--out {args.out}")
    for engine in CUDA_ENGINES:  # every CUDA engine of the table must run here
        reason = cuda_config(engine, args.push_expansion).unavailable_reason()
        if reason:
            print(f"engine_table.py: {reason}", file=sys.stderr)
            return ExitCode.ENVIRONMENT
    return measure_inputs(inputs_of(args), Table(args.out, args.table))


if __name__ == "__main__":
    interrupt.run(main)
