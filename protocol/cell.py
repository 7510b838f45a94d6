"""One cell of a campaign in one worker (docs/protocol.md §2, §3): guard, warm-up and counterbalanced
rounds.

Per cell the prepared tree becomes one result per side and a snapshot of graph and results is
taken; a guard update per side must agree byte for byte; warm-up rounds run untimed; with a sync
counter (CUPTI), verification rounds run untimed with it (docs/protocol.md §6: counting must not touch
the timing, so no timed round ever carries it); then pairs of rounds in ABBA or seeded random
order until the worker's target of accepted pairs (and with ``--adaptive`` the precision) is
reached. Every round is restored outside the timers, checked against the guard, judged for clocks
and contamination, and flushed to the records at once.

A ``CellRun`` is one unit (``units.Unit``): worker ``unit.process`` of the cell, measuring its
share of the pairs. It runs wherever that worker runs (the campaign process, or a worker process
of ``workers.py``); what it measures with (the graph's snapshot, the instruments, the progress,
the sync counter, the initial-tree check) is passed in by its caller, ``measurer.Measurer``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
from typing import Callable

import numpy as np
import pandas as pd

from . import l2flush, placement, planted_delay
from .analysis import REGIONS, paired_values, primary_region
from .digest import result_digest
from .records import ROUND_COLUMNS
from .region import RegionProbe, timed_update  # RegionProbe re-exported: the timing lives in protocol/region.py
from .sides import Side
from .stats import paired_ratio
from .units import Unit

ROLES = ("A", "B")
#: --discard-after-clock-change: a change of a round's median SM clock from the previous round's by
#: at least this much (NVML reports whole MHz) starts the rounds discarded; the reason they carry
CLOCK_CHANGE_MHZ = 1.0
CLOCK_SETTLING = "clock change"


class CheckFailure(Exception):
    """A correctness failure in a round (docs/protocol.md §2.4): aborts the cell, exit 1 at the end."""


def _device_synchronize() -> None:
    import cupy

    cupy.cuda.Device().synchronize()


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


class _SideState:
    """One side's result in a cell and the snapshot it is restored from before every round."""

    def __init__(self, role: str, side: Side, result):
        self.role = role
        self.side = side
        self.result = result
        self.snapshot = result.clone()
        self.rounds_done = 0


