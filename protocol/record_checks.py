"""Is a campaign record whole? The shape checks behind ``RecordStore``'s readers (docs/protocol.md §9).

A damaged record (bad JSON, a list where the campaign belongs, a missing field, a field of the
wrong type) must end a command with exit 2 and a message naming the file and what is wrong,
never with a ``KeyError`` deep in the runner or the report. :func:`campaign_problem` checks every
field those read; :func:`summary_problem` the derived summary (which is rebuilt when damaged).
"""

from __future__ import annotations

import math

# field -> accepted types (None: the field must be present, its value may be null)
_CAMPAIGN = {
    "schema_version": (int,),
    "campaign_id": (str,),
    "started_utc": (str,),
    "finished_utc": (str, type(None)),
    "reproduce": (str, type(None)),
    "parameters": (dict,),
    "inputs": (list,),
    "cells": (dict,),
    "sessions": (list,),
}
_INPUT = {"graph": (str,), "origin": (dict, type(None)), "n": (int,), "m": (int,), "K": (int,),
          "source": (int,), "batches": (list,)}
_INPUT_BATCH = {"name": (str,), "sha256": (str,), "facts": (dict,)}
_CELL = {"graph": (str,), "batch": (str,), "objective": (int,), "status": (str,)}
_SUMMARY = {"campaign_id": (str,), "sides": (dict,), "bootstrap": (dict,), "cells": (list,)}
#: Every status a cell of campaign.json may have (protocol/units.py, protocol/runner.py): a status
#: outside it is a hand edit or another tool's record, never something to render (issue 28).
CELL_STATUSES = ("done", "too_noisy", "guard_failed", "check_failed", "worker_failed", "running")
#: Statuses whose cell must have its round file: measured to the end (a guard or check failure
#: may end a cell before its first round).
_STATUSES_WITH_ROUNDS = ("done", "too_noisy")


_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
          bool: "true/false", type(None): "null"}


def _type_name(value) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def _wanted(types) -> str:
    return " or ".join(_NAMES[t] for t in types)


def fields_problem(record, fields: dict, where: str) -> str | None:
    """What is wrong with ``record`` against ``fields`` ({name: accepted types}; ``bool`` is no
    ``int`` unless named), or None; ``where`` names the record in the message."""
    if not isinstance(record, dict):
        return f"{where} is {_type_name(record)}, not an object"
    for name, types in fields.items():
        if name not in record:
            return f"{where} lacks the field {name!r}"
        value = record[name]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            return f"{where}: field {name!r} is {_type_name(value)}, expected {_wanted(types)}"
    return None


def campaign_problem(campaign) -> str | None:
    """What is wrong with a parsed campaign.json, or None."""
    problem = fields_problem(campaign, _CAMPAIGN, "the campaign record")
    if problem:
        return problem
    sides = campaign["parameters"].get("sides")
    if not (isinstance(sides, dict) and isinstance(sides.get("A"), str) and isinstance(sides.get("B"), str)):
        return "the campaign record: parameters.sides must name the sides A and B"
    for i, entry in enumerate(campaign["inputs"]):
        problem = fields_problem(entry, _INPUT, f"inputs[{i}]")
        if problem:
            return problem
        for j, batch in enumerate(entry["batches"]):
            problem = fields_problem(batch, _INPUT_BATCH, f"inputs[{i}].batches[{j}]")
            if problem:
                return problem
    for key, cell in campaign["cells"].items():
        problem = fields_problem(cell, _CELL, f"cells[{key!r}]") or _status_problem(key, cell["status"])
        if problem:
            return problem
    if not campaign["sessions"]:
        return "the campaign record: sessions is empty (every campaign has its first session)"
    for i, session in enumerate(campaign["sessions"]):
        if not isinstance(session, dict):
            return f"sessions[{i}] is {_type_name(session)}, not an object"
    return None


def _status_problem(key: str, status: str) -> str | None:
    if status in CELL_STATUSES:
        return None
    return f"cells[{key!r}]: status {status!r} is not one of {', '.join(CELL_STATUSES)}"


