"""What one process measures with (docs/protocol.md §2, §3): the worker side of a campaign.

A ``Measurer`` holds the graph a worker is measuring (made device-resident for a CUDA side, and
the snapshot every round restores), the once-per-graph check of compute() against the prepared
tree, the sync counter of the verification rounds, and the instruments and progress that rounds
report to. It runs units (``units.Unit``, one cell's share of one worker) with ``cell.CellRun``.

The same class serves both ways a worker runs: in the campaign process (``processes = 1``, or the
runner's in-process mode), with the campaign's own instruments and records, and in a worker
process (``workers.py``), with proxies that forward every reading and every round record to the
campaign process.
"""

from __future__ import annotations

from typing import Callable

from . import planted_check
from .cell import CellRun, CheckFailure, compare_trees
from .sides import Side
from .units import Unit

# compute() on the device is checked against the prepared (host) tree below this many vertices.
INITIAL_TREE_CHECK_LIMIT = 5_000_000
#: Up to this many vertices a host side's compute() is cheap (well under a second), so a host side
#: re-checks the prepared tree too: a tree edited in the cache must not be trusted by host-only
#: campaigns, whose guard compares the sides with each other, never with a fresh tree (issue 28).
HOST_TREE_CHECK_LIMIT = 250_000


class Measurer:
    """Runs units on the graph it has open; ``record_cell(key, **values)`` adds facts to a cell's
    campaign record (the planted delay of ``cell.CellRun``)."""

    def __init__(self, config, instruments, *, campaign_id: str, session: int,
                 sync_counter_factory: Callable[[], object] | None = None,
                 record_cell: Callable[..., None] | None = None):
        self.config = config
        self.instruments = instruments
        self.campaign_id = campaign_id
        self.session = session
        self._sync_counter_factory = sync_counter_factory
        self._record_cell = record_cell
        self._checked_trees: set = set()
        self.gi = None
        self.graph_snapshot = None
        self.device_graph = False  # the open graph is device-resident (a CUDA side runs)

    def _set_cell(self, key: str, **values) -> None:
        if self._record_cell is not None:
            self._record_cell(key, **values)

    def check_initial_tree(self, gi, side: Side, objective: int) -> None:
        """compute() of the side must give the prepared tree (once per graph, side, objective and
        process: every worker process has its own module loads and allocations); a device side up
        to INITIAL_TREE_CHECK_LIMIT vertices, a host side up to HOST_TREE_CHECK_LIMIT."""
        limit = INITIAL_TREE_CHECK_LIMIT if side.needs_cuda else HOST_TREE_CHECK_LIMIT
        if gi.graph.num_vertices > limit:
            return
        key = (gi.name, side.label, objective)
        if key in self._checked_trees:
            return
        self._checked_trees.add(key)
        d, p = gi.trees[objective]
        got_d, got_p = side.compute(gi.graph, gi.source, objective).to_numpy()
        problem = compare_trees((d, p), (got_d, got_p), "prepared", side.label)
        if problem:
            raise CheckFailure(f"compute() on {side.label} differs from the prepared tree: {problem}")

    # -- the graph ------------------------------------------------------------------------------
    def open_graph(self, gi) -> None:
        self.close_graph()
        self.gi = gi
        self.device_graph = any(side.needs_cuda for side in self.config.sides)
        if self.device_graph:
            # a CUDA result makes its graph device-resident (docs/algorithm.md §3.6); do it before
            # the snapshot, so that the snapshot is a device copy and every restore is a cheap
            # device-to-device copy rather than an upload of the host arrays
            gi.graph.to_device()
        # Every round restores this snapshot outside the timers and then times the real
        # update() call: the batch is applied anew each round (on the device for a device
        # graph), as a user pays it, with no memo of an earlier apply (docs/protocol.md §2).
        self.graph_snapshot = gi.graph.snapshot()

    def close_graph(self) -> None:
        """Leave the graph in its pre-batch state and drop the snapshot (a device snapshot holds a
        copy of the graph in GPU memory)."""
        if self.gi is not None and self.graph_snapshot is not None:
            self.gi.graph.restore(self.graph_snapshot)
        self.gi = None
        self.graph_snapshot = None

    # -- a unit ---------------------------------------------------------------------------------
    def run_unit(self, unit: Unit, rounds, progress) -> tuple[str, str | None, dict]:
        """Worker ``unit.process`` of one cell of the open graph, to a terminal status."""
        side_a = self.config.sides[0]
        sides = (side_a, side_a) if unit.control else None
        if unit.planted_percent is not None:  # a planted check: A against A delayed (planted_check.py)
            sides = planted_check.sides(side_a, unit.planted_percent)
        cell = CellRun(config=self.config, gi=self.gi, unit=unit, rounds=rounds,
                       graph_snapshot=self.graph_snapshot, device_graph=self.device_graph,
                       instruments=self.instruments, progress=progress, campaign_id=self.campaign_id,
                       session=self.session, sync_counter_factory=self._sync_counter_factory,
                       check_initial_tree=self.check_initial_tree,
                       sides=sides)
        try:
            return cell.run()
        except CheckFailure as exc:  # the initial-tree check
            return "guard_failed", str(exc), {}


__all__ = ["Measurer", "INITIAL_TREE_CHECK_LIMIT"]
