#!/usr/bin/env python3
"""A streaming benchmark: N consecutive small batches on one graph, each engine timed per batch.

Users who stream updates (traffic, routing, monitoring) send many small batches, so the fixed cost
of one ``update()`` call is what they pay (issue 27). This command replays one stream of batches on
a gate or a graph file through each engine and times the whole ``sssp.update()`` call of every
batch (``time.perf_counter`` around it; the call returns after the engine's final
synchronization), then checks every CUDA result byte for byte against the host reference.

The stream: each batch of B arcs deletes B/4 undirected edges that exist at that point of the
stream (both arcs each) and inserts B/4 random undirected pairs (both arcs each; a pair that
exists is a re-weight), every inserted arc drawing its own K weights in [1, 100]; fixed seed. The
whole sequence depends only on the graph and the seed (never on an engine's answer), so it is drawn
once and every engine replays the same batches, each on its own copy of the graph with one result.
The first ``--warmup`` batches are applied but left out of the statistics (compilation, first
allocations). Beside the median and p99, the record ("tail" per engine) and the report compare the
batches at or above each engine's p99 with all its timed batches: the work each update reported
(push iterations, epochs, invalidated and affected vertices), Python's garbage collections inside
the timed call and, for the CUDA engines, the time the calling thread spent off the CPU during it
(bench/stream_tail.py), so a tail of heavy batches reads apart from a tail of ordinary ones that
met a collection or lost the CPU. The GPU's SM clock is read after each CUDA engine's call
(bench/stream_clock.py): its range, its correlation with the batch time and the stream in ten
consecutive parts.

Two orders of the engines:

* sequential (the default): the engines run one after another, each its whole stream, as a
  streaming user runs one engine. Use it for absolute numbers, what a user of one engine sees
  (median, p99 per call). A comparison between engines from it is unfair: on the H200 two runs of
  the same code minutes apart differ by up to 1.6x in median (the machine's state drifts), and
  each engine is measured in a different stretch of that drift.
* ``--interleave``: every engine opens its graph and result first, then batch by batch each engine
  applies that batch in turn, in orders of a serially balanced Williams design cycled over the
  batches (batch i takes order i mod its length, :func:`order_design`): over one cycle every engine
  holds every position equally often, and in the whole sequence of runs, batch boundaries included,
  every engine follows every engine (itself included: each order starts with the engine that ended
  the one before) equally often, so neither going first nor what the run before left behind (GPU
  clocks, caches) sides with one engine; the record names the design, its orders and that balance
  (stream.order_design). Every engine sees the same drift, so the per-batch
  ratio B_i / A_i of two engines cancels it; the record adds "paired": the median of those ratios over
  the timed batches with a seeded 95 % bootstrap interval (protocol.stats.paired_ratio), for each
  pair of engines that ran. Use it to judge one engine against another (issue 27's "operators
  within 1.3x of fused"). Its absolute numbers are not a streaming user's: each call follows
  another engine's work (caches and memory hold the other engine's graph).

    python bench/stream.py --graph luxembourg_osm --batches 10000 --batch-size 100 --out results/stream
    python bench/stream.py --graph luxembourg_osm --batches 10000 --interleave --out results/stream-paired
    python bench/stream.py --graph-file graph.edges --batches 200 --engines host --no-progress

Interrupted (Ctrl-C or SIGTERM) while the batches run, the stream keeps what it measured: the first
signal stops it at the next batch boundary (a second one at once, inside the call it lands in), and
the record (stream.json, stream.md, the per-batch times) is written marked partial: "partial" and
"interrupted" (the signal, the batches planned and those each engine completed, an engine cut inside
a batch), each engine's entry its "partial" counts, and a title and table that say so. Its check
covers exactly the completed prefix: each engine's tree after its completed batches against the
host reference's after as many (replayed off the clock where the host run did not stop there); an
engine cut inside a batch is not checked, and a further signal during the check leaves it "not
done", as the record says. Interrupted before any batch was timed: while the graph is read or the
stream drawn, it stops at once and writes no record (nothing was measured; one line says so, and
names an earlier run's stream.json left in --out); within the warm-up batches, the partial record
counts 0 batches timed and its stage, table and last line say that no batch was timed.

An error mid-stream (an engine's update() raising: a CUDA failure, out of memory, a check of its
result; or an engine failing to open its graph) keeps what was measured too: the same partial
record, marked "failed" instead of "interrupted" (the engine, the batch it was applying, the
exception's type and message), the failing engine not checked (its graph may hold part of its
batch), a check that fails in turn recorded as not done. It replaces any earlier record in --out,
so none there claims a stream that did not complete. The command then ends with one line naming
the error, or, for a bug (engines.errors.InternalError, or an error the engines do not raise on
purpose), with its traceback. A ``--batches`` whose drawn stream (every batch is drawn before the
first is timed) would not fit in the host memory available is refused before the graph is read.

Exit codes (engines/exitcodes.py): 0 every result equal to the reference; 1 a result differs (an
interrupted run's check included) or an engine failed mid-stream (ExitCode.FAILURE, as engines.cli
ends on an engine's error); 2 bad arguments or input (a --batches too large for the host memory
included); 3 a CUDA engine asked for where none can run; 130 interrupted (SIGINT or SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines import interrupt  # noqa: E402  (standard library only: before the heavy imports)

interrupt.guard(__name__, "stream.py")

import numpy as np  # noqa: E402

from protocol.errors import EnvironmentProblem, ProtocolError, UsageError, run_command  # noqa: E402
from protocol.config import check_seed  # noqa: E402
from engines.config import EngineConfig  # noqa: E402
from protocol.exitcodes import ExitCode  # noqa: E402
from bench.stream_tail import GcWatch, off_cpu_ms, tail_anatomy, work_of  # noqa: E402
from bench.stream_tail import markdown_lines as tail_lines  # noqa: E402
from bench.stream_clock import NO_GPU, SmClock, clock_record  # noqa: E402
from bench.stream_clock import markdown_lines as clock_lines  # noqa: E402

PROG = "stream.py"
CUDA_ENGINES = ("fused", "operators")
ENGINES = CUDA_ENGINES + ("host",)
#: ``--engines`` names -> their EngineConfig (engines.config).
ENGINE_CONFIGS = {"fused": EngineConfig.parse("cuda:fused"), "operators": EngineConfig.parse("cuda:operators"),
                  "host": EngineConfig.parse("host")}
#: The reference that an interrupted stream's check replays (whatever --engines named).
HOST_REFERENCE = EngineConfig.parse("host")
DEFAULT_BATCHES = 10_000
DEFAULT_BATCH_SIZE = 100
DEFAULT_WARMUP = 10
DEFAULT_SEED = 27  # the issue that asked for the stream
P99 = 99.0
REPO_ROOT = Path(__file__).resolve().parents[1]


# -- the stream of batches -----------------------------------------------------------------------
class StreamState:
    """The graph's arcs as the stream sees them, advanced batch by batch.

    ``arcs`` counts the copies of each arc (``u * n + v``): a deletion removes one copy, so a pair
    with parallel arcs stays. ``pool`` lists the undirected pairs (``lo * n + hi``) whose two arcs
    both exist, the deletable ones, in a list with an index so that a uniform draw and a removal
    are O(1) (a batch of 100 changes must not cost a pass over the graph).
    """

    def __init__(self, num_vertices: int, src: np.ndarray, dst: np.ndarray):
        self.n = int(num_vertices)
        keys, counts = np.unique(np.asarray(src, np.int64) * self.n + np.asarray(dst, np.int64),
                                 return_counts=True)
        self.arcs = dict(zip(keys.tolist(), counts.tolist()))
        self.pool: list[int] = []
        self.where: dict[int, int] = {}
        for key in keys.tolist():  # sorted keys: the pool's order, hence the stream, is reproducible
            u, v = divmod(key, self.n)
            if u < v and v * self.n + u in self.arcs:
                self._pool_add(key)

    def _pool_add(self, pair: int) -> None:
        if pair not in self.where:
            self.where[pair] = len(self.pool)
            self.pool.append(pair)

    def _pool_remove(self, pair: int) -> None:
        i = self.where.pop(pair, None)
        if i is None:
            return
        last = self.pool.pop()
        if i < len(self.pool):  # move the last pair into the hole
            self.pool[i] = last
            self.where[last] = i

    def _refresh(self, u: int, v: int) -> None:
        """Put the pair {u, v} in the pool exactly when both of its arcs exist."""
        lo, hi = min(u, v), max(u, v)
        if lo * self.n + hi in self.arcs and hi * self.n + lo in self.arcs:
            self._pool_add(lo * self.n + hi)
        else:
            self._pool_remove(lo * self.n + hi)

    def delete(self, u: int, v: int) -> None:
        for key in (u * self.n + v, v * self.n + u):
            left = self.arcs[key] - 1
            if left:
                self.arcs[key] = left
            else:
                del self.arcs[key]
        self._refresh(u, v)

    def insert(self, u: int, v: int) -> int:
        """Insert both arcs of {u, v}; the number of them that are new (the others are re-weights:
        an insertion of an existing pair overwrites its first copy)."""
        new = 0
        for key in (u * self.n + v, v * self.n + u):
            if key not in self.arcs:
                self.arcs[key] = 1
                new += 1
        self._refresh(u, v)
        return new


@dataclass
class StreamBatch:
    """One batch of the stream and what it does: ``new_arcs`` inserted, ``reweights`` upserted."""

    batch: object  # engines.Batch
    new_arcs: int
    reweights: int


def draw_distinct(rng, count: int, draw_one) -> list:
    """``count`` distinct values of ``draw_one(rng)``, in the order first drawn."""
    seen: dict = {}
    while len(seen) < count:
        seen.setdefault(draw_one(rng), None)
    return list(seen)


def next_batch(state: StreamState, rng, quarter: int, num_weights: int) -> StreamBatch:
    """One batch of ``4 * quarter`` arcs drawn on ``state``, which it then advances.

    Deletions come first in the engines' semantics (algorithm.md §3.2), so the state applies them
    first too: an inserted pair that this batch deleted is a new arc again."""
    from engines import Batch

    from bench.weights import WEIGHT_HIGH, WEIGHT_LOW

    n = state.n
    deleted = [divmod(state.pool[i], n)
               for i in draw_distinct(rng, quarter, lambda r: int(r.integers(len(state.pool))))]
    inserted = draw_distinct(rng, quarter, lambda r: _random_pair(r, n))
    for u, v in deleted:
        state.delete(u, v)
    new_arcs = sum(state.insert(u, v) for u, v in inserted)
    weights = rng.integers(WEIGHT_LOW, WEIGHT_HIGH + 1, size=(2 * quarter, num_weights))
    batch = Batch([x for u, v in inserted for x in (u, v)], [x for u, v in inserted for x in (v, u)], weights,
                  [x for u, v in deleted for x in (u, v)], [x for u, v in deleted for x in (v, u)])
    return StreamBatch(batch, new_arcs, 2 * quarter - new_arcs)


def _random_pair(rng, n: int) -> tuple[int, int]:
    """A uniform ordered pair of distinct vertices, as the key of an undirected pair (lo, hi), so
    that one batch never inserts {u, v} twice under two spellings."""
    u = int(rng.integers(n))
    v = (u + int(rng.integers(1, n))) % n  # never a self-loop
    return min(u, v), max(u, v)


def stream_batches(num_vertices: int, src, dst, num_weights: int, *, count: int, size: int,
                   seed: int) -> list[StreamBatch]:
    """The whole stream: ``count`` batches of ``size`` arcs (a multiple of 4), each drawn on the
    graph as the previous ones left it. Raises UsageError when the graph cannot carry a batch."""
    if num_vertices < 2:
        raise UsageError(f"the graph has {num_vertices} vertex; a stream inserts pairs of distinct vertices")
    state = StreamState(num_vertices, src, dst)
    rng = np.random.default_rng(seed)
    quarter = size // 4
    out = []
    for i in range(count):
        if len(state.pool) < quarter:
            raise UsageError(f"batch {i}: the graph has {len(state.pool)} undirected edges with both arcs, "
                             f"fewer than the {quarter} a batch of {size} deletes")
        out.append(next_batch(state, rng, quarter, num_weights))
    return out


# -- statistics ----------------------------------------------------------------------------------
def summarize(times_ms) -> dict:
    """Median, p99 (NumPy's linear interpolation between order statistics), mean, min and max of
    the timed batches, in ms."""
    values = np.asarray(times_ms, dtype=np.float64)
    if values.size == 0:
        return {"count": 0, "median_ms": None, "p99_ms": None, "mean_ms": None, "min_ms": None, "max_ms": None}
    return {"count": int(values.size), "median_ms": float(np.median(values)),
            "p99_ms": float(np.percentile(values, P99)), "mean_ms": float(values.mean()),
            "min_ms": float(values.min()), "max_ms": float(values.max())}


# -- inputs --------------------------------------------------------------------------------------
@dataclass
class StreamInput:
    """The graph the stream starts from: its CSR (``weights`` is ``(m, K)``), source and tree."""

    name: str
    origin: dict
    row_ptr: np.ndarray
    col_ind: np.ndarray
    weights: np.ndarray
    source: int
    tree: tuple  # (distances, parents) of the objective measured

    @property
    def num_vertices(self) -> int:
        return int(self.row_ptr.size - 1)

    def arc_sources(self) -> np.ndarray:
        return np.repeat(np.arange(self.num_vertices, dtype=np.int64), np.diff(self.row_ptr.astype(np.int64)))


def load_input(*, graph=None, spec=None, objective=0, data_dir=None, cache_dir=None,
               progress=True) -> StreamInput:
    """The gate ``graph`` or the graph file of ``spec`` (bench.graph_file), prepared and cached as
    ``perf_ab.py`` prepares them (K = 3 drawn weights, the initial trees), without its batches."""
    from bench.graph_file import prepare_graph_file
    from bench.prepare import prepare_gate
    from bench.prepare_failures import prepared_in_cache

    if spec is not None:
        prepared = prepared_in_cache(spec.name, lambda: prepare_graph_file(
            spec, cache_dir=cache_dir, progress=progress, with_batches=False), cache_dir)
    else:
        prepared = prepared_in_cache(graph, lambda: prepare_gate(
            graph, data_dir=data_dir, cache_dir=cache_dir, progress=progress, with_batches=False), cache_dir)
    g = prepared.graph
    if not 0 <= objective < g.num_weights:
        raise UsageError(f"--objective {objective}: the graph has {g.num_weights} weight columns (0 .. "
                         f"{g.num_weights - 1})")
    # host copies of the CSR: every engine builds its own graph from them
    weights = np.asarray(g.weights).reshape(g.num_weights, -1).T.copy()
    return StreamInput(prepared.name, dict(prepared.origin), np.asarray(g.row_ptr).copy(),
                       np.asarray(g.col_ind).copy(), weights, int(prepared.source), prepared.trees[objective])


# -- engines -------------------------------------------------------------------------------------
def cuda_available() -> bool:
    from engines.sssp.backends import cuda_available as available

    return available()


def fused_problem() -> str | None:
    """Why the fused engine cannot run here (no cooperative launch), None when it can."""
    return ENGINE_CONFIGS["fused"].unavailable_reason()


def open_engine(engine: str, data: StreamInput, objective: int):
    """``(graph, result)``: a fresh graph of the input's CSR and the initial tree imported on it,
    on the device for a CUDA engine (as a CUDA result makes it, algorithm.md §3.6) and on the host
    for the host reference (whose time then holds no device apply or download)."""
    from engines import Graph

    graph = Graph.from_csr(data.row_ptr, data.col_ind, data.weights)
    distances, parents = data.tree
    config = ENGINE_CONFIGS[engine]
    if config.needs_cuda:
        graph.to_device()
    result = config.from_arrays(graph, data.source, distances, parents, canonicalize=False, objective=objective)
    return graph, result


def final_tree(result) -> tuple[np.ndarray, np.ndarray]:
    """The result's (distances, parents) on the host."""
    return result.to_numpy()


def timed_update(graph, result, item: StreamBatch, watch: GcWatch, clock: SmClock | None = None) -> tuple:
    """Apply one batch with ``update()`` and time the whole call (both orders time a call here, so
    they measure the same thing): ``(ms, work, collections, SM MHz, off-CPU ms)``, the work the
    update reported (stream_tail.work_of), the garbage collections inside the call
    (stream_tail.GcWatch.since), the GPU's SM clock read after the call (stream_clock.SmClock; None
    without a clock) and the part of the call the calling thread spent off the CPU
    (stream_tail.off_cpu_ms: the wall time less its CPU time, read just outside the timer; the
    CUDA runtime's default schedule spins in the device wait with one context on a machine of
    several cores, so for the CUDA engines this is time the thread was not running: preempted or
    blocked. The host reference waits for its own helper threads, so its runs drop it: of_engine).
    Plain tuples of numbers, which the collector stops tracking, so that the bookkeeping of a long
    stream does not feed the collections it counts. The watch's counters are read as attributes
    right beside the clock readings (a call between them could itself run a collection)."""
    from engines import sssp

    c0, f0, s0 = watch.collections, watch.full, watch.seconds  # plain stores: nothing allocated
    cpu0 = time.thread_time()
    start = time.perf_counter()
    stats = sssp.update(graph, item.batch, result)  # returns after the engine's final synchronization
    end = time.perf_counter()
    cpu1 = time.thread_time()
    c1, f1, s1 = watch.collections, watch.full, watch.seconds
    # after the timer: the reading is not in the call's time (it lengthens the gap before the next
    # call by one NVML call)
    mhz = clock.read() if clock is not None else None
    return ((end - start) * 1e3, work_of(stats), GcWatch.since((c0, f0, s0), (c1, f1, s1)), mhz,
            off_cpu_ms(end - start, cpu1 - cpu0))


def timed_stream(graph, result, batches, bar, watch: GcWatch, clock: SmClock | None = None, *,
                 sofar: "Sofar | None" = None, engine: str | None = None) -> list[tuple]:
    """Apply every batch with ``update()``, each call timed (the progress bar advances outside the
    timer). With ``sofar``, each call's tuple goes into ``sofar.timed[engine]`` as it is measured
    (the list returned), and a stop that a signal asked for is taken between two batches
    (:class:`Sofar`)."""
    sofar = Sofar() if sofar is None else sofar
    timed = sofar.timed.setdefault(engine, [])
    for item in bar(batches):
        sofar.stop.check()  # a first Ctrl-C or SIGTERM stops here, between two batches
        sofar.inside = engine
        timed.append(timed_update(graph, result, item, watch, clock))
        sofar.inside = None
    return timed


def progress_bar(engine: str, enabled: bool):
    from tqdm import tqdm

    return lambda items: tqdm(items, desc=f"{PROG} {engine}", unit="batch", file=sys.stderr,
                              disable=not enabled, mininterval=0.5)


@dataclass
class EngineRun:
    times_ms: list
    tree: tuple
    seconds: float  # the engine's own wall time: opening, every update() call, the final tree
    work: list = None  # per batch: stream_tail.work_of of its update's Stats
    gcs: list = None  # per batch: (collections, full collections, seconds) inside the call
    clocks: list = None  # per batch: the SM clock (MHz) after the call, None where unread
    clock_problem: str | None = None  # why there are no clock readings
    off_cpu: list = None  # per batch: ms of the call the thread spent off the CPU

    @classmethod
    def of(cls, timed: list, tree, seconds: float, clock_problem: str | None = None) -> "EngineRun":
        """From timed_update's tuples, in batch order."""
        return cls([t[0] for t in timed], tree, seconds, [t[1] for t in timed], [t[2] for t in timed],
                   [t[3] for t in timed], clock_problem, [t[4] for t in timed])

    @classmethod
    def of_engine(cls, engine: str, timed: list, tree, seconds: float, clock_problem: str | None = None):
        """``of`` for ``engine``: the host reference keeps no clock readings (its calls run no GPU:
        stream_clock.NO_GPU says so) and no off-CPU times (on graphs of 65,536 arcs and more it
        hands half of its apply, and its speculative search, to helper threads and waits for them,
        which its calling thread's CPU time does not hold: 0.385 ms of a 1.4 ms median off the CPU
        on a 200,000-arc graph with the helpers, 0.0001 ms without)."""
        run = cls.of(timed, tree, seconds, clock_problem)
        if engine not in CUDA_ENGINES:
            run.off_cpu, run.clock_problem = None, NO_GPU
        return run


def open_clock(engines) -> SmClock:
    """The SM clock of the GPU the CUDA engines among ``engines`` run on (CuPy's current device,
    where open_engine puts their graphs); a clock without readings for the host reference alone."""
    if not any(e in CUDA_ENGINES for e in engines):
        return SmClock.open(None)
    import cupy

    return SmClock.open(cupy.cuda.runtime.getDevice())


def run_engine(engine: str, data: StreamInput, batches, objective: int, progress: bool,
               sofar: "Sofar | None" = None) -> EngineRun:
    """The engine's whole stream, each batch timed; ``sofar`` (run() passes its own) keeps every
    batch's tuple as it is measured, so that an interrupt loses none of them (:class:`Sofar`)."""
    sofar = Sofar() if sofar is None else sofar
    # the clock opens and closes outside the engine's seconds, as in run_interleaved (NVML's start
    # and end are the instrument's, not the engine's)
    with open_clock([engine]) as clock:
        sofar.clock_problem[engine] = clock.problem
        start = sofar.started[engine] = time.perf_counter()
        graph, result = open_engine(engine, data, objective)
        sofar.opened[engine] = (graph, result)
        with GcWatch() as watch:
            timed = timed_stream(graph, result, batches, progress_bar(engine, progress), watch, clock, sofar=sofar,
                                 engine=engine)
        tree = final_tree(result)
        seconds = time.perf_counter() - start
    run = sofar.runs[engine] = EngineRun.of_engine(engine, timed, tree, seconds, clock.problem)
    return run


#: The name of the interleaved orders' design, as the record spells it. Records from before the
#: orders were chained across batches say "williams" and carry no "carryover" field: their orders
#: balance positions and successors within a batch only.
ORDER_DESIGN = "williams-serial"


def _williams_square(count: int) -> list[list[int]]:
    """Williams's Latin square for ``count`` engines: first row 0, 1, E-1, 2, E-2, ..., each next
    row adds 1 mod E. Every row ends with the engine E/2 places after the one it starts with
    ((E+1)/2 for an odd count)."""
    first, low, high = [0], 1, count - 1
    while len(first) < count:
        first.append(low)
        low += 1
        if len(first) < count:
            first.append(high)
            high -= 1
    return [[(k + r) % count for k in first] for r in range(count)]


def _chained(rows: list[list[int]]) -> list[list[int]]:
    """``rows`` reordered so that each row starts with the engine that ended the row before, the
    last row's with the first's: an Eulerian circuit (Hierholzer) of the multigraph with one edge
    first -> last per row, from row 0, taking a vertex's unused rows in ``rows``' order. Every
    engine must start as many rows as it ends and the edges must connect every engine."""
    unused = {}
    for i, row in enumerate(rows):
        unused.setdefault(row[0], []).append(i)
    for starts in unused.values():
        starts.reverse()  # pop() takes them in rows' order
    stack, circuit = [(rows[0][0], None)], []
    while stack:
        vertex, edge = stack[-1]
        if unused.get(vertex):
            i = unused[vertex].pop()
            stack.append((rows[i][-1], i))
        else:
            stack.pop()
            if edge is not None:
                circuit.append(edge)
    if len(circuit) != len(rows):
        raise AssertionError(f"the rows' first -> last edges leave {len(rows) - len(circuit)} rows unchained")
    return [rows[i] for i in reversed(circuit)]


def order_design(count: int) -> list[list[int]]:
    """The orders (permutations of ``range(count)``) that the interleaved batches cycle through,
    serially balanced over the whole stream: run back to back (all batches' runs in one sequence,
    the cycle's last run followed by its first), every engine is preceded by every engine, itself
    included, equally often: len(orders) / count times per cycle, batch boundaries counted. And
    every engine holds every position of a batch equally often (len(orders) / count times).

    Within a batch an engine never follows itself, so that balance needs every batch boundary to
    repeat an engine: each order starts with the engine that ended the one before (the engine runs
    twice in a row, once per batch; it is then "preceded by itself", as often as by any other).
    The orders are Williams's (every engine in every position equally often, every ordered pair
    X != Y adjacent equally often within the orders), chained by :func:`_chained`:

    * 1 engine: one order; 2: AB, BA (A B | B A | A ...);
    * an odd count: the Williams square and its rows reversed, 2 * count orders (six for three);
    * an even count of 4 or more: 2 * count orders, the Williams square and a copy with the upper
      half of the engines relabelled (E/2 + j -> E/2 + (j+1 mod E/2)). The square alone cannot be
      chained: every row ends E/2 after its start, so its first -> last edges pair the engines
      {r, r + E/2} and never leave those pairs; the relabelled copy's edges join r to
      E/2 + (r+1 mod E/2), which links all pairs into one cycle.

    Exact balance is reached for every count. No shorter cycle has it for 3, 4 or 5 engines:
    balanced positions need a multiple of ``count`` orders, and ``count`` orders are a row-complete
    Latin square whose rows chain into one cycle: none exists of order 3 or 5 (no row-complete
    square at all) nor of order 4 (its six row-complete squares all end E/2 after the start); the
    tests count these exhaustively."""
    if count < 1:
        raise ValueError(f"an order design needs at least one engine, got {count}")
    square = _williams_square(count)
    if count <= 2:
        rows = square
    elif count % 2:
        rows = square + [row[::-1] for row in square]
    else:
        half = count // 2
        relabel = list(range(half)) + [half + (j + 1) % half for j in range(half)]
        rows = square + [[relabel[k] for k in row] for row in square]
    return _chained(rows)


def batch_order(engines, index: int, design=None) -> list:
    """The engines' order for batch ``index``: order ``index mod len(design)`` of ``design``
    (:func:`order_design` of the engines when None; a caller that orders many batches passes it
    once), fixed by the index alone (a rerun applies the same orders)."""
    design = order_design(len(engines)) if design is None else design
    return [engines[k] for k in design[index % len(design)]]


def design_record(engines) -> dict:
    """The interleaved orders as the record keeps them: the design's name, its orders by name, the
    rule that assigns them to batches and what one cycle of them guarantees ("carryover", with the
    counts per cycle)."""
    orders = [[engines[k] for k in row] for row in order_design(len(engines))]
    each = len(orders) // len(engines)
    return {"name": ORDER_DESIGN, "orders": orders, "rule": "batch i takes order i mod len(orders)",
            "carryover": "balanced across batch boundaries: each order starts with the engine that ended the "
                         "order before (the last order's with the first's), so over one cycle of the orders run "
                         "back to back every engine is preceded by every engine, itself included, equally often",
            "per_cycle": {"in_each_position": each, "after_each_engine": each}}


def run_interleaved(engines, data: StreamInput, batches, objective: int, progress: bool,
                    sofar: "Sofar | None" = None) -> dict:
    """Every engine opened first, then each batch applied by every engine in :func:`batch_order`'s
    order: ``{engine: EngineRun}`` in ``engines``' order, the times in batch order. ``sofar`` keeps
    every call's tuple as it is measured (:class:`Sofar`); an interrupt stops between two batches,
    so the engines have completed the same number of batches (or, cut inside a call, one more for
    those that came before it in that batch's order)."""
    sofar = Sofar() if sofar is None else sofar
    opened, seconds = sofar.opened, sofar.seconds
    times = {e: sofar.timed.setdefault(e, []) for e in engines}
    for engine in engines:
        start = sofar.started[engine] = time.perf_counter()
        seconds[engine] = 0.0
        opened[engine] = open_engine(engine, data, objective)
        seconds[engine] = time.perf_counter() - start
    design = order_design(len(engines))
    # one watch and one clock for every engine: each call takes its own difference and reading (the
    # host reference none: the GPU's clock says nothing of its calls)
    with GcWatch() as watch, open_clock(engines) as clock:
        sofar.clock_problem.update({e: clock.problem for e in engines})
        clocks = {e: clock if e in CUDA_ENGINES else None for e in engines}
        for i, item in enumerate(progress_bar("interleaved", progress)(batches)):
            sofar.stop.check()  # a first Ctrl-C or SIGTERM stops here: every engine at the same batch
            for engine in batch_order(engines, i, design):
                start = time.perf_counter()
                sofar.inside = engine
                times[engine].append(timed_update(*opened[engine], item, watch, clocks[engine]))
                sofar.inside = None
                seconds[engine] += time.perf_counter() - start
    runs = {}
    for engine in engines:
        start = time.perf_counter()
        tree = final_tree(opened[engine][1])
        runs[engine] = EngineRun.of_engine(engine, times[engine], tree, seconds[engine] + time.perf_counter() - start,
                                           clock.problem)
    sofar.runs.update(runs)
    return runs


def paired_ratios(times: dict, warmup: int) -> dict:
    """For each pair of engines in ``times`` (engine -> per-batch ms, warm-up included, the same
    batches), the per-batch ratio B_i / A_i over the timed batches: its median and 95 % bootstrap
    interval (protocol.stats.paired_ratio, the protocol's one bootstrap, with its own resample count
    and fixed seed, both recorded), keyed ``"B/A"``.

    A is the engine earlier in ENGINES' order (fused, operators, host), whatever order --engines
    named them: operators/fused, host/fused, host/operators (host/X is X's speed-up over the host).
    Only meaningful for interleaved times: sequential ones pair batches measured minutes apart."""
    from protocol.stats import paired_ratio

    order = [e for e in ENGINES if e in times]
    out = {}
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            ratio = paired_ratio(times[a][warmup:], times[b][warmup:])
            out[f"{b}/{a}"] = {"a": a, "b": b, "median": ratio.median, "lo": ratio.lo, "hi": ratio.hi,
                               "pairs": ratio.pairs, "resamples": ratio.resamples, "seed": ratio.seed}
    return out


# -- the check -----------------------------------------------------------------------------------
def tree_difference(tree, reference) -> str | None:
    """None when ``tree`` equals ``reference`` byte for byte (dtype and values); else what differs."""
    problems = []
    for what, mine, theirs in (("distances", tree[0], reference[0]), ("parents", tree[1], reference[1])):
        mine, theirs = np.asarray(mine), np.asarray(theirs)
        if mine.dtype != theirs.dtype or mine.shape != theirs.shape:
            problems.append(f"{what} are {mine.dtype}{list(mine.shape)}, the reference's {theirs.dtype}"
                            f"{list(theirs.shape)}")
        elif mine.tobytes() != theirs.tobytes():
            bad = np.flatnonzero(mine != theirs)
            v = int(bad[0])
            problems.append(f"{what} differ at {bad.size:,} vertices (first: vertex {v}, {mine[v]} against "
                            f"{theirs[v]})")
    return "; ".join(problems) or None


def check_results(runs: dict) -> dict:
    """Every engine's final tree against the host reference's (against the first engine's where
    the host reference did not run): ``{"reference": name, "differences": {engine: text}}``."""
    reference = "host" if "host" in runs else next(iter(runs))
    differences = {}
    for engine, run in runs.items():
        if engine != reference:
            diff = tree_difference(run.tree, runs[reference].tree)
            if diff:
                differences[engine] = diff
    return {"reference": reference, "equal": not differences, "differences": differences}


# -- an interrupted stream -----------------------------------------------------------------------
class StreamStopped(KeyboardInterrupt):
    """The stream stopped between two batches on a signal (``signal_name``: SIGINT or SIGTERM). A
    KeyboardInterrupt, so that code which does not know it treats it as Ctrl-C."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


class StopRequest:
    """SIGINT (Ctrl-C) or SIGTERM while the batches run (a context manager, main thread only).

    The first signal asks the stream to stop at the next batch boundary (``check`` raises
    StreamStopped there), so every engine's graph and result hold exactly the batches it completed
    and the check can cover that prefix; a second one raises KeyboardInterrupt at once, inside the
    call it lands in (that engine's graph and result then hold part of a batch: it is not
    checked). ``at_once``: the first signal raises KeyboardInterrupt (the check after an interrupt,
    which a further signal cuts short). A signal that was ignored when it was entered (a command
    started under nohup) stays ignored. Outside the main thread it installs nothing."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, at_once: bool = False):
        self.at_once = at_once
        self.signal: str | None = None  # the first signal's name, once one came
        self._previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        return False

    def _handle(self, signum, frame):
        first = self.signal is None
        self.signal = self.signal or signal.Signals(signum).name
        if not first or self.at_once:
            raise KeyboardInterrupt
        try:
            print(f"{PROG}: {self.signal}: stopping after the batch in progress, then writing what was measured "
                  "(again to stop at once)", file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass

    def check(self) -> None:
        """Raise StreamStopped when a signal asked the stream to stop (called between batches)."""
        if self.signal is not None:
            raise StreamStopped(self.signal)


@dataclass
class Sofar:
    """What the stream has measured so far, kept as it is measured so that an interrupt loses none
    of it: per engine its timed_update tuples in batch order (``timed``), its opened ``(graph,
    result)``, when it started (``started``; the interleaved order's own seconds in ``seconds``) and
    why its clock has no readings; the finished EngineRuns (``runs``); ``inside``: the engine whose
    update() call is running (an interrupt there leaves that engine's graph and result with part of
    a batch applied); ``stop``: the signals' StopRequest (none installed: never stops)."""

    stop: StopRequest = field(default_factory=StopRequest)
    timed: dict = field(default_factory=dict)
    opened: dict = field(default_factory=dict)
    started: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    clock_problem: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)
    inside: str | None = None


def partial_runs(sofar: Sofar, engines, planned: int, with_trees: bool = True) -> tuple[dict, dict, dict]:
    """After an interrupt: ``(runs, completed, halfway)``: an EngineRun per engine of ``engines``
    (its completed batches; its final tree where its graph and result hold exactly those, else
    None), the batches each completed of the ``planned`` ones (0 for an engine never started), and
    ``{engine: index}`` for the engine whose call the interrupt cut inside batch ``index``.
    ``with_trees`` False: no tree read of an unfinished engine (a further interrupt cut the reads)."""
    runs, completed, halfway = {}, {}, {}
    now = time.perf_counter()
    for engine in engines:
        if engine in sofar.runs:
            run = sofar.runs[engine]
            runs[engine], completed[engine] = run, len(run.times_ms)
            continue
        timed = list(sofar.timed.get(engine, []))
        completed[engine] = len(timed)
        if sofar.inside == engine:
            halfway[engine] = len(timed)
        tree = None
        if with_trees and engine in sofar.opened and engine not in halfway and timed:
            tree = final_tree(sofar.opened[engine][1])
        seconds = sofar.seconds[engine] if engine in sofar.seconds else (
            now - sofar.started[engine] if engine in sofar.started else 0.0)
        runs[engine] = EngineRun.of_engine(engine, timed, tree, seconds, sofar.clock_problem.get(engine))
    return runs, completed, halfway


def check_prefix(runs: dict, completed: dict, halfway: dict, data: StreamInput, stream, objective: int,
                 cut_how: str = "interrupted") -> dict:
    """The check of an interrupted stream: each engine's tree after the batches it completed
    against the host reference's after exactly as many (the host run's own where it stopped there
    with whole batches, else the host reference replayed off the clock on that prefix of the same
    stream). An engine without a completed batch, or cut inside a batch, is not checked and the
    record says why."""
    not_checked, prefix = {}, {}
    for engine, run in runs.items():
        if engine in halfway:
            # an interrupt lands inside the call (the graph holds part of the batch); an error may
            # have been raised before anything was applied, or after
            holds = "hold" if cut_how == "interrupted" else "may hold"
            not_checked[engine] = (f"{cut_how} inside its batch {halfway[engine]:,}: its graph and result {holds} "
                                   "part of that batch")
        elif run.tree is None:
            not_checked[engine] = "no batch completed"
        else:
            prefix[engine] = completed[engine]
    trees = {}
    if "host" in prefix:
        trees[prefix["host"]] = runs["host"].tree
    replayed = sorted(set(prefix.values()) - set(trees))
    if replayed:
        print(f"{PROG}: checking the completed batches against the host reference, replayed off the clock on "
              f"{replayed[-1]:,} batches (interrupt again to skip the check)", file=sys.stderr, flush=True)
        trees.update(replay_reference(data, objective, stream, replayed))
    differences = {}
    for engine, k in prefix.items():
        diff = tree_difference(runs[engine].tree, trees[k])
        if diff:
            differences[engine] = diff
    return {"reference": "host", "done": True, "equal": (not differences) if prefix else None,
            "differences": differences, "prefix": prefix, "not_checked": not_checked,
            "replayed": replayed}


def replay_reference(data: StreamInput, objective: int, stream, prefixes) -> dict:
    """``{k: tree}``: the host reference's (distances, parents) after the first k batches of
    ``stream``, for each k of ``prefixes``, in one pass off the clock (a fresh graph and result,
    as open_engine opens the host reference)."""
    from engines import Graph, sssp

    graph = Graph.from_csr(data.row_ptr, data.col_ind, data.weights)
    distances, parents = data.tree
    result = HOST_REFERENCE.from_arrays(graph, data.source, distances, parents, canonicalize=False,
                                        objective=objective)
    wanted, trees = set(prefixes), {}
    for i, item in enumerate(stream[:max(wanted)]):
        sssp.update(graph, item.batch, result)
        if i + 1 in wanted:
            trees[i + 1] = final_tree(result)
    return trees


def check_not_done(why: str) -> dict:
    """The check of an interrupted stream that a further interrupt cut short: none."""
    return {"reference": "host", "done": False, "equal": None, "differences": {}, "prefix": {},
            "not_checked": {}, "why": why}


def interruption_record(signal_name: str | None, at: str, planned: int, completed: dict, halfway: dict) -> dict:
    """What the record says of an interrupt: which signal (None: a KeyboardInterrupt raised inside
    a call), in which stage, the batches planned and completed per engine."""
    return {"signal": signal_name or "SIGINT", "at": at, "planned_batches": planned, "completed": dict(completed),
            "cut_inside_batch": dict(halfway),
            "note": "partial record: the stream was interrupted before every engine had applied every planned batch"
                    if any(k < planned for k in completed.values()) else
                    "interrupted: every engine applied every planned batch, but the run did not end normally"}


# -- host memory for the drawn stream ------------------------------------------------------------
#: Bytes of one drawn change (one arc of a batch) beyond the batch's fixed cost: its source and
#: target as int64 (engines.Batch keeps int64 arrays), and for the half that are insertions K
#: int64 weights (4 K bytes a change on average).
BYTES_PER_CHANGE_IDS = 16
BYTES_PER_CHANGE_WEIGHT = 4
#: The fixed cost of one drawn batch: five ndarray headers (112 bytes each), the Batch and its
#: StreamBatch with their attribute tables (about 400): rounded up.
BYTES_PER_BATCH = 1024
#: What each engine keeps per batch: timed_update's tuple (the time, the work tuple of four counts,
#: the collections' tuple, the clock and off-CPU readings: about 450 bytes of objects) and the
#: EngineRun's five per-batch lists: rounded up.
BYTES_PER_ENGINE_BATCH = 512


def stream_bytes(batches: int, batch_size: int, num_weights: int, engines: int) -> int:
    """The host memory the drawn stream and its per-batch measurements hold (the estimate above)."""
    per_batch = (BYTES_PER_BATCH + batch_size * (BYTES_PER_CHANGE_IDS + BYTES_PER_CHANGE_WEIGHT * num_weights)
                 + BYTES_PER_ENGINE_BATCH * engines)
    return int(batches) * per_batch


def check_stream_memory(batches: int, batch_size: int, num_weights: int, engines: int,
                        available: int | None = None) -> None:
    """UsageError (exit 2) naming the limit when the stream's drawn change lists (every batch is drawn
    before the first is timed) and their measurements would not fit in the host memory available
    (bench.host_memory.available_bytes: psutil, the cgroup's limit, ``ulimit -v``)."""
    if available is None:
        from bench.host_memory import available_bytes

        available = available_bytes()
    needed = stream_bytes(batches, batch_size, num_weights, engines)
    if needed <= available:
        return
    per_batch = stream_bytes(1, batch_size, num_weights, engines)
    most = available // per_batch
    raise UsageError(f"--batches {batches:,}: the stream's drawn change lists and their measurements need about "
                     f"{needed / 1e9:,.1f} GB of host memory ({per_batch:,} bytes a batch of {batch_size} changes "
                     f"with {engines} engine{'s' if engines != 1 else ''}), but {available / 1e9:,.1f} GB is "
                     f"available: at most {most:,} batches fit")


# -- records -------------------------------------------------------------------------------------
def commit_of_checkout(out_dir=None) -> dict:
    """The checkout's commit and whether its code differs from it, as every record of the project
    says it (protocol.environment.git_state: untracked files count, no git counts as changed),
    the stream's own ``out_dir`` left out when it lies inside the checkout (results/stream)."""
    from protocol.environment import git_state

    return git_state(exclude=(out_dir,) if out_dir is not None else ())


def machine_facts(with_cuda: bool, probe: dict | None = None) -> dict:
    """The machine of a record; ``probe``: protocol.environment.host_probe's answer, taken before
    the timed batches (measured here when not given)."""
    from protocol.environment import cpu_model, host_probe

    # the host CPU by name and by speed: a small update's whole call is mostly host work, and the
    # same code's median differed 1.5x between lent H200 machines whose GPUs were the same (issue
    # 27); host_probe times a fixed Python and small-NumPy workload (about 0.1 s) to say how fast
    facts = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
             "cpu_model": cpu_model(), "host_probe": probe if probe is not None else host_probe(),
             "python": platform.python_version(),
             "numpy": np.__version__}
    if with_cuda:
        try:
            import cupy

            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
            name = props["name"]
            facts.update(gpu=name.decode() if isinstance(name, bytes) else str(name), cupy=cupy.__version__,
                         cuda_driver=cupy.cuda.runtime.driverGetVersion(),
                         cuda_runtime=cupy.cuda.runtime.runtimeGetVersion())
        except Exception as exc:  # facts are a courtesy: never fail a finished measurement on them
            facts["gpu"] = f"unknown ({exc})"
    return facts


