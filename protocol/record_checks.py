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
# Fields a record may lack (campaigns recorded before them) but, when present, must have the type
# the report computes with: a string where int() or a format's :g wants a number, or a number
# where .get() wants an object, was a traceback reported as a bug in ssspab.
_NULL = type(None)
_NUMBER = (int, float)
_CAMPAIGN_OPTIONAL = {"host": (dict, _NULL), "gpu": (dict, _NULL), "clocks": (dict, _NULL), "git": (dict, _NULL)}
_PARAMETERS_OPTIONAL = {
    "rounds": (int,), "warmup": (int,), "processes": (int,), "seed": (int,), "bootstrap_resamples": (int,),
    "adaptive": (bool,), "precision": _NUMBER, "max_rounds": (int, _NULL), "max_processes": (int, _NULL),
    "min_processes": (int, _NULL), "max_rejects": (int, _NULL), "min_clock_fraction": _NUMBER,
    "max_foreign_cpu": _NUMBER, "planted_check": (*_NUMBER, _NULL), "discard_after_clock_change": (int,),
    "adaptive_scope": (str,), "alloc_order": (str,), "protocol": (str,), "objectives": (list, _NULL),
    "batches": (list, _NULL)}
_CELL_OPTIONAL = {"accepted_pairs": (int, _NULL), "rejected_pairs": (int, _NULL), "workers": (dict,)}
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
    shown = [t for t in types if not (t is int and float in types)]  # a number: an integer is one
    return " or ".join(_NAMES[t] for t in shown)


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


def _present(record: dict, fields: dict) -> dict:
    """``fields`` narrowed to those ``record`` holds (optional fields checked only when there)."""
    return {name: types for name, types in fields.items() if name in record}


def campaign_problem(campaign) -> str | None:
    """What is wrong with a parsed campaign.json, or None."""
    problem = fields_problem(campaign, _CAMPAIGN, "the campaign record")
    problem = problem or fields_problem(campaign, _present(campaign, _CAMPAIGN_OPTIONAL), "the campaign record")
    params = campaign["parameters"] if not problem else {}
    problem = problem or fields_problem(params, _present(params, _PARAMETERS_OPTIONAL), "parameters")
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
        problem = problem or fields_problem(cell, _present(cell, _CELL_OPTIONAL), f"cells[{key!r}]")
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


#: the time columns of a round (milliseconds; null where the side has no such clock)
_TIME_COLUMNS = ("engine_host_ms", "engine_device_ms", "update_host_ms")


def round_values_problem(rows) -> str | None:
    """What is wrong with the values of one round file's rows (a pandas frame of its round
    columns), or None. Each is a silent wrong answer otherwise: a role other than A and B drops the
    cell to "not measured", a negative or infinite time moves the median and the interval."""
    roles = sorted({str(r) for r in rows["role"].dropna().unique()} - {"A", "B"})
    if roles or rows["role"].isna().any():
        return f"a round's role is {repr(roles[0]) if roles else 'null'}, not A or B"
    for column in ("accepted", "warmup"):
        if rows[column].isna().any():
            return f"a round's {column} is null"
    for column in _TIME_COLUMNS:
        values = rows[column].dropna()
        wrong = values[(values < 0) | ~values.map(math.isfinite)]
        if len(wrong):
            return f"a round's {column} is {float(wrong.iloc[0])}, not a time"
    return None


def duplicate_rounds_problem(rows) -> str | None:
    """A timed round recorded twice in one round file (a pandas frame of its process, pair_index,
    role and warmup columns), or None. A worker's pair holds one timed round per side, so the same
    (worker, pair index, side) twice is a copied row: the statistics would count it twice, and
    the pair count (per worker and pair index) does not see it."""
    timed = rows[~rows["warmup"].astype(bool)]
    keys = timed.assign(process=timed["process"].fillna(0))[["process", "pair_index", "role"]]
    copied = keys.duplicated()
    if not copied.any():
        return None
    process, pair, role = keys[copied].iloc[0]
    return f"the timed round of side {role} in pair {int(pair)} of worker {int(process)} is recorded more than once"


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


__all__ = ["CELL_STATUSES", "duplicate_rounds_problem", "fields_problem", "campaign_problem", "summary_problem", "round_rows_problem", "missing_rounds_problem",
           "pair_count_problem", "round_values_problem", "summary_difference"]
