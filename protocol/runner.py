"""The campaign runner (protocol.md §3, §9): cells in order, the campaign record, resume.

One long-lived process runs every round (warm, as a library user sees it). ``CampaignRunner``
opens (or, with ``--resume``, reopens) the campaign record, runs each cell with ``cell.CellRun``,
keeps cell statuses in campaign.json as they change, and writes the summary at the end; ``run()``
returns the exit status of protocol.md §8.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from typing import Callable, Iterable

from . import SCHEMA_VERSION, TOOL_NAME, UPDATE_REGION
from .analysis import build_summary
from .cell import CellRun, CheckFailure, RegionProbe, compare_trees, utc_now
from .config import BatchInput, CampaignConfig, GraphInput
from .environment import REPO_ROOT, git_state, host_info, tool_version
from .exitcodes import ExitCode, UsageError, campaign_exit_code
from .instruments import Instruments
from .records import RecordStore, cell_key
from .sides import Side

#: The key of the A/A control cell: the cell it shadows plus this suffix.
CONTROL_SUFFIX = "/control"
# compute() on the device is checked against the prepared (host) tree below this many vertices.
INITIAL_TREE_CHECK_LIMIT = 5_000_000
TERMINAL_STATUSES = ("done", "too_noisy", "guard_failed", "check_failed")


class NullProgress:
    """Progress callbacks (the command shows a live display; tests and libraries need none)."""

    def cell_started(self, key: str, target: int) -> None: ...
    def cell_progress(self, key: str, accepted: int, target: int) -> None: ...
    def round_done(self, key: str, row: dict) -> None: ...
    def cell_finished(self, key: str, status: str, detail: str | None) -> None: ...


class CampaignRunner:
    """Runs the cells of a campaign and keeps its records; ``run()`` returns the exit code."""

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
        self._checked_trees: set = set()
        self._control_ran = False  # the A/A control cell runs once, on the first graph
        self.graph_snapshot = None
        self.device_graph = False  # the current graph is device-resident (a CUDA side runs)
        self.campaign: dict = {}
        self.session = 0

    @property
    def verifies_syncs(self) -> bool:
        """Cells run verification rounds (an independent sync counter was given)."""
        return self._sync_counter_factory is not None

    def sync_counter(self):
        """The counter of one verification round (cell.CellRun._round with verify=True)."""
        if self._sync_counter_factory is None:
            return contextlib.nullcontext()
        return self._sync_counter_factory()

    def check_initial_tree(self, gi, side: Side, objective: int) -> None:
        """compute() of a device side must give the prepared tree (once per graph, side, objective)."""
        if not side.needs_cuda or gi.graph.num_vertices > INITIAL_TREE_CHECK_LIMIT:
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

    # -- campaign record ------------------------------------------------------------------------
    def _code_state(self) -> dict:
        """The commit this session runs; a dirty tree (or none) needs --allow-dirty, on resume too,
        since every session's rounds are measurements of the code that ran them."""
        git = git_state()
        if git["dirty"] and not self.config.allow_dirty:
            raise UsageError(
                "the working tree is dirty (or has no commit): commit first, or pass --allow-dirty "
                "(the report then says so)"
            )
        return {**git, "dirty_allowed": self.config.allow_dirty}

    def _open_campaign(self) -> None:
        params = json.loads(json.dumps(self.config.parameters()))  # as the record holds them
        if self.resume and self.store.has_campaign():
            campaign = self.store.read_campaign()
            if campaign["parameters"] != params:
                changed = sorted(
                    k for k in set(params) | set(campaign["parameters"])
                    if params.get(k) != campaign["parameters"].get(k)
                )
                raise UsageError(
                    f"--resume: the parameters differ from the recorded campaign in {', '.join(changed)}"
                )
            self.session = len(campaign["sessions"])
            campaign["sessions"].append({"started_utc": utc_now(), "resumed": True, "git": self._code_state(),
                                         "update_region": UPDATE_REGION})
            campaign["finished_utc"] = None
        else:
            git = self._code_state()
            self.store.clear_rounds()
            if self.store.summary_path.exists():
                self.store.summary_path.unlink()
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
                "sessions": [{"started_utc": utc_now(), "resumed": False, "git": git,
                              "update_region": UPDATE_REGION}],
            }
        self.campaign = campaign
        self.store.write_campaign(campaign)

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
        self.store.write_campaign(self.campaign)

    def _set_cell(self, key: str, **values) -> None:
        self.campaign["cells"].setdefault(key, {}).update(values)
        self.store.write_campaign(self.campaign)

    # -- run ------------------------------------------------------------------------------------
    def run(self, inputs: Iterable) -> ExitCode:
        self._open_campaign()
        for gi in inputs:
            self._record_input(gi)
            self.device_graph = any(side.needs_cuda for side in self.config.sides)
            if self.device_graph:
                # a CUDA result makes its graph device-resident (algorithm.md §3.6); do it before
                # the snapshot, so that the snapshot is a device copy and every restore is a cheap
                # device-to-device copy rather than an upload of the host arrays
                gi.graph.to_device()
            # Every round restores this snapshot outside the timers and then times the real
            # update() call: the batch is applied anew each round (on the device for a device
            # graph), as a user pays it, with no memo of an earlier apply (protocol.md §2).
            self.graph_snapshot = gi.graph.snapshot()
            batch_names = self.config.batches or list(gi.batches)
            for name in batch_names:
                if name not in gi.batches:
                    raise UsageError(f"graph {gi.name} has no batch {name!r} (has {', '.join(gi.batches)})")
            objectives = self.config.objectives
            if objectives is None:
                objectives = list(range(gi.graph.num_weights))
            for k in objectives:
                if not 0 <= k < gi.graph.num_weights:
                    raise UsageError(f"objective {k} outside [0, {gi.graph.num_weights}) for {gi.name}")
            if self.config.control and not self._control_ran:
                self._control_ran = True
                # the A/A control first (protocol.md §7): side A against itself on the first
                # graph, batch and objective; its interval must contain 1
                self._run_cell(gi, batch_names[0], objectives[0], control=True)
            for name in batch_names:
                for k in objectives:
                    self._run_cell(gi, name, k)
            gi.graph.restore(self.graph_snapshot)
            self.graph_snapshot = None  # a device snapshot holds a copy of the graph in GPU memory
        return self.finish()

    def _run_cell(self, gi, batch_name: str, objective: int, *, control: bool = False) -> None:
        key = cell_key(gi.name, batch_name, objective) + (CONTROL_SUFFIX if control else "")
        previous = self.campaign["cells"].get(key, {})
        if self.resume and previous.get("status") in TERMINAL_STATUSES:
            return
        self._set_cell(key, graph=gi.name, batch=batch_name, objective=objective, status="running", detail=None,
                       **({"control": True} if control else {}))
        self.progress.cell_started(key, self.config.rounds)
        rounds = self.store.cell_rounds(key)
        side_a = self.config.sides[0]
        cell = CellRun(runner=self, gi=gi, batch_name=batch_name, objective=objective, rounds=rounds, key=key,
                       sides=(side_a, side_a) if control else None)
        try:
            status, detail, counts = cell.run()
        except CheckFailure as exc:  # the initial-tree check
            status, detail, counts = "guard_failed", str(exc), {}
        self._set_cell(key, status=status, detail=detail, **counts)
        self.progress.cell_finished(key, status, detail)

    def finish(self) -> ExitCode:
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
    """Records name files relative to the repository (protocol.md §9: no host-specific paths)."""
    origin = dict(origin or {})
    path = origin.get("path")
    if path and os.path.isabs(str(path)):
        origin["path"] = os.path.relpath(str(path), REPO_ROOT)
    return origin


def _input_digests(entry: dict) -> tuple:
    return (entry.get("n"), entry.get("m"), tuple((b["name"], b["sha256"]) for b in entry["batches"]))


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
]