def _fmt(value, digits=3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(record: dict) -> str:
    g, s, check = record["graph"], record["stream"], record["check"]
    # None for a run that ended normally (and records from before)
    partial = record.get("interrupted") or record.get("failed")
    stopped = " (INTERRUPTED: partial record)" if record.get("interrupted") else " (FAILED: partial record)"
    lines = [f"# Streaming benchmark: {g['name']}" + (stopped if partial else ""), ""]
    lines += interrupted_lines(record)
    lines += [("Planned: " if partial else "") + f"{s['batches']:,} consecutive batches of {s['batch_size']} arcs "
             f"({s['batch_size'] // 4} undirected deletions and {s['batch_size'] // 4} undirected insertions, "
             f"both arcs each), seed {s['seed']}, "
             f"on {g['vertices']:,} vertices and {g['arcs']:,} arcs; the whole update() call per batch, first "
             f"{s['warmup']} batches left out.", "",
             "| engine | batches timed | median ms | p99 ms | mean ms | max ms | equal to " + check["reference"] + " |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for engine, run in record["engines"].items():
        t = run["summary"]
        equal = _equal_cell(engine, check) if partial else "reference" if engine == check["reference"] else (
            "NO" if engine in check["differences"] else "yes")
        lines.append(f"| {engine} | {t['count']:,} | {_fmt(t['median_ms'])} | {_fmt(t['p99_ms'])} | "
                     f"{_fmt(t['mean_ms'])} | {_fmt(t['max_ms'])} | {equal} |")
    if record.get("paired"):  # none with one engine
        lines += ["", f"Engines interleaved batch by batch ({_design_text(s.get('order_design'))}); engine B / "
                  "engine A per batch, timed batches:", "",
                  "| engine B / engine A | batches | median ratio | 95 % CI |", "|---|---:|---:|---|"]
        for name, r in record["paired"].items():
            lines.append(f"| {name} | {r['pairs']:,} | {_fmt(r['median'])} | [{_fmt(r['lo'])}, {_fmt(r['hi'])}] |")
    lines += tail_lines(record["engines"])
    lines += clock_lines(record["engines"])
    lines += ["", f"Command: `{record['command']}`", f"Commit: {record['commit']['commit']}"
              + (" (with local changes)" if record["commit"]["dirty"] else ""),
              f"Machine: {record['machine'].get('gpu', 'no GPU')}, "
              f"{record['machine'].get('cpu_model') or record['machine']['processor']}"
              + _probe_text(record["machine"].get("host_probe"))]
    return "\n".join(lines) + "\n"


def interrupted_lines(record: dict) -> list[str]:
    """The lines that say a record is an interrupted or failed run's (none for a complete one): the
    signal or the error, the batches each engine completed of those planned (that none was timed,
    where so) and what the check covered."""
    partial = record.get("interrupted") or record.get("failed")
    if not partial:
        return []
    check = record["check"]
    done = completed_words(partial)
    cut = "".join(f"; {engine} was cut inside batch {i:,} (not counted)" for engine, i in
                  partial.get("cut_inside_batch", {}).items())
    if not check.get("done", True):
        checked = f"The check against the {check['reference']} reference was NOT done: {check.get('why', '')}."
    elif check.get("prefix"):
        checked = (f"The check against the {check['reference']} reference covers exactly the completed batches: "
                   + ", ".join(f"{engine} after {k:,}" for engine, k in check["prefix"].items())
                   + (f" (the reference replayed off the clock to {', '.join(f'{k:,}' for k in check['replayed'])})"
                      if check.get("replayed") else "")
                   + ("" if check["equal"] else ": DIFFERENCES") + ".")
    else:
        checked = f"No engine completed a batch it could be checked on against the {check['reference']} reference."
    not_checked = "".join(f" {engine}: not checked ({why})." for engine, why in check.get("not_checked", {}).items())
    warmup = record["stream"]["warmup"]
    untimed = (f" No batch was timed: every engine stopped within the first {warmup:,} (warm-up) batches."
               if nothing_timed(partial["completed"], warmup) else "")
    what = (f"Interrupted ({partial['signal']}, {partial['at']})" if record.get("interrupted")
            else "Failed ({} {}: {})".format(*failure_parts(partial)))
    return [f"**{what}: a partial record.** Batches completed of "
            f"{partial['planned_batches']:,} planned: {done}{cut}.{untimed} {checked}{not_checked}", ""]


def _equal_cell(engine: str, check: dict) -> str:
    """The 'equal to the reference' cell of an interrupted run's engine."""
    if not check.get("done", True):
        return "not checked"
    if engine in check.get("not_checked", {}):
        return "not checked"
    k = check["prefix"].get(engine)
    if engine == check["reference"]:
        return f"reference (after {k:,})"
    return f"{'NO' if engine in check['differences'] else 'yes'} (after {k:,})"


def _design_text(design) -> str:
    """The interleaved orders' design in words: a record from before the orders were chained across
    batches (no "carryover") balanced successors within a batch only."""
    if design and design.get("carryover"):
        return ("the orders of a serially balanced Williams design in turn: every engine equally often in each "
                "position and after each engine, itself included, batch boundaries counted")
    return ("the orders of a Williams design in turn: every engine equally often in each position and after "
            "each other engine")


def _probe_text(probe) -> str:
    """The host probe's two figures for the Machine line ('' for a record from before it)."""
    if not probe:
        return ""
    from protocol.environment import probe_figures

    return f" (host probe: {probe_figures(probe)}; median of {probe['repeats']} runs of {probe['calls']:,} calls)"


#: Every batch's time per engine, beside the record: generated data (tens of thousands of numbers),
#: git-ignored under results/; stream.json keeps the summary that the report and a review read.
#: Beside each engine's times (key: the engine), its SM clock readings (key ``<engine>_sm_mhz``) and
#: off-CPU ms (``<engine>_off_cpu_ms``) where it has any, NaN for a batch without one.
TIMES_NAME = "stream_times.npz"


def per_batch_arrays(runs: dict) -> dict:
    """What TIMES_NAME holds for ``runs`` (engine -> EngineRun): each engine's times, and its clock
    readings and off-CPU times where it has any (NaN where a batch has none)."""
    arrays = {}
    for engine, r in runs.items():
        arrays[engine] = r.times_ms
        for suffix, values in (("sm_mhz", r.clocks), ("off_cpu_ms", r.off_cpu)):
            if values is not None and any(v is not None for v in values):
                arrays[f"{engine}_{suffix}"] = [np.nan if v is None else v for v in values]
    return arrays


def write_outputs(out: Path, record: dict, times: dict) -> None:
    """stream.json (the record), stream.md (its table) and TIMES_NAME (``times``: per_batch_arrays,
    each engine's per-batch ms and readings, warm-up included, as float64 arrays). The record and
    its table are written whole or not at all (protocol.records.write_text)."""
    from protocol.records import write_text

    write_text(out / "stream.json", json.dumps(record, indent=1))
    write_text(out / "stream.md", markdown(record))
    np.savez_compressed(out / TIMES_NAME, **{e: np.asarray(t, dtype=np.float64) for e, t in times.items()})


# -- the command ---------------------------------------------------------------------------------
def check_sizes(batches: int, batch_size: int, warmup: int, seed: int = DEFAULT_SEED) -> None:
    if batches < 1:
        raise UsageError(f"--batches {batches}: at least 1")
    if batch_size < 4 or batch_size % 4:
        raise UsageError(f"--batch-size {batch_size}: a positive multiple of 4 (a quarter deletes undirected edges, "
                         "a quarter inserts pairs, both arcs each)")
    if not 0 <= warmup < batches:
        raise UsageError(f"--warmup {warmup}: between 0 and --batches - 1 ({batches - 1}), so some batches are timed")
    check_seed(seed)  # before the graph is read


def check_graph(graph, spec) -> None:
    from bench.gates import ALL_GATES

    if (graph is None) == (spec is None):
        raise UsageError("name one graph: --graph NAME or --graph-file PATH")
    if graph is not None and graph not in ALL_GATES:
        raise UsageError(f"--graph {graph}: unknown gate (known: {', '.join(ALL_GATES)}); "
                         "a file of your own is --graph-file PATH")


def choose_engines(engines) -> list[str]:
    """The engines to run: those asked for (exit 3 where CUDA is missing), else all three where a
    GPU can run them and the host reference alone where none can."""
    if engines is None:
        if not cuda_available():
            print(f"{PROG}: no usable CUDA GPU here (CuPy and a CUDA device): measuring the host reference only",
                  file=sys.stderr)
            return ["host"]
        engines = list(ENGINES)
    unknown = [e for e in engines if e not in ENGINES]
    if unknown or len(set(engines)) != len(engines):
        raise UsageError(f"--engines {' '.join(engines)}: each of {', '.join(ENGINES)} at most once")
    if any(e in CUDA_ENGINES for e in engines):
        if not cuda_available():
            raise EnvironmentProblem("--engines names a CUDA engine, but no CUDA GPU is usable here "
                                     "(CuPy and a CUDA device needed); --engines host runs the host reference")
        if "fused" in engines:
            reason = fused_problem()
            if reason:
                raise EnvironmentProblem(f"the fused engine cannot run here: {reason}")
    return list(engines)


def prepare_out(out) -> Path | None:
    """Create ``--out`` before any work, so a folder that cannot be written costs nothing."""
    from protocol.records import writable_folder

    return None if out is None else writable_folder(out, f"--out {Path(out)}")


def prepare_stream(*, graph, spec, objective, data_dir, cache_dir, progress, batches, batch_size, seed,
                   engines) -> tuple:
    """``(data, stream, probe)``: the graph read (prepared and cached), the whole stream drawn on it
    and the host's speed probed, all before the first batch is timed (the probe before, not after
    the timed batches)."""
    from bench.weights import NUM_OBJECTIVES
    from protocol.environment import host_probe

    data = load_input(graph=graph, spec=spec, objective=objective, data_dir=data_dir, cache_dir=cache_dir,
                      progress=progress)
    if data.weights.shape[1] != NUM_OBJECTIVES:
        check_stream_memory(batches, batch_size, data.weights.shape[1], len(engines))
    stream = stream_batches(data.num_vertices, data.arc_sources(), data.col_ind, data.weights.shape[1],
                            count=batches, size=batch_size, seed=seed)
    return data, stream, host_probe()


def run(*, graph=None, spec=None, batches=DEFAULT_BATCHES, batch_size=DEFAULT_BATCH_SIZE, engines=None,
        warmup=DEFAULT_WARMUP, seed=DEFAULT_SEED, objective=0, out=None, data_dir=None, cache_dir=None,
        progress=True, command=None, interleave=False) -> int:
    """The benchmark with plain arguments (``spec``: a bench.graph_file.GraphFileSpec); the exit
    status. ProtocolError (usage, environment) is raised for the caller to report."""
    check_sizes(batches, batch_size, warmup, seed)
    check_graph(graph, spec)
    engines = choose_engines(engines)
    out_dir = prepare_out(out)
    from bench import options

    options.check_cache_dir(cache_dir)
    from bench.weights import NUM_OBJECTIVES

    check_stream_memory(batches, batch_size, NUM_OBJECTIVES, len(engines))  # before the graph is read
    # nothing is measured before the batches, so a signal here stops at once (SIGTERM included,
    # which would otherwise end the process without a word)
    try:
        with StopRequest(at_once=True) as setup:
            data, stream, probe = prepare_stream(graph=graph, spec=spec, objective=objective, data_dir=data_dir,
                                                 cache_dir=cache_dir, progress=progress, batches=batches,
                                                 batch_size=batch_size, seed=seed, engines=engines)
    except KeyboardInterrupt:
        return finish_before_batches(setup.signal, out_dir)
    sofar = Sofar(stop=StopRequest())
    record_args = dict(batches=batches, batch_size=batch_size, warmup=warmup, seed=seed, objective=objective,
                       command=command, with_cuda=any(e in CUDA_ENGINES for e in engines), interleave=interleave,
                       probe=probe, out_dir=out_dir)
    try:
        with sofar.stop:
            if interleave:
                runs = run_interleaved(engines, data, stream, objective, progress, sofar=sofar)
            else:
                runs = {engine: run_engine(engine, data, stream, objective, progress, sofar=sofar)
                        for engine in engines}
            sofar.stop.check()  # a signal after the last batch: the run still ends as interrupted
    except KeyboardInterrupt as exc:
        return finish_interrupted(exc, sofar, engines, data, stream, record_args, out_dir)
    except Exception as exc:  # an engine's error (or a bug) mid-stream: keep what was measured first
        return finish_failed(exc, sofar, engines, data, stream, record_args, out_dir)
    check = check_results(runs)
    record = build_record(data, stream, runs, check, **record_args)
    print(markdown(record))
    if out_dir is not None:
        write_outputs(out_dir, record, per_batch_arrays(runs))
        print(f"{PROG}: wrote {out_dir / 'stream.json'} and {out_dir / 'stream.md'}", file=sys.stderr)
    if not check["equal"]:
        for engine, diff in check["differences"].items():
            print(f"{PROG}: MISMATCH: {engine} differs from {check['reference']} after {batches:,} batches: {diff}",
                  file=sys.stderr)
        return int(ExitCode.CORRECTNESS)
    return int(ExitCode.OK)


def finish_interrupted(exc: KeyboardInterrupt, sofar: Sofar, engines, data: StreamInput, stream, record_args: dict,
                       out_dir) -> int:
    """After Ctrl-C or SIGTERM in the timed batches: the record of the batches each engine completed,
    marked partial ("interrupted"), checked against the host reference on exactly that prefix (a
    further signal cuts the check short: the record then says it was not done), printed and written
    (the writes themselves shielded from signals). The status: 130, or 1 when the check found an
    engine differing from the reference (a wrong answer outranks the interruption)."""
    signal_name = exc.signal_name if isinstance(exc, StreamStopped) else sofar.stop.signal
    planned, warmup = record_args["batches"], record_args["warmup"]
    runs, completed, halfway, check = checked_prefix(sofar, engines, data, stream, record_args["objective"])
    if nothing_timed(completed, warmup):
        at = "before any batch was timed"
    elif halfway or any(k < planned for k in completed.values()):
        at = "during the timed batches"
    else:
        at = "after the timed batches"
    with interrupt.ignored(*StopRequest.SIGNALS):  # the partial record's few writes finish
        record = write_partial(data, stream, runs, check, record_args, out_dir, "interrupted",
                               interruption_record(signal_name, at, planned, completed, halfway))
        print(f"{PROG}: interrupted ({record['interrupted']['signal']}): {progress_words(record, out_dir)}",
              file=sys.stderr, flush=True)
        print_mismatches(check)
    return int(ExitCode.CORRECTNESS if check["differences"] else ExitCode.INTERRUPTED)


def checked_prefix(sofar: Sofar, engines, data: StreamInput, stream, objective: int,
                   cut_how: str = "interrupted") -> tuple[dict, dict, dict, dict]:
    """``(runs, completed, halfway, check)`` of a stream that stopped early: partial_runs and
    check_prefix, a further signal cutting the check short (the record then says it was not done)."""
    planned = len(stream)
    try:
        with StopRequest(at_once=True):  # a further signal: the record without the check
            runs, completed, halfway = partial_runs(sofar, engines, planned)
            check = check_prefix(runs, completed, halfway, data, stream, objective, cut_how=cut_how)
    except KeyboardInterrupt:
        runs, completed, halfway = partial_runs(sofar, engines, planned, with_trees=False)
        check = check_not_done("interrupted again before the check against the host reference was done")
    return runs, completed, halfway, check


def write_partial(data: StreamInput, stream, runs: dict, check: dict, record_args: dict, out_dir, key: str,
                  stop: dict) -> dict:
    """The partial record (``key``: "interrupted" or "failed", ``stop`` what it says), printed and,
    with ``out_dir``, written in place of any earlier record there; the record."""
    record = build_record(data, stream, runs, check, **record_args)
    mark_partial(record, key, stop)
    print(markdown(record))
    if out_dir is not None:
        write_outputs(out_dir, record, per_batch_arrays(runs))
    return record


def completed_words(stop: dict) -> str:
    """The batches each engine completed, as an interrupted or failed record's ``stop`` lists them:
    "fused 12, host 11"."""
    return ", ".join(f"{engine} {k:,}" for engine, k in stop["completed"].items())


def nothing_timed(completed: dict, warmup: int) -> bool:
    """Whether no engine got past the warm-up: every summary of the record then counts 0 batches."""
    return all(k <= warmup for k in completed.values())


def progress_words(record: dict, out_dir) -> str:
    """How far a stream that stopped early got, for its last line on stderr: the batches each engine
    completed, that none was timed where so, and where the partial record went."""
    stop = record.get("interrupted") or record["failed"]
    words = f"batches completed of {stop['planned_batches']:,}: {completed_words(stop)}"
    warmup = record["stream"]["warmup"]
    if nothing_timed(stop["completed"], warmup):
        words += f"; no batch was timed (the first {warmup:,} are warm-up, left out of the statistics)"
    return words + (f"; partial record written to {out_dir}" if out_dir is not None else "")


def print_mismatches(check: dict) -> None:
    for engine, diff in check["differences"].items():
        print(f"{PROG}: MISMATCH: {engine} differs from {check['reference']} after "
              f"{check['prefix'][engine]:,} batches: {diff}", file=sys.stderr)


def finish_before_batches(signal_name: str | None, out_dir) -> int:
    """After Ctrl-C or SIGTERM while the graph was read or the stream drawn: nothing was measured,
    so no record is written (nor one left by an earlier run into ``out_dir`` replaced); one line
    says so. Status 130."""
    left = ""
    if out_dir is not None and (out_dir / "stream.json").exists():
        left = f" ({out_dir / 'stream.json'} is an earlier run's, left as it was)"
    print(f"{PROG}: interrupted ({signal_name or 'SIGINT'}) before the first batch: no batch was measured; "
          f"no record written{left}", file=sys.stderr, flush=True)
    return int(ExitCode.INTERRUPTED)


def mark_partial(record: dict, key: str, stop: dict) -> None:
    """Mark ``record`` as a stream that stopped early: "partial" and ``stop`` under ``key``
    ("interrupted" or "failed") at its top, and per engine the batches it completed of those planned
    (what the readers of an engine's entry print)."""
    record["partial"] = True
    record[key] = stop
    for engine, run in record["engines"].items():
        run["partial"] = {"completed": stop["completed"][engine], "planned": stop["planned_batches"]}


# -- a stream that failed ------------------------------------------------------------------------
def failure_site(sofar: Sofar) -> tuple[str | None, int | None, str]:
    """Where the stream failed: ``(engine, batch index, during)``: inside an engine's update() call
    (the batch it was applying), while an engine opened its graph and result (no batch), else
    elsewhere (reading a final tree, the stream's own code: engine and batch unknown)."""
    if sofar.inside is not None:
        return sofar.inside, len(sofar.timed.get(sofar.inside, [])), "its update() call"
    opening = [engine for engine in sofar.started if engine not in sofar.opened]
    if opening:
        return opening[-1], None, "opening its graph and result"
    return None, None, "outside the update() calls"


def is_engine_failure(exc: Exception) -> bool:
    """An error the engines report on purpose (engines.errors: a CUDA failure, out of memory, a
    check of the result after a batch) or the host out of memory: the user's to read in one line.
    Anything else, an InternalError included, is a bug whose traceback is wanted."""
    from engines.errors import Error, InternalError

    return isinstance(exc, MemoryError) or (isinstance(exc, Error) and not isinstance(exc, InternalError))


def finish_failed(exc: Exception, sofar: Sofar, engines, data: StreamInput, stream, record_args: dict,
                  out_dir) -> int:
    """After an error in the timed batches: the record of the batches each engine completed, marked
    partial ("failed": the engine, batch, exception type and message), checked as an interrupted
    stream's is (the failing engine, cut inside its batch, not checked; a check that fails in turn,
    as after a CUDA error it may, is recorded as not done), printed and written. An engine's error
    (is_engine_failure) or a ProtocolError then ends the command with one line; a bug with its
    traceback. The status: ExitCode.FAILURE (1; the ProtocolError's own)."""
    engine, batch, during = failure_site(sofar)
    planned = record_args["batches"]
    try:
        runs, completed, halfway, check = checked_prefix(sofar, engines, data, stream, record_args["objective"],
                                                         cut_how="failed")
    except Exception as again:  # noqa: BLE001 - the measured batches are worth a record without the check
        runs, completed, halfway = partial_runs(sofar, engines, planned, with_trees=False)
        check = check_not_done("the check against the host reference failed after the stream's failure "
                               f"({type(again).__name__}: {again})")
    with interrupt.ignored(*StopRequest.SIGNALS):  # the partial record's few writes finish
        record = write_partial(data, stream, runs, check, record_args, out_dir, "failed",
                               failure_record(exc, engine, batch, during, planned, completed, halfway))
        print(f"{PROG}: {failure_words(record['failed'])}: {progress_words(record, out_dir)}",
              file=sys.stderr, flush=True)
        print_mismatches(check)
    if isinstance(exc, ProtocolError):
        return int(exc.exit_code)
    if not is_engine_failure(exc):
        from engines.errors import print_internal_error

        print_internal_error(f"{PROG}: ", exc, then=". The batches measured before it are in the partial "
                             "record" + (f" in {out_dir}" if out_dir is not None else " printed above"))
    return int(ExitCode.FAILURE)


def failure_record(exc: Exception, engine: str | None, batch: int | None, during: str, planned: int,
                   completed: dict, halfway: dict) -> dict:
    """What the record says of a failure: the engine, the batch it was applying (None outside a
    batch), what it was doing, the exception's type and message, the batches planned and completed
    per engine."""
    return {"engine": engine, "batch": batch, "during": during,
            "error": {"type": type(exc).__name__, "message": str(exc)},
            "at": "during the timed batches", "planned_batches": planned, "completed": dict(completed),
            "cut_inside_batch": dict(halfway),
            "note": "partial record: the stream failed before every engine had applied every planned batch"}


def failure_parts(failed: dict) -> tuple[str, str, str]:
    """A failure record's ``(who, where, error)`` in words: ("host", "in batch 12",
    "OutOfMemoryError: ..."), ("second", "while opening its graph and result", ...)."""
    who = failed["engine"] or "the stream"
    where = f"in batch {failed['batch']:,}" if failed["batch"] is not None else (
        "while " + failed["during"] if failed["engine"] else failed["during"])
    return who, where, f"{failed['error']['type']}: {failed['error']['message']}"


def failure_words(failed: dict) -> str:
    """The failure in one clause: "host failed in batch 12 (OutOfMemoryError: ...)"."""
    who, where, error = failure_parts(failed)
    return f"{who} failed {where} ({error})"


def build_record(data: StreamInput, stream, runs, check, *, batches, batch_size, warmup, seed, objective,
                 command, with_cuda, interleave=False, probe=None, out_dir=None) -> dict:
    record = {
        "command": command or "",
        "commit": commit_of_checkout(out_dir),
        "machine": machine_facts(with_cuda, probe),
        "graph": {"name": data.name, "origin": data.origin, "vertices": data.num_vertices,
                  "arcs": int(data.col_ind.size), "source": data.source, "objective": objective},
        "stream": {"batches": batches, "batch_size": batch_size, "warmup": warmup, "seed": seed,
                   "new_arcs": sum(b.new_arcs for b in stream), "reweights": sum(b.reweights for b in stream),
                   "deleted_arcs": batches * batch_size // 2},
        "timer": "time.perf_counter around the whole sssp.update() call, in ms",
        "engines": {engine: {"summary": summarize(r.times_ms[warmup:]), "seconds": round(r.seconds, 3),
                             "per_batch_file": TIMES_NAME, "tail": _tail(r, warmup), "clock": _clock(r, warmup)}
                    for engine, r in runs.items()},
        "check": check,
    }
    if interleave:
        # "order" only here: a sequential record stays what it was before --interleave existed
        record["stream"]["order"] = "interleaved"
        record["stream"]["order_design"] = design_record(list(runs))  # runs: in the interleaved engines' order
        # an interrupted interleaved stream: the batches every engine completed (the same for all but
        # the engines that came before the cut in its batch's order)
        common = min(len(r.times_ms) for r in runs.values())
        record["paired"] = paired_ratios({e: r.times_ms[:common] for e, r in runs.items()}, warmup) \
            if common > warmup else {}
    return record


def _tail(run: EngineRun, warmup: int) -> dict | None:
    """The engine's slowest batches against all (stream_tail.tail_anatomy); None for a run that
    kept no per-batch work."""
    if run.work is None or run.gcs is None:
        return None
    return tail_anatomy(run.times_ms, run.work, run.gcs, warmup, percentile=P99, clocks=run.clocks,
                        off_cpu=run.off_cpu)


def _clock(run: EngineRun, warmup: int) -> dict | None:
    """The engine's SM clock readings (stream_clock.clock_record); None for a run that kept none."""
    if run.clocks is None:
        return None
    return clock_record(run.times_ms, run.clocks, warmup, run.clock_problem, work=run.work)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (UsageError), not a usage block."""

    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    from bench import graph_file, options

    parser = _Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--graph", metavar="NAME", default=None, help="a gate (e.g. luxembourg_osm, roadNet-PA)")
    parser.add_argument("--batches", type=int, default=DEFAULT_BATCHES, metavar="N",
                        help=f"consecutive batches (default {DEFAULT_BATCHES})")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, metavar="B",
                        help=f"arcs per batch, a multiple of 4 (default {DEFAULT_BATCH_SIZE})")
    parser.add_argument("--engines", nargs="+", default=None, metavar="ENGINE",
                        help=f"of {' '.join(ENGINES)} (default: all three; the host reference alone without CUDA)")
    options.add_warmup_option(parser, default=DEFAULT_WARMUP, runs="batches applied")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the stream's seed (default {DEFAULT_SEED})")
    parser.add_argument("--objective", type=int, default=0, help="the weight column measured (default 0)")
    parser.add_argument("--interleave", action="store_true",
                        help="apply each batch with every engine in turn (the orders of a serially balanced Williams "
                             "design, cycled over the batches) and "
                             "record the per-batch ratios between engines with a bootstrap interval; default: "
                             "the engines one after another")
    options.add_table_out_option(parser, "stream.json and stream.md")
    options.add_input_options(parser)
    options.add_no_progress_option(parser)
    graph_file.add_arguments(parser)
    return parser


def _graph_file_spec(args):
    from bench import graph_file

    try:
        return graph_file.spec_from_args(args)
    except graph_file.GraphFileError as exc:
        raise UsageError(str(exc)) from None


def run_from_args(args, command: str) -> int:
    if args.graph is not None and args.graph_file is not None:  # before the file is looked at
        check_graph(args.graph, args.graph_file)
    return run(graph=args.graph, spec=_graph_file_spec(args), batches=args.batches, batch_size=args.batch_size,
               engines=args.engines, warmup=args.warmup, seed=args.seed, objective=args.objective, out=args.out,
               data_dir=args.data_dir, cache_dir=args.cache_dir, progress=not args.no_progress, command=command,
               interleave=args.interleave)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = shlex.join(["python", "bench/stream.py", *argv])
    return run_command(lambda: run_from_args(build_parser().parse_args(argv), command), prefix=f"{PROG}: ")


if __name__ == "__main__":
    interrupt.run(main)
