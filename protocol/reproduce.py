"""The report's "Reproduce" lines (protocol.md §10), from the records alone.

Three commands: ``perf_ab.py prepare`` for the campaign's inputs, the recorded ``perf_ab.py
engines`` line, and ``perf_ab.py report``, each with every option that decides what is measured
and where its inputs and records are: ``--data-dir`` (where the real graph files were found) for
prepare, ``--out`` (the records' folder) for engines and report. The engines line is the one the
campaign recorded when it began (``campaign.reproduce``, which carries ``--out`` and
``--data-dir`` since they were added to it); a record from before that gets the folder the records
are now read from. Run as printed into a folder that still holds these records, the engines line
is refused (exit 2: ``--force`` replaces them), so that reproducing never deletes them silently.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from .environment import REPO_ROOT

PERF_AB = "python bench/perf_ab.py"


def repo_relative(path) -> str:
    """A folder as the records name it: relative to the repository (no host or user names)."""
    return os.path.relpath(os.path.abspath(str(path)), REPO_ROOT)


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
        parts += ["--graph-file", str(entry["origin"].get("path")), *map(str, recorded.get("options") or [])]
    return " ".join([f"{PERF_AB} prepare", *map(shlex.quote, parts)])


def engines_command(campaign: dict, records_dir: Path) -> str:
    """The recorded engines line; ``--out`` added where the record predates it."""
    command = campaign.get("reproduce") or f"{PERF_AB} engines"
    if recorded_option(command, "--out") is None:
        command += " --out " + shlex.quote(repo_relative(records_dir))
    return command


def report_command(campaign: dict, records_dir: Path) -> str:
    out = recorded_option(campaign.get("reproduce"), "--out") or repo_relative(records_dir)
    return f"{PERF_AB} report --out {shlex.quote(out)}"


def reproduce_lines(campaign: dict, records_dir: Path) -> list[str]:
    return [prepare_command(campaign), engines_command(campaign, records_dir), report_command(campaign, records_dir)]


__all__ = ["prepare_command", "engines_command", "report_command", "reproduce_lines", "recorded_option",
           "repo_relative"]
