"""asv benchmarks of the sssp engines: compute() and update() times, and the counters that explain them.

Every benchmark is parameterized over the engine (``host``, ``cuda-fused``, ``cuda-operators``);
CUDA benchmarks skip (setup raises NotImplementedError) without a usable GPU, host benchmarks run
anywhere. Each timed update starts from the exact pre-batch state: asv re-runs ``setup`` before
every timed call, and ``setup`` restores the graph snapshot and the pre-batch tree (cheap copies;
the inputs themselves are built once per process and cached on disk, see ``common``).
"""

from __future__ import annotations

import statistics

from engines import sssp

from . import common

_STATES: dict = {}
_GRAPHS: dict = {}
_WARM: set = set()


def _state(engine: str, kind: str) -> common.UpdateState:
    key = (common.scale()["name"], engine, kind)
    if key not in _STATES:
        state = common.build_update_state(engine, kind)
        state.update()  # warm-up, untimed: JIT/NVRTC compilation, workspace reserve, page faults
        state.restore()
        state.update()
        _STATES[key] = state
    state = _STATES[key]
    state.restore()
    return state


def _graph():
    key = common.scale()["name"]
    if key not in _GRAPHS:
        _GRAPHS[key] = common.build_graph(common.load_inputs())
    return _GRAPHS[key]


class Compute:
    """compute() from scratch on the road-like grid, objective 0, source 0."""

    params = [list(common.ENGINES)]
    param_names = ["engine"]
    timeout = 900
    number = 1
    repeat = (2, 10, 60.0)
    warmup_time = 0.0

    def setup(self, engine):
        common.skip_unless_runnable(engine)
        self.graph = _graph()
        self.options = common.engine_options(engine)
        if engine not in _WARM:  # once per process, untimed: compilation, workspace reserve
            for _ in range(2):
                sssp.compute(self.graph, common.SOURCE, **self.options)
            _WARM.add(engine)

    def time_compute(self, engine):
        sssp.compute(self.graph, common.SOURCE, **self.options)

    def track_iterations_plus_epochs(self, engine):
        stats = sssp.compute(self.graph, common.SOURCE, **self.options).stats
        return stats.iterations + stats.epochs

    track_iterations_plus_epochs.unit = "rounds"

    def track_host_syncs(self, engine):
        return sssp.compute(self.graph, common.SOURCE, **self.options).stats.host_syncs

    track_host_syncs.unit = "synchronizations"


class Update:
    """update() of the pre-batch tree after one batch (``uniform``: 50k changes, ``local``: 10k at full scale)."""

    params = [list(common.ENGINES), list(common.BATCHES)]
    param_names = ["engine", "batch"]
    timeout = 900
    number = 1
    repeat = (3, 15, 90.0)
    warmup_time = 0.0

    def setup(self, engine, batch):
        common.skip_unless_runnable(engine)
        self.state = _state(engine, batch)

    def time_update(self, engine, batch):
        self.state.update()

    def track_engine_seconds(self, engine, batch):
        """The engine region alone (batch apply and upload excluded), median of 5 restored rounds."""
        return common.median_engine_seconds(self.state, 5)

    track_engine_seconds.unit = "seconds"

    def track_host_syncs(self, engine, batch):
        return self.state.update().host_syncs

    track_host_syncs.unit = "synchronizations"

    def track_iterations_plus_epochs(self, engine, batch):
        stats = self.state.update()
        return stats.iterations + stats.epochs

    track_iterations_plus_epochs.unit = "rounds"

    def track_affected(self, engine, batch):
        """Deterministic (§9): any change across commits is a change of semantics, not of speed."""
        return self.state.update().affected

    track_affected.unit = "vertices"


class OperatorsOverFused:
    """The operators engine's engine-region time over the fused engine's, per batch (median of 7 each)."""

    params = [list(common.BATCHES)]
    param_names = ["batch"]
    timeout = 900
    updates_per_median = 7  # not "rounds": asv reads that name as its own benchmark attribute

    def setup(self, batch):
        common.skip_unless_runnable("cuda-fused")
        common.skip_unless_runnable("cuda-operators")
        self.fused = _state("cuda-fused", batch)
        self.operators = _state("cuda-operators", batch)

    def _median(self, state):
        return common.median_engine_seconds(state, self.updates_per_median)

    def track_ratio(self, batch):
        self._median(self.fused)  # warm both engines before measuring either
        self._median(self.operators)
        fused, operators = [], []
        for _ in range(3):  # alternate so drifts hit both sides
            fused.append(self._median(self.fused))
            operators.append(self._median(self.operators))
        return statistics.median(operators) / statistics.median(fused)

    track_ratio.unit = "operators/fused"