def round_rows_problem(cells: list, campaign_ids: list, file_cell: str | None, campaign: dict) -> str | None:
    """What is wrong with the rows of one round file, or None. ``cells`` and ``campaign_ids``: the
    distinct values of its ``cell`` and ``campaign_id`` columns; ``file_cell``: the cell of
    campaign.json whose file name it has (None: no cell has it). Every row says which campaign and
    cell it belongs to, so a file copied over another cell's, or left by another campaign, is
    caught here instead of being counted for the wrong cell."""
    foreign = [str(c) for c in campaign_ids if c != campaign["campaign_id"]]
    if foreign:
        return (f"its rounds belong to campaign {', '.join(foreign)}, not to {campaign['campaign_id']} "
                "(campaign.json)")
    if file_cell is None:
        return f"its file name is of no cell of campaign.json (its rounds say {', '.join(map(str, cells))})"
    strangers = [str(c) for c in cells if c != file_cell]
    if strangers:
        return (f"its rounds are of cell {', '.join(strangers)}, not of {file_cell}, the cell its file name says "
                "(a round file copied over another cell's?)")
    return None


def missing_rounds_problem(key: str, cell: dict) -> str | None:
    """Why a cell of campaign.json must have a round file that is not there, or None when it may
    lack one (not measured yet, or ended before its first round)."""
    pairs = (cell.get("accepted_pairs") or 0) + (cell.get("rejected_pairs") or 0)
    if cell["status"] not in _STATUSES_WITH_ROUNDS and not pairs:
        return None
    return (f"the round file of cell {key} is missing, yet campaign.json records the cell as {cell['status']} "
            f"with {cell.get('accepted_pairs', 'some')} accepted pairs")


def pair_count_problem(key: str, cell: dict, recorded_pairs: int) -> str | None:
    """A finished cell whose round file holds another number of accepted pairs than campaign.json
    says it measured (rounds lost or added by hand), or None."""
    expected = cell.get("accepted_pairs")
    if cell["status"] != "done" or expected is None or expected == recorded_pairs:
        return None
    return (f"it holds {recorded_pairs} accepted pairs of cell {key}, but campaign.json records "
            f"{expected} for the finished cell")


def summary_difference(stored, derived, where: str = "") -> str | None:
    """The first place where a summary.json (``stored``) and the summary derived again from the
    records (``derived``, both parsed JSON) differ, in words, or None. Numbers agree to a relative
    1e-9 (the same arithmetic on the same rounds; JSON keeps a float's every digit)."""
    if isinstance(stored, dict) and isinstance(derived, dict):
        for key in sorted(set(stored) | set(derived)):
            if key not in stored or key not in derived:
                return f"{where}{key}: only in the {'derived summary' if key not in stored else 'file'}"
            found = summary_difference(stored[key], derived[key], f"{where}{key}.")
            if found:
                return found
        return None
    if isinstance(stored, list) and isinstance(derived, list):
        if len(stored) != len(derived):
            return f"{where.rstrip('.')}: {len(stored)} entries in the file, {len(derived)} derived"
        for i, (a, b) in enumerate(zip(stored, derived)):
            found = summary_difference(a, b, f"{where.rstrip('.')}[{i}].")
            if found:
                return found
        return None
    if _same_number(stored, derived) or stored == derived:
        return None
    return f"{where.rstrip('.')} is {stored!r} in the file, {derived!r} derived from the records"


def _same_number(a, b) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, numbers) and isinstance(b, numbers)):
        return False
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)


def summary_problem(summary) -> str | None:
    """What is wrong with a parsed summary.json, or None."""
    problem = fields_problem(summary, _SUMMARY, "the summary")
    if problem:
        return problem
    for i, cell in enumerate(summary["cells"]):
        if not isinstance(cell, dict) or not {"cell", "graph", "batch", "status", "regions"} <= set(cell):
            return f"the summary: cells[{i}] is not a cell summary"
    return None


__all__ = ["CELL_STATUSES", "fields_problem", "campaign_problem", "summary_problem", "round_rows_problem", "missing_rounds_problem",
           "pair_count_problem", "summary_difference"]