class CellRun:
    """Runs one cell to a terminal status; rows go to ``rounds`` as they finish."""

    def __init__(self, *, config, gi, unit: Unit, rounds, graph_snapshot, instruments, progress,
                 campaign_id: str, session: int, device_graph: bool = False,
                 sync_counter_factory: Callable[[], object] | None = None,
                 check_initial_tree: Callable[..., None] | None = None,
                 sides: tuple[Side, Side] | None = None):
        """``config``: the campaign's (order, seed, warm-up, precision, verification); ``gi`` the
        open graph and ``graph_snapshot`` its pre-batch state every round restores
        (``device_graph``: a device-resident graph, whose restores are waited for outside the
        timers); ``instruments`` judge the rounds (clocks, contamination); ``progress`` hears of
        every round; ``campaign_id`` and ``session`` go into every row; ``sync_counter_factory``:
        the counter of the untimed verification rounds (None: none run);
        ``check_initial_tree(gi, side, objective)``: the once-per-graph check of compute()
        against the prepared tree (None: not checked); ``sides``: the A/A control passes
        (side A, side A)."""
        self.config = config
        self.unit = unit
        self.sides = sides or config.sides
        self.gi = gi
        self.graph_snapshot = graph_snapshot
        self.device_graph = device_graph
        self.instruments = instruments
        self.progress = progress
        self.campaign_id = campaign_id
        self.session = session
        self.sync_counter_factory = sync_counter_factory
        self.check_initial_tree = check_initial_tree
        self.batch_name = unit.batch
        self.batch = gi.batches[unit.batch].batch
        self.objective = unit.objective
        self.key = unit.key
        self.rounds = rounds  # this worker's rows of the cell (units.UnitRounds or LocalRounds)
        self.probe = RegionProbe()
        self.sequence = len(rounds.rows)
        self.guard: dict | None = None
        # --discard-after-clock-change: the previous round's SM clock, and how many rounds of the
        # latest change are still to be discarded (with what the change was)
        self._last_sm_mhz: float | None = None
        self._settling: tuple[int, str] = (0, "")

    # -- state ----------------------------------------------------------------------------------
    def _restore(self, state: _SideState, *, verify: bool = False) -> None:
        graph = self.gi.graph
        graph.restore(self.graph_snapshot)
        state.result.copy_from(state.snapshot)
        if self.device_graph:
            # the restore's device copies are queued asynchronously: finish them here, outside
            # the timers, so the timed update() does not wait for them
            _device_synchronize()
        if verify:
            if graph.state_id != self.graph_snapshot.state_id:
                raise CheckFailure("the graph restore did not return to the snapshot's state")
            got = result_digest(state.result.distances, state.result.parents)
            want = result_digest(state.snapshot.distances, state.snapshot.parents)
            if got != want:
                raise CheckFailure(f"side {state.role}: the restored result differs from its snapshot")

    def _make_states(self) -> dict[str, _SideState]:
        self.gi.graph.restore(self.graph_snapshot)  # the previous cell left its post-batch state
        d, p = self.gi.trees[self.objective]
        sides = dict(zip(ROLES, self.sides))
        made = {}
        # the sides allocate their results (and, in the guard, their workspaces) in the worker's
        # allocation order (--alloc-order, protocol/placement.py); the states stay keyed A, B
        for role in placement.roles(self.unit.alloc_order):
            side = sides[role]
            if self.check_initial_tree is not None:
                self.check_initial_tree(self.gi, side, self.objective)
            result = side.make_result(self.gi.graph, self.gi.source, self.objective, d, p)
            made[role] = _SideState(role, side, result)
        return {role: made[role] for role in ROLES}

    # -- guard ----------------------------------------------------------------------------------
    def _guard(self, states) -> str | None:
        """One untimed update per side (and the host reference with --verify host)."""
        outcomes = {}
        # the first update allocates a side's workspace: in the worker's allocation order too
        parties = [(role, states[role]) for role in placement.roles(self.unit.alloc_order)]
        if self.config.verify_host:
            host = Side("host (reference)", "host")
            d, p = self.gi.trees[self.objective]
            ref = _SideState("host", host, host.make_result(self.gi.graph, self.gi.source, self.objective, d, p))
            parties.append(("host", ref))
        for role, st in parties:
            self._restore(st, verify=True)
            try:
                stats = st.side.update(self.gi.graph, self.batch, st.result, self.probe)
            except Exception as exc:  # an engine error in the guard fails the cell, not the campaign
                return f"side {role} ({st.side.label}) raised {type(exc).__name__}: {exc}"
            dist, par = st.result.to_numpy()
            outcomes[role] = {
                "stats": stats,
                "tree": (dist, par),
                "digest": result_digest(st.result.distances, st.result.parents),
                "host_digest": result_digest(dist, par),
            }
        base = outcomes["A"]
        for role, o in outcomes.items():
            if o["digest"] != o["host_digest"]:
                return f"side {role}: the device digest differs from the digest of its host copy"
            if role == "A":
                continue
            problem = compare_trees(base["tree"], o["tree"], "A", role)
            for counter in ("invalidated", "affected", "packed_parents"):
                va, vb = getattr(base["stats"], counter), getattr(o["stats"], counter)
                if va != vb:
                    problem = (problem + "; " if problem else "") + f"{counter}: A {va}, {role} {vb}"
            if problem:
                return problem
        self.guard = {
            "invalidated": base["stats"].invalidated,
            "affected": base["stats"].affected,
            "digest": base["digest"],
        }
        return None

    # -- one round ------------------------------------------------------------------------------
    def _round(self, state: _SideState, *, warmup: bool, pair_index: int, position: int,
               verify: bool = False) -> dict:
        """One round; ``verify``: untimed, with the sync counter around the update (only then)."""
        untimed = warmup or verify  # a verification round is recorded as untimed (warmup = true)
        self._restore(state)
        # --l2-flush: after the restore (whose copies pass through the L2), before every timer and
        # the round's clock window (protocol/l2flush.py)
        flushed = l2flush.flush_before_round(state.side) if self.config.l2_flush else None
        counter = self.sync_counter_factory() if verify and self.sync_counter_factory else contextlib.nullcontext()
        window = self.instruments.begin_round()
        with counter:  # an engine error in a round is a correctness failure: caught, then failed below
            timed = timed_update(lambda probe: state.side.update(self.gi.graph, self.batch, state.result, probe),
                                 self.probe, catch=True)
        stats, error = timed.stats, timed.error
        fields, reason = self.instruments.end_round(window)
        row = self._row(state, untimed, pair_index, position)
        row["verification"] = verify
        row["l2_flush"] = flushed
        row.update(fields)
        row["update_host_ms"] = timed.update_host_ms
        row["engine_host_ms"] = self.probe.host_ms()
        row["cupti_syncs"] = getattr(counter, "count", None)
        if error is not None:
            row["accepted"] = False
            row["reject_reason"] = f"check failed: {type(error).__name__}: {error}"
            self._emit(row)
            raise CheckFailure(f"side {state.role} raised {type(error).__name__}: {error}")
        row["engine_device_ms"] = self.probe.device_ms()
        for name in ("host_syncs", "sync_budget", "iterations", "epochs", "pushes",
                     "invalidated", "affected", "packed_parents", "grid_syncs"):
            row[name] = getattr(stats, name)
        row["engine"] = stats.engine_used
        # the push's near-list lengths: read from the device after an untimed round only (the
        # read waits for the device; a timed round pays nothing for it)
        row["near_median"] = self._near_median(state) if untimed else None
        failure = self._check(state, stats, row["cupti_syncs"], counter)
        if failure:
            row["accepted"] = False
            row["reject_reason"] = f"check failed: {failure}"
            self._emit(row)
            raise CheckFailure(f"side {state.role} ({state.side.label}): {failure}")
        settling = self._clock_settling(row.get("sm_clock_median_mhz"))
        if reason is None:
            reason = settling
        row["accepted"] = not untimed and reason is None
        row["reject_reason"] = None if untimed else reason
        return row

    def _clock_settling(self, sm_mhz) -> str | None:
        """--discard-after-clock-change N: the reason to discard this round when it is one of the
        first N rounds (warm-up rounds included: they count, untimed) from the round whose median
        SM clock differs from the previous round's by at least CLOCK_CHANGE_MHZ; None otherwise."""
        n = self.config.discard_after_clock_change
        if not n or sm_mhz is None or sm_mhz != sm_mhz:  # off, or the clock unknown (None, NaN)
            return None
        previous, self._last_sm_mhz = self._last_sm_mhz, float(sm_mhz)
        left, change = self._settling
        if previous is not None and abs(float(sm_mhz) - previous) >= CLOCK_CHANGE_MHZ:
            left, change = n, f"SM {previous:g} -> {float(sm_mhz):g} MHz"
        if left <= 0:
            return None
        self._settling = (left - 1, change)
        return f"{CLOCK_SETTLING} ({change}): round {n - left + 1} of {n} discarded"

    @staticmethod
    def _near_median(state: _SideState) -> float | None:
        """The median near-list length of the side's last run (CUDA results; None on the host)."""
        if getattr(state.result, "backend", None) != "cuda":
            return None
        from engines.sssp import cuda

        return cuda.push_profile(state.result).median

    def _check(self, state: _SideState, stats, cupti, counter=None) -> str | None:
        g = self.guard
        if stats.invalidated != g["invalidated"] or stats.affected != g["affected"]:
            return (
                f"invalidated/affected {stats.invalidated}/{stats.affected}, guard "
                f"{g['invalidated']}/{g['affected']}"
            )
        if stats.host_syncs > stats.sync_budget:
            return f"host_syncs {stats.host_syncs} over the budget {stats.sync_budget}"
        if cupti is not None and cupti != stats.host_syncs:
            # the CUPTI counter names the Python line behind each counted call (only formatted here)
            described = getattr(counter, "described", None)
            return (f"CUPTI counted {cupti} synchronizations, the engine {stats.host_syncs}"
                    + (f" (counted: {described()})" if described else ""))
        digest = result_digest(state.result.distances, state.result.parents)
        if digest != g["digest"]:
            return f"result digest {digest:#018x} differs from the guard's {g['digest']:#018x}"
        return None

    def _row(self, state: _SideState, warmup: bool, pair_index: int, position: int) -> dict:
        row = dict.fromkeys(ROUND_COLUMNS)
        row.update(
            campaign_id=self.campaign_id,
            session=self.session,
            process=self.unit.process,
            cell=self.key,
            graph=self.gi.name,
            batch=self.batch_name,
            objective=self.objective,
            role=state.role,
            side=state.side.label,
            round_index=state.rounds_done,
            pair_index=pair_index,
            position=position,
            sequence=self.sequence,
            warmup=warmup,
            timestamp=utc_now(),
        )
        row["planted_delay_ns"] = getattr(state.side, "delay_ns", None)  # a test hook's delay, if any
        row["alloc_order"] = self.unit.alloc_order
        state.rounds_done += 1
        self.sequence += 1
        return row

    def _emit(self, *rows: dict) -> None:
        self.rounds.append(*rows)
        for row in rows:
            self.progress.round_done(self.key, row)

    # -- order ----------------------------------------------------------------------------------
    def _orientation(self, accepted_pairs: int, pair_index: int) -> tuple[str, str]:
        if self.config.order == "abba":
            # pair k of the accepted sequence: AB for even k, BA for odd; a repeat keeps the slot
            return ("A", "B") if accepted_pairs % 2 == 0 else ("B", "A")
        # pair indexes restart in every worker: later workers mix their index into the draw
        where = self.key if self.unit.process == 0 else f"{self.key}/{self.unit.process}"
        digest = hashlib.sha256(f"{self.config.seed}/{where}/{pair_index}".encode()).digest()
        return ("A", "B") if digest[0] % 2 == 0 else ("B", "A")

    def _precise_enough(self) -> bool:
        frame = pd.DataFrame(self.rounds.rows)
        column = REGIONS[primary_region(frame)]
        a, b = paired_values(frame, column)
        ratio = paired_ratio(a, b, resamples=self.config.bootstrap_resamples, seed=self.config.seed)
        return ratio.relative_half_width <= self.config.precision

    # -- the cell -------------------------------------------------------------------------------
    def run(self) -> tuple[str, str | None, dict]:
        states = self._make_states()
        for st in states.values():  # resumed rounds keep their indexes
            st.rounds_done = sum(1 for r in self.rounds.rows if r["role"] == st.role)
        try:
            problem = self._guard(states)
        except CheckFailure as exc:
            return "check_failed", str(exc), {}
        if problem:
            return "guard_failed", problem, {}
        self.instruments.start_cell()
        try:
            first_warmup = len(self.rounds.rows)
            for _ in range(self.config.warmup):
                for role in ROLES:
                    self._emit(self._round(states[role], warmup=True, pair_index=-1, position=-1))
            # a planted delay (a test hook) is calibrated on this cell's warm-up; rows record it
            planted_delay.calibrate_cell(states, self.rounds.rows[first_warmup:])
            if self.sync_counter_factory is not None:
                for _ in range(self.config.verify_rounds):
                    for role in ROLES:
                        self._emit(self._round(states[role], warmup=False, pair_index=-1, position=-1,
                                               verify=True))
            self.instruments.after_warmup()
            return self._pairs(states)
        except CheckFailure as exc:
            return "check_failed", str(exc), {}

    def _pairs(self, states) -> tuple[str, str | None, dict]:
        cfg, unit = self.config, self.unit
        rejected_elsewhere = cfg.max_rejects - unit.rejects_allowed  # by the cell's other workers
        by_pair: dict[int, list[int]] = {}
        for i, r in enumerate(self.rounds.rows):
            if not r["warmup"]:
                by_pair.setdefault(r["pair_index"], []).append(i)
        accepted_pairs = rejected_pairs = settling_pairs = 0
        for indexes in by_pair.values():
            rows = [self.rounds.rows[i] for i in indexes]
            if len(rows) < 2:  # an interrupted campaign's half pair: never used, not noise either
                if rows[0]["accepted"]:
                    self.rounds.amend(indexes[0], accepted=False, reject_reason="pair interrupted")
            elif all(r["accepted"] for r in rows):
                accepted_pairs += 1
            else:
                rejected_pairs += 1
                settling_pairs += _settling_pair(rows)
                # a round left accepted beside its rejected partner (a campaign interrupted between
                # the pair's two writes, before they were ordered): rejected with it, as the pair is
                for i, row in zip(indexes, rows):
                    if row["accepted"]:
                        self.rounds.amend(i, accepted=False, reject_reason="pair repeated (other round rejected)")
        pair_index = max(by_pair, default=-1) + 1
        self.progress.cell_progress(self.key, accepted_pairs, unit.target)
        def counts_of() -> dict:
            counts = {"accepted_pairs": accepted_pairs, "rejected_pairs": rejected_pairs}
            if cfg.discard_after_clock_change:  # of the rejected pairs, those discarded after a clock change
                counts["clock_discarded_pairs"] = settling_pairs
            return counts

        while True:
            if rejected_pairs > unit.rejects_allowed:
                counts = counts_of()
                return "too_noisy", (
                    f"{rejected_pairs + rejected_elsewhere} rejected pairs exceed --max-rejects {cfg.max_rejects}"
                ), counts
            if accepted_pairs >= unit.target:
                # --adaptive (scope process) judges this worker's own pairs: more pairs in one
                # process narrow the within-process interval only; the between-process part needs
                # more processes, which --adaptive-scope cell adds (the runner judges the cell
                # between its workers, protocol/adaptive.py): its workers stop at their target
                if (not cfg.adaptive or cfg.cell_adaptive or accepted_pairs >= unit.max_pairs
                        or self._precise_enough()):
                    break
            first, second = self._orientation(accepted_pairs, pair_index)
            # every round is flushed as it finishes, so both positions of a pair follow the same
            # bookkeeping (a flush only after the pair would slow the next pair's first round)
            first_row = self._round(states[first], warmup=False, pair_index=pair_index, position=0)
            self._emit(first_row)
            first_at = len(self.rounds.rows) - 1
            try:
                second_row = self._round(states[second], warmup=False, pair_index=pair_index, position=1)
            except CheckFailure:
                self.rounds.amend(first_at, accepted=False,
                                  reject_reason="pair aborted: the other round failed its check")
                raise
            if first_row["reject_reason"] or second_row["reject_reason"]:
                if second_row["accepted"]:
                    second_row["accepted"] = False
                    second_row["reject_reason"] = f"pair repeated (other round: {first_row['reject_reason']})"
                # the recorded first round is rejected before the second is written: an interrupt
                # between the two writes leaves a half pair (rejected on resume), never an accepted
                # round beside its rejected partner
                if first_row["accepted"]:
                    self.rounds.amend(first_at, accepted=False,
                                      reject_reason=f"pair repeated (other round: {second_row['reject_reason']})")
                self._emit(second_row)
                rejected_pairs += 1
                settling_pairs += _settling_pair([first_row, second_row])
            else:
                self._emit(second_row)
                accepted_pairs += 1
            self.progress.cell_progress(self.key, accepted_pairs, unit.target)
            pair_index += 1
        return "done", None, counts_of()


def _settling_pair(rows) -> int:
    """1 when a rejected pair was rejected because a round of it was discarded after a clock change."""
    return int(any((r["reject_reason"] or "").startswith(CLOCK_SETTLING) for r in rows))


def compare_trees(tree_a, tree_b, name_a: str, name_b: str) -> str | None:
    (da, pa), (db, pb) = tree_a, tree_b
    if da.shape != db.shape:
        return f"tree sizes differ: {name_a} {da.shape[0]}, {name_b} {db.shape[0]}"
    diff = np.flatnonzero((da != db) | (pa != pb))
    if diff.size == 0:
        return None
    shown = ", ".join(
        f"v{v}: {name_a} ({int(da[v])}, {int(pa[v])}) {name_b} ({int(db[v])}, {int(pb[v])})"
        for v in diff[:5]
    )
    return f"trees differ at {diff.size} vertices; first: {shown}"


__all__ = ["CellRun", "CheckFailure", "RegionProbe", "ROLES", "compare_trees", "utc_now"]
