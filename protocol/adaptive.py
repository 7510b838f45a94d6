"""The adaptive stop judged on the cell's interval (docs/protocol.md §3, issue 32 item 3).

``--adaptive --adaptive-scope cell``: a cell is measured by its ``processes`` workers as without
``--adaptive``; then the runner judges the cell's hierarchical interval (the one the summary states,
``analysis.primary_interval``: processes resampled, then pairs within each, ``stats.hierarchical_ratio``)
and, while its relative half-width is above ``--precision``, adds one more worker process to the cell
(one more worker pass over the cells that want it, each a fresh process measuring ``rounds_per_process``
pairs), until the half-width reaches the precision or the budget is spent: ``--max-processes``
workers or ``--max-rounds`` accepted pairs in the cell. A cell whose budget is spent first is
flagged with the half-width it reached (its record's ``adaptive``, the summary's ``noisy``).

Why processes, not rounds: the pairs of one process agree to a fraction of a percent, but the
processes of a cell differ by several (issue 32: an A/A control 1.011, 1.041 and 0.988 in its three
processes), and the hierarchical interval resamples processes first, so more pairs in the same
processes leave its between-process part as wide as it was. Each added process brings both.

``--adaptive-scope process`` (the default, and the only behaviour before) judges each worker's own
pairs inside the worker (``cell.CellRun``); nothing here applies to it.

This module is the rule alone, over an interval already computed (no bootstrap of its own): the
runner computes the interval from the cell's rows and records the judgement in the cell's record.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .stats import PairedRatio

#: The judgement's states: the interval is narrow enough; it is not, and another worker is added;
#: it is not, and the budget is spent (the cell is flagged).
PRECISE = "precise"
MEASURING = "measuring"
BUDGET_SPENT = "budget_spent"
STATES = (PRECISE, MEASURING, BUDGET_SPENT)
#: The fewest accepted pairs a worker process measures (config.CampaignConfig asks the same).
MIN_PAIRS_PER_PROCESS = 2


@dataclass(frozen=True)
class Judgement:
    """What the cell's adaptive stop decided after its latest worker; ``as_record()`` is the cell
    record's ``adaptive`` entry."""

    state: str
    half_width: float | None  # relative half-width of the cell's interval ((hi - lo) / 2 / ratio)
    precision: float  # the target (--precision)
    processes: int  # worker units of the cell so far
    pairs: int  # accepted pairs of the cell so far
    max_processes: int
    max_pairs: int  # --max-rounds: the cell's accepted pairs at most
    next_target: int  # pairs the next worker measures; 0 unless MEASURING
    #: worker processes a cell needs before it may be judged precise (--min-processes; records made
    #: before the option judged from one)
    min_processes: int = 1

    @property
    def wants_more(self) -> bool:
        return self.state == MEASURING

    def as_record(self) -> dict:
        return {"scope": "cell", **asdict(self)}


def next_unit_target(*, processes: int, pairs: int, per_process: int, max_processes: int, max_pairs: int) -> int:
    """Accepted pairs the next added worker measures: ``per_process``, fewer where ``max_pairs``
    leaves less; 0 when the budget is spent (``max_processes`` workers, or fewer than
    MIN_PAIRS_PER_PROCESS pairs left)."""
    if processes >= max_processes:
        return 0
    target = min(per_process, max_pairs - pairs)
    return target if target >= MIN_PAIRS_PER_PROCESS else 0


def judge(ratio: PairedRatio, *, processes: int, pairs: int, precision: float, per_process: int,
          max_processes: int, max_pairs: int, min_processes: int = 1) -> Judgement:
    """The rule: precise when the interval's relative half-width is at most ``precision`` and the
    cell has at least ``min_processes`` workers (two processes can agree by chance: an interval
    that resamples two processes is narrow whenever they happen to); else another worker of
    ``next_unit_target`` pairs while the budget allows one; else budget spent, with the half-width
    reached. ``ratio``: the cell's interval (``analysis.primary_interval``)."""
    half_width = ratio.relative_half_width
    finite = half_width is not None and math.isfinite(half_width)
    budget = dict(processes=processes, pairs=pairs, max_processes=max_processes, max_pairs=max_pairs)
    if finite and half_width <= precision and processes >= min_processes:
        return Judgement(PRECISE, half_width, precision, next_target=0, min_processes=min_processes, **budget)
    target = next_unit_target(per_process=per_process, **budget)
    return Judgement(MEASURING if target else BUDGET_SPENT, half_width if finite else None, precision,
                     next_target=target, min_processes=min_processes, **budget)


def judge_config(ratio: PairedRatio, config, *, processes: int, pairs: int) -> Judgement:
    """:func:`judge` with the budget and precision of a ``config.CampaignConfig``."""
    return judge(ratio, processes=processes, pairs=pairs, precision=config.precision,
                 per_process=config.rounds_per_process, max_processes=config.max_processes,
                 max_pairs=config.max_rounds, min_processes=config.min_processes)


def imprecise(record: dict | None) -> bool:
    """A cell record's ``adaptive`` entry says the budget was spent before the precision was reached."""
    return bool(record) and record.get("state") == BUDGET_SPENT


__all__ = ["PRECISE", "MEASURING", "BUDGET_SPENT", "STATES", "MIN_PAIRS_PER_PROCESS", "Judgement",
           "next_unit_target", "judge", "judge_config", "imprecise"]
