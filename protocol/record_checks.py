"""Is a campaign record whole? The shape checks behind ``RecordStore``'s readers (protocol.md §9).

A damaged record (bad JSON, a list where the campaign belongs, a missing field, a field of the
wrong type) must end a command with exit 2 and a message naming the file and what is wrong,
never with a ``KeyError`` deep in the runner or the report. :func:`campaign_problem` checks every
field those read; :func:`summary_problem` the derived summary (which is rebuilt when damaged).
"""

from __future__ import annotations

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


_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
          bool: "true/false", type(None): "null"}


def _type_name(value) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def _wanted(types) -> str:
    return " or ".join(_NAMES[t] for t in types)


def _fields_problem(record, fields: dict, where: str) -> str | None:
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
    problem = _fields_problem(campaign, _CAMPAIGN, "the campaign record")
    if problem:
        return problem
    sides = campaign["parameters"].get("sides")
    if not (isinstance(sides, dict) and isinstance(sides.get("A"), str) and isinstance(sides.get("B"), str)):
        return "the campaign record: parameters.sides must name the sides A and B"
    for i, entry in enumerate(campaign["inputs"]):
        problem = _fields_problem(entry, _INPUT, f"inputs[{i}]")
        if problem:
            return problem
        for j, batch in enumerate(entry["batches"]):
            problem = _fields_problem(batch, _INPUT_BATCH, f"inputs[{i}].batches[{j}]")
            if problem:
                return problem
    for key, cell in campaign["cells"].items():
        problem = _fields_problem(cell, _CELL, f"cells[{key!r}]")
        if problem:
            return problem
    if not campaign["sessions"]:
        return "the campaign record: sessions is empty (every campaign has its first session)"
    for i, session in enumerate(campaign["sessions"]):
        if not isinstance(session, dict):
            return f"sessions[{i}] is {_type_name(session)}, not an object"
    return None


def summary_problem(summary) -> str | None:
    """What is wrong with a parsed summary.json, or None."""
    problem = _fields_problem(summary, _SUMMARY, "the summary")
    if problem:
        return problem
    for i, cell in enumerate(summary["cells"]):
        if not isinstance(cell, dict) or not {"cell", "graph", "batch", "status", "regions"} <= set(cell):
            return f"the summary: cells[{i}] is not a cell summary"
    return None


__all__ = ["campaign_problem", "summary_problem"]
