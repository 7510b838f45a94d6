"""The two sides of a sweep cell (issue 33): an engine's whole ``update()`` (side A) and
``compute()`` from scratch on the updated graph, on the same engine (side B).

Both are :class:`protocol.sides.Side` subclasses, so the protocol's cell (guard, warm-up,
counterbalanced rounds, checks, records) measures them as any A/B pair; they travel to worker
processes in the campaign's parameters (pickled by class, importable from here).

- :class:`UpdateSide`: ``engines.sssp.update`` as every side runs it (the probe marks its engine
  region); it also notes the counters of the update (``invalidated``, ``affected``,
  ``packed_parents``) for its batch, for the recompute side to report.
- :class:`RecomputeSide`: applies the batch to the graph (``Graph.apply``, on the device for a
  device graph, as update() does), then ``compute()`` from scratch on the same engine with the
  probe around it (the **engine region of side B is compute() alone**), and takes the fresh tree
  into the round's result. Its tree is the one the guard compares byte for byte with the update's
  (docs/protocol.md §3 step 2), and every round's digest with the guard's (protocol.md §2.4):
  every update of the sweep is checked against compute() from scratch on the same engine (and, with
  ``verify_host``, against the host reference too) before its times count.

A compute() has no ``invalidated`` / ``affected`` of its own; the guard compares those of both
sides, so side B reports the counters of the last update of the same batch in this process
(``paired counters``; the guard always runs side A first). The counters are therefore checked
between the update and the host reference (``--verify host``) and against the guard in every
round of side A; side B's check is its tree digest. compute() is not bound by update()'s sync
budget (docs/protocol.md §6): side B records compute()'s own host-sync count, with a budget of at
least that count.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from protocol.sides import Side, parse_side

#: id(batch) -> (invalidated, affected, packed_parents) of the last update of that batch here
_PAIRED: dict[int, tuple[int, int, bool]] = {}

UPDATE_SUFFIX = " update()"
COMPUTE_SUFFIX = " compute()"


@dataclass(frozen=True)
class UpdateSide(Side):
    """The engine's whole update() (side A of a sweep cell)."""

    def update(self, graph, batch, result, probe):
        from engines import sssp

        stats = sssp.update(graph, batch, result, probe=probe)
        _PAIRED[id(batch)] = (stats.invalidated, stats.affected, stats.packed_parents)
        return stats


@dataclass(frozen=True)
class RecomputeSide(Side):
    """Apply the batch, then compute() from scratch on the same engine (side B of a sweep cell)."""

    def update(self, graph, batch, result, probe):
        from engines.sssp.result import Stats

        paired = _PAIRED.get(id(batch))
        if paired is None:
            raise RuntimeError("the recompute side ran before any update of this batch in this process "
                               "(the guard runs side A first)")
        graph.apply(batch)
        if probe is not None:
            probe.engine_start(None)  # host time: compute() returns with its result on the host side
        fresh = self.config.compute(graph, result.source, objective=result.options.objective)
        if probe is not None:
            probe.engine_stop(None)
        result.copy_from(fresh)
        own = fresh.stats
        invalidated, affected, packed = paired
        return Stats(invalidated=invalidated, affected=affected, iterations=own.iterations, epochs=own.epochs,
                     pushes=own.pushes, packed_parents=packed, engine_used=own.engine_used,
                     host_syncs=own.host_syncs, sync_budget=max(own.sync_budget, own.host_syncs),
                     batch=None, grid_syncs=own.grid_syncs)


def sweep_sides(engine: str) -> tuple[UpdateSide, RecomputeSide]:
    """The (update, recompute) pair of one ``--engines`` entry (``host``, ``cuda:fused`` ...)."""
    base = parse_side(engine)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    fields.pop("label")
    return (UpdateSide(label=base.label + UPDATE_SUFFIX, **fields),
            RecomputeSide(label=base.label + COMPUTE_SUFFIX, **fields))


__all__ = ["UpdateSide", "RecomputeSide", "sweep_sides"]
