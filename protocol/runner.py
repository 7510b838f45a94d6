"""The campaign runner (docs/protocol.md §2, §3, §9): units in order, the campaign record, resume.

A cell is measured by ``config.processes`` workers (docs/protocol.md §2 "Worker processes"); worker
``w`` of a cell is a *unit* (``units.Unit``) measuring ceil(rounds / processes) accepted pairs.
The runner schedules the units worker-major: worker 0's pass over every cell of the campaign, then
worker 1's, ..., so that the workers of one cell are spread over the campaign rather than back to
back. Each pass runs in a fresh spawned process (``workers.WorkerPass``); with ``processes = 1``
(or ``in_process=True``, for tests and library users whose sides only exist in this process) the
units run in this process (``measurer.Measurer``), as the campaign did before workers existed.

The runner opens (or, with ``--resume``, reopens) the campaign record and keeps every unit's and
every cell's status in campaign.json as they change (``cells[key].workers[w]``), the rounds of a
cell in its round file (the ``process`` column names the worker), and writes the summary at the
end; ``run()`` returns the exit status of docs/protocol.md §8. A unit whose worker process crashed is
``crashed`` and its cell ``worker_failed`` (exit 3, an environment problem: the campaign is
incomplete, not wrong); ``--resume`` re-runs only units that did not finish, each in a new process
whose rounds carry the new session number, so that the statistics see it as a process of its own.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from . import placement, planted_check
from .schema import SCHEMA_VERSION, TOOL_NAME, UPDATE_REGION
from .adaptive import STATES, Judgement, judge_config
from .analysis import build_summary, primary_interval
from .cell import CellRun, CheckFailure, RegionProbe, utc_now
from .config import BatchInput, CampaignConfig, GraphInput, check_objectives_fit
from .environment import REPO_ROOT, git_state, host_info, tool_version
from .errors import UsageError
from .exitcodes import ExitCode, campaign_exit_code
from .instruments import Instruments
from .measurer import INITIAL_TREE_CHECK_LIMIT, Measurer
from .records import RecordStore, cell_key
from .stats import PairedRatio
from .units import CELL_TERMINAL, CRASHED, UNIT_TERMINAL, Unit, UnitRounds, cell_state, pair_counts
from .workers import InputSource, UnitHandlers, WorkerCrash, WorkerPass, WorkerSetup

#: The key of the A/A control cell: the cell it shadows plus this suffix.
CONTROL_SUFFIX = "/control"
TERMINAL_STATUSES = CELL_TERMINAL
#: How each session ran its workers (recorded per session, shown in the report).
WORKER_MODES = ("processes", "in_process")


class NullProgress:
    """Progress callbacks (the command shows a live display; tests and libraries need none)."""

    def cell_started(self, key: str, target: int) -> None: ...
    def cell_progress(self, key: str, accepted: int, target: int) -> None: ...
    def round_done(self, key: str, row: dict) -> None: ...
    def cell_finished(self, key: str, status: str, detail: str | None) -> None: ...


@dataclass
class _CellPlan:
    key: str
    graph: str
    batch: str
    objective: int
    control: bool = False
    #: a planted check (protocol/planted_check.py): side B is side A delayed by this many percent
    planted_percent: float | None = None


@dataclass
class _GraphPlan:
    """One graph of the campaign: its cells and how a worker gets its inputs."""

    source: InputSource
    cells: list = field(default_factory=list)


class _UnitProgress:
    """A unit's progress as its cell's: the cell's target is every worker's, and the pairs of
    the cell's other workers count."""

    def __init__(self, progress, base: int, total: int):
        self.progress = progress
        self.base = base
        self.total = total

    def round_done(self, key: str, row: dict) -> None:
        self.progress.round_done(key, row)

    def cell_progress(self, key: str, accepted: int, target: int) -> None:
        self.progress.cell_progress(key, self.base + accepted, self.total)


