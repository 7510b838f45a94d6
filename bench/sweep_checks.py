"""Is a sweep.json whole? The shape check behind ``bench.sweep.SweepStore.read_sweep``.

A sweep.json edited by hand, written by another tool or cut short must end ``perf_ab.py sweep``
(``--resume``, ``--report-only``) with exit 2 and a message naming the file and the field, never
with a ``KeyError`` in the crossover or the report called a bug (the bar of protocol/record_checks.py
for campaign.json). Every field those readers index is checked here.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from protocol.record_checks import fields_problem

_SWEEP = {"schema": (str,), "schema_version": (int,), "parameters": (dict,), "graphs": (dict,),
          "reproduce": (str,)}
_PARAMETERS = {"engines": (list,), "sizes": (list,), "localities": (list,), "objectives": (list,),
               "seed": (int,), "bootstrap_resamples": (int,)}
#: the list parameters and the type of their entries
_PARAMETER_ITEMS = {"engines": str, "sizes": int, "localities": str, "objectives": int}
_GRAPH = {"n": (int,), "m": (int,), "sizes": (list,), "dropped": (list,), "campaigns": (dict,), "verify": (dict,)}
_DROPPED = {"size": (int,), "reason": (str,)}


def _items_problem(values: list, kind: type, where: str) -> str | None:
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, kind):
            return f"{where}[{i}] is {value!r}, expected {'an integer' if kind is int else 'a string'}"
    return None


def sweep_problem(record) -> str | None:
    """What is wrong with a parsed sweep.json (its schema and version already checked), or None."""
    problem = fields_problem(record, _SWEEP, "the sweep record")
    if problem:
        return problem
    params = record["parameters"]
    problem = fields_problem(params, _PARAMETERS, "parameters")
    for name, kind in _PARAMETER_ITEMS.items():
        problem = problem or _items_problem(params[name], kind, f"parameters.{name}")
    if problem:
        return problem
    for graph, info in record["graphs"].items():
        where = f"graphs[{graph!r}]"
        problem = fields_problem(info, _GRAPH, where) or _items_problem(info["sizes"], int, f"{where}.sizes")
        for i, dropped in enumerate(info["dropped"] if not problem else ()):
            problem = problem or fields_problem(dropped, _DROPPED, f"{where}.dropped[{i}]")
        if problem:
            return problem
        for engine in params["engines"]:
            folder = info["campaigns"].get(engine)
            if not isinstance(folder, str):
                return f"{where}.campaigns has no folder for the engine {engine!r}"
            # the campaign folder lies inside the sweep's (a path leading out would read another
            # folder's records as this sweep's)
            path = PurePosixPath(folder)
            if path.is_absolute() or ".." in path.parts or not path.parts:
                return f"{where}.campaigns[{engine!r}] = {folder!r} is not a folder inside the sweep's"
        for engine, how in info["verify"].items():
            if not isinstance(how, str):
                return f"{where}.verify[{engine!r}] is {how!r}, expected a string"
    return None


__all__ = ["sweep_problem"]
