"""asv benchmark of ``Graph.apply`` alone: one fixed batch applied to the pre-batch road-like grid,
on a host-only graph (``host``) and on a device-resident one (``cuda``, algorithm.md §3.6: the
batch validated on the host and uploaded, the new CSRs built on the GPU).

How every timed call starts from the same state: ``number = 1`` (one call per sample) with
``warmup_time = 0`` (asv's warm-up calls the function without re-running ``setup``), so asv runs
``setup`` before each sample and ``setup`` restores the graph snapshot, outside the timer. The
alternative, timing restore + apply and subtracting a restore-only benchmark, is rejected: the
difference of two medians carries the noise of both and is not a sample of the apply (asv could
neither give its spread nor compare it across commits), and on the device the restore's copies are
asynchronous, so a restore-only sample would not time the same work as the restore inside a
restore + apply sample. On the device ``setup`` also waits for the restore's copies, and the timed
call ends with a device synchronization: all of the apply's work is inside the sample and none of
the restore's (``Graph.apply`` returns a summary that needs a device read, but work queued after
that read would otherwise escape the timer).
"""

from __future__ import annotations

from dataclasses import dataclass

import engines

from . import common

_APPLY: dict = {}


@dataclass
class ApplyState:
    graph: engines.Graph
    snapshot: object
    batch: engines.Batch
    on_device: bool

    def restore(self) -> None:
        self.graph.restore(self.snapshot)
        if self.on_device:
            common.device_synchronize()

    def apply(self):
        out = self.graph.apply(self.batch)
        if self.on_device:
            common.device_synchronize()
        return out


def apply_state(where: str) -> ApplyState:
    """The graph on ``where`` with its pre-batch snapshot, warmed up (built once per process)."""
    key = (common.scale()["name"], where)
    if key not in _APPLY:
        inputs = common.load_inputs()
        graph = common.build_graph(inputs)
        on_device = where == "cuda"
        if on_device:
            graph.to_device()
        state = ApplyState(graph, graph.snapshot(), common.load_batch(inputs, common.APPLY_BATCH), on_device)
        for _ in range(2):  # untimed: kernel compilation, allocations, page faults
            state.apply()
            state.restore()
        _APPLY[key] = state
    state = _APPLY[key]
    state.restore()
    return state


class Apply:
    """``Graph.apply`` of the fixed ``uniform`` batch (50k changes at full scale) to the pre-batch graph."""

    params = [list(common.APPLY_WHERE)]
    param_names = ["graph"]
    timeout = 900
    number = 1  # one call per sample, so setup (the restore) runs before every timed call
    repeat = (5, 30, 60.0)
    warmup_time = 0.0  # asv's warm-up would call apply again without a restore

    def setup(self, where):
        common.skip_unless_runnable(where)
        self.state = apply_state(where)

    def time_apply(self, where):
        self.state.apply()

    def track_edges_after(self, where):
        """Deterministic (algorithm.md §3.3): a change across commits is one of semantics."""
        self.state.apply()
        return self.state.graph.num_edges

    track_edges_after.unit = "edges"
