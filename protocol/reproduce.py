"""The report's "Reproduce" lines (docs/protocol.md §10), from the records alone.

Three commands: ``perf_ab.py prepare`` for the campaign's inputs, the recorded ``perf_ab.py
engines`` line, and ``perf_ab.py report``, each with every option that decides what is measured
and where its inputs and records are: ``--data-dir`` (where the real graph files were found) for
prepare, ``--out`` (the records' folder) for engines and report. The engines line is the one the
campaign recorded when it began (``campaign.reproduce``, which carries ``--out`` and
``--data-dir`` since they were added to it); a record from before that gets the folder the records
are now read from. Run as printed into a folder that still holds these records, the engines line
is refused (exit 2: ``--force`` replaces them), so that reproducing never deletes them silently.

Every path in the lines is written by :func:`line_path`, so that a printed line runs as printed
from the repository root on another machine: relative to the repository root when it lies inside
the repository (wherever the command was typed from, however the path was spelled), else as the
user typed it (``/tmp/toy.txt`` stays ``/tmp/toy.txt``; a relative path typed from another
folder becomes the absolute path it named). Links inside the repository are kept as named (a
``.devdata`` link to a disk of this machine stays ``.devdata``).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from .environment import REPO_ROOT

PERF_AB = "python bench/perf_ab.py"


def _inside_repository(absolute: str) -> str | None:
    """``absolute`` relative to the repository root when it lies inside it, else None. The root may
    be reached through a link (a checkout opened as ``~/ssspab``); links below it are kept as named."""
    root = os.path.realpath(REPO_ROOT)
    head, names = absolute, []
    while True:
        if os.path.realpath(head) == root:
            return os.path.join(*reversed(names)) if names else "."
        parent, name = os.path.split(head)
        if parent == head:
            return None
        names.append(name)
        head = parent


def line_path(path, *, cwd=None) -> str:
    """A path for a reproduce line (one the command was given in ``cwd``, the current folder by
    default): relative to the repository root when it lies inside the repository; else as typed
    when it is absolute, or relative and typed at the repository root; else (relative, typed in
    another folder) the absolute path it names. Never a ``../..`` climb out of the repository from
    a path that was typed absolute, and never the target of a link."""
    typed = os.fspath(path)
    cwd = os.getcwd() if cwd is None else os.fspath(cwd)
    absolute = os.path.normpath(os.path.join(cwd, typed))
    inside = _inside_repository(absolute)
    if inside is not None:
        return inside
    if os.path.isabs(typed) or os.path.realpath(cwd) == os.path.realpath(REPO_ROOT):
        return typed
    return absolute


def _recorded_path(path: str) -> str:
    """A file's path as an older record names it (relative to the repository): one that climbs out
    of the repository (``../../tmp/toy.txt``) is the absolute path it named when it was recorded."""
    if os.path.isabs(path) or not os.path.normpath(path).startswith(os.pardir):
        return path
    return os.path.normpath(os.path.join(REPO_ROOT, path))


def recorded_option(command: str | None, option: str) -> str | None:
    """The value of ``option`` in a recorded command line (the last one given), or None."""
    try:
        words = shlex.split(command or "")
    except ValueError:  # an unbalanced quote in a hand-edited record: no option to find
        return None
    value = None
    for i, word in enumerate(words[:-1]):
        if word == option:
            value = words[i + 1]
    return value


def prepare_command(campaign: dict) -> str:
    """``perf_ab.py prepare`` for the campaign's inputs: its gates, the data folder the campaign
    used, and its graph file with the options recorded with it (``facts.graph_file.options``)
    that made it the graph measured."""
    parts = []
    gates = [i["graph"] for i in campaign["inputs"] if (i["origin"] or {}).get("kind") != "file"]
    files = [i for i in campaign["inputs"] if (i["origin"] or {}).get("kind") == "file"]
    if gates:
        parts += ["--graphs", *gates]
        data_dir = recorded_option(campaign.get("reproduce"), "--data-dir")
        if data_dir is not None:
            parts += ["--data-dir", data_dir]
    for entry in files:
        recorded = (entry.get("facts") or {}).get("graph_file") or {}
        # the path as the engines line names it (as typed, see line_path); the records' own
        # (repository-relative, links resolved) only for a record whose line has none
        path = recorded_option(campaign.get("reproduce"), "--graph-file")
        path = path if path is not None else _recorded_path(str(entry["origin"].get("path")))
        parts += ["--graph-file", path, *map(str, recorded.get("options") or [])]
    return " ".join([f"{PERF_AB} prepare", *map(shlex.quote, parts)])


def engines_command(campaign: dict, records_dir: Path) -> str:
    """The recorded engines line; ``--out`` added where the record predates it."""
    command = campaign.get("reproduce") or f"{PERF_AB} engines"
    if recorded_option(command, "--out") is None:
        command += " --out " + shlex.quote(line_path(records_dir))
    return command


def report_command(campaign: dict, records_dir: Path) -> str:
    out = recorded_option(campaign.get("reproduce"), "--out") or line_path(records_dir)
    return f"{PERF_AB} report --out {shlex.quote(out)}"


def reproduce_lines(campaign: dict, records_dir: Path) -> list[str]:
    return [prepare_command(campaign), engines_command(campaign, records_dir), report_command(campaign, records_dir)]


__all__ = ["prepare_command", "engines_command", "report_command", "reproduce_lines", "recorded_option",
           "line_path"]
