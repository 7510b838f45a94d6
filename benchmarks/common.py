"""Inputs of the asv benchmarks: road-like grids, their batches and initial trees, cached on disk.

The inputs are generated here, from fixed seeds (the grid of ``bench.generators``, whose output
tests/bench/test_generators.py pins), and not by ``bench.standins``, so that every commit asv
measures sees exactly the same graphs and batches (a benchmark input that changed with
the code under test would hide or fake a regression). Sizes come from ``SSSPAB_ASV_SCALE``:

- ``full`` (default): a 1400 x 1400 grid (about 1.96 M vertices, the size of roadNet-CA) with
  batches of 50,000 (uniform) and 10,000 (local) changes: one asv run takes minutes;
- ``small``: 300 x 300 with 5,000 / 1,000 changes (a smoke run of a few seconds per benchmark);
- ``tiny``: 30 x 30 with 60 / 20 changes (the unit test of the benchmark module).

Cache: ``$SSSPAB_CACHE_DIR/asv`` (default ``<repo>/.cache/asv``), keyed by the scale and the
generator version; the initial tree is the host reference's ``compute()`` and is re-validated by
``Result.from_arrays`` on every load.

The engine region (``EngineRegion`` in ``sssp_engines``) is timed by asv's own machinery (its
samples, repeats, rounds and statistics) with :data:`ENGINE_CLOCK` as the benchmark's ``timer``: a
clock that advances only by the engine regions the protocol's probe measures (CUDA events on the
device, ``perf_counter_ns`` on the host; ``protocol.region``'s loop of restored, timed updates), so
one asv sample is the engine alone, never the batch apply or the restore around it. ``SSSPAB_ASV_PLANT_PERCENT`` (a test hook, used only by
``benchmarks/asv_semantics.py``) delays every measured engine region by that percentage of its warm-up
median, as ``perf_ab.py engines --plant-delay`` does (``protocol.planted_delay``).
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import engines
from bench import generators
from engines import sssp
from engines.config import EngineConfig
from engines.io.cache import load_arrays, save_arrays
from protocol import planted_delay
from protocol.region import RegionProbe, timed_updates

from .synthetic import region_probe

GENERATOR_VERSION = 1
SCALES = {
    "full": dict(side=1400, uniform=50_000, local=10_000, radius=60),
    "small": dict(side=300, uniform=5_000, local=1_000, radius=20),
    "tiny": dict(side=30, uniform=60, local=20, radius=4),
}
NUM_WEIGHTS = 3
SOURCE = 0

#: The engine configurations every benchmark is parameterized over: asv parameter names (the keys
#: of the recorded history, so they keep the spelling of earlier results) -> EngineConfig.
ENGINE_CONFIGS = {
    "host": EngineConfig.parse("host"),
    "cuda-fused": EngineConfig.parse("cuda:fused"),
    "cuda-operators": EngineConfig.parse("cuda:operators"),
    # any usable GPU (the engine the device picks): what a device graph's Graph.apply needs
    "cuda": EngineConfig.parse("cuda"),
}
ENGINES = ("host", "cuda-fused", "cuda-operators")
BATCHES = ("uniform", "local")
#: Where ``Graph.apply`` runs in the apply benchmark: a host-only graph, a device-resident one.
APPLY_WHERE = ("host", "cuda")
#: The apply benchmark's fixed batch (50,000 changes at full scale).
APPLY_BATCH = "uniform"


def scale() -> dict:
    name = os.environ.get("SSSPAB_ASV_SCALE", "full")
    if name not in SCALES:
        raise ValueError(f"SSSPAB_ASV_SCALE must be one of {', '.join(SCALES)}, got {name!r}")
    return dict(SCALES[name], name=name)


def cache_dir() -> Path:
    base = os.environ.get("SSSPAB_CACHE_DIR")
    root = Path(base) if base else Path(__file__).resolve().parents[1] / ".cache"
    return root / "asv"


def engine_options(engine: str) -> dict:
    """``backend`` and the Options overrides of an asv engine parameter (EngineConfig.arguments)."""
    return ENGINE_CONFIGS[engine].arguments


def skip_unless_runnable(engine: str) -> None:
    """asv skips a benchmark whose setup raises NotImplementedError: CUDA engines without a GPU
    (or a fused engine the GPU cannot run: EngineConfig.unavailable_reason)."""
    reason = ENGINE_CONFIGS[engine].unavailable_reason()
    if reason:
        raise NotImplementedError(f"{engine}: {reason}")


def device_synchronize() -> None:
    """Waits for all queued work of the current device (CUDA benchmarks only)."""
    import cupy

    cupy.cuda.Device().synchronize()


def road_grid(side: int, seed: int = 12345):
    """A road-like planar grid: 4-neighbour edges, each undirected edge kept with probability 0.93
    (average degree about 3.7, near road networks' 2.4-2.8 plus the grid's regularity), both
    directions with independent weights in [1, 100], row-major ids (locality), K = 3."""
    rng = np.random.default_rng(seed)
    pairs = generators.grid_pairs(side, side)
    pairs = pairs[rng.random(pairs.shape[0]) < 0.93]
    src, dst = generators.both_directions(pairs[:, 0], pairs[:, 1])
    weights = rng.integers(1, 101, size=(src.size, NUM_WEIGHTS), dtype=np.int64)
    return engines.Graph.from_edges(src, dst, weights, num_vertices=side * side)


def _edge_sample(graph, rng, count, mask=None):
    src = np.repeat(np.arange(graph.num_vertices, dtype=np.int64), np.diff(graph.row_ptr))
    dst = np.asarray(graph.col_ind, dtype=np.int64)
    idx = np.flatnonzero(mask[src] & mask[dst]) if mask is not None else np.arange(src.size)
    pick = idx[rng.integers(0, idx.size, size=count)]
    return src[pick], dst[pick]


def make_batch(graph, kind: str, sizes: dict, seed: int = 777) -> dict:
    """``uniform``: half insertions between uniform random vertices, half deletions of existing
    edges (inputs.md's unsafe batch); ``local``: the same inside a grid square of the given radius."""
    rng = np.random.default_rng([seed, BATCHES.index(kind)])
    n = graph.num_vertices
    side = int(round(np.sqrt(n)))
    count = sizes[kind]
    if kind == "uniform":
        pool = np.arange(n)
        mask = None
    else:
        r = sizes["radius"]
        cy, cx = (int(x) for x in rng.integers(r, side - r, size=2)) if side > 2 * r else (side // 2, side // 2)
        ys, xs = np.mgrid[max(cy - r, 0):min(cy + r + 1, side), max(cx - r, 0):min(cx + r + 1, side)]
        pool = (ys * side + xs).ravel()
        mask = np.zeros(n, dtype=bool)
        mask[pool] = True
    n_ins = count // 2
    ins_src = pool[rng.integers(0, pool.size, n_ins)]
    ins_dst = pool[rng.integers(0, pool.size, n_ins)]
    del_src, del_dst = _edge_sample(graph, rng, count - n_ins, mask)
    return dict(insert_src=ins_src, insert_dst=ins_dst,
                insert_weights=rng.integers(1, 101, size=(n_ins, NUM_WEIGHTS)),
                delete_src=del_src, delete_dst=del_dst)


def _cache_path() -> Path:
    s = scale()
    return cache_dir() / f"road-grid-{s['name']}-v{GENERATOR_VERSION}.npz"


def load_inputs() -> dict:
    """Graph arrays, the two batches and the initial tree (objective 0), from the cache or made now."""
    path = _cache_path()
    cached = load_arrays(path)
    if cached is not None:
        return cached
    s = scale()
    graph = road_grid(s["side"])
    out = dict(row_ptr=np.asarray(graph.row_ptr), col_ind=np.asarray(graph.col_ind),
               weights=np.asarray(graph.weights).reshape(NUM_WEIGHTS, -1).T)
    for kind in BATCHES:
        for key, arr in make_batch(graph, kind, s).items():
            out[f"{kind}/{key}"] = np.asarray(arr)
    d, p = sssp.compute(graph, SOURCE).to_numpy()
    out["distances"], out["parents"] = d, p
    save_arrays(path, **out)
    return out


@dataclass
class UpdateState:
    """A graph, a pre-batch result on one engine, and a way back to the pre-batch state."""

    graph: engines.Graph
    snapshot: object
    base: sssp.Result
    work: sssp.Result
    batch: engines.Batch
    options: dict

    def restore(self) -> None:
        """Back to the pre-batch state; on a device graph the copies are waited for here, so a
        timed call that follows does not pay for them."""
        self.graph.restore(self.snapshot)
        self.work.copy_from(self.base)
        if self.options["backend"] == "cuda":
            device_synchronize()

    def update(self, probe=None):
        return sssp.update(self.graph, self.batch, self.work, probe=probe)


def build_graph(inputs: dict) -> engines.Graph:
    return engines.Graph.from_csr(inputs["row_ptr"], inputs["col_ind"], inputs["weights"])


def load_batch(inputs: dict, kind: str) -> engines.Batch:
    return engines.Batch(*(inputs[f"{kind}/{key}"] for key in
                           ("insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst")))


def build_update_state(engine: str, kind: str) -> UpdateState:
    inputs = load_inputs()
    graph = build_graph(inputs)
    opts = engine_options(engine)
    backend = opts.pop("backend")
    if backend == "cuda":
        graph.to_device()  # as a CUDA result makes it (algorithm.md §3.6): the snapshot is a device copy
    base = sssp.Result.from_arrays(graph, SOURCE, inputs["distances"], inputs["parents"], backend=backend, **opts)
    batch = load_batch(inputs, kind)
    return UpdateState(graph, graph.snapshot(), base, base.clone(), batch, dict(backend=backend, **opts))


def median_engine_seconds(state: UpdateState, rounds: int) -> float:
    """Median time of the engine region alone (batch apply and upload excluded) over ``rounds``
    updates, each from the restored pre-batch state. Host time of the protocol's probe: the engine
    returns after its final synchronization, so it covers the device work."""
    probe = RegionProbe()
    times = [probe.host_ms() / 1e3 for _ in timed_updates(state.update, state.restore, rounds, probe)]
    return statistics.median(times)


# -- the engine region as asv's clock ---------------------------------------------------------------
#: The test hook's environment variable: a planted slowdown of the engine region, in percent.
PLANT_ENV = "SSSPAB_ASV_PLANT_PERCENT"
#: Engine time one asv sample should hold at least (several updates where one is shorter).
SAMPLE_ENGINE_SECONDS = 0.02
#: Most updates in one sample (a power of two, like every count :func:`updates_per_sample` picks).
MAX_UPDATES_PER_SAMPLE = 64
#: Restored updates measured to calibrate a state's sample size and planted delay.
CALIBRATION_UPDATES = 5


class EngineClock:
    """A monotonic clock that advances only by measured engine regions: asv reads it before and
    after the timed call (``timer`` attribute), so a sample is the engine time of that call."""

    def __init__(self):
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds

    def advance(self, seconds: float) -> None:
        self.seconds += seconds


ENGINE_CLOCK = EngineClock()


def planted_percent() -> float:
    """``$SSSPAB_ASV_PLANT_PERCENT`` (0 when unset)."""
    text = os.environ.get(PLANT_ENV, "").strip()
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{PLANT_ENV} must be a percentage, got {text!r}") from None
    if not 0 <= value <= 100:
        raise ValueError(f"{PLANT_ENV} must be in [0, 100], got {text!r}")
    return value


def region_seconds(probe: RegionProbe) -> float:
    """The engine region of the probe's last update: device time (CUDA events) where it has one."""
    device_ms = probe.device_ms()
    return (device_ms if device_ms is not None else probe.host_ms()) / 1e3


def updates_per_sample(median_seconds: float, target_seconds: float = SAMPLE_ENGINE_SECONDS) -> int:
    """The smallest power of two of updates whose engine time reaches ``target_seconds``, at most
    :data:`MAX_UPDATES_PER_SAMPLE` (powers of two: two processes of one commit, calibrating on
    slightly different medians, mostly pick the same count)."""
    count = 1
    while count < MAX_UPDATES_PER_SAMPLE and count * median_seconds < target_seconds:
        count *= 2
    return count


@dataclass
class EngineTiming:
    """How a state's engine region is sampled: ``updates`` restored updates per asv sample, each
    delayed by ``delay_ns`` (the planted slowdown; 0 without it)."""

    updates: int
    delay_ns: int
    probe: RegionProbe


def calibrate_engine_timing(state: UpdateState, label: str = "") -> EngineTiming:
    """Measure :data:`CALIBRATION_UPDATES` restored updates (untimed for asv) and pick the sample
    size and the planted delay from their median engine region. ``label`` names the state for
    the synthetic clock (``benchmarks/synthetic.py``), unused without it."""
    probe = region_probe(label)
    times = [region_seconds(probe) for _ in timed_updates(state.update, state.restore, CALIBRATION_UPDATES, probe)]
    median = statistics.median(times)
    delay = planted_delay.calibrated_delay_ns(median * 1e3, planted_percent()) if planted_percent() else 0
    state.restore()
    return EngineTiming(updates_per_sample(median), delay, probe)


def timed_engine_updates(state: UpdateState, timing: EngineTiming, clock: EngineClock = ENGINE_CLOCK) -> None:
    """``timing.updates`` updates, each from the restored pre-batch state; the clock advances by
    their median engine region (asv's value is seconds per update; a median, so that one update
    preempted by the machine does not move the sample). The restores run outside every engine
    region, so the clock never sees them."""
    probe = timing.probe
    hooks = planted_delay.DelayedProbe(probe, timing.delay_ns) if timing.delay_ns else probe
    regions = [region_seconds(probe)
               for _ in timed_updates(state.update, state.restore, timing.updates, probe, hooks=hooks)]
    clock.advance(statistics.median(regions))
