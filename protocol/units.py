"""Units of a campaign (docs/protocol.md §2 "Worker processes"): one cell measured by one worker.

A cell is measured by ``processes`` workers; worker ``w`` of a cell is the *unit* (cell, w). This
module owns what a unit is and what its records say:

- :class:`Unit`: what one worker measures of one cell (its share of the accepted pairs, its part
  of the cell's rejection budget), picklable, so that it travels to a worker process;
- :class:`UnitRounds`: the rows of one unit inside its cell's round file (the ``process`` column
  tells the workers apart), appended and amended like ``records.CellRounds``;
- :func:`cell_state`: a cell's status from the statuses of its units.

Unit statuses are the cell statuses of ``cell.CellRun`` (``done``, ``too_noisy``,
``guard_failed``, ``check_failed``) plus ``running`` (started, not finished: the campaign was
interrupted) and ``crashed`` (the worker process died or raised; its finished rounds are kept).
A cell with a crashed unit is ``worker_failed`` until ``--resume`` re-runs that unit.
"""

from __future__ import annotations

from dataclasses import dataclass

from .records import ROUND_COLUMNS, CellRounds

#: Unit statuses that --resume does not run again.
UNIT_TERMINAL = ("done", "too_noisy", "guard_failed", "check_failed")
#: A cell status that ends the cell: its remaining units are not run.
CELL_TERMINAL = ("done", "too_noisy", "guard_failed", "check_failed")
CRASHED = "crashed"
WORKER_FAILED = "worker_failed"


@dataclass(frozen=True)
class Unit:
    """Worker ``process`` of one cell: ``target`` accepted pairs (``max_pairs`` with --adaptive)
    and at most ``rejects_allowed`` rejected pairs (the cell's budget less the other workers')."""

    key: str
    graph: str
    batch: str
    objective: int
    control: bool
    process: int
    target: int
    max_pairs: int
    rejects_allowed: int
    #: the roles in the order this worker allocates them ("AB" / "BA", protocol/placement.py); None:
    #: A then B, not recorded (--alloc-order fixed)
    alloc_order: str | None = None
    #: a planted check (protocol/planted_check.py): side A against itself, with side B delayed by
    #: this many percent; None: the cell's own sides (or the A/A control's)
    planted_percent: float | None = None


def pair_counts(rows) -> tuple[int, int]:
    """(accepted, rejected) complete pairs among round records (dicts); a half pair (an
    interrupted one) counts as neither."""
    by_pair: dict[tuple, list[dict]] = {}
    for r in rows:
        if not r["warmup"]:  # pair indexes count per worker
            by_pair.setdefault((row_process(r), r["pair_index"]), []).append(r)
    accepted = rejected = 0
    for pair in by_pair.values():
        if len(pair) < 2:
            continue
        if all(r["accepted"] for r in pair):
            accepted += 1
        else:
            rejected += 1
    return accepted, rejected


def row_process(row: dict) -> int:
    """A round's worker index (rows written before workers existed have none: process 0)."""
    value = row.get("process")
    return 0 if value is None else int(value)


class UnitRounds:
    """The rows of worker ``process`` in its cell's ``CellRounds``: ``rows`` lists them (the same
    dicts as the cell holds), ``append`` and ``amend`` write through, flushing the cell's file."""

    def __init__(self, cell: CellRounds, process: int):
        self.cell = cell
        self.process = process
        self._index = [i for i, r in enumerate(cell.rows) if row_process(r) == process]
        self.rows = [cell.rows[i] for i in self._index]

    def others(self) -> list[dict]:
        """The cell's rows of the other workers."""
        mine = set(self._index)
        return [r for i, r in enumerate(self.cell.rows) if i not in mine]

    def append(self, *rows: dict) -> None:
        start = len(self.cell.rows)
        self.cell.append(*rows)
        for i in range(start, len(self.cell.rows)):
            self._index.append(i)
            self.rows.append(self.cell.rows[i])

    def amend(self, index: int, **fields) -> None:
        self.cell.amend(self._index[index], **fields)


class LocalRounds:
    """A worker process's copy of its unit's rows: ``rows`` kept here, every append and amend
    sent to the campaign process (``send(name, *args)``), which writes the records."""

    def __init__(self, rows: list[dict], send):
        self.rows = rows
        self._send = send

    def append(self, *rows: dict) -> None:
        clean = []
        for row in rows:
            missing = set(ROUND_COLUMNS) - set(row)
            if missing:
                raise ValueError(f"round record lacks {sorted(missing)}")
            clean.append({c: row[c] for c in ROUND_COLUMNS})
        self._send("append", clean)  # recorded before the worker goes on (crash safety)
        self.rows.extend(clean)

    def amend(self, index: int, **fields) -> None:
        self._send("amend", index, fields)
        self.rows[index].update(fields)


def cell_state(units: dict, processes: int) -> tuple[str, str | None]:
    """A cell's (status, detail) from its units' records (``units``: worker index as a string ->
    {"status", "detail", ...}). A correctness failure outranks noise, noise a crashed worker, and
    the cell is done only when every worker is, the ``processes`` it has at least and any added by
    the cell's adaptive stop (protocol/adaptive.py)."""
    def detail(w: str) -> str | None:
        text = units[w].get("detail")
        if processes == 1:
            return text
        return f"worker {w}: {text}" if text else f"worker {w}"

    ordered = sorted(units, key=int)
    for status in ("guard_failed", "check_failed", "too_noisy"):
        hit = [w for w in ordered if units[w].get("status") == status]
        if hit:
            return status, detail(hit[0])
    crashed = [w for w in ordered if units[w].get("status") == CRASHED]
    if crashed:
        return WORKER_FAILED, "; ".join(detail(w) or "" for w in crashed) + "; continue with --resume"
    done = [w for w in ordered if units[w].get("status") == "done"]
    # every worker done, and at least ``processes`` of them (the cell's adaptive stop may add more)
    if len(done) == len(ordered) and len(done) >= processes:
        return "done", None
    return "running", None


__all__ = ["Unit", "UnitRounds", "LocalRounds", "pair_counts", "row_process", "cell_state", "UNIT_TERMINAL",
           "CELL_TERMINAL", "CRASHED", "WORKER_FAILED"]
