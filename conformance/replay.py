"""Replay of golden cases on an engine configuration, with exact comparison (no tolerance).

One replay of one case: build ``G_t`` from the stored CSR, import the stored input tree with
``Result.from_arrays(..., canonicalize=False)`` on the configuration's backend, apply the stored
batch with ``update()``, and compare distances and parents (dtype and bytes), ``invalidated``,
``affected``, ``packed_parents``, the apply summary and the engine's synchronization counters;
then ``compute()`` on ``G_{t+1}`` against the stored compute output.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from engines import Batch, Graph
from engines.config import EngineConfig


@dataclass(frozen=True)
class Config:
    """One engine configuration a corpus can be replayed on: an :class:`EngineConfig` (its label is
    the configuration's name) and, for the conformance replay alone, a delta override."""

    name: str
    engine: EngineConfig
    delta: int | None = None  # overrides the case's delta (delta never changes a result)
    description: str = ""

    @classmethod
    def of(cls, text: str, description: str = "", delta: int | None = None, name: str | None = None) -> "Config":
        engine = EngineConfig.parse(text)
        return cls(name or engine.label, engine, delta, description)

    @property
    def backend(self) -> str:
        return self.engine.backend

    @property
    def cuda_engine(self) -> str:
        return self.engine.cuda_engine

    @property
    def expected_engine(self) -> str | None:
        """The engine_used a run must report (None: whatever the automatic choice gives)."""
        return self.engine.expected_engine

    @property
    def operators_loop(self) -> str:
        """The operators engine's loop that runs (Options.operators_loop, pinned or the default)."""
        return self.engine.effective_operators_loop

    @property
    def push_expansion(self) -> str | None:
        return self.engine.push_expansion

    @property
    def update_launch(self) -> str | None:
        return self.engine.update_launch

    @property
    def needs_gpu(self) -> bool:
        return self.engine.needs_cuda


#: The configurations ``--configs`` lists by name: their labels (EngineConfig, the colon form) and
#: host-delta1. Any other EngineConfig spelling replays too (config_named); the dash names of earlier
#: releases (cuda-fused, cuda-operators-host-group, cuda-fused-graph ...) are accepted for one release.
CONFIGS = {
    c.name: c
    for c in (
        Config.of("host", "host reference (NumPy)"),
        Config.of("host", "host reference with delta forced to 1 (another schedule)", delta=1, name="host-delta1"),
        Config.of("cuda:fused", "CUDA fused persistent kernel"),
        Config.of("cuda:operators", "CUDA operators engine, loop driven from the device (its default)"),
        Config.of("cuda:operators-host", "CUDA operators engine, the ADR's host loop (a readback per step)"),
        Config.of("cuda", "CUDA, automatic engine choice"),
        # every push expansion (Options.push_expansion), whichever is the default
        Config.of("cuda:fused+vertex", "CUDA fused, one lane per near-list vertex"),
        Config.of("cuda:fused+group", "CUDA fused, a group of lanes per near-list vertex"),
        Config.of("cuda:operators+vertex", "CUDA operators (device loop), one lane per near-list vertex"),
        Config.of("cuda:operators+group", "CUDA operators (device loop), a group of lanes per near-list vertex"),
        Config.of("cuda:operators-host+group", "CUDA operators (host loop), a group of lanes per near-list vertex"),
        Config.of("cuda:fused+batched", "CUDA fused, group lanes relaxing their edges in batches of four"),
        Config.of("cuda:operators+batched", "CUDA operators (device loop), edges relaxed in batches of four"),
        Config.of("cuda:operators-host+batched", "CUDA operators (host loop), edges relaxed in batches of four"),
        # both launches of the device apply (Options.update_launch), whichever is the default
        Config.of("cuda:fused+graph", "CUDA fused, the batch's device apply as a captured CUDA graph"),
        Config.of("cuda:operators+graph", "CUDA operators (device loop), the device apply as a captured CUDA graph"),
        Config.of("cuda:fused+python", "CUDA fused, the device apply's kernels launched one by one from Python"),
        Config.of("cuda:operators+python", "CUDA operators (device loop), the apply's kernels launched one by one"),
    )
}


def config_named(text: str) -> Config:
    """The configuration ``text`` names: a key of CONFIGS, else any EngineConfig spelling (the dash
    form of earlier releases included, for one release); EngineConfigError when it does not parse."""
    name = text.strip()
    if name in CONFIGS:
        return CONFIGS[name]
    engine = EngineConfig.parse(name)
    return CONFIGS.get(engine.label) or Config(engine.label, engine, description="as spelled")


@dataclass
class CaseOutcome:
    case: str
    config: str
    mismatches: list[str] = field(default_factory=list)
    first_vertex: int | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatches


def first_difference(expected: np.ndarray, actual: np.ndarray) -> int | None:
    """Index of the first differing entry (None when equal; 0 when the shapes differ)."""
    if expected.shape != actual.shape:
        return 0
    diff = np.flatnonzero(expected != actual)
    return int(diff[0]) if diff.size else None


def compare_array(what: str, expected: np.ndarray, actual: np.ndarray, outcome: CaseOutcome) -> None:
    """Exact comparison: dtype, shape and bytes; records the first differing vertex."""
    if actual.dtype != expected.dtype:
        outcome.mismatches.append(f"{what}: dtype {actual.dtype}, expected {expected.dtype}")
    if actual.shape != expected.shape:
        outcome.mismatches.append(f"{what}: shape {actual.shape}, expected {expected.shape}")
        if outcome.first_vertex is None:
            outcome.first_vertex = 0
        return
    if actual.tobytes() == expected.tobytes():
        return
    v = first_difference(expected, actual)
    if v is None:  # equal values but different bytes: only possible through the dtype
        return
    outcome.mismatches.append(f"{what} differ at vertex {v}: expected {expected[v]}, got {actual[v]}")
    if outcome.first_vertex is None or v < outcome.first_vertex:
        outcome.first_vertex = v


def _check_value(what: str, expected, actual, outcome: CaseOutcome) -> None:
    if expected != actual:
        outcome.mismatches.append(f"{what}: expected {expected!r}, got {actual!r}")


def device_loop_replays(launches: int) -> int:
    """Readbacks of the operators device loop for ``launches`` phase launches (operators.py
    replay_steps gives each replay's size): every replay enqueued is waited for, up to the first
    whose end covers them (it shows the loop done) and, with the read-ahead, the one enqueued
    after it only when ENGINES_OPERATORS_WAIT_READ_AHEAD is on (read now, as the run read it; off
    by default); at least one."""
    from engines.sssp.cuda.operators import READ_AHEAD, replay_steps, wait_read_ahead_enabled

    replays, covered = 0, 0
    while covered < max(int(launches), 1):
        covered += replay_steps(replays)
        replays += 1
    return replays + (1 if READ_AHEAD and wait_read_ahead_enabled() else 0)


def operators_syncs(loop: str, iterations: int, epochs: int, *, is_update: bool, candidates: int,
                    packed: bool):
    """(host_syncs, sync_budget) of an operators run, as docs/algorithm.md §9 and operators.py's docstring say.

    The budget is 3 + iterations + epochs for an update, 2 + ... for compute(). The host loop
    reads back once per push iteration and epoch, so it spends the whole budget (an update
    without candidates: #1 and the last, 2). The device loop reads back once per replay instead,
    sync #1 and the last included (its launches take the input checks and the unpack).
    """
    budget = (3 if is_update else 2) + iterations + epochs
    if loop == "host":
        return (2 if is_update and not candidates else budget), budget
    # launches: the pull (updates with candidates), the frontier's minimum and split, a push per
    # iteration, an epoch's minimum and re-split; then the unpack, or the distance-only recovery
    # (distances, parents, and an update's affected count)
    finish = 1 if packed else (3 if is_update else 2)
    if is_update and not candidates:
        launches = finish
    else:
        launches = (1 if is_update else 0) + 2 + iterations + 2 * epochs + finish
    return device_loop_replays(launches), budget


def _check_syncs(stats, config: Config, *, is_update: bool, candidates: int, outcome: CaseOutcome, what: str) -> None:
    """host_syncs and sync_budget exactly as docs/algorithm.md §9 prescribes for the engine that ran."""
    engine = stats.engine_used
    if config.expected_engine is not None:
        _check_value(f"{what} engine_used", config.expected_engine, engine, outcome)
    if engine == "host":
        _check_value(f"{what} host_syncs", 0, stats.host_syncs, outcome)
        _check_value(f"{what} sync_budget", 0, stats.sync_budget, outcome)
    elif engine == "fused":
        _check_value(f"{what} host_syncs", 1, stats.host_syncs, outcome)
        _check_value(f"{what} sync_budget", 1, stats.sync_budget, outcome)
    elif engine == "operators":
        syncs, budget = operators_syncs(config.operators_loop, stats.iterations, stats.epochs,
                                        is_update=is_update, candidates=candidates,
                                        packed=bool(stats.packed_parents))
        _check_value(f"{what} sync_budget", budget, stats.sync_budget, outcome)
        _check_value(f"{what} host_syncs", syncs, stats.host_syncs, outcome)
    else:
        outcome.mismatches.append(f"{what}: unknown engine_used {engine!r}")


def build_inputs(arrays: dict, case: dict):
    """(graph G_t, batch) of a case, from its stored arrays."""
    offset = np.int64 if case["offset_dtype"] == "int64" else None
    graph = Graph.from_csr(arrays["row_ptr"], arrays["col_ind"], arrays["weights"], offset_dtype=offset)
    batch = Batch(arrays["ins_src"], arrays["ins_dst"], arrays["ins_w"], arrays["del_src"], arrays["del_dst"])
    return graph, batch


def replay_case(corpus, case: dict, config: Config) -> CaseOutcome:
    """Replay one case on one configuration; never raises for an engine failure (it is a mismatch)."""
    outcome = CaseOutcome(case["name"], config.name)
    start = time.perf_counter()
    try:
        _replay(corpus.arrays(case), case, config, outcome)
    except Exception as exc:  # noqa: BLE001 - an engine error on a valid case is a failure to report
        outcome.mismatches.append(f"raised {type(exc).__name__}: {exc}")
    outcome.seconds = time.perf_counter() - start
    return outcome


def _replay(arrays: dict, case: dict, config: Config, outcome: CaseOutcome) -> None:
    expect = case["expect"]
    graph, batch = build_inputs(arrays, case)
    delta = case["delta"] if config.delta is None else config.delta
    opts = dict(config.engine.options, objective=case["objective"], delta=delta,
                operators_loop=config.operators_loop)
    result = config.engine.from_arrays(graph, case["source"], arrays["d_in"], arrays["p_in"], canonicalize=False,
                                       **opts)
    stats = config.engine.update(graph, batch, result)
    d_out, p_out = result.to_numpy()
    compare_array("update distances", arrays["d_out"], d_out, outcome)
    compare_array("update parents", arrays["p_out"], p_out, outcome)
    _check_value("invalidated", expect["invalidated"], stats.invalidated, outcome)
    _check_value("affected", expect["affected"], stats.affected, outcome)
    _check_value("packed_parents", expect["packed_parents"], stats.packed_parents, outcome)
    _check_value("apply summary", expect["batch"], dataclasses.asdict(stats.batch), outcome)
    _check_syncs(stats, config, is_update=True, candidates=expect["candidates"], outcome=outcome, what="update")

    computed = config.engine.compute(graph, case["source"], **opts)
    d_c, p_c = computed.to_numpy()
    compare_array("compute distances", arrays["d_out"], d_c, outcome)
    compare_array("compute parents", arrays.get("compute_p", arrays["p_out"]), p_c, outcome)
    cstats = computed.stats
    _check_value("compute packed_parents", expect["compute_packed_parents"], cstats.packed_parents, outcome)
    _check_value("compute invalidated", 0, cstats.invalidated, outcome)
    _check_value("compute affected", 0, cstats.affected, outcome)
    _check_value("compute batch", None, cstats.batch, outcome)
    _check_syncs(cstats, config, is_update=False, candidates=0, outcome=outcome, what="compute")


def replay(corpus, cases, configs, *, progress=None) -> list[CaseOutcome]:
    """Every case on every configuration, configuration-major (one engine warms up once)."""
    outcomes = []
    for config in configs:
        for case in cases:
            outcomes.append(replay_case(corpus, case, config))
            if progress is not None:
                progress()
    return outcomes