class _InProcessPass:
    """A worker pass in the campaign process: the same interface as ``workers.WorkerPass``."""

    def __init__(self, runner: "CampaignRunner"):
        self.runner = runner
        self.measurer = Measurer(runner.config, runner.instruments, campaign_id=runner.campaign["campaign_id"],
                                 session=runner.session, sync_counter_factory=runner._sync_counter_factory,
                                 record_cell=runner._set_cell)

    def open_graph(self, source: InputSource) -> None:
        self.measurer.open_graph(source.load())

    def close_graph(self) -> None:
        self.measurer.close_graph()

    def run_unit(self, unit: Unit, handlers: UnitHandlers):
        return self.measurer.run_unit(unit, handlers.rounds, handlers.progress)

    def close(self) -> None:
        self.measurer.close_graph()

    def abort(self) -> None:
        """The campaign is leaving on an error or an interrupt: the caller's graph (measured here,
        in this process) goes back to its pre-batch state, which a resume with the same input
        snapshots again (left post-batch, its guard failed against the prepared tree). A restore
        that fails too (a device fault) leaves it as it was: the error being raised is the one
        that matters."""
        try:
            self.measurer.close_graph()
        except Exception:  # noqa: BLE001 (the original error or interrupt is re-raised by the caller)
            pass


class CampaignRunner:
    """Runs the units of a campaign and keeps its records; ``run()`` returns the exit code.

    ``input_loader(name) -> GraphInput``: how a worker process loads a graph's inputs (picklable;
    the command's reads the prepared cache). Without it a worker process gets the campaign
    process's input pickled, which suits small inputs only. ``in_process``: run every worker in
    this process even with several (default: only with ``processes = 1``).
    """

    def __init__(
        self,
        config: CampaignConfig,
        store: RecordStore,
        instruments: Instruments,
        *,
        resume: bool = False,
        progress=None,
        sync_counter_factory: Callable[[], object] | None = None,
        reproduce_command: str | None = None,
        environment: dict | None = None,
        input_loader: Callable | None = None,
        in_process: bool | None = None,
        records_root: Path | str | None = None,
    ):
        self.config = config
        self.store = store
        self.instruments = instruments
        instruments.set_thresholds(
            min_clock_fraction=config.min_clock_fraction, max_foreign_cpu=config.max_foreign_cpu
        )
        self.resume = resume
        self.progress = progress or NullProgress()
        self._sync_counter_factory = sync_counter_factory
        self._reproduce = reproduce_command
        self._environment = environment
        self._input_loader = input_loader
        # what the tree check leaves out: the records being written (a sweep's campaigns sit in
        # its own folder beside sweep.json, so it names that folder)
        self._records_root = Path(records_root) if records_root is not None else Path(store.root)
        # one worker pass (no added ones: protocol/adaptive.py) runs in this process by default
        self.in_process = config.passes == 1 if in_process is None else bool(in_process)
        self._started_cells: set = set()
        self.campaign: dict = {}
        self.session = 0
        self._fresh = False  # the campaign opened is a new one (its folder's old rounds go)
        self._written = False  # the opened campaign is on disk (_write_opened)

    @property
    def worker_mode(self) -> str:
        return "in_process" if self.in_process else "processes"

    # -- campaign record ------------------------------------------------------------------------
    def _code_state(self) -> dict:
        """The commit this session runs; a dirty tree (or none) needs --allow-dirty, on resume too,
        since every session's rounds are measurements of the code that ran them."""
        git = git_state(exclude=(self._records_root,))
        if git["dirty"] and not self.config.allow_dirty:
            raise UsageError(
                "the working tree is dirty (or has no commit): commit first, or pass --allow-dirty "
                "(the report then says so)"
            )
        return {**git, "dirty_allowed": self.config.allow_dirty}

    def _session_record(self, *, resumed: bool, git: dict) -> dict:
        return {"started_utc": utc_now(), "resumed": resumed, "git": git, "update_region": UPDATE_REGION,
                "workers": self.worker_mode}

    def _open_campaign(self) -> None:
        params = json.loads(json.dumps(self.config.parameters()))  # as the record holds them
        if self.resume and self.store.has_campaign():
            campaign = self.store.read_campaign()
            # campaigns recorded before worker processes existed measured in one process
            recorded = {"processes": 1, **campaign["parameters"]}
            if recorded != params:
                changed = sorted(
                    k for k in set(params) | set(recorded)
                    if params.get(k) != recorded.get(k)
                )
                # a preset changes several parameters at once: name the one option that restores them
                hint = (f" (the campaign was recorded with --protocol {recorded.get('protocol', 'standard')}: "
                        "give it again)" if "protocol" in changed else "")
                raise UsageError(
                    f"--resume: the parameters differ from the recorded campaign in {', '.join(changed)}" + hint
                )
            self.session = len(campaign["sessions"])
            campaign["sessions"].append(self._session_record(resumed=True, git=self._code_state()))
            campaign["finished_utc"] = None
            self._fresh = False
        else:
            if self.resume:  # round files without campaign.json: refused, never cleared (the sweep's
                self.store.check_resumable()  # campaigns come here without check_out_records)
            git = self._code_state()
            self._fresh = True
            env = self._environment or {"host": host_info()}
            campaign = {
                "schema_version": SCHEMA_VERSION,
                "campaign_id": uuid.uuid4().hex[:12],
                "tool": {"name": TOOL_NAME, "version": tool_version()},
                "started_utc": utc_now(),
                "finished_utc": None,
                "host": env.get("host"),
                "gpu": env.get("gpu"),
                "clocks": self.instruments.campaign_record(),
                "parameters": params,
                "reproduce": self._reproduce,
                "inputs": [],
                "cells": {},
                "sessions": [self._session_record(resumed=False, git=git)],
            }
        self.campaign = campaign
        self._written = False

    def _write_opened(self) -> None:
        """The opened campaign on disk, once: before the first graph's inputs are recorded (their
        plan checked first), or at the end when there were none. Until then a refused input (a
        batch or objective the graph lacks, changed inputs on --resume) has written nothing: no new
        campaign of no cells that the corrected run is refused over, no session of a resume that
        never ran. A new campaign replaces the folder's round files and summary here."""
        if self._written:
            return
        self._written = True
        if self._fresh:
            self.store.clear_rounds()
            if self.store.summary_path.exists():
                self.store.summary_path.unlink()
        self.store.write_campaign(self.campaign)

    def _record_input(self, gi) -> None:
        entry = {
            "graph": gi.name,
            "origin": _relative_paths(gi.origin),
            "n": int(gi.graph.num_vertices),
            "m": int(gi.graph.num_edges),
            "K": int(gi.graph.num_weights),
            "source": int(gi.source),
            "facts": gi.facts,
            "batches": [
                {"name": name, "facts": b.facts, "sha256": b.digest} for name, b in gi.batches.items()
            ],
        }
        for i, old in enumerate(self.campaign["inputs"]):
            if old["graph"] == gi.name:
                if self.resume and _input_digests(old) != _input_digests(entry):
                    raise UsageError(f"--resume: the inputs of {gi.name} changed since the campaign began")
                self.campaign["inputs"][i] = entry
                break
        else:
            self.campaign["inputs"].append(entry)
        if self._written:
            self.store.write_campaign(self.campaign)
        else:
            self._write_opened()  # the first write (once: it wrote the campaign twice)

    def _set_cell(self, key: str, **values) -> None:
        self.campaign["cells"].setdefault(key, {}).update(values)
        self.store.write_campaign(self.campaign)

    # -- the plan -------------------------------------------------------------------------------
    def _plan_graph(self, gi, first: bool) -> _GraphPlan:
        """The cells of one graph (the A/A control first on the first graph, or on every graph with
        ``--control every-gate``); usage errors for a
        batch or objective the graph does not have."""
        batch_names = self.config.batches or list(gi.batches)
        for name in batch_names:
            if name not in gi.batches:
                raise UsageError(f"graph {gi.name} has no batch {name!r} (has {', '.join(gi.batches)})")
        objectives = self.config.objectives
        if objectives is None:
            objectives = list(range(gi.graph.num_weights))
        check_objectives_fit(objectives, gi.graph.num_weights, gi.name)
        cells = []
        if self.config.control and (first or self.config.control_scope == "every-gate"):
            # the A/A control first (docs/protocol.md §7): side A against itself on the first graph's
            # (--control every-gate: every graph's) first batch and objective; its interval must contain 1
            key = cell_key(gi.name, batch_names[0], objectives[0]) + CONTROL_SUFFIX
            cells.append(_CellPlan(key, gi.name, batch_names[0], objectives[0], control=True))
        for name in batch_names:
            for k in objectives:
                cells.append(_CellPlan(cell_key(gi.name, name, k), gi.name, name, k))
        return _GraphPlan(self._source(gi), cells)

    def _source(self, gi) -> InputSource:
        if not self.in_process and self._input_loader is not None:
            return InputSource(gi.name, None, self._input_loader)  # a worker reads the cache itself
        return InputSource(gi.name, gi, None)

    def _first_pass(self, inputs: Iterable, plans: list):
        """The inputs as they come (prepared one at a time), recorded and planned; the plans are
        kept for the later passes (without the inputs where a loader reads them again)."""
        for gi in inputs:
            plan = self._plan_graph(gi, first=not plans)  # refused before anything of it is recorded
            self._record_input(gi)
            plans.append(plan)
            del gi  # a worker process loads its own copy: hold none here while it measures
            yield plan

    def _pass(self, process: int):
        if self.in_process:
            return _InProcessPass(self)
        return WorkerPass(WorkerSetup(config=self.config, campaign_id=self.campaign["campaign_id"],
                                      session=self.session, process=process,
                                      sync_counter_factory=self._sync_counter_factory))

    # -- run ------------------------------------------------------------------------------------
    def run(self, inputs: Iterable) -> ExitCode:
        self._open_campaign()
        if not self.in_process and any(side.needs_cuda for side in self.config.sides):
            self.instruments.worker_contexts = 1  # NVML lists the worker's context beside ours
        plans: list[_GraphPlan] = []
        passes = self.config.passes
        for process in range(passes):
            if process >= self.config.processes and not self._added_work(plans, process):
                break  # the cell's adaptive stop wants no further worker anywhere (protocol/adaptive.py)
            worker = self._pass(process)
            try:
                graphs = self._first_pass(inputs, plans) if process == 0 else plans
                last = process == passes - 1
                for plan in graphs:
                    pending = [c for c in plan.cells if self._pending(c, process)]
                    if pending:
                        worker.open_graph(plan.source)
                        for cell in pending:
                            self._run_unit(worker, cell, process)
                        worker.close_graph()
                    if last:  # no later pass needs the input: one graph in memory at a time
                        plan.source = self._checks_source(plan.source)
            except BaseException:
                worker.abort()
                raise
            worker.close()
        # An adaptive stop ends the passes before the last one (which drops each input as it
        # goes): drop them here too, so the checks keep one graph in memory at a time as well.
        for plan in plans:
            plan.source = self._checks_source(plan.source)
        if self.config.planted_check is not None:
            self._planted_checks(plans)
        return self.finish()

    # -- the planted checks (protocol/planted_check.py) -----------------------------------------
    def _planted_checks(self, plans: list) -> None:
        """The planted-check cells, after every other cell: the choice recorded (or replayed from
        the record on --resume), then ``processes`` worker passes over the check cells alone."""
        choice = self.campaign.get("planted_check")
        if choice is None:
            choice = self._choose_planted(plans)
            if choice is None:
                return  # a cell has not finished (or none measured): nothing chosen, nothing run
            self.campaign["planted_check"] = choice
            self.store.write_campaign(self.campaign)
        sources = {}
        for plan in plans:
            for cell in plan.cells:
                sources.setdefault(cell.graph, plan)
        cells = [_CellPlan(c["cell"], c["graph"], c["batch"], c["objective"], planted_percent=choice["percent"])
                 for c in planted_check.check_cells(choice)]
        for process in range(self.config.processes):
            pending = [c for c in cells if self._pending(c, process)]
            if not pending:
                continue
            worker = self._pass(process)
            try:
                for graph in dict.fromkeys(c.graph for c in pending):
                    worker.open_graph(sources[graph].source)
                    for cell in pending:
                        if cell.graph == graph:
                            self._run_unit(worker, cell, process)
                    worker.close_graph()
            except BaseException:
                worker.abort()
                raise
            worker.close()
        for plan in plans:
            plan.source = None

    def _checks_source(self, source):
        """What a plan keeps of its input after the last pass: nothing, or with --planted-check the
        loader that reads it again (a check cell may be on any graph); without a loader (tests,
        library users' small inputs) the input itself."""
        if self.config.planted_check is None or source is None:
            return None
        if self._input_loader is not None:
            return InputSource(source.name, None, self._input_loader)
        return source

    def _choose_planted(self, plans: list) -> dict | None:
        """The shortest and longest cell (planted_check.choose), once every cell of the plan (the
        A/A controls aside) has a terminal status; None before."""
        import pandas as pd

        from .analysis import REGIONS, accepted, primary_region

        candidates = []
        for plan in plans:
            for cell in plan.cells:
                if cell.control:
                    continue
                record = self.campaign["cells"].get(cell.key, {})
                if record.get("status") not in TERMINAL_STATUSES:
                    return None
                if record.get("status") != "done":
                    continue
                rows = self.store.cell_rounds(cell.key).rows
                frame = pd.DataFrame(rows) if rows else None
                if frame is None:
                    continue
                mine = accepted(frame)
                values = mine.loc[mine["role"] == "A", REGIONS[primary_region(frame)]].dropna()
                if len(values):
                    candidates.append({"cell": cell.key, "graph": cell.graph, "batch": cell.batch,
                                       "objective": cell.objective, "median_ms": float(values.median())})
        return planted_check.choose(candidates, self.config.planted_check)

    def _units(self, key: str) -> dict:
        return self.campaign["cells"].get(key, {}).get("workers", {})

    def _pending(self, cell: _CellPlan, process: int) -> bool:
        record = self.campaign["cells"].get(cell.key, {})
        if process >= self.config.processes:
            return self._added_pending(cell.key, record, process)
        if record.get("status") in TERMINAL_STATUSES:
            return False
        return self._units(cell.key).get(str(process), {}).get("status") not in UNIT_TERMINAL

    def _added_work(self, plans: list, process: int) -> bool:
        """Pass ``process`` (beyond ``--processes``) or a later one has a unit to run: a cell wants
        another worker now, or has a worker of this index or above recorded (resumed campaigns)."""
        for plan in plans:
            for cell in plan.cells:
                if self._pending(cell, process) or any(int(w) > process for w in self._units(cell.key)):
                    return True
        return False

    def _added_pending(self, key: str, record: dict, process: int) -> bool:
        """Worker ``process`` beyond ``--processes`` (the cell's adaptive stop): one that started
        and did not finish (a cut or crashed campaign) runs again; a new one runs when every
        earlier worker is done and the cell's judgement wants another."""
        units = self._units(key)
        unit = units.get(str(process))
        if unit is not None:
            return (unit.get("status") not in UNIT_TERMINAL
                    and record.get("status") not in ("too_noisy", "guard_failed", "check_failed"))
        if record.get("status") != "done" or len(units) != process:
            return False
        return self._judgement(key, record).wants_more

    def _judgement(self, key: str, record: dict):
        """The cell's adaptive judgement: as recorded after its latest worker, else judged now
        from its rows (the same rows give the same judgement: the bootstrap is seeded)."""
        recorded = record.get("adaptive")
        units = self._units(key)
        if recorded and recorded.get("processes") == len(units) and recorded.get("state") in STATES:
            try:
                return Judgement(**{k: v for k, v in recorded.items() if k != "scope"})
            except TypeError:  # a record of another shape: judge again
                pass
        return self._judge(key, units)

    def _judge(self, key: str, units: dict):
        """The cell's hierarchical interval judged against --precision (protocol/adaptive.py)."""
        import pandas as pd

        rows = self.store.cell_rounds(key).rows
        frame = pd.DataFrame(rows) if rows else None
        accepted, _ = pair_counts(rows)
        ratio = primary_interval(frame, resamples=self.config.bootstrap_resamples, seed=self.config.seed) \
            if frame is not None else PairedRatio(float("nan"), float("nan"), float("nan"), 0,
                                                  self.config.bootstrap_resamples, self.config.seed)
        return judge_config(ratio, self.config, processes=len(units), pairs=accepted)

    def _run_unit(self, worker, cell: _CellPlan, process: int) -> None:
        config = self.config
        if not self._pending(cell, process):  # an earlier unit of this pass may have ended the cell
            return
        rounds = UnitRounds(self.store.cell_rounds(cell.key), process)
        others_accepted, others_rejected = pair_counts(rounds.others())
        units = dict(self._units(cell.key))
        target = config.rounds_per_process
        if process >= config.processes:  # a worker added by the cell's adaptive stop: its recorded
            # target when it ran before (cut or crashed), else the judgement's
            record = self.campaign["cells"].get(cell.key, {})
            target = units.get(str(process), {}).get("target") or self._judgement(cell.key, record).next_target
        # the worker's allocation order (--alloc-order): replayed from its record when it ran before
        alloc_order = units.get(str(process), {}).get("alloc_order") or placement.process_order(
            config.alloc_order, config.seed, process)
        unit = Unit(key=cell.key, graph=cell.graph, batch=cell.batch, objective=cell.objective,
                    control=cell.control, process=process, target=target,
                    max_pairs=target if config.cell_adaptive else config.max_rounds_per_process,
                    rejects_allowed=config.max_rejects - others_rejected, alloc_order=alloc_order,
                    planted_percent=cell.planted_percent)
        units[str(process)] = {"status": "running", "detail": None, "session": self.session,
                               "started_utc": utc_now(), "target": target,
                               **({"alloc_order": alloc_order} if alloc_order else {})}
        status, detail = cell_state(units, config.processes)
        self._set_cell(cell.key, graph=cell.graph, batch=cell.batch, objective=cell.objective,
                       status="running" if status == "done" else status, detail=detail, workers=units,
                       **({"control": True} if cell.control else {}),
                       **({"planted_check": cell.planted_percent} if cell.planted_percent is not None else {}))
        total = config.rounds_per_process * config.processes
        if cell.key not in self._started_cells:
            self._started_cells.add(cell.key)
            self.progress.cell_started(cell.key, total)
        handlers = UnitHandlers(instruments=self.instruments, rounds=rounds,
                                progress=_UnitProgress(self.progress, others_accepted, total),
                                set_cell=self._set_cell, key=cell.key)
        try:
            unit_status, unit_detail, counts = worker.run_unit(unit, handlers)
        except WorkerCrash as exc:
            accepted, rejected = pair_counts(rounds.rows)
            unit_status = CRASHED
            unit_detail = f"{exc}; its {accepted} accepted pairs are kept"
            counts = {"accepted_pairs": accepted, "rejected_pairs": rejected}
        units[str(process)].update(status=unit_status, detail=unit_detail, finished_utc=utc_now(), **counts)
        status, detail = cell_state(units, config.processes)
        totals = {name: sum(u.get(name, 0) for u in units.values()) for name in ("accepted_pairs", "rejected_pairs")}
        if config.discard_after_clock_change:  # --discard-after-clock-change: the cell's count
            totals["clock_discarded_pairs"] = sum(u.get("clock_discarded_pairs", 0) for u in units.values())
        extra = {}
        if config.cell_adaptive and status == "done" and cell.planted_percent is None:
            # judged after every worker of a finished cell and recorded with its status, in one write;
            # never a planted check's: its --processes workers are all it gets (no worker added), so
            # a judgement there would record a "measuring" that nothing acts on
            extra["adaptive"] = self._judge(cell.key, units).as_record()
        self._set_cell(cell.key, status=status, detail=detail, workers=units, **totals, **extra)
        if status != "running":
            self.progress.cell_finished(cell.key, status, detail)

    def finish(self) -> ExitCode:
        self._write_opened()  # a campaign of no inputs is recorded too
        summary = build_summary(self.store.read_rounds(), self.campaign)
        self.store.write_summary(summary)
        # the lock's "held under load" is known only after the first warm-up
        clocks = self.instruments.campaign_record()
        self.campaign["sessions"][-1]["clocks"] = clocks
        if self.session == 0:
            self.campaign["clocks"] = clocks
        self.campaign["finished_utc"] = utc_now()
        self.store.write_campaign(self.campaign)
        return campaign_exit_code((c["status"] for c in self.campaign["cells"].values()),
                                  untrustworthy=summary["trust"]["untrustworthy"])


def _relative_paths(origin: dict) -> dict:
    """Records name files relative to the repository (docs/protocol.md §9: no host-specific paths)."""
    origin = dict(origin or {})
    path = origin.get("path")
    if path and os.path.isabs(str(path)):
        origin["path"] = os.path.relpath(str(path), REPO_ROOT)
    return origin


def _input_digests(entry: dict) -> tuple:
    """What must not change on --resume: the graph's size and each batch's bytes, by name (the
    order an input source lists its batches in is not the input: a sweep read its batches back
    from a cache that sorts them, and was refused as changed)."""
    return (entry.get("n"), entry.get("m"), tuple(sorted((b["name"], b["sha256"]) for b in entry["batches"])))


__all__ = [
    "CampaignConfig",
    "CampaignRunner",
    "CellRun",
    "CheckFailure",
    "GraphInput",
    "BatchInput",
    "RegionProbe",
    "NullProgress",
    "INITIAL_TREE_CHECK_LIMIT",
    "CONTROL_SUFFIX",
    "InputSource",
]
